#!/bin/bash
# Packs the peers' compile-cache folder (README.md here, "Carrying the compile caches") as
# OUT_DIR/tilelang-cache.tar.xz, for gpu_peers_cache.sh and gpu_peers.sh:
#
#   pack_cache.sh CACHE_DIR OUT_DIR [PART_BYTES]
#
# A pack over PART_BYTES (default 15 MiB) is split into tilelang-cache.tar.xz.partNN files
# (`cat tilelang-cache.tar.xz.part* > tilelang-cache.tar.xz` joins them). A pack or parts of an
# earlier call in OUT_DIR are replaced, never mixed with the new ones.
set -u -o pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: pack_cache.sh CACHE_DIR OUT_DIR [PART_BYTES]" >&2
  exit 2
fi
CACHE=$1 OUT=$2 PART_BYTES=${3:-$((15 << 20))}
PACK=$OUT/tilelang-cache.tar.xz
rm -f "$PACK" "$PACK".part* "$PACK.tmp"
# A stopped compile leaves temporary files only (TileLang renames a kernel's folder into place
# whole): left out, also those that a compiler process orphaned by the stop is still writing.
# xz on all cores: single-threaded, packing ~90 MB took longer than the 30 s this step had on the
# H200 (a device call ran out of time here).
# Triton's intermediate stages (.source, .ttir, .ttgir, .llir, .ptx) are left out too: a cached
# kernel loads from its .cubin and .json files. That cut the day's pack from 21 to 8.4 MB, and on
# the H200 (2026-12-01 22:12 UTC) FLA's and FlashQLA's first calls from such a pack took 0.5 to
# 4.7 s, compiling nothing.
if ! tar -cf - -C "$CACHE" --exclude='.*.tmp*' --exclude='./triton/*.source' \
  --exclude='./triton/*.ttir' --exclude='./triton/*.ttgir' --exclude='./triton/*.llir' \
  --exclude='./triton/*.ptx' . | xz -T0 -6 >"$PACK.tmp"; then
  rm -f "$PACK.tmp"
  echo "error: packing $CACHE into $PACK failed" >&2
  exit 1
fi
mv "$PACK.tmp" "$PACK"
du -sh "$CACHE" "$CACHE"/*
ls -l "$PACK"
# What comes back from a device call is at most 16 MiB a file: a larger pack travels in parts.
if [ "$(stat -c %s "$PACK")" -gt "$PART_BYTES" ]; then
  if ! split -b "$PART_BYTES" -d "$PACK" "$PACK.part"; then
    rm -f "$PACK".part*
    echo "error: splitting $PACK into parts of $PART_BYTES bytes failed" >&2
    exit 1
  fi
  rm "$PACK"
  ls -l "$PACK".part*
fi
