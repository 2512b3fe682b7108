#!/usr/bin/env bash
# Scaling studies on emulated cluster hosts: one MPI rank per network namespace, ranks talking
# over TCP through veth links shaped by tc (bench/cluster/hosts.sh), launched by MPICH's Hydra
# with bench/cluster/launcher.sh as its "ssh".
#
#   bash bench/cluster/run.sh [--quick] [--profiles "1gbit 10gbit ..."] [--reps N] [--out DIR] [BUILD_DIR]
#
# Studies (each a CSV in DIR, plotted by plot.py; tables in docs/performance.md):
#   full-graph.csv  GCN full graph, arxiv shape, P = 1, 2, 4, overlap on and off, per link
#                   profile: epoch time, exchange time, exposed exchange, hidden fraction;
#   minibatch.csv   GraphSAGE mini-batch across P = 2 and 4 ranks, feature cache off and on,
#                   per profile: epoch time, feature bytes, fetch time, batch wait, cache hits;
#   partition.csv   METIS against random partitions at P = 4, per profile: comm volume, epoch.
#   links.csv       each profile's measured TCP throughput and round-trip time between hosts.
# Every configuration runs REPS times (default 2, --quick 1), interleaved so that drift of the
# machine hits all alike. Must run as root (namespaces, tc); only 10.77.0.0/24 addresses of the
# namespaces it creates are used, and every namespace, veth and qdisc is removed on exit.
# BUILD_DIR (default build/bench): a Release build with tools/halo/halo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0 reps="" out="" build="" profiles=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --reps) reps=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --profiles) profiles=${2:?}; shift ;;
    -h | --help) sed -n 2,21p "$0"; exit 0 ;;
    -*) echo "bench/cluster/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "bench/cluster/run.sh: needs root (ip netns, tc)" >&2; exit 2; }
build=$(cd "${build:-$root/build/bench}" 2>/dev/null && pwd) ||
  { echo "bench/cluster/run.sh: build directory not found (cmake --preset bench)" >&2; exit 2; }
halo=$build/tools/halo/halo
[ -x "$halo" ] || { echo "bench/cluster/run.sh: $halo missing" >&2; exit 2; }
command -v mpiexec.hydra > /dev/null || command -v mpiexec.mpich > /dev/null ||
  { echo "bench/cluster/run.sh: MPICH's mpiexec.hydra not found" >&2; exit 2; }
[ -n "$reps" ] || reps=$([ $quick = 1 ] && echo 1 || echo 2)
[ -n "$out" ] || out=$([ $quick = 1 ] && echo "$root/build/cluster-quick" || echo "$root/bench/results/cluster")
[ -n "$profiles" ] || profiles=$([ $quick = 1 ] && echo "1gbit none" || echo "1gbit 10gbit none")
mkdir -p "$out"
rm -f "$out/finalize_hangs.txt"
py=/usr/bin/python3
work=$(mktemp -d)
hosts() { bash "$here/hosts.sh" "$@"; }
cleanup() { hosts down || true; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ $quick = 1 ]; then
  data=(--dataset synthetic --synthetic-nodes 6000 --synthetic-classes 40 --synthetic-features 128
        --synthetic-degree 13.7 --synthetic-seed 1)
  full_epochs=3 mb_epochs=1
else
  data=(--dataset synthetic --synthetic-nodes 169343 --synthetic-classes 40 --synthetic-features 128
        --synthetic-degree 13.7 --synthetic-seed 1)
  full_epochs=6 mb_epochs=5
fi
for p in 1 2 4; do
  "$halo" partition "${data[@]}" --parts "$p" --out "$work/metis-$p" >/dev/null 2>"$work/partition.log"
done
"$halo" partition "${data[@]}" --parts 4 --method random --out "$work/random-4" >/dev/null 2>>"$work/partition.log"

