#!/usr/bin/env bash
# `halo plan` against measurement for the tasks besides node classification (bench/plan/
# validate.sh has node classification): heterogeneous classification on heco_acm (R-GCN, HGT;
# full graph and mini-batch in one process and over 2- and 4-part METIS partitions under
# `mpiexec --bind-to core`) and link prediction on CollegeMsg (EvolveGCN-O, GCRN, 40 snapshots)
# in one process and EvolveGCN-O over 2- and 4-part snapshot partition series: predicted peak host memory (the largest rank's) and epoch time beside what `halo
# train --json` measures (peak RSS, median epoch time), and the whole run's time. Targets: memory
# within 15 % (issue 46), epoch time within 25 % (issue 15's). Writes a markdown table to stdout.
#
#   bash bench/plan/tasks.sh BUILD_DIR [DATA_DIR]
#
# BUILD_DIR holds tools/halo/halo (a Release build); DATA_DIR holds heco_acm/ and collegemsg/
# (default BUILD_DIR/data, unpacked by the configuration). Calibrates first (`halo calibrate
# --threads 1`, then `mpiexec -n 2 halo calibrate` for the link, into a scratch file), then plans
# and runs every configuration once, one thread per rank; plans are told the host's cores
# (--host-cores). MPIEXEC: the launcher of the MPI the build links (default mpiexec.mpich).
# MATCH: an extended regular expression; only the configurations whose flags match it run.
set -euo pipefail
build=${1:?usage: bench/plan/tasks.sh BUILD_DIR [DATA_DIR]}
halo="$(cd "$build" && pwd)/tools/halo/halo"
data=${2:-$build/data}
acm="--dataset $data/heco_acm"
college="--task link --dataset $data/collegemsg --snapshots 40"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive HALO_CALIBRATION="$work/calibration.json"
mpiexec=${MPIEXEC:-mpiexec.mpich}
cores=$(getconf _NPROCESSORS_ONLN)
"$halo" calibrate --threads 1 > "$work/calibrate.log" 2>&1 || { cat "$work/calibrate.log" >&2; exit 1; }
"$mpiexec" --bind-to core -n 2 "$halo" calibrate --threads 1 >> "$work/calibrate.log" 2>&1 ||
  { cat "$work/calibrate.log" >&2; exit 1; }
for p in 2 4; do
  "$halo" partition --dataset "$data/heco_acm" --parts "$p" --out "$work/acm-p$p" > /dev/null 2>&1
  "$halo" partition --dataset "$data/collegemsg" --snapshots 40 --parts "$p" --method migration \
    --out "$work/college-s$p" > /dev/null 2>&1
done
# ranks | flags | epochs
configs=(
  "1|$acm --model rgcn|40"
  "1|$acm --model hgt|20"
  "1|$acm --model rgcn --hidden 256|10"
  "1|$acm --model hgt --hidden 256 --featureless zero|5"
  "1|$acm --model rgcn --num-bases 2 --layers 3|20"
  "1|$acm --model rgcn --mode mini-batch --batch-size 256 --fanouts 10,5|5"
  "1|$acm --model hgt --mode mini-batch --batch-size 256 --fanouts 10,5|3"
  "1|$acm --model hgt --mode mini-batch --batch-size 64 --fanouts 5,5 --hidden 128|3"
  "1|$college --model evolvegcn-o --hidden 32|2"
  "1|$college --model evolvegcn-o --hidden 100|2"
  "1|$college --model evolvegcn-o --hidden 256|2"
  "1|$college --model gcrn --hidden 32|2"
  "1|$college --model gcrn --hidden 100|2"
  "1|$college --model gcrn --hidden 256|2"
  "2|--partitions $work/acm-p2 --model rgcn --featureless embedding|20"
  "2|--partitions $work/acm-p2 --model hgt|20"
  "4|--partitions $work/acm-p4 --model rgcn --featureless embedding|20"
  "4|--partitions $work/acm-p4 --model rgcn --hidden 256 --featureless zero|10"
  "2|--partitions $work/acm-p2 --model rgcn --mode mini-batch --batch-size 256 --fanouts 10,5|5"
  "2|--partitions $work/acm-p2 --model hgt --mode mini-batch --batch-size 256 --fanouts 10,5|3"
  "4|--partitions $work/acm-p4 --model rgcn --mode mini-batch --batch-size 256 --fanouts 10,5 --featureless embedding|5"
  "4|--partitions $work/acm-p4 --model rgcn --mode mini-batch --batch-size 64 --fanouts 10,10 --hidden 128 --cache-mb 4|3"
  "2|$college --partitions $work/college-s2 --model evolvegcn-o --hidden 32|2"
  "2|$college --partitions $work/college-s2 --model evolvegcn-o --hidden 100|2"
  "4|$college --partitions $work/college-s4 --model evolvegcn-o --hidden 100|2"
  "4|$college --partitions $work/college-s4 --model evolvegcn-o --hidden 256|2"
)
echo "| configuration | ranks | epochs | peak memory predicted (MiB) | measured (MiB) | ratio | epoch predicted (ms) | measured (ms) | ratio | run predicted (s) | measured (s) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for c in "${configs[@]}"; do
  IFS='|' read -r ranks flags epochs <<< "$c"
  [[ -n "${MATCH:-}" && ! "$flags" =~ $MATCH ]] && continue
  launch=()
  [ "$ranks" -gt 1 ] && launch=("$mpiexec" --bind-to core -n "$ranks")
  # shellcheck disable=SC2086
  "$halo" plan $flags --epochs "$epochs" --threads 1 --host-cores "$cores" --output "$work/plan.json" 2>> "$work/log"
  # shellcheck disable=SC2086
  "${launch[@]}" "$halo" train $flags --epochs "$epochs" --threads 1 --json "$work/run.json" > /dev/null 2>> "$work/log"
  /usr/bin/python3 - "$work/plan.json" "$work/run.json" "$flags" "$epochs" "$ranks" <<'PY'
import json, sys
p, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pm, rm = p["peak_host_bytes_per_rank"] / 2**20, r["peak_host_memory_bytes_max"] / 2**20
pe, re = p["epoch_seconds"] * 1e3, r["epoch_time_median_s"] * 1e3
flags = " ".join(w if "/" not in w else w.rstrip("/").split("/")[-1] for w in sys.argv[3].split())
print(f"| `{flags}` | {sys.argv[5]} | {sys.argv[4]} | {pm:.1f} | {rm:.1f} | {pm / rm:.2f} | {pe:.2f} | {re:.2f} | "
      f"{pe / re:.2f} | {p['train_seconds']:.2f} | {r['train_time_s']:.2f} |")
PY
done
echo
echo "Calibration:"
echo
echo '```'
grep '^halo calibrate:' "$work/calibrate.log" | uniq
echo '```'
