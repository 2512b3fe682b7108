#!/usr/bin/env bash
# A billion-edge R-MAT graph prepared as a store in bounded memory: time, peak RSS (GNU time's
# maximum resident set, and what halo reports), bytes written, the disk's free space before and
# after. Appends one row to bench/results/store.md and removes the store afterwards unless
# KEEP=1.
#
#   bash bench/datasets/store_rmat.sh BUILD_DIR OUT_DIR [SCALE DEGREE FEATURES BUDGET]
#
# Defaults: scale 26 (67M nodes), degree 40 (1.34B drawn edges: about 2.2B symmetrised entries
# after duplicates and self-loops), 112 float32 features (30 GB, 1.2x this machine's 24 GiB),
# budget 4GiB. Needs about 50 GB of free disk at the peak (the temporary edge file, 8 bytes an
# edge, and the store); checked first.
set -euo pipefail
build=${1:?BUILD_DIR}
out=${2:?OUT_DIR (must not exist)}
scale=${3:-26}
degree=${4:-40}
features=${5:-112}
budget=${6:-4GiB}
halo=$build/tools/halo/halo
results=$(dirname "$0")/../results/store.md

[[ -x $halo ]] || { echo "no $halo (build the release preset first)" >&2; exit 2; }
[[ ! -e $out ]] || { echo "$out exists: give a new directory" >&2; exit 2; }
nodes=$((1 << scale))
need=$(python3 -c "print(int($nodes * $degree / 2 * 8 + $nodes * $degree * 4 + $nodes * $features * 4 + $nodes * 24))")
free=$(df --output=avail -B1 "$(dirname "$out")" | tail -1)
echo "needs about $((need >> 30)) GiB of disk, $((free >> 30)) GiB free"
((free > need + (4 << 30))) || { echo "not enough free disk" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"; [[ ${KEEP:-0} == 1 ]] || rm -rf "$out"' EXIT
/usr/bin/time -v "$halo" datasets prepare --dataset rmat --rmat-scale "$scale" \
  --rmat-degree "$degree" --rmat-features "$features" --memory-budget "$budget" --out "$out" \
  2>&1 | tee "$log"
rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
entries=$(python3 -c "import json; print(json.load(open('$out/store.json'))['num_edges'])")
bytes=$(python3 -c "import json; print(json.load(open('$out/store.json'))['bytes_on_disk'])")
ram=$(awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo)
fbytes=$((nodes * features * 4))
if [[ ! -f $results ]]; then
  cat >"$results" <<'EOF'
# Graph store: R-MAT prepared in bounded memory

`bash bench/datasets/store_rmat.sh build/cpu-release DIR [SCALE DEGREE FEATURES BUDGET]`
(`halo datasets prepare --dataset rmat ...`): the edges drawn once into a temporary file, the
CSR built from it in row blocks under the budget, the features written in row blocks. Peak RSS is
GNU time's maximum resident set of the whole run.

| date | scale | nodes | drawn edges | stored entries (≥ 2^31?) | features (bytes, x RAM) | budget | wall | peak RSS | bytes on disk |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
EOF
fi
python3 - "$results" <<EOF
import sys
ram = $ram
row = "| $(date -u +%F) | $scale | $nodes | $((nodes * degree / 2)) | $entries ({}) | $features ({:.1f} GB, {:.2f}x) | $budget | $wall | {:.2f} GiB | {:.1f} GB |".format(
    "yes" if $entries >= 2**31 else "no", $fbytes / 1e9, $fbytes / ram, $rss_kib / 2**20, $bytes / 1e9)
open(sys.argv[1], "a").write(row + "\n")
print(row)
EOF