hosts up 4 none
# Runs `halo train` with one rank per host (on_hosts.sh): ranks, partition dir, json, extra
# flags... The results are complete once the JSON is there (it is written before finalising);
# a run on_hosts.sh had to stop in MPI_Finalize (UCX over TCP, see there) is counted in
# DIR/finalize_hangs.txt.
train() {
  local ranks=$1 part=$2 json=$3 status=0; shift 3
  rm -f "$json"
  bash "$here/on_hosts.sh" "$ranks" "$work/train.log" "test -s $(printf %q "$json")" \
    "$halo" train --partitions "$part" --threads 1 --seed 1 --json "$json" "$@" || status=$?
  [ $status = 3 ] && echo "$* (P=$ranks)" >> "$out/finalize_hangs.txt"
  [ $status != 1 ] || { cat "$work/train.log" >&2; echo "cluster: run failed: $* (P=$ranks)" >&2; exit 1; }
}
# Throughput and round-trip time between host 0 and host 1 over TCP (Python sockets).
measure_link() {
  local profile=$1
  ip netns exec halo-h1 "$py" "$here/link.py" serve 10.77.0.2 5599 &
  local server=$!
  sleep 0.5
  ip netns exec halo-h0 "$py" "$here/link.py" measure 10.77.0.2 5599 "$profile" >> "$work/links.csv"
  wait "$server" || true
}

echo "profile,bytes_per_s,rtt_s" > "$work/links.csv"
echo "profile,rep,ranks,overlap,epoch_time_s,exchange_bytes,exchange_time_s,exchange_exposed_s,hidden_fraction,allreduce_time_s,test_accuracy,exchange_window_s" > "$work/full-graph.csv"
echo "profile,rep,ranks,cache_mb,epoch_time_s,feature_bytes,fetch_time_s,batch_wait_s,cache_hit_rate,sampling_bytes" > "$work/minibatch.csv"
echo "profile,rep,method,comm_volume,epoch_time_s,exchange_exposed_s" > "$work/partition.csv"
row() {  # json file, then the keys to print after the given prefix
  "$py" - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(",".join(sys.argv[2].split("|") + [str(j.get(k, "")) for k in sys.argv[3:]]))
PY
}
model=(--model gcn --layers 2 --hidden 256)
sage=(--model sage --layers 2 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5)
start=$(date +%s)
for profile in $profiles; do
  hosts shape "$profile"
  measure_link "$profile"
  for ((r = 0; r < reps; r++)); do
    for p in 1 2 4; do
      for ov in on off; do
        [ $p = 1 ] && [ $ov = off ] && continue
        flags=()
        [ $ov = off ] && flags=(--no-overlap)
        train "$p" "$work/metis-$p" "$work/f.json" "${model[@]}" --epochs "$full_epochs" "${flags[@]}"
        row "$work/f.json" "$profile|$r|$p|$ov" epoch_time_median_s exchange_bytes_per_epoch \
          exchange_time_s exchange_exposed_s exchange_hidden_fraction allreduce_time_s \
          test_accuracy exchange_window_s >> "$work/full-graph.csv"
      done
    done
    for p in 2 4; do
      for cache in 0 8; do
        train "$p" "$work/metis-$p" "$work/m.json" "${sage[@]}" --epochs "$mb_epochs" --cache-mb "$cache"
        row "$work/m.json" "$profile|$r|$p|$cache" epoch_time_median_s feature_bytes_per_epoch \
          fetch_time_s batch_wait_s cache_hit_rate sampling_bytes_per_epoch >> "$work/minibatch.csv"
      done
    done
    for method in metis random; do
      train 4 "$work/$method-4" "$work/q.json" "${model[@]}" --epochs "$full_epochs"
      volume=$("$py" -c "import json,sys; m=json.load(open(sys.argv[1])); print(m.get('metrics', m).get('comm_volume', ''))" "$work/$method-4/meta.json")
      row "$work/q.json" "$profile|$r|$method|$volume" epoch_time_median_s exchange_exposed_s >> "$work/partition.csv"
    done
  done
  echo "cluster: profile $profile done ($(($(date +%s) - start)) s)"
done
for f in links full-graph minibatch partition; do mv "$work/$f.csv" "$out/$f.csv"; done
"$py" "$here/plot.py" "$out"
echo "cluster: results in $out"
