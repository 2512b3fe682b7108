#!/usr/bin/env bash
# Paired before/after runs of a Halo change with its peers beside them, on the identical graph.
#
#   bash bench/peers/ab.sh BEFORE_HALO AFTER_HALO [WORKLOAD...]
#
# BEFORE_HALO / AFTER_HALO: two `halo` binaries (bench preset). Workloads (default sage-10-5
# sage-15-10-5), as bench/peers/run.sh runs them: sage-10-5, sage-15-10-5 (GraphSAGE
# mini-batch on the ogbn-arxiv shape, batch 1024), gcn (GCN full graph, 128 -> 256 -> 40),
# cora (GCN on Cora, 200 epochs, beside PyG and DGL) and rmat-sample (neighbour sampling alone
# on the 2^20-node R-MAT, fan-outs 15,10,5, batch 1024, 3 epochs of batches per run; Halo's side
# is bench/peers/halo_ops, HALO_AB_OPS_BEFORE / HALO_AB_OPS_AFTER, default the bench preset's).
# The SAGE workloads run DGL twice: as its example (dropout between layers only) and as
# "dgl+in", with dropout on the input features too, as Halo's model. Each repetition
# (HALO_AB_REPS, default 2) runs every system once, the order rotated, 2 threads
# each; every line printed is one run: workload, system, epoch median in seconds (rmat-sample:
# the median of its epochs' sampled edges per second), load average before the run. The peers
# come from the peers' virtualenv (HALO_PEERS_VENV, default build/peers-venv). Halo's
# `--profile` tables go to build/speed-work/*.profile.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { sed -n 2,18p "$0"; exit 2; }
before=$1 after=$2
shift 2
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(sage-10-5 sage-15-10-5)
py=${HALO_PEERS_VENV:-$root/build/peers-venv}/bin/python
reps=${HALO_AB_REPS:-2}
ops_before=${HALO_AB_OPS_BEFORE:-$root/build/bench/bench/halo_ops}
ops_after=${HALO_AB_OPS_AFTER:-$root/build/bench/bench/halo_ops}
work=$root/build/speed-work
mkdir -p "$work"
export OMP_NUM_THREADS=2 GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-100}
arxiv="--dataset synthetic --synthetic-nodes 169343 --synthetic-classes 40 --synthetic-features 128 --synthetic-degree 13.7"
rmat="--dataset rmat --rmat-scale 20 --rmat-degree 8 --rmat-features 1 --rmat-seed 1"
cora="--dataset $root/build/bench/data/planetoid/cora"

declare -A halo_args peer_args graph peers
halo_args[sage-10-5]="train --model sage --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5 --epochs 3"
peer_args[sage-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 10,5 --epochs 3"
halo_args[sage-15-10-5]="train --model sage --layers 3 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 15,10,5 --epochs 2"
peer_args[sage-15-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 15,10,5 --epochs 2"
halo_args[gcn]="train --hidden 256 --epochs 5"
peer_args[gcn]="--workload gcn --hidden 256 --epochs 5"
halo_args[cora]="train --epochs 200"
peer_args[cora]="--workload gcn --epochs 200"
halo_args[rmat-sample]="sample --fanouts 15,10,5 --batch 1024 --reps 3"
peer_args[rmat-sample]="--workload sample --fanouts 15,10,5 --batch 1024 --reps 3"
for w in sage-10-5 sage-15-10-5 gcn; do graph[$w]=arxiv peers[$w]=dgl; done
# dgl+in: DGL with dropout on the input features too, the computation Halo's GraphSAGE runs.
peers[sage-10-5]="dgl dgl+in" peers[sage-15-10-5]="dgl dgl+in"
graph[cora]=cora peers[cora]="pyg dgl"
graph[rmat-sample]=rmat peers[rmat-sample]=dgl

median() { /usr/bin/python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.stdin.read().split()))'; }

run() {  # workload system
  local w=$1 sys=$2 load t file=$work/${graph[$1]}.npz
  load=$(cut -d' ' -f1 /proc/loadavg)
  if [ "$sys" != before ] && [ "$sys" != after ]; then
    local out
    local extra=""
    [ "${sys#*+}" = in ] && extra=--input-dropout
    out=$("$py" "$here/peer.py" --system "${sys%+in}" --graph "$file" --threads 2 ${peer_args[$w]} \
      $extra 2>/dev/null |
      grep '"summary": true')
    t=$(/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1])
print(d.get("epoch_time_median_s", d.get("sampled_edges_per_s_median")))' "$out")
  elif [ "$w" = rmat-sample ]; then
    local ops=$ops_before
    [ "$sys" = after ] && ops=$ops_after
    t=$("$ops" ${halo_args[$w]%% *} "$file" ${halo_args[$w]#* } --threads 2 2>&1 |
      /usr/bin/python3 -c 'import json,sys
print(sorted(json.loads(l)["sampled_edges_per_s"] for l in sys.stdin if l.startswith("{"))[1])')
  else
    local bin=$before
    [ "$sys" = after ] && bin=$after
    local data=$arxiv
    [ "$w" = cora ] && data=$cora
    "$bin" ${halo_args[$w]} $data --seed 1 --threads 2 --profile --json "$work/$w-$sys.json" \
      > "$work/$w-$sys.profile" 2>&1
    t=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epoch_time_median_s"])' \
      "$work/$w-$sys.json")
  fi
  echo "$w $sys $t load $load"
}

# OpenBLAS's kernels decide Halo's GEMM rate: a value the environment sets is kept by `halo`.
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset: halo and OpenBLAS choose}"
for w in "${workloads[@]}"; do
  [ -n "${halo_args[$w]:-}" ] || { echo "bench/peers/ab.sh: unknown workload $w" >&2; exit 2; }
  f=$work/${graph[$w]}.npz
  if [ ! -f "$f" ]; then
    g=${graph[$w]}
    "$after" datasets export ${!g} --out "$f.tmp.npz" >/dev/null && mv "$f.tmp.npz" "$f"
  fi
  read -r -a systems <<< "before after ${peers[$w]}"
  k=${#systems[@]}
  for ((r = 0; r < reps; r++)); do
    for ((i = 0; i < k; i++)); do run "$w" "${systems[$(((i + r) % k))]}"; done
  done
done
