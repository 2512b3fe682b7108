#!/usr/bin/env bash
# Runs every benchmark once at its smallest size so they keep working (CI). Not a measurement.
#   bash bench/smoke.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/smoke.sh BUILD_DIR}
export HALO_BENCH_SMOKE=1
for b in spmm_bench gemm_bench elementwise_bench attention_bench gcn_epoch_bench load_bench partition_bench sampler_bench gpu_bench; do
  if ! log=$("$build/bench/$b" --benchmark_min_time=0.001 --benchmark_repetitions=1 2>&1); then
    echo "$log"
    echo "bench smoke: $b FAILED"
    exit 1
  fi
  echo "bench smoke: $b ok"
done
# The scaling study's script end to end on a small graph (1 repeat, 2 epochs).
scaling_out=$(mktemp -d)
if ! log=$(HALO_SCALING_NODES=3000 bash "$(dirname "$0")/scaling/run.sh" "$build" "$scaling_out" 1 2 2>&1); then
  echo "$log"
  echo "bench smoke: scaling/run.sh FAILED"
  exit 1
fi
rm -rf "$scaling_out"
echo "bench smoke: scaling/run.sh ok"
# The peer comparison's Halo side on its small graphs (the peers need a multi-GB virtualenv).
peers_out=$(mktemp -d)
if ! log=$(bash "$(dirname "$0")/peers/run.sh" --quick --halo-only --out "$peers_out" "$build" 2>&1) ||
    [ ! -s "$peers_out/peers.md" ]; then
  echo "$log"
  echo "bench smoke: peers/run.sh FAILED"
  exit 1
fi
rm -rf "$peers_out"
echo "bench smoke: peers/run.sh --quick --halo-only ok"
# Memory follows the data: peak RSS within 1.5x the run's inventory (a check, not a measurement).
if ! log=$(bash "$(dirname "$0")/memory/bound.sh" "$build" 2>&1); then
  echo "$log"
  echo "bench smoke: memory/bound.sh FAILED"
  exit 1
fi
echo "$log" | grep "^memory bound:"
echo "bench smoke: memory/bound.sh ok"
# The emulated-cluster study end to end on one link profile (needs root: network namespaces).
if [ "$(id -u)" = 0 ]; then
  cluster_out=$(mktemp -d)
  if ! log=$(bash "$(dirname "$0")/cluster/run.sh" --quick --profiles 1gbit --out "$cluster_out" "$build" 2>&1) ||
      [ ! -s "$cluster_out/cluster.md" ]; then
    echo "$log"
    echo "bench smoke: cluster/run.sh FAILED"
    exit 1
  fi
  rm -rf "$cluster_out"
  echo "bench smoke: cluster/run.sh --quick ok"
fi
# The GPU check's script end to end (without a GPU every CUDA case and GPU benchmark skips).
gpu_out=$(mktemp -d)
if ! log=$(bash "$(dirname "$0")/gpu/run.sh" "$gpu_out" "$build" 2>&1) || [ ! -s "$gpu_out/gpu.md" ]; then
  echo "$log"
  echo "bench smoke: gpu/run.sh FAILED"
  exit 1
fi
rm -rf "$gpu_out"
echo "bench smoke: gpu/run.sh ok"
# Elastic jobs' script end to end on a small graph (one repeat).
elastic_out=$(mktemp -d)
if ! log=$(HALO_ELASTIC_NODES=3000 HALO_CALIBRATION="$elastic_out/none.json" \
    bash "$(dirname "$0")/elastic/run.sh" "$build" "$elastic_out" 1 2>&1) ||
    [ ! -s "$elastic_out/elastic_grace.csv" ]; then
  echo "$log"
  echo "bench smoke: elastic/run.sh FAILED"
  exit 1
fi
rm -rf "$elastic_out"
echo "bench smoke: elastic/run.sh ok"
