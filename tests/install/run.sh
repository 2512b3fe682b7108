#!/usr/bin/env bash
# Installs a configured and built Halo tree to a temporary prefix, then, against that install:
#   1. configures, builds and runs the user project in tests/install (find_package(halo), every
#      public header alone, no compile flags leaking from Halo);
#   2. configures and builds examples/ (a standalone project) and runs every example on Cora:
#      train_gcn (saves a model), custom_model, embed_nodes (loads it), gcn_embed, and train_gcn
#      under mpiexec on a 2-part partition made by the installed `halo partition`.
# Removes the temporary directories on exit.
#
#   bash tests/install/run.sh BUILD_DIR      e.g. build/cpu-release
#
# Cora is read from BUILD_DIR/data/planetoid/cora (data/planetoid.tar.xz, unpacked by the
# configuration).
set -euo pipefail
if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: bash tests/install/run.sh BUILD_DIR (a configured, built Halo tree)" >&2
  exit 2
fi
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/halo-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
configure() {  # configure SOURCE BUILD: against the temporary install
  cmake -S "$1" -B "$2" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$2.configure.log" 2>&1 || { cat "$2.configure.log"; exit 1; }
}
jobs=$(nproc 2>/dev/null || echo 2)

configure "$here" "$tmp/build"
cmake --build "$tmp/build" --parallel "$jobs"
"$tmp/build/consumer"

echo "== examples/ against the installed package =="
cora=$build_dir/data/planetoid/cora
if [ ! -f "$cora/meta.tsv" ]; then
  echo "install check: Cora not found at $cora (configure $build_dir again: it unpacks data/)" >&2
  exit 1
fi
configure "$repo/examples" "$tmp/examples"
cmake --build "$tmp/examples" --parallel "$jobs"
ex=$tmp/examples
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
"$ex/train_gcn" "$cora" "$tmp/gcn.halo" 30
"$ex/custom_model" "$cora" 30
"$ex/embed_nodes" "$tmp/gcn.halo" "$cora" 1 "$tmp/embedding.npy"
"$ex/gcn_embed"
"$tmp/prefix/bin/halo" partition --dataset "$cora" --parts 2 --out "$tmp/parts" >"$tmp/partition.log" 2>&1 ||
  { cat "$tmp/partition.log"; exit 1; }
mpiexec -n 2 "$ex/train_gcn" --partitions "$tmp/parts" "$tmp/gcn2.halo" 30
# The model the two ranks saved is a model file like any other.
"$tmp/prefix/bin/halo" predict --model "$tmp/gcn2.halo" --dataset "$cora" --out "$tmp/p.npy"
