#!/usr/bin/env bash
# Mini-batch R-GCN on the ogbn-mag-shaped synthetic graph (`synthetic-mag`: 1.94M nodes, 21.1M
# stored edges + as many reverses, 4 types): one training epoch (every training paper, batches
# of BATCH seeds, fan-outs FANOUTS per relation), its four HGNN stage times and the sampled edges
# per relation and per second of subgraph build. Appends a section to bench/results/hgnn.md (or
# OUT). Build the Release preset first: cmake --preset bench && cmake --build build/bench
# --target halo.
#   bash bench/hgnn/mag_minibatch.sh [HALO_BINARY] [OUT]
# SCALE (default 1: ogbn-mag's counts), BATCH (1024), FANOUTS (10,5), HIDDEN (64), THREADS (0:
# all cores), MAX_BATCHES (0: the whole epoch; N: time the first N batches of the epoch and
# extrapolate to all of them, `--max-batches`).
set -euo pipefail
cd "$(dirname "$0")/../.."
halo=${1:-build/bench/tools/halo/halo}
out_md=${2:-bench/results/hgnn.md}
scale=${SCALE:-1}
batch=${BATCH:-1024}
fanouts=${FANOUTS:-10,5}
hidden=${HIDDEN:-64}
threads=${THREADS:-0}
max_batches=${MAX_BATCHES:-0}
json=$(mktemp)
log=$(mktemp)
trap 'rm -f "$json" "$log"' EXIT
# OpenBLAS (DYNAMIC_ARCH) picks its kernels from the CPU model; on one it does not recognise (a
# VM's generic "Intel(R) Xeon(R) Processor") it falls back to Prescott's SSE3 kernels, ~5x
# slower at sgemm than SkylakeX's on this machine's AVX-512 CPU. `halo` itself then asks for
# SkylakeX (docs/cli.md, "OpenMP waiting and BLAS kernels"); the core it ran with is recorded
# (the last one OpenBLAS reports: after halo's re-execution).
blas_core() { OPENBLAS_VERBOSE=2 "$halo" --help 2>&1 | sed -n 's/^Core: //p' | tail -n 1; }
blas_core=$(blas_core)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$halo" train --dataset synthetic-mag --mag-scale "$scale" --model rgcn --mode mini-batch \
  --fanouts "$fanouts" --batch-size "$batch" --max-batches "$max_batches" --hidden "$hidden" \
  --epochs 1 --threads "$threads" --seed 0 --json "$json" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$json" "$out_md" "$halo" "$scale" "$load_before" "$load_after" "$fanouts" \
  "$max_batches" "$log" "${blas_core:-unknown}" <<'PY'
import datetime, json, math, re, subprocess, sys
path, out_md, halo, scale, load_before, load_after, fanouts, max_batches, log, core = sys.argv[1:11]
r = json.load(open(path))
st = r["stage_times_per_epoch_s"][0]
edges = r["sampled_edges_per_epoch"]
build = st["subgraph_build_s"]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
# The training papers, from the run's first line ("..., N training nodes)").
num_train = int(re.search(r"(\d+) training nodes", open(log).read()).group(1))
full = math.ceil(num_train / r["batch_size"])
ran = r["batches_per_epoch"]
sample = int(max_batches) > 0
lines = [
    "",
    "## ogbn-mag-shape mini-batch",
    "",
    f"`MAX_BATCHES={max_batches} FANOUTS={fanouts} bash bench/hgnn/mag_minibatch.sh`: `halo train "
    f"--dataset synthetic-mag --mag-scale {scale} --model rgcn --mode mini-batch --fanouts "
    f"{fanouts} --batch-size {r['batch_size']} --max-batches {max_batches} --hidden "
    f"{r['hidden']} --epochs 1 --threads {r['threads']} --seed 0` (fan-outs per relation, input "
    f"layer first, as DGL counts them; {num_train:,} training papers). Graph: {r['num_nodes']:,} nodes, {r['num_edges']:,} stored "
    f"edges (reverses included), "
    + ", ".join(f"{t['num_nodes']:,} {t['name']}" for t in r["node_types"]) + ". "
    + (f"Timed: the first {ran} batches of the epoch; an epoch over every training paper is "
       f"{full} batches, extrapolated below as (time of {ran} batches) x {full} / {ran}. "
       if sample and full else f"{ran} batches (the whole epoch). ")
    + f"Binary `{halo}` (Release preset `bench`, OpenBLAS core {core}) at commit {commit}, "
    f"{datetime.date.today()}; load average {load_before} before, {load_after} after (a shared "
    "2-core machine: the times are indicative). Peak RSS (`peak_host_memory_bytes`) includes "
    "generating the graph and the full-graph evaluation after the epoch.",
    "",
"| epoch (s) | subgraph build (s) | feature projection (s) | neighbour aggregation (s) | "
    "semantic aggregation (s) | peak host memory (GiB) |",
    "| --- | --- | --- | --- | --- | --- |",
    f"| {r['epoch_time_median_s']:.2f} | {build:.2f} | {st['feature_projection_s']:.2f} | "
    f"{st['neighbor_aggregation_s']:.2f} | {st['semantic_aggregation_s']:.2f} | "
    f"{r['peak_host_memory_bytes'] / 2**30:.2f} |",
    "",
    "Sampled edges per relation over the epoch (all blocks), and per second of the epoch's "
    "subgraph build (sampling, block views and feature gathers together; the sampler does not "
    "time relations separately):",
    "",
    "| relation | sampled edges (timed batches) | edges/s of subgraph build |",
    "| --- | --- | --- |",
]
for rel, m in zip(r["relations"], edges):
    lines.append(f"| {rel['name']} | {m:,} | {m / build:,.0f} |")
lines.append(f"| all | {sum(edges):,} | {sum(edges) / build:,.0f} |")
if sample and full:
    k = full / ran
    lines += ["", f"Extrapolated to the whole epoch ({full} batches, x {k:.1f}): epoch "
              f"{r['epoch_time_median_s'] * k:.0f} s (subgraph build {build * k:.0f} s, feature "
              f"projection {st['feature_projection_s'] * k:.0f} s, neighbour aggregation "
              f"{st['neighbor_aggregation_s'] * k:.0f} s, semantic aggregation "
              f"{st['semantic_aggregation_s'] * k:.0f} s); per-batch costs assumed constant "
              "over the epoch."]
with open(out_md, "a") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
