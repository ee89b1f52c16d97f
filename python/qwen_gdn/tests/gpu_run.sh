#!/usr/bin/env bash
# On a Hopper GPU machine (docs/training.md, "On the H200"): FLA from its wheels, libqwen_gdn.so
# (PREBUILT_LIB if given and it loads, else built here with CMake), the package pip-installed with
# the library bundled, then test_gpu.py as a script. Run from anywhere in the repository.
# usage: gpu_run.sh FLA_WHEEL_DIR OUT_DIR DEADLINE_S [PREBUILT_LIB]
set -uo pipefail
wheels=$(realpath "$1") out=$2 deadline=$3 prebuilt=${4:+$(realpath "$4")}
cd "$(dirname "$0")/../../.." || exit 2
start=$SECONDS
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/qwen_gdn_site \
  "$wheels"/*.whl || exit 2
if [[ -n $prebuilt ]] && python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$prebuilt"; then
  lib=$prebuilt
else
  cmake -S . -B build-gpu -G Ninja -DQR_KERNELS_ONLY=ON -DQR_GDN_CUDA_ARCHS=90a >/dev/null &&
    ninja -C build-gpu qwen_gdn >/dev/null || exit 2
  lib=$PWD/build-gpu/kernels/capi/libqwen_gdn.so
fi
QWEN_GDN_LIBRARY=$lib python3 -m pip install -q --no-index --target /tmp/qwen_gdn_pkg \
  ./python/qwen_gdn || exit 2
echo "gpu_run: set up in $((SECONDS - start)) s with $lib"
PYTHONPATH=/tmp/qwen_gdn_pkg:/tmp/qwen_gdn_site PYTHONUNBUFFERED=1 FLA_FLASH_QLA=0 \
  python3 python/qwen_gdn/tests/test_gpu.py "$out" --deadline "$deadline" 2>&1 |
  tee "$out/gpu_check.log"
