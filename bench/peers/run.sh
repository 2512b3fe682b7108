#!/usr/bin/env bash
# Halo against PyTorch Geometric and DGL, side by side on the identical graphs.
#
#   bash bench/peers/run.sh [--quick] [--halo-only] [--reps N] [--out DIR] [BUILD_DIR]
#
# BUILD_DIR (default build/bench) holds a `bench`-preset build (tools/halo/halo, and
# bench/halo_ops for the workloads that time Halo's operations). Every graph is generated or
# read by Halo and exported with `halo datasets export` to an .npz that the peers' script
# (bench/peers/peer.py) loads, so all three systems train on the same graph, features, labels
# and splits. Each repetition runs every system once per workload, the order of the systems
# rotated from one repetition to the next; 2 threads each (HALO_PEERS_THREADS). Results:
# DIR/peers.md, peers.csv, peers.png and the raw records peers.jsonl (DIR: bench/results, or
# build/peers-quick with --quick).
#
# The peers run in a virtualenv outside the source tree, build/peers-venv, created on first use
# from bench/peers/requirements.txt (pinned CPU-usable builds from PyPI: several GB to
# download). --halo-only skips them (what CI runs, with --quick). --quick: small graphs, one
# repetition, a few epochs: checks that the scripts work, measures nothing.
#
# Workloads (docs/performance.md, "Against PyG and DGL"):
#   cora-gcn        GCN full graph on Cora, Kipf & Welling's set-up (200 epochs), sparse inputs
#   arxiv-gcn       GCN full graph on the ogbn-arxiv shape (169,343 nodes, 128 -> 256 -> 40)
#   arxiv-sage-10-5 GraphSAGE mini-batch on the arxiv shape, batch 1024, fan-outs 10,5
#   arxiv-sage-15-10-5  the same with fan-outs 15,10,5 (three layers)
#   rmat-sample     neighbour sampling alone, R-MAT 2^20 nodes, fan-outs 15,10,5, batch 1024
#   arxiv-spmm      SpMM A_hat X with 256 columns on the arxiv shape
#   rmat-sage-15-10-5       GraphSAGE mini-batch (3 layers, hidden 256, batch 1024, fan-outs
#                           15,10,5) on R-MAT 2^20 nodes, degree 16, 128 features, in memory
#   rmat-sage-15-10-5-disk  the same; Halo trains from the graph's store under a 512 MiB
#                           budget: feature rows read from features.bin with a 128 MiB row
#                           cache (a quarter of the 512 MiB of features), the page cache
#                           dropped first (as root); the peers train in memory (issue 43)
# Heterogeneous workloads (not in the default list; bench/peers/hetero.py has the peers' models):
#   acm-rgcn        R-GCN full graph on heco_acm (split 20): 2 layers, hidden 64, dropout 0.8,
#                   80 epochs, raw features (Halo's defaults); time per epoch and test Macro-F1
#   acm-hgt         HGT full graph on heco_acm: the same, 4 heads
#   mag-rgcn-10-5   R-GCN mini-batch on the ogbn-mag shape (synthetic-mag at HALO_PEERS_MAG_SCALE,
#                   default 1: 1.94M nodes, 42M edges; --quick: 0.01), batch 1024, up to 10
#                   then 5 neighbours per relation, the first HALO_PEERS_MAG_BATCHES (default
#                   20) batches of one epoch; time per batch (the peers report no accuracy
#                   unless HALO_PEERS_MAG_EVAL=1 or --quick: a full-graph evaluation, untimed)
# Featureless node types (the heterogeneous workloads): HALO_PEERS_FEATURELESS, default auto (an
# embedding for a type with fewer nodes than the target type, else zeros; Halo's default); zero
# or embedding are passed to Halo as --featureless too.
# HALO_PEERS_WORKLOADS picks workloads, HALO_PEERS_SYSTEMS systems (default "halo pyg dgl";
# the PyG sampling extensions are compiled only for pyg and a workload that samples).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0 halo_only=0 reps="" out="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --halo-only) halo_only=1 ;;
    --reps) reps=${2:?--reps needs a value}; shift ;;
    --out) out=${2:?--out needs a value}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "bench/peers/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1 ;;
  esac
  shift
done
build=$(cd "${build:-$root/build/bench}" 2>/dev/null && pwd) ||
  { echo "bench/peers/run.sh: build directory ${build:-build/bench} not found (cmake --preset bench)" >&2; exit 2; }
