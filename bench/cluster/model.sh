#!/usr/bin/env bash
# The one performance model (`halo plan`) against every measured point of the emulated-cluster
# study (bench/cluster/run.sh's CSVs), and its extrapolation to P = 1024 on the partition metrics
# of large R-MAT graphs.
# Results and what the misses are: docs/performance.md, "The performance model against the study".
#
#   bash bench/cluster/model.sh [--calibration FILE | --calibrations K]
#                               [--extrapolate "20 21" [--parts "4 .. 1024"] [--parts-dir D]]
#                               [DIR] [BUILD_DIR]
#
# DIR (default bench/results/cluster) holds links.csv, full-graph.csv, minibatch.csv and
# partition.csv. For every configuration (profile, P, overlap / cache / method) the median
# measured epoch over its repetitions is set beside `halo plan`'s epoch_seconds for the same run:
# the same partition (rebuilt with run.sh's data flags), model flags and link (the profile's
# measured TCP throughput and round trip / 2 from links.csv, as --link-gbps and
# --link-latency-us), with --host-cores set to this machine's cores (the emulated hosts share
# them) and --host-transport-gbps to the fastest profile's throughput (the unshaped link's TCP,
# bound by those cores; the link calibrations are told the same). The costs come from FILE,
# else from K fresh calibrations (default 5; the committed results used 15), each a `halo
# calibrate` on this machine, then `halo calibrate` at 2 and 4 ranks over the
# emulated hosts' unshaped TCP, as run.sh launches its ranks (needs root; R-MAT graphs only,
# nothing is fitted on the cluster's runs): their field-by-field median is the model's
# calibration, kept as DIR/calibration.json, the K runs as DIR/calibrations/ (one calibration's
# step scales moved 1.5-2x between runs minutes apart on this machine: docs/performance.md).
# Writes DIR/model.csv (study, profile, ranks, variant, measured, predicted, ratio, within 20 %).
#
# --extrapolate SCALES: METIS partitions of R-MAT graphs at those scales (degree 8, 16 features)
# into P = 4, 16, 64, 256, 1024 parts (--parts: others), and `halo plan` for GCN full graph
# (hidden 256, as the study) on each at each link profile, with a core per rank (a real
# cluster): DIR/extrapolation.csv and DIR/extrapolation.png. Partitions go to
# D/rmat<scale>-p<P> (kept and reused when there; default a scratch directory, removed); the
# largest scale that partitions in this machine's memory is the caller's choice (see
# docs/performance.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cal="" ncal=5 scales="" dir="" build="" partdir="" plist="4 16 64 256 1024"
while [ $# -gt 0 ]; do
  case "$1" in
    --calibration) cal=${2:?}; shift ;;
    --calibrations) ncal=${2:?}; shift ;;
    --extrapolate) scales=${2:?}; shift ;;
    --parts-dir) partdir=${2:?}; shift ;;
    --parts) plist=${2:?}; shift ;;
    -h | --help) sed -n 2,33p "$0"; exit 0 ;;
    -*) echo "bench/cluster/model.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) if [ -z "$dir" ]; then dir=$1; else build=$1; fi ;;
  esac
  shift
done
dir=${dir:-$root/bench/results/cluster}
build=$(cd "${build:-$root/build/bench}" 2>/dev/null && pwd) ||
  { echo "bench/cluster/model.sh: build directory not found (cmake --preset bench)" >&2; exit 2; }
halo=$build/tools/halo/halo
[ -x "$halo" ] || { echo "bench/cluster/model.sh: $halo missing" >&2; exit 2; }
for f in links full-graph minibatch partition; do
  [ -s "$dir/$f.csv" ] || { echo "bench/cluster/model.sh: $dir/$f.csv missing (bench/cluster/run.sh)" >&2; exit 2; }
