#!/usr/bin/env bash
# EvolveGCN-O link prediction on CollegeMsg: Halo against a PyTorch EvolveGCN-O and PyTorch
# Geometric Temporal's EvolveGCNO (bench/peers/temporal_peer.py says how each differs), on the
# snapshots, GCN matrices, features, targets and split `halo datasets export --snapshots 88`
# writes from Halo's own data path.
#
#   bash bench/peers/temporal.sh [BUILD_DIR] [EPOCHS] [REPS]
#
# BUILD_DIR (default build/bench): a build with tools/halo/halo and data/collegemsg. EPOCHS
# (default 30) per run, REPS (default 3) repetitions with seeds 0..REPS-1, the three systems'
# order rotated per repetition; 2 threads each (HALO_PEERS_THREADS). Halo runs the arguments of
# bench/results/dynamic.md (--hidden 100 --weight-decay 0 --lr 0.001). Prints one JSON line per
# run (epoch median, best epoch, test MRR, MAP, AUC) and a markdown table: medians over the
# repetitions and Halo / peer per pair of runs. The peers come from build/peers-venv
# (bench/peers/run.sh creates it; PyG Temporal needs torch_sparse, see requirements-sampling.txt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build/bench}" && pwd)
epochs=${2:-30} reps=${3:-3}
halo=$build/tools/halo/halo py=$root/build/peers-venv/bin/python
threads=${HALO_PEERS_THREADS:-2}
export OMP_NUM_THREADS=$threads GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-100}
work=$root/build/peers-work
mkdir -p "$work"
graph=$work/collegemsg-88.npz
data=(--dataset "$build/data/collegemsg" --snapshots 88)
"$halo" datasets export "${data[@]}" --out "$graph" >/dev/null
records=$work/temporal.jsonl
: > "$records"
systems=(halo torch pyg-temporal)
echo "== temporal: ${systems[*]}, $reps repetition(s) of $epochs epochs, $threads threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < reps; r++)); do
  for ((k = 0; k < ${#systems[@]}; k++)); do
    sys=${systems[$(((k + r) % ${#systems[@]}))]}
    if [ "$sys" = halo ]; then
      "$halo" train "${data[@]}" --task link --model evolvegcn-o --hidden 100 --weight-decay 0 \
        --lr 0.001 --epochs "$epochs" --seed "$r" --threads "$threads" --json "$work/t.json" \
        >/dev/null 2>&1
      line=$(cat "$work/t.json")
    else
      line=$("$py" "$here/temporal_peer.py" --system "$sys" --graph "$graph" --epochs "$epochs" \
        --seed "$r" --threads "$threads" 2>/dev/null | grep '"summary": true' | tail -1)
    fi
    /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps({"system": sys.argv[2], "rep": int(sys.argv[3]), **{k: d.get(k) for k in ("epoch_time_median_s", "best_epoch", "test_mrr", "test_map", "test_auc")}}))' \
      "$line" "$sys" "$r" | tee -a "$records"
  done
done
/usr/bin/python3 - "$records" "${systems[@]}" <<'PY'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
systems = sys.argv[2:]
by = {s: {r["rep"]: r for r in rs if r["system"] == s} for s in systems}
def cell(s, k, f):
    v = [r[k] for r in by[s].values() if r.get(k) is not None]
    return f % statistics.median(v) + (" (%s)" % ", ".join(f % x for x in v) if len(v) > 1 else "")
print("| system | s per epoch, median (runs) | test MRR | test MAP | best epochs | Halo / system (per pair) |")
print("| --- | --- | --- | --- | --- | --- |")
for s in systems:
    ratio = "" if s == "halo" else ", ".join(
        "%.2f" % (by["halo"][k]["epoch_time_median_s"] / by[s][k]["epoch_time_median_s"])
        for k in sorted(by[s]) if k in by["halo"])
    print("| %s | %s | %s | %s | %s | %s |" % (s, cell(s, "epoch_time_median_s", "%.2f"),
          cell(s, "test_mrr", "%.4f"), cell(s, "test_map", "%.4f"),
          ", ".join(str(by[s][k]["best_epoch"]) for k in sorted(by[s])), ratio))
PY
