#!/usr/bin/env bash
# Repartitioning that follows a growing graph: nodes migrated and communication volume per
# snapshot for the three methods of `halo partition --snapshots` (scratch: METIS per snapshot,
# relabelled by maximum overlap; streaming: LDG for new nodes; migration: Scotch's
# repartitioning) at P = 4 and 8, on
#   - CollegeMsg, cumulative snapshots at EvolveGCN's UC Irvine steps (--snapshot-window 190080:
#     89 snapshots), and
#   - an R-MAT graph (scale SCALE, default 14: 16,384 nodes, degree 8) grown in 10 steps.
# Then R-MAT at P = 8 under --method migration for --migration-weight 0.25 .. 64 (the trade-off).
# Writes OUT/migration.csv, OUT/migration.md and OUT/migration.png.
#
#   bash bench/dynamic/migration.sh BUILD_DIR [OUT_DIR] [SCALE] [MIGRATION_WEIGHT]
#
# BUILD_DIR holds tools/halo/halo (any build; the numbers are counts, not times).
# MIGRATION_WEIGHT (default: halo's default) is passed as --migration-weight.
set -euo pipefail
build=${1:?usage: bench/dynamic/migration.sh BUILD_DIR [OUT_DIR] [SCALE] [MIGRATION_WEIGHT]}
out=${2:-bench/results}
scale=${3:-14}
weight=${4:-}
halo="$build/tools/halo/halo"
shared=${HALO_DATASETS:-$build/data}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
export OMP_WAIT_POLICY=passive

run() {  # name, parts, method, dataset flags...
  local name=$1 parts=$2 method=$3
  shift 3
  local extra=()
  if [ "$method" = migration ] && [ -n "$weight" ]; then extra=(--migration-weight "$weight"); fi
  if ! "$halo" partition "$@" --parts "$parts" --method "$method" "${extra[@]}" \
      --out "$work/$name-p$parts-$method" > "$work/$name-p$parts-$method.log" 2>&1; then
    cat "$work/$name-p$parts-$method.log" >&2
    echo "migration: $name P=$parts $method failed" >&2
    exit 1
  fi
}

for parts in 4 8; do
  for method in scratch streaming migration; do
    run collegemsg "$parts" "$method" --dataset "$shared/collegemsg" --snapshot-window 190080
    run rmat "$parts" "$method" --dataset rmat --rmat-scale "$scale" --snapshots 10
  done
done
# The trade-off --migration-weight sets: R-MAT, P = 8, Scotch at several weights.
for w in 0.25 1 4 16 64; do
  if ! "$halo" partition --dataset rmat --rmat-scale "$scale" --snapshots 10 --parts 8 \
      --method migration --migration-weight "$w" --out "$work/sweep-$w" > "$work/sweep-$w.log" 2>&1; then
    cat "$work/sweep-$w.log" >&2
    echo "migration: sweep weight $w failed" >&2
    exit 1
  fi
done
"$py" "$(dirname "$0")/migration.py" "$work" "$out"