done
py=/usr/bin/python3
# The rate at which the cores move TCP bytes: the fastest profile's throughput (the unshaped
# link's, which the cores bound, not the wire); the calibrations' in-step fits and every plan
# charge it.
transport=$("$py" -c "import csv, sys; print(max(float(r['bytes_per_s']) for r in csv.DictReader(open(sys.argv[1]))) * 8 / 1e9)" "$dir/links.csv")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
[[ "$ncal" =~ ^[1-9][0-9]?$ ]] || { echo "bench/cluster/model.sh: --calibrations takes 1-99, not '$ncal'" >&2; exit 2; }
if [ -z "$cal" ]; then
  [ "$(id -u)" = 0 ] || { echo "bench/cluster/model.sh: a fresh calibration runs over the emulated hosts and needs root (or give --calibration FILE)" >&2; exit 2; }
  # The in-step collectives at both rank counts of the study (its P = 4 hosts share the two
  # cores four ways), over the transport the study's ranks use: one rank per emulated host,
  # UCX over TCP on the unshaped veth (run.sh's launch), as a user calibrates on the cluster
  # itself. The plan takes the entry for its ranks.
  trap 'bash "$here/hosts.sh" down > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
  bash "$here/hosts.sh" up 4 none > /dev/null
  mkdir "$work/calibrations"
  for i in $(seq "$ncal"); do
    one=$work/calibrations/calibration-$i.json
    "$halo" calibrate --threads 1 --output "$one" > "$work/calibrate.log" 2>&1 ||
      { cat "$work/calibrate.log" >&2; echo "bench/cluster/model.sh: calibration $i failed" >&2; exit 1; }
    for n in 2 4; do
      # Done once rank 0 has printed the file it wrote (on_hosts.sh stops a finalize hang).
      bash "$here/on_hosts.sh" "$n" "$work/calibrate-$n.log" \
        "grep -qxF $(printf %q "$one") $(printf %q "$work/calibrate-$n.log")" \
        "$halo" calibrate --threads 1 --host-transport-gbps "$transport" --output "$one" ||
        [ $? = 3 ] || { cat "$work/calibrate-$n.log" >&2; echo "bench/cluster/model.sh: calibration $i at $n ranks failed" >&2; exit 1; }
      cat "$work/calibrate-$n.log" >> "$work/calibrate.log"
    done
    grep "^halo calibrate:" "$work/calibrate.log" | awk '!seen[$0]++' | sed "s/^/model.sh: [$i] /" >&2
  done
  bash "$here/hosts.sh" down > /dev/null
  # Every number the median of the runs' (the same keys and list lengths in every run: one
  # binary, one machine); text and flags from the first.
  cal=$work/calibration.json
  "$py" - "$cal" "$work"/calibrations/*.json <<'PY'
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[2:]]
def median(xs):
    x = xs[0]
    if isinstance(x, dict):
        return {k: median([r[k] for r in xs]) for k in x}
    if isinstance(x, list):
        return [median([r[i] for r in xs]) for i in range(len(x))]
    if isinstance(x, (bool, str)) or x is None:
        return x
    return statistics.median_low(xs) if isinstance(x, int) else statistics.median(xs)
with open(sys.argv[1], "w") as f:
    json.dump(median(runs), f, indent=1)
PY
  # Kept beside the results: model.csv and extrapolation.csv are reproducible from it
  # (--calibration DIR/calibration.json).
  cp "$cal" "$dir/calibration.json"
  rm -rf "$dir/calibrations"
  cp -r "$work/calibrations" "$dir/calibrations"
fi
cores=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS
# run.sh's data (the arxiv shape) and its partitions.
data=(--dataset synthetic --synthetic-nodes 169343 --synthetic-classes 40 --synthetic-features 128
      --synthetic-degree 13.7 --synthetic-seed 1)
for p in 1 2 4; do
  "$halo" partition "${data[@]}" --parts "$p" --out "$work/metis-$p" > /dev/null 2>> "$work/partition.log"
done
"$halo" partition "${data[@]}" --parts 4 --method random --out "$work/random-4" > /dev/null 2>> "$work/partition.log"
gcn="--model gcn --layers 2 --hidden 256"
sage="--model sage --layers 2 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5"
plan() {  # profile, partition dir, flags... -> epoch_seconds
  local profile=$1 part=$2; shift 2
  local lat gbps
  read -r lat gbps < <("$py" - "$dir/links.csv" "$profile" <<'PY'
import csv, sys
r = {x["profile"]: x for x in csv.DictReader(open(sys.argv[1]))}[sys.argv[2]]
print(float(r["rtt_s"]) / 2 * 1e6, float(r["bytes_per_s"]) * 8 / 1e9)
PY
)
  # shellcheck disable=SC2068
  "$halo" plan --partitions "$part" --threads 1 --calibration "$cal" --link-latency-us "$lat" \
    --link-gbps "$gbps" --host-cores "$cores" --host-transport-gbps "$transport" $@ \
    --output "$work/plan.json" 2>> "$work/plan.log"
  "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['epoch_seconds'])" "$work/plan.json"
}
# The configurations measured, with their median epoch: study|profile|ranks|variant|median.
"$py" - "$dir" > "$work/points.txt" <<'PY'
import csv, statistics, sys
from collections import defaultdict
d = sys.argv[1]
def groups(name, key):
    g = defaultdict(list)
    for r in csv.DictReader(open(f"{d}/{name}.csv")):
        g[key(r)].append(float(r["epoch_time_s"]))
    return g
for (prof, p, ov), v in groups("full-graph", lambda r: (r["profile"], r["ranks"], r["overlap"])).items():
    print(f"full-graph|{prof}|{p}|overlap {ov}|{statistics.median(v)}")
for (prof, p, c), v in groups("minibatch", lambda r: (r["profile"], r["ranks"], r["cache_mb"])).items():
    print(f"mini-batch|{prof}|{p}|cache {c} MiB|{statistics.median(v)}")
for (prof, m), v in groups("partition", lambda r: (r["profile"], r["method"])).items():
    print(f"partition|{prof}|4|{m}|{statistics.median(v)}")
PY
echo "study,profile,ranks,variant,measured_epoch_s,predicted_epoch_s,ratio,within_20" > "$work/model.csv"
while IFS='|' read -r study profile ranks variant measured; do
  case "$study" in
    full-graph)
      flags="$gcn"; [ "$variant" = "overlap off" ] && flags="$flags --no-overlap"
      predicted=$(plan "$profile" "$work/metis-$ranks" $flags) ;;
    mini-batch)
      cache=${variant#cache }; cache=${cache% MiB}
      predicted=$(plan "$profile" "$work/metis-$ranks" $sage --cache-mb "$cache") ;;
    partition)
      predicted=$(plan "$profile" "$work/$variant-4" $gcn) ;;
  esac
  "$py" -c "import sys; m, p = float(sys.argv[1]), float(sys.argv[2]); r = p / m
print(','.join(sys.argv[3:] + [repr(m), repr(p), f'{r:.3f}', 'yes' if abs(r - 1) <= 0.2 else 'no']))" \
    "$measured" "$predicted" "$study" "$profile" "$ranks" "$variant" >> "$work/model.csv"
done < "$work/points.txt"
mv "$work/model.csv" "$dir/model.csv"
"$py" - "$dir/model.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ok = sum(r["within_20"] == "yes" for r in rows)
print(f"model.sh: {ok} of {len(rows)} points within 20 %")
PY

if [ -n "$scales" ]; then
  # A cluster's ranks have a core each and nothing else running: every message costs the link's
  # latency (the calibration's in-step message latency, which carries this shared machine's
  # load, is dropped).
  "$py" - "$cal" "$work/cluster-cal.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["collective"] = []
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY
  echo "scale,parts,profile,num_nodes,max_owned,max_edges,max_halo,comm_volume,epoch_s,compute_s,exposed_exchange_s,allreduce_s" > "$work/extrapolation.csv"
  for s in $scales; do
    for p in $plist; do
      x=${partdir:-$work}/rmat$s-p$p
      [ -s "$x/meta.json" ] ||
        "$halo" partition --dataset rmat --rmat-scale "$s" --parts "$p" --out "$x" > /dev/null 2>> "$work/partition.log"
      for profile in $(tail -n +2 "$dir/links.csv" | cut -d, -f1); do
        read -r lat gbps < <("$py" - "$dir/links.csv" "$profile" <<'PY'
import csv, sys
r = {x["profile"]: x for x in csv.DictReader(open(sys.argv[1]))}[sys.argv[2]]
print(float(r["rtt_s"]) / 2 * 1e6, float(r["bytes_per_s"]) * 8 / 1e9)
PY
)
        # shellcheck disable=SC2086
        "$halo" plan --partitions "$x" --threads 1 --calibration "$work/cluster-cal.json" \
          --link-latency-us "$lat" --link-gbps "$gbps" $gcn --output "$work/x.json" 2>> "$work/plan.log"
        "$py" - "$work/x.json" "$x/meta.json" "$s" "$p" "$profile" >> "$work/extrapolation.csv" <<'PY'
import json, sys
pl, meta = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
parts = meta["parts"]
slow = max(pl["per_rank"], key=lambda r: r["seconds_per_epoch"]["epoch"])["seconds_per_epoch"]
vol = meta.get("metrics", meta).get("comm_volume", "")
print(",".join(map(str, [sys.argv[3], sys.argv[4], sys.argv[5], meta["dataset"]["num_nodes"],
    max(p["num_owned"] for p in parts), max(p["num_edges"] for p in parts),
    max(p["num_halo"] for p in parts), vol, pl["epoch_seconds"], slow["compute"],
    slow["exposed_exchange"], slow["allreduce"]])))
PY
      done
      [ -n "$partdir" ] || rm -rf "$x"
    done
  done
  mv "$work/extrapolation.csv" "$dir/extrapolation.csv"
  "$py" "$here/plot_model.py" "$dir"
fi
echo "model.sh: wrote $dir/model.csv${scales:+ and $dir/extrapolation.csv, extrapolation.png}"
