#!/bin/bash
# Ours (`fused`) against FlashQLA at the calls the recipes make (docs/gdn/bench.md, "Contracts";
# README.md here),
# in one call on a GPU machine without a network: gdn-bench with FlashQLA (through FLA's dispatch,
# as a user gets it) beside `fused`, CUDA-graph medians of the forward and of forward + backward,
# the peak memory of a training step and the context it saves, in three runs:
#   mcore     Megatron-Core's call at qwen35_35b (B4 T4096, H = Hv = 32) and qwen35_397b (B1 T4096,
#             H = 64), dense (B = MBS)
#   packed    the same call at B1 T16384 with the 35B heads, packed into 4 uneven sequences
#             (--packed 4: 6553, 4915, 3277, 1639 tokens)
#   grouped   the call gdn-bench made before contracts (grouped value heads, L2 norm in the
#             kernel) at the 35B shape: FLA's layer without its gate in the kernel, which neither
#             ours nor FlashQLA runs (CONTRACT_FLA_LAYER=1 adds a run at fla-layer itself, where
#             FLA's Triton kernels run and ours and FlashQLA say why not)
#
#   gpu_contract.sh BIN_DIR PEERS_DIR OUT_DIR
#
# BIN_DIR holds gdn-bench (a QR_KERNELS_ONLY build); PEERS_DIR is gpu_peers.sh's (the wheels,
# flashqla-site.tar.xz and, if carried, tilelang-cache.tar.xz), installed through peers_env.sh.
# FlashQLA compiles each new kernel configuration (2-3 minutes, longer packed): first, all four
# runs' configurations compile side by side (peers_warm.py, the driver's own first calls, one
# process each, stopped after CONTRACT_BUDGET seconds, default 150; CONTRACT_WARM=0 skips it),
# then each run gives FlashQLA's first calls CONTRACT_BUDGET seconds more (its rows say so when it
# is not ready). After the warm and after each run the peers' compile cache is packed again as
# OUT_DIR/tilelang-cache.tar.xz (pack_cache.sh), so that a call cut short still brings back what
# was compiled, for the next call to carry. Writes OUT_DIR/warm.log, mcore.txt, mcore.json,
# packed.txt, packed.json, grouped.txt, grouped.json (fla-layer.txt, .json) and the pack, and
# prints each run's per-backend rows and recommendations. Exit code: 0 when every run ended 0, 1
# otherwise.
set -u
if [ $# != 3 ]; then
  echo "usage: gpu_contract.sh BIN_DIR PEERS_DIR OUT_DIR" >&2
  exit 2
fi
# shellcheck disable=SC2034  # PEERS: peers_env.sh reads it
BIN=$1 PEERS=$2 OUT=$3
HERE=$(dirname "$(readlink -f "$0")")
BUDGET=${CONTRACT_BUDGET:-150}
case $BUDGET in
'' | *[!0-9]*)
  echo "gpu_contract.sh: CONTRACT_BUDGET '$BUDGET' is not a number of seconds" >&2
  exit 2
  ;;
esac
mkdir -p "$OUT" || exit 1
# shellcheck source=SCRIPTDIR/peers_env.sh
source "$HERE/peers_env.sh" || exit 1
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
FAILED=0
pack() {
  if [ -n "$CACHE" ]; then
    bash "$HERE/pack_cache.sh" "$CACHE" "$OUT" >/dev/null || FAILED=1
  fi
}
if [ "${CONTRACT_WARM:-1}" = 1 ]; then
  # The runs' FlashQLA configurations: mcore (no norm in the kernel, H = Hv) dense at both
  # recipes and packed as --packed 4 packs 16384 tokens; grouped at 35B.
  i=0
  for job in "4,4096,32,32,128 --no-l2norm" "1,4096,64,64,128 --no-l2norm" \
    "1,16384,32,32,128 --no-l2norm --varlen 6553,4915,3277,1639" "4,4096,16,32,128"; do
    # shellcheck disable=SC2086  # a shape and its options
    timeout "$BUDGET" python3 "$HERE/peers_warm.py" --backend flash_qla --shape $job \
      >"$TMP/contract-warm-$i.log" 2>&1 &
    i=$((i + 1))
  done
  wait
  cat "$TMP"/contract-warm-*.log >"$OUT/warm.log"
  rm -f "$TMP"/contract-warm-*.log
  echo "== warm: FlashQLA's first calls, $i configurations side by side:"
  grep -E "first call" "$OUT/warm.log"
  pack
fi
# One run: NAME, then its gdn-bench arguments; the table in NAME.txt, the JSON in NAME.json.
bench() {
  local name=$1
  shift
  "$BIN/gdn-bench" "$@" --mode fwd,fwdbwd --iters 20 --peers-budget "$BUDGET" \
    --peers-driver "$HERE/gdn_peers.py" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  local rc=$?
  echo "== $name: gdn-bench $*: rc=$rc"
  [ $rc = 0 ] || FAILED=1
  # The per-backend table (from its header to the blank line after it) and the recommendations.
  sed -n '/^per backend/,/^$/p; /^recommendation/p' "$OUT/$name.txt"
  pack
}
# shellcheck disable=SC2054  # the commas are within a shape
bench mcore --contract mcore --backend flash_qla,fused --baseline flash_qla \
  --shape 4,4096,16,32,128 --shape 1,4096,16,64,128
bench packed --contract mcore --packed 4 --backend flash_qla,fused --baseline flash_qla \
  --shape 4,4096,16,32,128
bench grouped --contract grouped --backend flash_qla,fused --baseline flash_qla \
  --shape 4,4096,16,32,128
if [ "${CONTRACT_FLA_LAYER:-0}" = 1 ]; then
  bench fla-layer --contract fla-layer --backend fla,flash_qla,fused --baseline fla \
    --shape 4,4096,16,32,128
fi
if [ -n "$CACHE" ]; then
  ls -l "$OUT"/tilelang-cache.tar.xz*
else
  echo "caches: the caller's own (a cache variable was set), not packed"
fi
exit $FAILED
