#!/usr/bin/env bash
# A graph store partitioned by `halo partition` (mapped, features referenced): time, peak RSS,
# quality (meta.json) and bytes on disk; `halo partition --info` reads it back. Appends one row to
# bench/results/store_partition.md and removes the partition afterwards unless KEEP=1.
#
#   bash bench/partition/store_partition.sh BUILD_DIR STORE_DIR OUT_DIR [PARTS METHOD]
#
# Defaults: 16 parts, --method auto. Make the store first, for example with
# KEEP=1 bash bench/datasets/store_rmat.sh BUILD_DIR STORE_DIR 24 40 112 3GiB.
set -euo pipefail
build=${1:?BUILD_DIR}
store=${2:?STORE_DIR}
out=${3:?OUT_DIR (must not exist)}
parts=${4:-16}
method=${5:-auto}
halo=$build/tools/halo/halo
results=$(dirname "$0")/../results/store_partition.md

[[ -x $halo ]] || { echo "no $halo (build the release preset first)" >&2; exit 2; }
[[ -f $store/store.json ]] || { echo "$store: not a store (no store.json)" >&2; exit 2; }
[[ ! -e $out ]] || { echo "$out exists: give a new directory" >&2; exit 2; }
df -h "$(dirname "$out")" | tail -1

log=$(mktemp)
trap 'rm -f "$log"; [[ ${KEEP:-0} == 1 ]] || rm -rf "$out"' EXIT
/usr/bin/time -v "$halo" partition --dataset "$store" --parts "$parts" --method "$method" \
  --out "$out" 2>&1 | tee "$log"
"$halo" partition --info "$out" | tee -a "$log"
rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
python3 - "$results" "$store" "$out" "$rss_kib" "$wall" "$parts" <<'PY'
import json, os, sys, datetime
results, store, out, rss_kib, wall, parts = sys.argv[1:]
s = json.load(open(os.path.join(store, "store.json")))
m = json.load(open(os.path.join(out, "meta.json")))
part_bytes = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
text = open(results).read() if os.path.exists(results) else ""
if "| date | graph |" not in text:
    text = """# Graph store: partitioned in bounded memory

`bash bench/partition/store_partition.sh build/cpu-release STORE DIR [P METHOD]` (`halo
partition --dataset STORE`: the store mapped, its pages dropped from the process as the passes
go, S the stored graph itself, the parts referencing the store's features). Peak RSS is GNU
time's maximum resident set of the whole run; seconds are wall time; cut and volume from
`meta.json`; `--info` read the partition back (checksums of every part, the store's header).

| date | graph | nodes | entries of S | P | method | wall | peak RSS | edge cut | comm volume | balance (nodes) | parts on disk | store on disk |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""
d = m["dataset"]
row = "| {} | {} | {:,} | {:,} | {} | {} | {} | {:.2f} GiB | {:,} | {:,} | {:.4f} | {:.2f} GB | {:.1f} GB |".format(
    datetime.date.today().isoformat(), d["name"], d["num_nodes"], d["training_edges"], parts,
    m["method"], wall, int(rss_kib) / 2**20, m["metrics"]["edge_cut"], m["metrics"]["comm_volume"],
    m["metrics"]["balance"]["nodes"], part_bytes / 1e9, s["bytes_on_disk"] / 1e9)
# After the table's last row (the notes below it stay below).
lines = text.split("\n")
last = max(i for i, l in enumerate(lines) if l.startswith("| "))
lines.insert(last + 1, row)
open(results, "w").write("\n".join(lines))
PY
