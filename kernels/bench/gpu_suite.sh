#!/bin/bash
# The GDN GPU suite in one go, for one call on the GPU machine (docs/gdn-bench.md):
# correctness tests, compute-sanitizer on small shapes, per-kernel times, gdn-bench on the recipe
# shapes and, when FLA's wheels are given, FLA's Triton kernels timed in the same run.
#
#   gpu_suite.sh BIN_DIR OUT_DIR [WHEEL_DIR FLA_BENCH_PY]
#
# BIN_DIR holds gdn-bench and gdn-gpu-tests. Logs go to OUT_DIR (at most 8 files).
set -u
BIN=$1 OUT=$2 WHL=${3:-} FLA=${4:-}
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT"
L=$OUT/log.txt
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -1
  echo "== gdn-gpu-tests"
  timeout 150 "$BIN/gdn-gpu-tests" >"$OUT/gpu_tests.txt" 2>&1
  echo "rc=$?"
  grep -E "FAIL|PASSED|FAILED|ERROR" "$OUT/gpu_tests.txt"
  echo "== compute-sanitizer (small shapes)"
  for tool in memcheck racecheck synccheck initcheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/gdn-bench" --check \
      --shape 1,200,2,4,128 --initial-state >>"$OUT/sanitizers.txt" 2>&1
    echo "$tool gdn-bench --check rc=$?"
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/gdn-gpu-tests" --quick \
      >>"$OUT/sanitizers.txt" 2>&1
    echo "$tool gdn-gpu-tests --quick rc=$?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitizers.txt"
  echo "== per-kernel times, 35B shape (ncu, clocks left alone)"
  timeout 90 ncu --clock-control none --kernel-name regex:"prep|scan|intra" \
    --metrics gpu__time_duration.sum --csv "$BIN/gdn-bench" --backend chunked \
    --shape 4,4096,16,32,128 --mode fwdbwd --warmup 0 --iters 1 2>&1 |
    grep gpu__time_duration | awk -F'","' '{print $5, $NF}'
  echo "== gdn-bench"
  timeout 150 "$BIN/gdn-bench" --json "$OUT/bench.json" >"$OUT/bench.txt" 2>/dev/null
  echo "rc=$?"
  cat "$OUT/bench.txt"
} >"$L" 2>&1
if [ -n "$WHL" ]; then
  {
    echo "== FLA"
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/fla_site "$WHL"/*.whl
    PYTHONPATH=/tmp/fla_site PYTHONUNBUFFERED=1 FLA_FLASH_QLA=0 timeout 300 python3 "$FLA" \
      --shapes S35gva,S397gva --pin --out "$OUT/fla" >"$OUT/fla.txt" 2>&1
    echo "rc=$?"
    grep -E "ENV|HW|GRAPH|SUMMARY|CHECK" "$OUT/fla.txt"
  } >>"$L" 2>&1
fi
cat "$L"
