#!/usr/bin/env bash
# Runs the example commands of README.md and docs/cli.md as written (every line of their ```sh
# blocks; synopses with placeholders are ```text), the way a
# user with a fresh clone would after `bash tools/setup.sh run`: from a scratch directory where
# `build/cpu-release` is BUILD_DIR, with its `halo` (and `halo-mpiexec`) on PATH, registered
# Cora from a local mirror of data/planetoid/raw (HALO_DATASET_MIRROR, docs/datasets.md) and a
# scratch data directory. Lines whose comment says "needs" (the network, a GPU) are listed and
# skipped; `bash tools/setup.sh ...` lines are what runs this. Exit 1 if any command fails.
#
#   bash tools/check_examples.sh [BUILD_DIR]      (default build/cpu-release)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build/cpu-release}" && pwd)
[ -x "$build/tools/halo/halo" ] || { echo "check_examples: $build/tools/halo/halo missing" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/halo-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/mirror" "$work/build"
ln -s "$build" "$work/build/cpu-release"
ln -s "$build/tools/halo/halo" "$work/bin/halo"
ln -s "$repo/tools/launch/halo-mpiexec" "$work/bin/halo-mpiexec"
ln -s "$build/data/planetoid/raw" "$work/mirror/cora"
export PATH="$work/bin:$PATH" HALO_DATASET_MIRROR="file://$work/mirror" HALO_DATA_DIR="$work/cache"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

# The commands: the lines of the ```sh blocks, continuation lines joined.
mapfile -t commands < <(awk '
  /^```sh/ { inside = 1; next }
  /^```/   { inside = 0; next }
  inside {
    line = line $0
    if (sub(/\\$/, "", line)) next
    print line; line = ""
  }' "$repo/README.md" "$repo/docs/cli.md")
failed=0 ran=0
for c in "${commands[@]}"; do
  case "$c" in
    "bash tools/setup.sh"*) continue ;;
    *"# needs "*) echo "check_examples: skipped (${c##*# }): ${c%%#*}"; continue ;;
  esac
  ran=$((ran + 1))
  if (cd "$work" && timeout 900 bash -c "$c" >"$work/out.txt" 2>&1); then
    echo "check_examples: ok: $c"
  else
    echo "check_examples: FAILED (exit $?): $c"
    tail -5 "$work/out.txt" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done
echo "check_examples: $ran commands run, $failed failed"
[ "$failed" -eq 0 ]
