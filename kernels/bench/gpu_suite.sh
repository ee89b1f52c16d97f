#!/bin/bash
# The GDN GPU suite in one go, for one call on the GPU machine (peers/README.md, "Our backends'
# GPU session"):
# correctness tests, compute-sanitizer on small shapes, per-kernel times, then gdn-bench of our
# backends. The peers (FLA, FlashQLA, cuDNN) side by side with ours: peers/gpu_peers.sh.
#
#   gpu_suite.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds gdn-bench, gdn-gpu-tests and conv-gpu-tests; ncu_times.py (the per-kernel times
# from ncu's CSV) is beside this script. The conv baseline links cuDNN 9: the GPU image has none
# of its own, so the suite puts the nvidia/cudnn/lib folder of its PyTorch on LD_LIBRARY_PATH.
# GDN_NCU_DETAIL=1 adds ncu's throughput, stall and occupancy sections for one run of each fused
# kernel at the 35B shape. Logs go to OUT_DIR (at most 8 files: log, gpu_tests, conv_tests,
# sanitizers, bench.txt/json; GDN_NCU_DETAIL=1 adds ncu_detail).
set -u
BIN=$1 OUT=$2
HERE=$(dirname "$(readlink -f "$0")")
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT"
L=$OUT/log.txt
NV=$(python3 -c "import nvidia.cudnn as m, os; print(os.path.dirname(list(m.__path__)[0]))" 2>/dev/null)
[ -n "$NV" ] && [ -d "$NV/cudnn/lib" ] && export LD_LIBRARY_PATH=$NV/cudnn/lib:${LD_LIBRARY_PATH:-}
SHAPES="4,4096,16,32,128 1,4096,16,64,128" # qwen35_35b, qwen35_397b
( # a subshell, so that a failed correctness suite can end it early
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -1
  echo "== gdn-gpu-tests"
  timeout 240 "$BIN/gdn-gpu-tests" >"$OUT/gpu_tests.txt" 2>&1
  rc=$?
  echo "rc=$rc"
  grep -E "FAIL|PASSED|FAILED|ERROR" "$OUT/gpu_tests.txt"
  if [ $rc != 0 ]; then # a failing backend is not worth timing: save the device time
    echo "correctness suite failed; stopping"
    exit 1
  fi
  echo "== conv-gpu-tests (cuDNN from ${NV:-nowhere})"
  timeout 120 "$BIN/conv-gpu-tests" >"$OUT/conv_tests.txt" 2>&1
  crc=$?
  echo "rc=$crc"
  grep -E "FAIL|PASSED|FAILED|ERROR" "$OUT/conv_tests.txt" | head -20
  [ $crc != 0 ] && { echo "conv correctness suite failed; stopping"; exit 1; }
  echo "== compute-sanitizer (small shapes)"
  for tool in memcheck racecheck synccheck initcheck; do
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/gdn-bench" --check \
      --backend fused --shape 1,200,2,4,128 --initial-state >>"$OUT/sanitizers.txt" 2>&1
    echo "$tool gdn-bench --check rc=$?"
    timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/gdn-gpu-tests" --quick \
      >>"$OUT/sanitizers.txt" 2>&1
    echo "$tool gdn-gpu-tests --quick rc=$?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitizers.txt"
  echo "== per-kernel times (ncu gpu__time_duration, clocks left alone; one fwd+bwd)"
  for backend in chunked fused; do
    for shape in $SHAPES; do
      echo "-- $backend $shape"
      timeout 90 ncu --clock-control none --kernel-name regex:"prep|scan|intra" \
        --metrics gpu__time_duration.sum --csv "$BIN/gdn-bench" --backend $backend \
        --shape $shape --mode fwdbwd --warmup 0 --iters 1 2>&1 | python3 "$HERE/ncu_times.py"
    done
  done
  if [ "${GDN_NCU_DETAIL:-0}" = 1 ]; then
    timeout 150 ncu --clock-control none --kernel-name regex:"prep|scan|intra" \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis "$BIN/gdn-bench" --check \
      --backend fused --shape 4,4096,16,32,128 >"$OUT/ncu_detail.txt" 2>&1
    echo "ncu detail rc=$?"
  fi
) >"$L" 2>&1 || {
  cat "$L"
  exit 1
}
{
  echo "== gdn-bench"
  timeout 200 "$BIN/gdn-bench" --backend chunked,fused --json "$OUT/bench.json" \
    >"$OUT/bench.txt" 2>/dev/null
  echo "rc=$?"
  cat "$OUT/bench.txt"
  echo "== gdn-bench --op conv"
  timeout 120 "$BIN/gdn-bench" --op conv --backend cudnn,fused --baseline cudnn 2>/dev/null
  echo "rc=$?"
} >>"$L" 2>&1
cat "$L"
