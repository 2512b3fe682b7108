#!/usr/bin/env bash
# `halo plan` against measurement for heterogeneous classification in one process (heco_acm):
# predicted peak host memory and epoch time beside what `halo train --json` measures (peak RSS,
# median epoch time), for R-GCN and HGT, full graph and mini-batch. Targets: memory within 15 %
# (issue 46), epoch time within 25 % (issue 15's). Appends a table to stdout (markdown).
#
#   bash bench/plan/hetero.sh BUILD_DIR [DATASET_DIR]
#
# BUILD_DIR holds tools/halo/halo (a Release build); DATASET_DIR the typed directory (default
# BUILD_DIR/data/heco_acm, unpacked by the configuration). Calibrates first (`halo calibrate
# --threads 1`, into a scratch file), then plans and runs every configuration once, one thread.
set -euo pipefail
build=${1:?usage: bench/plan/hetero.sh BUILD_DIR [DATASET_DIR]}
halo="$(cd "$build" && pwd)/tools/halo/halo"
data=${2:-$build/data/heco_acm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive HALO_CALIBRATION="$work/calibration.json"
"$halo" calibrate --threads 1 > "$work/calibrate.log" 2>&1 || { cat "$work/calibrate.log" >&2; exit 1; }
configs=(
  "--model rgcn|40"
  "--model hgt|20"
  "--model rgcn --hidden 256|10"
  "--model hgt --hidden 256 --featureless zero|5"
  "--model rgcn --num-bases 2 --layers 3|20"
  "--model rgcn --mode mini-batch --batch-size 256 --fanouts 10,5|5"
  "--model hgt --mode mini-batch --batch-size 256 --fanouts 10,5|3"
  "--model hgt --mode mini-batch --batch-size 64 --fanouts 5,5 --hidden 128|3"
)
echo "| configuration | epochs | peak memory predicted (MiB) | measured (MiB) | ratio | epoch predicted (ms) | measured (ms) | ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for c in "${configs[@]}"; do
  IFS='|' read -r flags epochs <<< "$c"
  # shellcheck disable=SC2086
  "$halo" plan --dataset "$data" $flags --epochs "$epochs" --threads 1 --output "$work/plan.json" 2>> "$work/log"
  # shellcheck disable=SC2086
  "$halo" train --dataset "$data" $flags --epochs "$epochs" --threads 1 --json "$work/run.json" > /dev/null 2>> "$work/log"
  /usr/bin/python3 - "$work/plan.json" "$work/run.json" "$flags" "$epochs" <<'PY'
import json, sys
p, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pm, rm = p["peak_host_bytes_per_rank"] / 2**20, r["peak_host_memory_bytes_max"] / 2**20
pe, re = p["epoch_seconds"] * 1e3, r["epoch_time_median_s"] * 1e3
print(f"| `{sys.argv[3]}` | {sys.argv[4]} | {pm:.1f} | {rm:.1f} | {pm / rm:.2f} | {pe:.2f} | {re:.2f} | {pe / re:.2f} |")
PY
done
echo
echo "Calibration: $(grep '^halo calibrate:' "$work/calibrate.log" | head -1)"
