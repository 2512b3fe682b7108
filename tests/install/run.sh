#!/usr/bin/env bash
# Installs a configured and built Halo tree to a temporary prefix, then configures, builds and runs
# the user project in tests/install against it (find_package(halo), every public header alone,
# no compile flags leaking from Halo). Removes the temporary directories on exit.
#
#   bash tests/install/run.sh BUILD_DIR      e.g. build/cpu-release
set -euo pipefail
if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: bash tests/install/run.sh BUILD_DIR (a configured, built Halo tree)" >&2
  exit 2
fi
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$here" -B "$tmp/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" --parallel "$(nproc 2>/dev/null || echo 2)"
"$tmp/build/consumer"
