# shellcheck shell=bash
# Sourced by gpu_peers.sh, gpu_bar.sh, gpu_contract.sh (bash; PEERS, the peers' folder, set by the
# caller): installs FLA's wheels into $TMP/peers-site (TMP: PEERS_TMP, default /tmp), unpacks
# flashqla-site.tar.xz beside it, and puts both on PYTHONPATH: one path serves every backend (FLA's
# worker refuses tilelang and flash_qla at import). Unless the caller set one of
# TILELANG_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, the three name one folder,
# CACHE ($TMP/peers-cache, the one gpu_peers_cache.sh fills: Triton's and inductor's entries hit
# only there), with a carried tilelang-cache.tar.xz unpacked into it; CACHE is empty otherwise
# (the caller's caches are theirs, never packed). Returns 1 when an install step fails.
TMP=${PEERS_TMP:-/tmp}
mkdir -p "$TMP/peers-site" "$TMP/peers-qla" || return 1
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$TMP/peers-site" \
  "$PEERS"/*.whl || return 1
# An earlier step of the same call may have unpacked the site: processes may be running from it.
if [ ! -d "$TMP/peers-qla/flash_qla" ]; then
  tar -xJf "$PEERS/flashqla-site.tar.xz" -C "$TMP/peers-qla" || return 1
fi
CACHE=
if [ -z "${TILELANG_CACHE_DIR:-}${TORCHINDUCTOR_CACHE_DIR:-}${TRITON_CACHE_DIR:-}" ]; then
  CACHE=$TMP/peers-cache
  mkdir -p "$CACHE/inductor" "$CACHE/triton" || return 1
  if [ -f "$PEERS/tilelang-cache.tar.xz" ]; then
    tar -xJf "$PEERS/tilelang-cache.tar.xz" -C "$CACHE" || return 1
  fi
  export TILELANG_CACHE_DIR=$CACHE TORCHINDUCTOR_CACHE_DIR=$CACHE/inductor \
    TRITON_CACHE_DIR=$CACHE/triton
fi
export PYTHONPATH=$TMP/peers-site:$TMP/peers-qla PYTHONUNBUFFERED=1
