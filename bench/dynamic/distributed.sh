#!/usr/bin/env bash
# Distributed EvolveGCN-O on CollegeMsg (EvolveGCN's 88 steps) against one process: the same
# run in one process (1 thread, and on 2 threads as the noise floor of summation order) and
# under `mpiexec -n P` (P = 2 and 4, one thread per rank) on a snapshot
# partition series of `halo partition --snapshots 88 --parts P --method migration`, and per
# run the loss of every epoch, the test metrics, the bytes that moved the snapshots to the
# ranks (deltas and migrations, against resending each snapshot) and the bytes per epoch (halo
# rows, fetched embeddings). Prints a markdown table (the section "Distributed EvolveGCN-O" of
# bench/results/dynamic.md).
#
#   bash bench/dynamic/distributed.sh [BUILD_DIR] [-- extra train flags]
#
# BUILD_DIR (default build/bench) holds tools/halo/halo. Default flags: EvolveGCN-O as in
# bench/dynamic/evolvegcn.sh, 3 epochs, seed 0.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/bench}
[ $# -gt 0 ] && shift
[ "${1:-}" = -- ] && shift
halo=$build/tools/halo/halo
[ -x "$halo" ] || { echo "bench/dynamic/distributed.sh: $halo missing" >&2; exit 2; }
data=${HALO_DATASETS:-$build/data}/collegemsg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--dataset "$data" --task link --model evolvegcn-o --snapshots 88 --seed 0
       --hidden 100 --weight-decay 0 --lr 0.001 --epochs 3 "$@")
export OMP_NUM_THREADS=1
"$halo" train "${flags[@]}" --threads 1 --json "$work/p1.json" > /dev/null 2> "$work/p1.log" ||
  { cat "$work/p1.log" >&2; exit 1; }
# The noise floor: the same one-process run on 2 threads (other summation orders, no ranks).
OMP_NUM_THREADS=2 "$halo" train "${flags[@]}" --threads 2 --json "$work/t2.json" > /dev/null \
  2> "$work/t2.log" || { cat "$work/t2.log" >&2; exit 1; }
for p in 1 2 4; do
  "$halo" partition --dataset "$data" --snapshots 88 --parts "$p" --method migration \
    --out "$work/series-$p" > /dev/null 2>&1
  mpiexec -n "$p" "$halo" train "${flags[@]}" --threads 1 --partitions "$work/series-$p" \
    --json "$work/d$p.json" > /dev/null 2> "$work/d$p.log" || { cat "$work/d$p.log" >&2; exit 1; }
done
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
one = json.load(open(f"{w}/p1.json"))
print("| ranks | final train loss | relative to one process (per epoch) | test MRR | test MAP | test AUC "
      "| snapshots moved (KB) | resending (KB) | moved / resending | halo rows per epoch (MB) "
      "| embeddings per epoch (MB) | median epoch (s) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
runs = [("1 (one process)", "p1"), ("1 (one process, 2 threads)", "t2"),
        ("1 (mpiexec -n 1, 1 part)", "d1"), ("2", "d2"), ("4", "d4")]
for p, name in runs:
    j = json.load(open(f"{w}/{name}.json"))
    rel = ", ".join(f"{(b['train_loss'] - a['train_loss']) / a['train_loss']:+.1e}"
                    for a, b in zip(one["history"], j["history"]))
    moved, resend = j.get("snapshot_bytes_total"), j.get("snapshot_resend_bytes_total")
    cells = [p, f"{j['final_train_loss']:.6f}", rel, f"{j['test_mrr']:.4f}",
             f"{j['test_map']:.4f}", f"{j['test_auc']:.4f}",
             f"{moved / 1e3:.1f}" if moved is not None else "-",
             f"{resend / 1e3:.1f}" if resend is not None else "-",
             f"{moved / resend:.3f}" if moved else "-",
             f"{j.get('exchange_bytes_per_epoch', 0) / 1e6:.2f}",
             f"{j.get('embedding_bytes_per_epoch', 0) / 1e6:.2f}",
             f"{j['epoch_time_median_s']:.2f}"]
    print("| " + " | ".join(map(str, cells)) + " |")
PY