halo=$build/tools/halo/halo ops=$build/bench/halo_ops
[ -x "$halo" ] || { echo "bench/peers/run.sh: $halo missing (cmake --build $build)" >&2; exit 2; }
[ -n "$reps" ] || reps=$([ $quick = 1 ] && echo 1 || echo 5)
[ -n "$out" ] || out=$([ $quick = 1 ] && echo "$root/build/peers-quick" || echo "$root/bench/results")
mkdir -p "$out"
threads=${HALO_PEERS_THREADS:-2}
export OMP_NUM_THREADS=$threads GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-100}
shared=$build/data
work=$root/build/peers-work
mkdir -p "$work"

# The graphs' options (what each workload trains on).
if [ $quick = 1 ]; then
  arxiv="--dataset synthetic --synthetic-nodes 4000 --synthetic-classes 40 --synthetic-features 128 --synthetic-degree 13.7"
  rmat="--dataset rmat --rmat-scale 12 --rmat-degree 8 --rmat-features 1 --rmat-seed 1"
  rmat128="--dataset rmat --rmat-scale 12 --rmat-degree 16 --rmat-features 128 --rmat-seed 1"
  disk_budget=2MiB  # under the 2.3 MiB store, over the sampler's bound (1.1 MB)
  gcn_epochs=5 arxiv_epochs=2 sage_epochs=1
  hetero_epochs=3 mag_scale=0.01 mag_batches=3 mag_eval=1
else
  arxiv="--dataset synthetic --synthetic-nodes 169343 --synthetic-classes 40 --synthetic-features 128 --synthetic-degree 13.7"
  rmat="--dataset rmat --rmat-scale 20 --rmat-degree 8 --rmat-features 1 --rmat-seed 1"
  rmat128="--dataset rmat --rmat-scale 20 --rmat-degree 16 --rmat-features 128 --rmat-seed 1"
  disk_budget=512MiB  # a quarter of it caches rows: 128 MiB, 25 % of the features
  gcn_epochs=200 arxiv_epochs=10 sage_epochs=3
  hetero_epochs=80 mag_scale=${HALO_PEERS_MAG_SCALE:-1} mag_batches=${HALO_PEERS_MAG_BATCHES:-20}
  mag_eval=${HALO_PEERS_MAG_EVAL:-0}
fi
cora="--dataset $shared/planetoid/cora"
acm="--dataset $shared/heco_acm --split 20"
mag="--dataset synthetic-mag --mag-scale $mag_scale"
suffix=$([ $quick = 1 ] && echo -quick || echo "")
store=$work/rmat128$suffix-store  # the disk workload's store
read -r -a workloads <<< "${HALO_PEERS_WORKLOADS:-cora-gcn arxiv-gcn arxiv-sage-10-5 arxiv-sage-15-10-5 rmat-sample arxiv-spmm rmat-sage-15-10-5 rmat-sage-15-10-5-disk}"
# One workload: its Halo command and its peers' arguments.
declare -A halo_cmd peer_args graph
halo_cmd[cora-gcn]="train $cora --epochs $gcn_epochs"
peer_args[cora-gcn]="--workload gcn --epochs $gcn_epochs"
graph[cora-gcn]=cora
halo_cmd[arxiv-gcn]="train $arxiv --hidden 256 --epochs $arxiv_epochs"
peer_args[arxiv-gcn]="--workload gcn --hidden 256 --epochs $arxiv_epochs"
graph[arxiv-gcn]=arxiv
halo_cmd[arxiv-sage-10-5]="train $arxiv --model sage --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5 --epochs $sage_epochs"
peer_args[arxiv-sage-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 10,5 --epochs $sage_epochs"
graph[arxiv-sage-10-5]=arxiv
halo_cmd[arxiv-sage-15-10-5]="train $arxiv --model sage --layers 3 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 15,10,5 --epochs $sage_epochs"
peer_args[arxiv-sage-15-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 15,10,5 --epochs $sage_epochs"
graph[arxiv-sage-15-10-5]=arxiv
halo_cmd[rmat-sample]="ops sample --fanouts 15,10,5 --batch 1024 --reps 3"
peer_args[rmat-sample]="--workload sample --fanouts 15,10,5 --batch 1024 --reps 3"
graph[rmat-sample]=rmat
halo_cmd[arxiv-spmm]="ops spmm --cols 256 --reps 5"
peer_args[arxiv-spmm]="--workload spmm --cols 256 --reps 5"
graph[arxiv-spmm]=arxiv
sage3="--model sage --layers 3 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 15,10,5 --epochs $sage_epochs"
halo_cmd[rmat-sage-15-10-5]="train $rmat128 $sage3"
peer_args[rmat-sage-15-10-5]="--workload sage --hidden 256 --batch 1024 --fanouts 15,10,5 --epochs $sage_epochs"
graph[rmat-sage-15-10-5]=rmat128
halo_cmd[rmat-sage-15-10-5-disk]="train --dataset $store $sage3 --memory-budget $disk_budget"
peer_args[rmat-sage-15-10-5-disk]=${peer_args[rmat-sage-15-10-5]}
graph[rmat-sage-15-10-5-disk]=rmat128
featureless=${HALO_PEERS_FEATURELESS:-auto}
case $featureless in
  auto) halo_fl="" ;;  # Halo's default
  zero|embedding) halo_fl="--featureless $featureless" ;;
  *) echo "bench/peers/run.sh: HALO_PEERS_FEATURELESS must be auto, zero or embedding" >&2; exit 2 ;;
