#!/usr/bin/env bash
# The disk unreadable mid-run (docs/cli.md, --memory-budget): a store read from its files is
# served by a FUSE file system (eio_fs) whose reads of features.bin start failing with EIO while
# `halo train` reads rows from it, on the training thread (--prefetch 0) and on producer threads
# (--prefetch 2). The run must stop within a minute (no hang), exit 1 and say why in one line
# naming the file. Skipped (exit 77) where FUSE cannot be mounted (no /dev/fuse access, no
# fusermount3, a container without the capability).
#
#   eio_test.sh HALO EIO_FS
set -u
halo=$1
eio_fs=$2
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is not usable here"
command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 is not installed"

work=$(mktemp -d)
mnt=$work/mnt
control=$work/fail-now
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  if mountpoint -q "$mnt" 2>/dev/null; then
    fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
  fi
  mountpoint -q "$mnt" 2>/dev/null || rm -rf "$work"
}
trap cleanup EXIT

"$halo" datasets prepare --dataset rmat --rmat-scale 14 --rmat-degree 8 --rmat-features 64 \
  --out "$work/store" >/dev/null 2>&1 || fail "halo datasets prepare"
mkdir "$mnt"
"$eio_fs" "$work/store" "$mnt" "$control" 2>"$work/mount.err" ||
  skip "cannot mount FUSE here: $(head -1 "$work/mount.err")"

for prefetch in 0 2; do
  rm -f "$control"
  # A 4 MiB budget under the store's 5 MB: rows read from features.bin with pread, a 1 MiB cache.
  "$halo" train --dataset "$mnt" --model sage --layers 2 --hidden 16 --fanouts 10,5 \
    --eval-fanouts 10,5 --batch-size 128 --mode mini-batch --epochs 1000000 --threads 2 \
    --prefetch "$prefetch" --memory-budget 4MiB >"$work/out" 2>"$work/err" &
  pid=$!
  # Until it has trained an epoch (its progress is on stderr; at most a minute), then the disk
  # fails: reads of features.bin now return EIO, and its cached pages are dropped so that reads
  # reach the disk.
  for _ in $(seq 600); do
    grep -q '^epoch' "$work/err" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^epoch' "$work/err" || fail "--prefetch $prefetch: no epoch trained: $(tail -2 "$work/err")"
  touch "$control"
  dd if="$mnt/features.bin" iflag=nocache count=0 status=none
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && fail "--prefetch $prefetch: the run still runs a minute after the disk failed"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" -eq 1 ] || fail "--prefetch $prefetch: exit $rc, expected 1: $(tail -3 "$work/err")"
  [ "$(grep -c 'error' "$work/err")" -eq 1 ] || fail "--prefetch $prefetch: not one error line: $(cat "$work/err")"
  grep -q "^halo: error: $mnt/features.bin: read failed at byte [0-9]*: Input/output error$" \
    "$work/err" || fail "--prefetch $prefetch: unexpected error: $(tail -1 "$work/err")"
  echo "--prefetch $prefetch: $(tail -1 "$work/err")"
done
echo "ok"
