#!/usr/bin/env bash
# Distributed full-graph scaling on this machine: GCN on the ogbn-arxiv-shape synthetic graph
# (169,343 nodes, ~2.3M edges, 128 features, 40 classes; hidden 256), one process vs P = 2 ranks,
# halo exchange overlapped vs not. Every configuration runs REPEATS times, interleaved, so that
# drift of this noisy VM hits all of them alike. Writes OUT/scaling.csv and OUT/scaling.png.
#
#   bash bench/scaling/run.sh BUILD_DIR [OUT_DIR] [REPEATS] [EPOCHS]
#
# BUILD_DIR holds tools/halo/halo (a Release build with MPI, e.g. build/cpu-release).
# HALO_SCALING_NODES overrides the node count (the CI smoke run uses a small graph).
set -euo pipefail
build=${1:?usage: bench/scaling/run.sh BUILD_DIR [OUT_DIR] [REPEATS] [EPOCHS]}
out=${2:-bench/results}
repeats=${3:-3}
epochs=${4:-20}
nodes=${HALO_SCALING_NODES:-169343}
halo="$build/tools/halo/halo"
here=$(cd "$(dirname "$0")" && pwd)
# Debian's interpreter, where apt installs python3-matplotlib (a pyenv or venv python3 earlier
# on the PATH would not see it).
py=/usr/bin/python3
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

data=(--dataset synthetic --synthetic-nodes "$nodes" --synthetic-classes 40
      --synthetic-features 128 --synthetic-degree 13.7 --synthetic-seed 1)
model=(--model gcn --layers 2 --hidden 256 --epochs "$epochs" --seed 1)
fail() { cat "$work"/*.log >&2; echo "scaling: $1 failed" >&2; exit 1; }
for p in 1 2; do
  "$halo" partition "${data[@]}" --parts "$p" --out "$work/p$p" > "$work/partition-$p.log" 2>&1 ||
    fail "partition into $p"
done

# name, ranks, threads per rank, extra flags ("" = one process without partitions)
configs=(
  "single_${cores}t|0|$cores|"
  "p1_1t|1|1|--partitions $work/p1"
  "p1_${cores}t|1|$cores|--partitions $work/p1"
  "p2_overlap|2|$(( cores / 2 > 0 ? cores / 2 : 1 ))|--partitions $work/p2"
  "p2_no_overlap|2|$(( cores / 2 > 0 ? cores / 2 : 1 ))|--partitions $work/p2 --no-overlap"
)
csv="$out/scaling.csv"
echo "config,repeat,ranks,threads_per_rank,epoch_time_median_s,exchange_bytes_per_epoch,exchange_time_s,exchange_exposed_s,exchange_hidden_fraction,allreduce_time_s,compute_time_s,test_accuracy,final_train_loss" > "$csv.tmp"
for r in $(seq 1 "$repeats"); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name ranks threads flags <<< "$c"
    json="$work/$name-$r.json"
    if [ "$ranks" = 0 ]; then
      # shellcheck disable=SC2086
      OMP_WAIT_POLICY=passive "$halo" train "${data[@]}" "${model[@]}" --threads "$threads" \
        --json "$json" > /dev/null 2>> "$work/train.log" || fail "$name"
      ranks=1
    else
      # shellcheck disable=SC2086
      OMP_WAIT_POLICY=passive mpiexec -n "$ranks" "$halo" train "${model[@]}" $flags \
        --threads "$threads" --json "$json" > /dev/null 2>> "$work/train.log" ||
        fail "$name"
    fi
    "$py" - "$json" "$name" "$r" "$ranks" "$threads" >> "$csv.tmp" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
keys = ["epoch_time_median_s", "exchange_bytes_per_epoch", "exchange_time_s", "exchange_exposed_s",
        "exchange_hidden_fraction", "allreduce_time_s", "compute_time_s", "test_accuracy",
        "final_train_loss"]
print(",".join(sys.argv[2:6] + [str(j.get(k, 0)) for k in keys]))
PY
    echo "scaling: $name repeat $r done" >&2
  done
done
mv "$csv.tmp" "$csv"
"$py" "$here/plot.py" "$csv" "$out/scaling.png"
echo "scaling: wrote $csv and $out/scaling.png"