esac
halo_cmd[acm-rgcn]="train $acm --model rgcn --hidden 64 --dropout 0.8 --epochs $hetero_epochs $halo_fl"
peer_args[acm-rgcn]="--workload rgcn --hidden 64 --dropout 0.8 --epochs $hetero_epochs --featureless $featureless"
graph[acm-rgcn]=acm
halo_cmd[acm-hgt]="train $acm --model hgt --hidden 64 --heads 4 --dropout 0.8 --epochs $hetero_epochs $halo_fl"
peer_args[acm-hgt]="--workload hgt --hidden 64 --heads 4 --dropout 0.8 --epochs $hetero_epochs --featureless $featureless"
graph[acm-hgt]=acm
halo_cmd[mag-rgcn-10-5]="train $mag --model rgcn --mode mini-batch --fanouts 10,5 --batch-size 1024 --max-batches $mag_batches --hidden 64 --dropout 0.8 --epochs 1 $halo_fl"
peer_args[mag-rgcn-10-5]="--workload rgcn-mb --fanouts 10,5 --batch 1024 --max-batches $mag_batches --hidden 64 --dropout 0.8 --epochs 1 --featureless $featureless $([ "$mag_eval" = 1 ] && echo --full-eval || true)"
graph[mag-rgcn-10-5]=mag
read -r -a systems <<< "${HALO_PEERS_SYSTEMS:-halo pyg dgl}"
[ $halo_only = 1 ] && systems=(halo)
declare -A needed=()  # the graphs the chosen workloads train on
for w in "${workloads[@]}"; do
  [ -n "${halo_cmd[$w]:-}" ] || { echo "bench/peers/run.sh: unknown workload $w" >&2; exit 2; }
  needed[${graph[$w]}]=1
  if [[ ${halo_cmd[$w]} == ops* ]] && [[ " ${systems[*]} " == *" halo "* ]] && [ ! -x "$ops" ]; then
    echo "bench/peers/run.sh: $ops missing (needed by $w; cmake --build $build)" >&2; exit 2
  fi
done

venv=$root/build/peers-venv
py=$venv/bin/python
if [ $halo_only = 0 ]; then
  if ! "$py" -c "import torch, torch_geometric, dgl" 2>/dev/null; then
    echo "== peers: creating $venv (bench/peers/requirements.txt)"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --no-deps -r "$here/requirements.txt"
  fi
  # Only for the workloads that sample (PyG's NeighborLoader).
  if [[ " ${systems[*]} " == *" pyg "* ]] &&
     [[ " ${workloads[*]} " == *"-sage-"* || " ${workloads[*]} " == *"-sample "* ||
        " ${workloads[*]} " == *" mag-rgcn-"* ]] &&
     ! "$py" -c "import torch_sparse, torch_scatter" 2>/dev/null; then
    echo "== peers: compiling PyG's sampling extensions (bench/peers/requirements-sampling.txt)"
    # (wheel and what it imports first: the builds need them before pip installs anything.)
    "$venv/bin/pip" install -q --no-deps $(grep -E '^(wheel|packaging)==' "$here/requirements-sampling.txt")
    MAX_JOBS=$(getconf _NPROCESSORS_ONLN) "$venv/bin/pip" install -q --no-deps \
      --no-build-isolation -r "$here/requirements-sampling.txt"
  fi
  "$py" -c "import torch, torch_geometric, dgl; print('peers: torch', torch.__version__, \
'torch_geometric', torch_geometric.__version__, 'dgl', dgl.__version__)"
fi

