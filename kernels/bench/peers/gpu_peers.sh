#!/bin/bash
# gdn-bench with every backend on a GPU machine without a network (README.md here, "Carrying the
# peers"):
# installs the carried peers into /tmp (or PEERS_TMP), runs `qwen-recipe gdn-bench --backend
# fused` alone, then `--backend all` with the JSON and the plot, and prints how far the two runs'
# fused figures are apart.
#
#   gpu_peers.sh QWEN_RECIPE PEERS_DIR OUT_DIR [gdn-bench arguments...]
#
# PEERS_DIR holds FLA's and cuDNN frontend's wheels (*.whl) and flashqla-site.tar.xz (FlashQLA
# and its TileLang dependencies, unpacked into one folder and packed again), and may hold
# tilelang-cache.tar.xz (gpu_peers_cache.sh: the peers' compile caches, so FlashQLA's TileLang
# compiles and FLA's autotuning are skipped). Unless the caller set one of TILELANG_CACHE_DIR,
# TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, the three name one folder of this script's own,
# with the carried pack unpacked into it, and after the runs that folder is packed again as
# OUT_DIR/tilelang-cache.tar.xz (pack_cache.sh): what the runs themselves compiled and autotuned,
# the pack to carry to the next machine. A cache the caller set is used as it is, never packed.
# The gdn-bench arguments (given to both runs) default to the two Qwen3.5 recipes. Writes
# OUT_DIR/bench.txt, bench.json, bench.png, fused.txt, fused.json and the pack.
set -u
# shellcheck disable=SC2034  # PEERS: peers_env.sh reads it
BIN=$1 PEERS=$2 OUT=$3
shift 3
ARGS=("$@")
# shellcheck disable=SC2054  # one argument: two recipes
[ ${#ARGS[@]} = 0 ] && ARGS=(--recipe qwen35_35b,qwen35_397b)
HERE=$(dirname "$(readlink -f "$0")")
DRIVER=$HERE/gdn_peers.py
mkdir -p "$OUT"
# shellcheck source=SCRIPTDIR/peers_env.sh
source "$HERE/peers_env.sh" || exit 1 # the peers on PYTHONPATH, CACHE: the folder to pack or none
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$BIN" gdn-bench "${ARGS[@]}" --backend fused --json "$OUT/fused.json" >"$OUT/fused.txt" \
  2>/dev/null
echo "gdn-bench --backend fused: rc=$?"
"$BIN" gdn-bench "${ARGS[@]}" --backend all --peers-driver "$DRIVER" \
  --json "$OUT/bench.json" --plot "$OUT/bench.png" >"$OUT/bench.txt"
echo "gdn-bench --backend all: rc=$?"
python3 - "$OUT/bench.json" "$OUT/fused.json" <<'EOF'
import json, sys
def fused(path):
    doc = json.load(open(path))
    return {(r["shape"], r["T"], m): t["graph_ms"]["median"] for r in doc["backends"]
            if r["backend"] == "fused" for m, t in r["times"].items() if t["graph_ms"]}
a, b = fused(sys.argv[1]), fused(sys.argv[2])
for key in sorted(a):
    if key in b:
        print(f"fused {key[0]} T{key[1]} {key[2]:13s} all backends {a[key]:.3f} ms, alone "
              f"{b[key]:.3f} ms: {100 * (a[key] / b[key] - 1):+.1f}%")
EOF
# The runs' own caches are the ones to carry (README.md here, "Carrying the compile caches"):
# the carried pack and what the runs compiled beyond it (a shape gpu_peers_cache.sh did not fill).
PACK_RC=0
if [ -n "$CACHE" ]; then
  bash "$HERE/pack_cache.sh" "$CACHE" "$OUT" || PACK_RC=1
else
  echo "caches: the caller's own (a cache variable was set), not packed"
fi
cat "$OUT/bench.txt"
exit $PACK_RC
