#!/usr/bin/env bash
# The bytes that move CollegeMsg's 88 snapshots to 2 ranks (runtime::distribute_snapshots):
# the ranks' rows of snapshot 0, then per snapshot the delta pairs touching each rank's rows
# and the rows migrating between ranks, against resending each snapshot's parts whole. The
# owners come from `halo partition --snapshots 88 --parts 2 --method migration`; the snapshots
# are the link task's (--window-snapshots 1: each step's own events) and cumulative (0).
# Writes OUT/dynamic_traffic_w1.csv and OUT/dynamic_traffic_w0.csv; prints the sums.
#
#   bash bench/dynamic/traffic.sh BUILD_DIR BENCH_BUILD_DIR [OUT_DIR]
#
# BUILD_DIR holds tools/halo/halo, BENCH_BUILD_DIR bench/snapshot_traffic (the `bench`
# preset); the numbers are counts, not times.
set -euo pipefail
build=${1:?usage: bench/dynamic/traffic.sh BUILD_DIR BENCH_BUILD_DIR [OUT_DIR]}
bench=${2:?usage: bench/dynamic/traffic.sh BUILD_DIR BENCH_BUILD_DIR [OUT_DIR]}
out=${3:-bench/results}
shared=${HALO_DATASETS:-$build/data}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
"$build/tools/halo/halo" partition --dataset "$shared/collegemsg" --snapshots 88 --parts 2 \
  --method migration --out "$work/series" > /dev/null
for w in 1 0; do
  mpiexec -n 2 "$bench/bench/snapshot_traffic" "$shared/collegemsg" "$work/series" 88 "$w" \
    "$out/dynamic_traffic_w$w.csv"
done
