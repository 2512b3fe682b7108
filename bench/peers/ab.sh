#!/usr/bin/env bash
# Paired before/after runs of a Halo change with DGL beside them, on the identical graph.
#
#   bash bench/peers/ab.sh BEFORE_HALO AFTER_HALO [WORKLOAD...]
#
# BEFORE_HALO / AFTER_HALO: two `halo` binaries (bench preset). Workloads (default sage-10-5
# sage-15-10-5): sage-10-5, sage-15-10-5 (GraphSAGE mini-batch on the ogbn-arxiv shape, batch
# 1024) and gcn (GCN full graph, 128 -> 256 -> 40), as bench/peers/run.sh runs them. Each
# repetition (HALO_AB_REPS, default 2) runs before, after and DGL once, the order rotated, 2
# threads each; every line printed is one run: workload, system, epoch median (s), load average
# before the run. DGL comes from the peers' virtualenv (HALO_PEERS_VENV, default
# build/peers-venv). Halo's `--profile` tables go to build/speed-work/*.profile.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
before=$1 after=$2
shift 2
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(sage-10-5 sage-15-10-5)
py=${HALO_PEERS_VENV:-$root/build/peers-venv}/bin/python
reps=${HALO_AB_REPS:-2}
work=$root/build/speed-work
mkdir -p "$work"
export OMP_NUM_THREADS=2 GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-100}
arxiv="--dataset synthetic --synthetic-nodes 169343 --synthetic-classes 40 --synthetic-features 128 --synthetic-degree 13.7"
graph=$work/arxiv.npz
[ -f "$graph" ] || "$after" datasets export $arxiv --out "$graph" >/dev/null

declare -A halo_args dgl_args
halo_args[sage-10-5]="--model sage --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5 --epochs 3"
dgl_args[sage-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 10,5 --epochs 3"
halo_args[sage-15-10-5]="--model sage --layers 3 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 15,10,5 --epochs 2"
dgl_args[sage-15-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 15,10,5 --epochs 2"
halo_args[gcn]="--hidden 256 --epochs 5"
dgl_args[gcn]="--workload gcn --hidden 256 --epochs 5"

run() {  # workload system
  local w=$1 sys=$2 load t
  load=$(cut -d' ' -f1 /proc/loadavg)
  if [ "$sys" = dgl ]; then
    t=$("$py" "$here/peer.py" --system dgl --graph "$graph" --threads 2 ${dgl_args[$w]} |
      grep '"summary": true' | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch_time_median_s"])')
  else
    local bin=$before
    [ "$sys" = after ] && bin=$after
    "$bin" train $arxiv ${halo_args[$w]} --seed 1 --threads 2 --profile --json "$work/$w-$sys.json" \
      > "$work/$w-$sys.profile" 2>&1
    t=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epoch_time_median_s"])' \
      "$work/$w-$sys.json")
  fi
  echo "$w $sys $t load $load"
}

systems=(before after dgl)
for w in "${workloads[@]}"; do
  [ -n "${halo_args[$w]:-}" ] || { echo "bench/peers/ab.sh: unknown workload $w" >&2; exit 2; }
  for ((r = 0; r < reps; r++)); do
    for ((k = 0; k < 3; k++)); do run "$w" "${systems[$(((k + r) % 3))]}"; done
  done
done
