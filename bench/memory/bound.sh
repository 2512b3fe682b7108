#!/usr/bin/env bash
# Memory follows the data: a one-process mini-batch run's peak resident set, above what the
# process held before reading data, stays within 1.5x its inventory (--json "memory": graph,
# features, model and optimizer, sampler envelope, the layer-wise evaluation's buffers), with
# the evaluation's hidden representations in memory and spilled to a file (--memory-budget).
# Exits 1 naming the run that breaks the bound. Release builds only (ASan's shadow and
# quarantine are memory of their own).
#   bash bench/memory/bound.sh BUILD_DIR [NODES]
set -euo pipefail
build=${1:?usage: bench/memory/bound.sh BUILD_DIR [NODES]}
nodes=${2:-400000}
halo="$build/tools/halo/halo"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for budget in 8GiB 16MiB; do  # 16 MiB: above the sampler's two slots, far below the data
  "$halo" train --dataset synthetic --synthetic-nodes "$nodes" --synthetic-features 128 \
    --model sage --layers 3 --hidden 64 --fanouts 10,5,5 --batch-size 512 --mode mini-batch \
    --epochs 1 --max-batches 20 --threads 2 --memory-budget "$budget" \
    --json "$out/run.json" >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
  python3 - "$out/run.json" "$budget" <<'PY' || status=1
import json, sys
r = json.load(open(sys.argv[1]))
m = dict(r["memory"])
start = m.pop("process_start")
inventory = sum(m.values())
grown = r["peak_host_memory_bytes"] - start
ratio = grown / inventory
spilled = r["evaluation_spill_bytes"] > 0
print(f"memory bound: budget {sys.argv[2]} ({'spilled' if spilled else 'in memory'}): peak "
      f"{r['peak_host_memory_bytes'] / 2**20:.0f} MiB, {grown / 2**20:.0f} MiB above the "
      f"process start, inventory {inventory / 2**20:.0f} MiB "
      + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in m.items()) + f": {ratio:.2f}x")
if ratio > 1.5:
    print("memory bound: above 1.5x the inventory", file=sys.stderr)
    sys.exit(1)
PY
done
exit $status