# Graphs: what the chosen workloads train on, exported anew (seconds) so they follow the build.
for g in cora arxiv rmat rmat128 acm mag; do
  [ -n "${needed[$g]:-}" ] || continue
  f=$work/$g$suffix.npz
  "$halo" datasets export ${!g} --out "$f" >/dev/null
done
# The disk workload's store (the same graph as rmat128's export).
if [[ " ${workloads[*]} " == *" rmat-sage-15-10-5-disk "* ]]; then
  rm -rf "$store"
  "$halo" datasets prepare $rmat128 --out "$store" >/dev/null
fi
if [ "$featureless" = auto ] && [[ " ${workloads[*]} " == *" acm-"* || " ${workloads[*]} " == *" mag-"* ]] &&
   [[ $("$halo" train --help 2>&1 | grep -m1 -e '--featureless' || true) != *auto* ]]; then
  echo "peers: warning: this halo has no --featureless auto (its default is another): Halo's and the" \
       "peers' featureless inputs differ (HALO_PEERS_FEATURELESS=zero compares like with like)" >&2
fi

records=$out/peers.jsonl
: > "$records.tmp"
# Runs one system on one workload; appends its summary (plus workload, system, rep) as one line.
run_one() {
  local w=$1 sys=$2 rep=$3 f=$work/${graph[$w]}$suffix.npz line
  local log=$work/last-$sys.log
  if [ "$sys" = halo ]; then
    read -r -a c <<< "${halo_cmd[$w]}"
    if [ "${c[0]}" = train ]; then
      # From disk: the page cache dropped first where this user may (root), so rows are read.
      if [[ $w == *-disk ]] && [ -w /proc/sys/vm/drop_caches ]; then
        sync && echo 3 > /proc/sys/vm/drop_caches
      fi
      "$halo" "${c[@]}" --seed "$rep" --threads "$threads" --json "$work/halo.json" >"$log" 2>&1 ||
        { cat "$log" >&2; echo "peers: halo failed on $w" >&2; return 1; }
      line=$(cat "$work/halo.json")
    else
      "$ops" "${c[1]}" "$f" "${c[@]:2}" --threads "$threads" >"$log" 2>&1 ||
        { cat "$log" >&2; echo "peers: halo_ops failed on $w" >&2; return 1; }
      line=$(/usr/bin/python3 "$here/report.py" --summarize-ops "$log")
    fi
  else
    read -r -a a <<< "${peer_args[$w]}"
    "$py" "$here/peer.py" --system "$sys" --graph "$f" --threads "$threads" --seed "$rep" "${a[@]}" \
      >"$log" 2>&1 || { tail -3 "$log" >&2; echo "peers: $sys failed on $w (recorded as failed)" >&2
                        line=$(tail -1 "$log" | /usr/bin/python3 -c 'import json,sys; print(json.dumps({"failed": True, "error": sys.stdin.read().strip()[:120]}))'); }
    [ -n "${line:-}" ] || line=$(grep '"summary": true' "$log" | tail -1)
  fi
  /usr/bin/python3 -c 'import json,sys; d={k: v for k, v in json.loads(sys.argv[1]).items() if not isinstance(v, (list, dict))}; d.update(workload=sys.argv[2], system=sys.argv[3], rep=int(sys.argv[4])); print(json.dumps(d))' \
    "$line" "$w" "$sys" "$rep" >> "$records.tmp"
  line=""
}

echo "== peers: ${workloads[*]} x ${systems[*]}, $reps repetition(s), $threads threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
for w in "${workloads[@]}"; do
  for ((r = 0; r < reps; r++)); do
    for ((k = 0; k < ${#systems[@]}; k++)); do
      sys=${systems[$(((k + r) % ${#systems[@]}))]}
      run_one "$w" "$sys" "$r"
    done
  done
  echo "peers: $w done ($(($(date +%s) - start)) s)"
done
mv "$records.tmp" "$records"
versions=$([ $halo_only = 1 ] && echo "halo only" || "$py" -c "import torch, torch_geometric, dgl; print(f'torch {torch.__version__}, torch_geometric {torch_geometric.__version__}, dgl {dgl.__version__}')")
/usr/bin/python3 "$here/report.py" "$records" --out "$out" --versions "$versions" \
  --commit "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --threads "$threads" --load "$(cut -d' ' -f1-3 /proc/loadavg)" $([ $quick = 1 ] && echo --quick)
echo "peers: $out/peers.md"
