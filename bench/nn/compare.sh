#!/usr/bin/env bash
# Two halo binaries side by side (e.g. the previous commit's and this one's): the median epoch
# time of every task's workloads, each binary run REPEATS times, alternating, so that the drift
# of a noisy machine hits both alike. Prints a markdown table: medians, and the median over
# repeats of the per-pair ratio new / old.
#
#   bash bench/nn/compare.sh OLD_HALO NEW_HALO [REPEATS]
#   WORKLOADS="arxiv-sage-mb" selects workloads (default: all five).
#
# Workloads (2 threads, OpenMP wait policy fixed for both: GOMP_SPINCOUNT as libgomp's default):
#   cora-gcn       GCN full graph on Cora, 200 epochs
#   arxiv-gcn      GCN full graph on the ogbn-arxiv shape (169,343 nodes, 128 -> 256 -> 40), 10 epochs
#   arxiv-sage-mb  GraphSAGE mini-batch on the arxiv shape, batch 1024, fan-outs 10,5, 2 epochs
#   acm-rgcn       R-GCN full graph on heco_acm (the heterogeneous task), 80 epochs
#   collegemsg-evolvegcn  EvolveGCN-O on CollegeMsg, 88 snapshots (link prediction), 10 epochs
# The datasets: HALO_DATASETS, default build/bench/data (any build's <build>/data).
# The synthetic graph is seeded by --seed in binaries before the dataset-seed split and by
# --synthetic-seed after it: both flags are given where the binary knows them (OLD_SEED_FLAGS /
# NEW_SEED_FLAGS override).
set -euo pipefail
old=${1:?usage: compare.sh OLD_HALO NEW_HALO [REPEATS]}
new=${2:?usage: compare.sh OLD_HALO NEW_HALO [REPEATS]}
repeats=${3:-5}
cd "$(dirname "$0")/../.."
data=${HALO_DATASETS:-build/bench/data}
cora=$data/planetoid/cora
seed_flags() {  # the dataset-seed flags a binary accepts
  if "$1" train --help 2>/dev/null | grep -q -- --synthetic-seed; then
    echo "--seed 1 --synthetic-seed 1"
  else
    echo "--seed 1"
  fi
}
old_seed=${OLD_SEED_FLAGS:-$(seed_flags "$old")}
new_seed=${NEW_SEED_FLAGS:-$(seed_flags "$new")}
arxiv="--dataset synthetic --synthetic-nodes 169343 --synthetic-classes 40 --synthetic-features 128 --synthetic-degree 13.7"
declare -A workloads=(
  [cora-gcn]="--dataset $cora --epochs 200"
  [arxiv-gcn]="$arxiv --hidden 256 --epochs 10 SEED"
  [arxiv-sage-mb]="$arxiv --model sage --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5 --epochs 2 SEED"
  [acm-rgcn]="--dataset $data/heco_acm --model rgcn --epochs 80"
  [collegemsg-evolvegcn]="--dataset $data/collegemsg --task link --model evolvegcn-o --snapshots 88 --hidden 100 --epochs 10"
)
read -r -a order <<< "${WORKLOADS:-cora-gcn arxiv-gcn arxiv-sage-mb acm-rgcn collegemsg-evolvegcn}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOMP_SPINCOUNT=300000
unset OMP_WAIT_POLICY
run() {  # binary seed-flags workload -> median epoch seconds
  local flags=${workloads[$3]/SEED/$2}
  # shellcheck disable=SC2086
  "$1" train $flags --threads 2 --json "$tmp/r.json" > /dev/null 2> "$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epoch_time_median_s"])' "$tmp/r.json"
}
for w in "${order[@]}"; do
  : > "$tmp/$w.old"
  : > "$tmp/$w.new"
  for ((r = 0; r < repeats; r++)); do
    if ((r % 2 == 0)); then
      run "$old" "$old_seed" "$w" >> "$tmp/$w.old"
      run "$new" "$new_seed" "$w" >> "$tmp/$w.new"
    else
      run "$new" "$new_seed" "$w" >> "$tmp/$w.new"
      run "$old" "$old_seed" "$w" >> "$tmp/$w.old"
    fi
  done
done
echo "| workload | old median epoch (ms) | new median epoch (ms) | new / old (median of pairs) | pairs |"
echo "| --- | --- | --- | --- | --- |"
for w in "${order[@]}"; do
  /usr/bin/python3 - "$w" "$tmp/$w.old" "$tmp/$w.new" <<'PY'
import statistics, sys
old = [float(x) for x in open(sys.argv[2])]
new = [float(x) for x in open(sys.argv[3])]
ratios = [n / o for o, n in zip(old, new)]
print(f"| {sys.argv[1]} | {statistics.median(old) * 1e3:.2f} | {statistics.median(new) * 1e3:.2f} "
      f"| {statistics.median(ratios):.3f} | {' '.join(f'{r:.3f}' for r in ratios)} |")
PY
done
