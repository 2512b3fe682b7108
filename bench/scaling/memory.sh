#!/usr/bin/env bash
# Per-rank peak memory against the number of parts: every rank of a P-part run should hold its
# part (owned rows, halo, features), not an O(nodes) copy of the graph. R-MAT at scale SCALE
# (default 20: 1,048,576 nodes, ~8M undirected edges, 16 features), METIS partitions into
# P = 1, 2, 4, full-graph GCN and mini-batch SAGE (batch 1024, fan-outs 10,5), one epoch each,
# one thread per rank. The one-process run on the dataset itself (no partition) is the P = 1
# reference. Writes OUT/memory.csv and OUT/memory.md (and OUT/memory.png with matplotlib).
#
#   bash bench/scaling/memory.sh BUILD_DIR [OUT_DIR] [SCALE]
#
# BUILD_DIR holds tools/halo/halo (a Release build with MPI). Peak RSS is each rank's
# getrusage maximum (`peak_host_memory_bytes_per_rank` in halo train --json).
set -euo pipefail
build=${1:?usage: bench/scaling/memory.sh BUILD_DIR [OUT_DIR] [SCALE]}
out=${2:-bench/results}
scale=${3:-20}
halo="$build/tools/halo/halo"
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

data=(--dataset rmat --rmat-scale "$scale")
fail() { cat "$work"/*.log >&2; echo "memory: $1 failed" >&2; exit 1; }
for p in 1 2 4; do
  "$halo" partition "${data[@]}" --parts "$p" --out "$work/p$p" > "$work/partition-$p.log" 2>&1 ||
    fail "partition into $p"
done

declare -A modes=(
  [full-graph]="--model gcn --hidden 16"
  [mini-batch]="--model sage --hidden 16 --mode mini-batch --batch-size 1024 --fanouts 10,5"
)
csv="$out/memory.csv"
echo "mode,ranks,input,peak_rss_max_bytes,peak_rss_mean_bytes,peak_rss_per_rank,epoch_time_s" > "$csv.tmp"
for mode in full-graph mini-batch; do
  # shellcheck disable=SC2086
  "$halo" train "${data[@]}" ${modes[$mode]} --epochs 1 --threads 1 \
    --json "$work/$mode-dataset.json" > /dev/null 2>> "$work/train.log" || fail "$mode dataset"
  runs=("dataset|1|$work/$mode-dataset.json")
  for p in 1 2 4; do
    # shellcheck disable=SC2086
    mpiexec -n "$p" "$halo" train --partitions "$work/p$p" ${modes[$mode]} --epochs 1 \
      --threads 1 --json "$work/$mode-$p.json" > /dev/null 2>> "$work/train.log" || fail "$mode P=$p"
    runs+=("partition|$p|$work/$mode-$p.json")
  done
  for r in "${runs[@]}"; do
    IFS='|' read -r input ranks json <<< "$r"
    "$py" - "$json" "$mode" "$ranks" "$input" >> "$csv.tmp" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
per = j["peak_host_memory_bytes_per_rank"]
print(",".join([sys.argv[2], sys.argv[3], sys.argv[4], str(max(per)), str(sum(per) // len(per)),
                " ".join(str(x) for x in per), str(j["epoch_time_median_s"])]))
PY
  done
  echo "memory: $mode done" >&2
done
mv "$csv.tmp" "$csv"
"$py" - "$csv" "$out/memory.md" "$scale" "$work/p4/meta.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
meta = json.load(open(sys.argv[4]))
d = meta["dataset"]
with open(sys.argv[2], "w") as f:
    f.write(f"# Per-rank peak memory: R-MAT scale {sys.argv[3]}\n\n")
    f.write(f"{d['num_nodes']} nodes, {d['training_edges']} training-graph entries, "
            f"{d['num_features']} features; METIS parts; one epoch, one thread per rank.\n"
            f"Reproduce: `bash bench/scaling/memory.sh build/cpu-release bench/results {sys.argv[3]}`.\n\n")
    f.write("| mode | input | ranks | peak RSS per rank, max (MiB) | mean (MiB) | max / P=1 | epoch (s) |\n")
    f.write("| --- | --- | --- | --- | --- | --- | --- |\n")
    base = {}
    for r in rows:
        if r["input"] == "partition" and r["ranks"] == "1":
            base[r["mode"]] = int(r["peak_rss_max_bytes"])
    for r in rows:
        mx, mean = int(r["peak_rss_max_bytes"]), int(r["peak_rss_mean_bytes"])
        ratio = mx / base[r["mode"]] if r["mode"] in base else 0
        f.write(f"| {r['mode']} | {r['input']} | {r['ranks']} | {mx / 2**20:.0f} | "
                f"{mean / 2**20:.0f} | {ratio:.2f} | {float(r['epoch_time_s']):.2f} |\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for mode in ("full-graph", "mini-batch"):
        pts = [(int(r["ranks"]), int(r["peak_rss_max_bytes"]) / 2**20) for r in rows
               if r["mode"] == mode and r["input"] == "partition"]
        ax.plot([p for p, _ in pts], [m for _, m in pts], marker="o", label=mode)
    ax.set_xlabel("ranks (parts)")
    ax.set_ylabel("peak RSS per rank, max (MiB)")
    ax.set_xticks([1, 2, 4])
    ax.legend()
    ax.set_title(f"R-MAT scale {sys.argv[3]}")
    fig.tight_layout()
    fig.savefig(sys.argv[2].replace(".md", ".png"), dpi=120)
except ImportError:
    pass
PY
echo "memory: wrote $csv and $out/memory.md"
