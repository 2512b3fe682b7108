#!/usr/bin/env bash
# Mini-batch R-GCN on the ogbn-mag-shaped synthetic graph (`synthetic-mag`: 1.94M nodes, 21.1M
# stored edges + as many reverses, 4 types): one training epoch (every training paper, batches
# of BATCH seeds, fan-outs FANOUTS per relation), its four HGNN stage times and the sampled edges
# per relation and per second of subgraph build. Appends a section to bench/results/hgnn.md (or
# OUT). Build the Release preset first: cmake --preset bench && cmake --build build/bench
# --target halo.
#   bash bench/hgnn/mag_minibatch.sh [HALO_BINARY] [OUT]
# SCALE (default 1: ogbn-mag's counts), BATCH (1024), FANOUTS (10,5), HIDDEN (64), THREADS (0:
# all cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
halo=${1:-build/bench/tools/halo/halo}
out_md=${2:-bench/results/hgnn.md}
scale=${SCALE:-1}
batch=${BATCH:-1024}
fanouts=${FANOUTS:-10,5}
hidden=${HIDDEN:-64}
threads=${THREADS:-0}
json=$(mktemp)
trap 'rm -f "$json"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$halo" train --dataset synthetic-mag --mag-scale "$scale" --model rgcn --fanouts "$fanouts" \
  --batch-size "$batch" --hidden "$hidden" --epochs 1 --threads "$threads" --seed 0 \
  --json "$json" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$json" "$out_md" "$halo" "$scale" "$load_before" "$load_after" <<'PY'
import datetime, json, subprocess, sys
path, out_md, halo, scale, load_before, load_after = sys.argv[1:7]
r = json.load(open(path))
st = r["stage_times_per_epoch_s"][0]
edges = r["sampled_edges_per_epoch"]
build = st["subgraph_build_s"]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
lines = [
    "",
    "## Mini-batch R-GCN on the ogbn-mag-shaped graph (`bench/hgnn/mag_minibatch.sh`)",
    "",
    f"`halo train --dataset synthetic-mag --mag-scale {scale} --model rgcn --fanouts "
    f"{r['fanouts'][0][0] if all(len(set(l)) == 1 for l in r['fanouts']) else r['fanouts']}"
    f"... --batch-size {r['batch_size']} --hidden {r['hidden']} --epochs 1`: "
    f"{r['num_nodes']:,} nodes, {r['num_edges']:,} stored edges (reverses included), "
    f"{r['batches_per_epoch']} batches (one epoch over every training paper). Binary `{halo}` "
    f"(Release preset `bench`) at commit {commit}, {r['threads']} threads, "
    f"{datetime.date.today()}; load average {load_before} before, {load_after} after (a shared "
    "2-core machine: the times are indicative).",
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
    "| relation | sampled edges | edges/s of subgraph build |",
    "| --- | --- | --- |",
]
for rel, m in zip(r["relations"], edges):
    lines.append(f"| {rel['name']} | {m:,} | {m / build:,.0f} |")
lines.append(f"| all | {sum(edges):,} | {sum(edges) / build:,.0f} |")
with open(out_md, "a") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
