#!/bin/bash
# Fills the peers' compile caches at the shapes gdn-bench measures, on a GPU machine without a
# network, and packs them (README.md here, "Carrying the compile caches"):
#
#   gpu_peers_cache.sh PEERS_DIR OUT_DIR SECONDS
#
# PEERS_DIR holds FLA's wheels and flashqla-site.tar.xz, and may hold the pack of an earlier run
# (tilelang-cache.tar.xz): it is unpacked first, so the first calls' times (and TileLang's "begins
# to compile" lines, counted per job) say whether it was hit. One process per backend and shape
# runs peers_warm.py, all in parallel (the compiles are CPU work); after SECONDS what is not done
# is stopped and the caches so far are packed as OUT_DIR/tilelang-cache.tar.xz (pack_cache.sh:
# split into .partNN files over 15 MiB), one folder D for three variables:
#   TILELANG_CACHE_DIR=D             FlashQLA's TileLang kernels
#   TORCHINDUCTOR_CACHE_DIR=D/inductor   FlashQLA's torch.compile'd l2norm
#   TRITON_CACHE_DIR=D/triton        FLA's Triton kernels and autotuning results, the l2norm's
# Log: OUT_DIR/warm.log.
set -u -o pipefail
PEERS=$1 OUT=$2 LIMIT_S=$3
HERE=$(dirname "$(readlink -f "$0")")
# PEERS_TMP (default /tmp) as in gpu_peers.sh, which unpacks the pack into the same folder:
# Triton's group files and inductor's generated code name it, so the Triton and inductor entries
# hit only there (TileLang's anywhere).
TMP=${PEERS_TMP:-/tmp}
CACHE=$TMP/peers-cache QLA=$TMP/peers-qla SITE=$TMP/peers-site
mkdir -p "$OUT" "$QLA" "$SITE" "$CACHE/inductor" "$CACHE/triton"
tar -xJf "$PEERS/flashqla-site.tar.xz" -C "$QLA" || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" \
  "$PEERS"/fla*.whl || exit 1
if [ -f "$PEERS/tilelang-cache.tar.xz" ]; then
  tar -xJf "$PEERS/tilelang-cache.tar.xz" -C "$CACHE" || exit 1
fi
export PYTHONUNBUFFERED=1 TILELANG_CACHE_DIR=$CACHE TORCHINDUCTOR_CACHE_DIR=$CACHE/inductor \
  TRITON_CACHE_DIR=$CACHE/triton
date -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# The two Qwen3.5 recipes' shapes (B4 T4096 Hv32, B1 T4096 Hv64), the same heads at 16k and 32k
# tokens (where FlashQLA's intra-card context parallelism splits sequences), an initial state,
# FlashQLA's own default scale, and packed sequences (varlen): forwards at assorted lengths, and
# the inference and training steps of `gdn-bench --varlen 8` at 16k tokens (eight sequences of
# 2048, the lengths it packs) for both peers.
P8=2048,2048,2048,2048,2048,2048,2048,2048
JOBS=(
  "flash_qla --shape 4,4096,16,32,128"
  "flash_qla --shape 1,4096,16,64,128"
  "flash_qla --shape 1,16384,16,32,128"
  "flash_qla --shape 1,16384,16,64,128"
  "flash_qla --shape 4,32768,16,32,128"
  "flash_qla --shape 1,32768,16,64,128"
  "flash_qla --shape 4,4096,16,32,128 --states"
  "flash_qla --shape 4,4096,16,32,128 --scale none"
  "flash_qla --shape 1,16384,16,32,128 --modes fwd --varlen 4096,4096,4096,4096
    --varlen 1024,3072,12288 --varlen 16384"
  "flash_qla --shape 1,16384,16,32,128 --varlen $P8"
  "flash_qla --shape 1,16384,16,64,128 --varlen $P8"
  "fla --shape 4,4096,16,32,128"
  "fla --shape 1,4096,16,64,128"
  "fla --shape 1,16384,16,32,128 --varlen $P8"
  "fla --shape 1,16384,16,64,128 --varlen $P8"
)
PIDS=()
for i in "${!JOBS[@]}"; do
  # shellcheck disable=SC2086  # each job is a list of arguments
  set -- ${JOBS[$i]}
  # gpu_peers.sh's path for every backend: peers_warm.py pins FLA itself, as the driver does.
  PYTHONPATH="$SITE:$QLA" python3 "$HERE/peers_warm.py" --backend "$@" >"$TMP/warm.$i.log" 2>&1 &
  PIDS+=($!)
done
START=$(date +%s)
while [ $(($(date +%s) - START)) -lt "$LIMIT_S" ]; do
  alive=0
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 2
done
SUMMARY=()
for i in "${!JOBS[@]}"; do
  compiles=$(grep -c 'begins to compile' "$TMP/warm.$i.log")
  # shellcheck disable=SC2086  # one line: the job's arguments, spaces squeezed
  printf -v job '%s ' ${JOBS[$i]}
  if kill -0 "${PIDS[$i]}" 2>/dev/null; then
    kill "${PIDS[$i]}"
    SUMMARY+=("job $i (${job% }): NOT DONE within $LIMIT_S s; TileLang compiles: $compiles")
  else
    wait "${PIDS[$i]}"
    SUMMARY+=("job $i (${job% }): exit $?; TileLang compiles: $compiles")
  fi
  cat "$TMP/warm.$i.log"
  echo "${SUMMARY[-1]}"
done >"$OUT/warm.log" 2>&1
echo "compile phase: $(($(date +%s) - START)) s"
sleep 1
bash "$HERE/pack_cache.sh" "$CACHE" "$OUT" || exit 1
grep -hE '^(flash_qla|fla) .*first call|Error' "$OUT/warm.log" | tail -60
printf '%s\n' "${SUMMARY[@]}"
