#!/bin/bash
# The bar of fused v2 against FlashQLA (README.md here, "The bar against FlashQLA") in one call
# on a GPU machine without a network: FlashQLA beside `fused` in one gdn-bench at the two Qwen3.5
# recipes' shapes and at batch 1, 16k tokens, both head counts (FLA's Triton kernels too with
# BAR_FLA=1: their autotuning takes minutes unless a pack of it is carried); then our correctness
# suite, `--check` with packed sequences, compute-sanitizer's memcheck and synccheck, and ncu's
# time, DRAM bytes and tensor-pipe operations per kernel for one training step at the two recipes.
#
#   gpu_bar.sh BIN_DIR PEERS_DIR OUT_DIR
#
# BIN_DIR holds gdn-bench and gdn-gpu-tests (a QR_KERNELS_ONLY build); PEERS_DIR is gpu_peers.sh's
# (the wheels, flashqla-site.tar.xz and, if carried, tilelang-cache.tar.xz), installed through
# peers_env.sh. BAR_CARD (default H200, the card the bar is set on) is part of the card's name: on
# any other card the script says so and exits 3 before installing anything, so that a machine of
# the wrong kind costs seconds; BAR_CARD= runs on any card. Writes OUT_DIR/bar.txt and bar.json
# (the bench), checks.txt, ncu.csv and, as gpu_peers.sh, the peers' compile cache as
# tilelang-cache.tar.xz (a device call brings back a few files only), and prints the bench's time
# rows, the checks and the per-kernel table (ncu_times.py). Exit code: 0 when the
# bench ran and every check passed, 1 when one failed, 3 for the wrong card.
set -u
if [ $# != 3 ]; then
  echo "usage: gpu_bar.sh BIN_DIR PEERS_DIR OUT_DIR" >&2
  exit 2
fi
# shellcheck disable=SC2034  # PEERS: peers_env.sh reads it
BIN=$1 PEERS=$2 OUT=$3
HERE=$(dirname "$(readlink -f "$0")")
CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
WANT=${BAR_CARD-H200}
if [[ "$CARD" != *"$WANT"* ]]; then
  echo "gpu_bar.sh: the card is '$CARD', not an $WANT: nothing run (BAR_CARD= runs on any card)"
  exit 3
fi
mkdir -p "$OUT" || exit 1
# shellcheck source=SCRIPTDIR/peers_env.sh
source "$HERE/peers_env.sh" || exit 1
export PATH=$PATH:/usr/local/cuda/bin # ncu and compute-sanitizer, where the image keeps them
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
FAILED=0
BACKENDS=flash_qla,fused
[ "${BAR_FLA:-0}" = 1 ] && BACKENDS=fla,$BACKENDS
# shellcheck disable=SC2054  # the commas are within a shape
SHAPES=(--shape 4,4096,16,32,128 --shape 1,4096,16,64,128 --shape 1,16384,16,32,128
  --shape 1,16384,16,64,128)
"$BIN/gdn-bench" --backend $BACKENDS --baseline flash_qla "${SHAPES[@]}" --mode fwd,fwdbwd \
  --iters 20 --peers-budget 240 --peers-driver "$HERE/gdn_peers.py" --json "$OUT/bar.json" \
  >"$OUT/bar.txt" 2>&1
rc=$?
echo "gdn-bench --backend $BACKENDS: rc=$rc"
[ $rc = 0 ] || FAILED=1
grep -E "^(${BACKENDS//,/|}) +custom .* (fwd|fwdbwd) " "$OUT/bar.txt"
# Packed straight after the bench, so that a call stopped in the checks still brings back what
# the peers compiled: the pack to carry next time (README.md here, "Carrying the compile caches").
if [ -n "$CACHE" ]; then
  bash "$HERE/pack_cache.sh" "$CACHE" "$OUT" || FAILED=1
else
  echo "caches: the caller's own (a cache variable was set), not packed"
fi
# A check's line: its name, then its result; gdn-bench --check prints one row per output.
{
  out=$(timeout 300 "$BIN/gdn-gpu-tests" 2>&1)
  rc=$?
  echo "gdn-gpu-tests: rc=$rc $(tail -1 <<<"$out")"
  [ $rc = 0 ] || FAILED=1
  for args in "4,4096,16,32,128" "1,4096,16,64,128" "1,16384,16,32,128 --varlen 8" \
    "1,16384,16,64,128 --varlen 8" "1,300,2,6,128 --varlen 3" "1,5000,4,8,128 --varlen 3"; do
    # shellcheck disable=SC2086  # a shape and its options
    out=$(timeout 120 "$BIN/gdn-bench" --check --backend fused --initial-state --shape $args 2>&1)
    rc=$?
    echo "gdn-bench --check --backend fused --initial-state --shape $args: rc=$rc," \
      "$(grep -c ' ok$' <<<"$out") outputs ok, $(grep -c ' FAIL$' <<<"$out") failed"
    [ $rc = 0 ] || FAILED=1
  done
  for tool in memcheck synccheck; do
    out=$(timeout 180 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/gdn-bench" --check \
      --backend fused --shape 1,300,2,6,128 --initial-state 2>&1)
    rc=$?
    echo "compute-sanitizer --tool $tool (B1 T300 Hk2 Hv6, initial state): rc=$rc," \
      "$(grep -E 'ERROR SUMMARY' <<<"$out" | tail -1)"
    [ $rc = 0 ] || FAILED=1
  done
} >"$OUT/checks.txt" 2>&1
cat "$OUT/checks.txt"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
for op in hgmma hmma; do
  for src in bf16 tf32; do
    METRICS=$METRICS,sm__ops_path_tensor_op_${op}_src_${src}_dst_fp32.sum
  done
done
rm -f "$OUT/ncu.csv"
for shape in 4,4096,16,32,128 1,4096,16,64,128; do
  echo "== fused --shape $shape --mode fwdbwd" | tee -a "$OUT/ncu.csv"
  timeout 180 ncu --clock-control none --print-units base --kernel-name regex:"prep|scan|intra" \
    --metrics $METRICS --csv "$BIN/gdn-bench" --backend fused --shape $shape --mode fwdbwd \
    --warmup 0 --iters 1 >"$OUT/ncu.part" 2>&1
  rc=$?
  cat "$OUT/ncu.part" >>"$OUT/ncu.csv"
  python3 "$HERE/../ncu_times.py" "$OUT/ncu.part" || rc=1
  rm -f "$OUT/ncu.part"
  [ $rc = 0 ] || FAILED=1
done
exit $FAILED
