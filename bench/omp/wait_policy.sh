#!/usr/bin/env bash
# How libgomp's wait policy behaves beside another busy process: `halo train` epoch times with no
# hog and with one or two busy loops pinned to the cores, for libgomp's default,
# OMP_WAIT_POLICY=passive and several GOMP_SPINCOUNT values, at 2 threads (the default on a 2-core
# machine) and 1, on Cora and a synthetic graph. Writes a markdown table to OUT. The measurement
# (interleaved rounds, medians, runs disturbed by other processes repeated) is in wait_policy.py.
#
#   bash bench/omp/wait_policy.sh [HALO_BINARY] [OUT.md]
#     defaults: build/cpu-release/tools/halo/halo, bench/results/omp_wait.md
#   Environment: RUNS (5), POLICIES ("default passive spin=1000 spin=10000 spin=30000
#   spin=100000"; also "halo", "active"), POLICIES_1 (1-thread rows, "default"), HOGS ("0 1 2"),
#   THREADS ("2 1"), WORKLOADS ("cora synthetic-20k"), CORA (build/bench/data/planetoid/cora),
#   FOREIGN_LIMIT (0.10), RETRIES (3).
set -euo pipefail
command -v taskset >/dev/null || { echo "wait_policy.sh: needs taskset (util-linux)" >&2; exit 2; }
exec python3 "$(dirname "$0")/wait_policy.py" "$@"
