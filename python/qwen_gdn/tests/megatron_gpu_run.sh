#!/usr/bin/env bash
# On a Hopper GPU machine without a network (docs/training.md, "Megatron-Core"): Megatron-Core's
# GatedDeltaNet, stock FLA vs qwen_gdn (test_megatron_gpu.py), with Megatron-LM at 2a75ac12 (a
# `git archive` of megatron/) and with the megatron-core 0.19.2 wheel. Run from the repository
# root (kernels/bench/peers/peers_env.sh installs FLA and FlashQLA).
#
#   megatron_gpu_run.sh CARRY OUT_DIR DEADLINE_S
#
# CARRY holds megatron-2a75ac12.tar.xz, megatron_core-0.19.2-*.whl, libqwen_gdn.so.1.xz and
# peers/ (FLA's wheels, flashqla-site.tar.xz, optionally a tilelang-cache.tar.xz). In order:
# the stock layer's first step at each timed shape in parallel processes (FlashQLA's TileLang
# and FLA's Triton compile caches) and, meanwhile, the numerics (FLA_FLASH_QLA=0) for both
# Megatron-Cores, then the timing (2a75ac12, FlashQLA on), then the caches packed into OUT_DIR.
set -uo pipefail
carry=$(realpath "$1") out=$(realpath -m "$2") deadline=$3
tests=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS
mkdir -p "$out" /tmp/mlm /tmp/mc || exit 2
# shellcheck disable=SC2034 # read by peers_env.sh
PEERS=$carry/peers
# shellcheck source=/dev/null
. kernels/bench/peers/peers_env.sh || exit 2
tar -xJf "$carry/megatron-2a75ac12.tar.xz" -C /tmp/mlm || exit 2
python3 -m zipfile -e "$(echo "$carry"/megatron_core-0.19.2-*.whl)" /tmp/mc || exit 2
xz -dc "$carry/libqwen_gdn.so.1.xz" >/tmp/libqwen_gdn.so.1 || exit 2
export QWEN_GDN_LIBRARY=/tmp/libqwen_gdn.so.1 PYTHONUNBUFFERED=1
site=$(dirname "$tests"):$PYTHONPATH
echo "megatron_gpu_run: set up in $((SECONDS - start)) s"

left() { echo $((deadline - (SECONDS - start))); }

warm_pids=()
for job in qwen35_35b:dense qwen35_35b:packed qwen35_397b:dense qwen35_397b:packed; do
  PYTHONPATH=/tmp/mlm:$site timeout "$(($(left) / 2))" python3 "$tests/test_megatron_gpu.py" \
    --warm "$job" >"$out/warm-${job/:/-}.log" 2>&1 &
  warm_pids+=($!)
done
for mc in 2a75ac12:/tmp/mlm 0.19.2:/tmp/mc; do
  PYTHONPATH=${mc#*:}:$site FLA_FLASH_QLA=0 timeout "$(($(left) / 2))" python3 \
    "$tests/test_megatron_gpu.py" "$out/${mc%%:*}" --sections numerics \
    >"$out/numerics-${mc%%:*}.log" 2>&1 &
  warm_pids+=($!)
done
wait "${warm_pids[@]}"
tail -n 2 "$out"/warm-*.log
tail -n 60 "$out"/numerics-*.log
echo "megatron_gpu_run: warm and numerics done at $((SECONDS - start)) s"
PYTHONPATH=/tmp/mlm:$site timeout "$(($(left) - 40))" python3 "$tests/test_megatron_gpu.py" \
  "$out/timing" --sections timing 2>&1 | tee "$out/timing-2a75ac12.log"
rm -f "$out"/warm-*.log
if [ -n "$CACHE" ] && [ "$(left)" -gt 20 ]; then
  bash kernels/bench/peers/pack_cache.sh "$CACHE" "$out" >/dev/null
fi
echo "megatron_gpu_run: done at $((SECONDS - start)) s"
