#!/usr/bin/env bash
# Macro-F1 / Micro-F1 of R-GCN and HGT on heco_acm trained across ranks: for each split K,
# `halo partition --dataset DATASET --parts PARTS --split K`, then per seed `mpiexec.mpich -n
# PARTS halo train --partitions DIR --model M [flags] --seed S --threads 1` (full graph), with
# the hyper-parameters of the one-process rows of bench/results/hgnn.md (R-GCN: the defaults;
# HGT: `--featureless zero --dropout 0.5 --no-normalize-features`). Appends the section
# "Distributed (--partitions, mpiexec -n PARTS)" to bench/results/hgnn.md (or OUT), the
# one-process figures of that file beside each row. The runs are sequential (one heavy run at
# a time on a shared machine).
#   bash bench/hgnn/acm_f1_partitions.sh [HALO_BINARY] [DATASET_DIR] [OUT]
# PARTS (2), SPLITS ("20 40 60"), SEEDS ("0 1 2 3 4"), CONFIGS (';'-separated "name=model
# flags" entries, as bench/hgnn/acm_f1.sh; default R-GCN and HGT as above).
set -euo pipefail
cd "$(dirname "$0")/../.."
halo=${1:-build/bench/tools/halo/halo}
data=${2:-$(dirname "$halo")/../../data/heco_acm}
out_md=${3:-bench/results/hgnn.md}
parts=${PARTS:-2}
splits=${SPLITS:-"20 40 60"}
seeds=${SEEDS:-"0 1 2 3 4"}
configs=${CONFIGS:-"rgcn=rgcn;hgt=hgt --featureless zero --dropout 0.5 --no-normalize-features"}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
IFS=';' read -ra entries <<< "$configs"
for split in $splits; do
  "$halo" partition --dataset "$data" --parts "$parts" --split "$split" --out "$runs/part-$split" \
    >"$runs/part-$split.log" 2>&1 || { cat "$runs/part-$split.log" >&2; exit 1; }
  for entry in "${entries[@]}"; do
    name=${entry%%=*}
    read -ra args <<< "${entry#*=}"
    for seed in $seeds; do
      log="$runs/$name-$split-$seed.log"
      mpiexec.mpich -n "$parts" "$halo" train --partitions "$runs/part-$split" --model "${args[0]}" \
        "${args[@]:1}" --seed "$seed" --threads 1 --json "$runs/$name-$split-$seed.json" \
        >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$runs" "$out_md" "$configs" "$halo" "$data" "$parts" "$splits" "$seeds" \
  "$load_before" "$load_after" <<'PY'
import datetime, json, os, re, statistics, subprocess, sys
runs, out_md, configs, halo, data, parts, splits, seeds, load_before, load_after = sys.argv[1:11]
entries = [e.split("=", 1) for e in configs.split(";")]
splits = [int(s) for s in splits.split()]
seeds = [int(s) for s in seeds.split()]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
# The one-process rows already in the file: "| name (`flags`) | K | macro | micro | ...".
one = {}
for line in open(out_md):
    m = re.match(r"\| (\S+) \(`[^`]*`\) \| (\d+) \| ([^|]+) \| ([^|]+) \|", line)
    if m:
        one[(m.group(1), int(m.group(2)))] = (m.group(3).strip(), m.group(4).strip())
def ms(v):
    return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}" if len(v) > 1 else f"{v[0]:.4f}"
rows, per_seed = [], []
for name, flags in entries:
    for split in splits:
        rs = [json.load(open(os.path.join(runs, f"{name}-{split}-{s}.json"))) for s in seeds]
        ref = one.get((name, split), ("-", "-"))
        epoch = statistics.median(r["epoch_time_median_s"] for r in rs) * 1e3
        rows.append(f"| {name} (`{flags}`) | {split} | {ms([r['test_macro_f1'] for r in rs])} | "
                    f"{ms([r['test_micro_f1'] for r in rs])} | {ref[0]} | {ref[1]} | "
                    f"{statistics.mean(r['best_epoch'] for r in rs):.0f} | {epoch:.1f} |")
        per_seed.append(f"| {name} | {split} | " + ", ".join(
            f"{r['test_macro_f1']:.4f}" for r in rs) + " |")
lines = [
    "",
    f"## Distributed (--partitions, mpiexec -n {parts})",
    "",
    f"`bash bench/hgnn/acm_f1_partitions.sh`: per split K `halo partition --dataset {data} "
    f"--parts {parts} --split K --out DIR` (METIS, the defaults), then `mpiexec.mpich -n {parts} "
    "halo train --partitions DIR --model M [flags] --seed S --threads 1` (full graph) for S in "
    f"{seeds}, the hyper-parameters of the one-process rows above. Mean ± sample standard "
    f"deviation over the seeds; the one-process columns are this file's rows above (same model, "
    f"flags and split). Binary `{halo}` at commit {commit}, {datetime.date.today()}; load "
    f"average {load_before} before, {load_after} after (shared 2-core machine: the epoch times "
    "are not benchmarks).",
    "",
    f"| model | labels per class | test Macro-F1 ({parts} ranks) | test Micro-F1 ({parts} ranks) | "
    "test Macro-F1 (one process) | test Micro-F1 (one process) | mean best epoch | "
    "median epoch (ms) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    *rows,
    "",
    f"Test Macro-F1 per seed ({parts} ranks), seeds in order:",
    "",
    "| model | labels per class | per seed |",
    "| --- | --- | --- |",
    *per_seed,
]
with open(out_md, "a") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
