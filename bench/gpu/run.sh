#!/usr/bin/env bash
# The GPU check, in one script for a machine with an NVIDIA GPU (the budget: 8 minutes on an
# H200): configure and build with CUDA on every core, run the CUDA test cases (ctest -L cuda),
# then the GPU benchmarks, and write one summary.
#
#   bash bench/gpu/run.sh [OUT_DIR] [BUILD_DIR]
#
# OUT_DIR (default bench/results) receives gpu.md (the summary), gpu_bench.json,
# gpu_sampler_bench.json and gpu_ctest.log. BUILD_DIR (default build/gpu) is configured for this
# machine's GPU architecture (CMAKE_CUDA_ARCHITECTURES=native) unless it already exists (an
# existing one is used as configured). Relative paths are taken from the repository root.
# Tests and benchmarks read the datasets of data/, which the configuration unpacks into BUILD_DIR.
# HALO_BENCH_SMOKE=1 shrinks every benchmark to its smallest size (a check of the script).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results}
build=${2:-build/gpu}
mkdir -p "$out"
start=$(date +%s)
stamp() { echo "[gpu $(( $(date +%s) - start )) s] $*"; }

gpu_info=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null ||
  echo "no GPU visible to nvidia-smi")
stamp "GPU: $gpu_info"

if [ ! -f "$build/build.ninja" ]; then
  stamp "configure $build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALO_WITH_CUDA=ON \
    -DHALO_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=native >/dev/null
fi
stamp "build"
cmake --build "$build" --parallel "$(nproc)" >/dev/null

stamp "CUDA test cases"
set +e
ctest --test-dir "$build" -L cuda --output-on-failure --parallel 8 --timeout 300 \
  >"$out/gpu_ctest.log" 2>&1
ctest_rc=$?
set -e
tests_line=$(grep -E 'tests passed|tests failed' "$out/gpu_ctest.log" | tail -1 || true)
skipped=$(grep -c '\*\*\*Skipped' "$out/gpu_ctest.log" || true)
stamp "ctest: ${tests_line:-no summary} ($skipped skipped, exit $ctest_rc)"

# A benchmark that dies (out of memory on the products shape, say) must not lose the summary.
set +e
stamp "GPU benchmarks"
"$build/bench/gpu_bench" --benchmark_repetitions=1 --benchmark_format=console \
  --benchmark_out="$out/gpu_bench.json" --benchmark_out_format=json
bench_rc=$?
stamp "sampler throughput"
"$build/bench/sampler_bench" --benchmark_filter=Cuda --benchmark_repetitions=1 \
  --benchmark_out="$out/gpu_sampler_bench.json" --benchmark_out_format=json
sampler_rc=$?
set -e

stamp "summary"
python3 bench/gpu/summarize.py "$out" "$gpu_info" "$tests_line" "$skipped" "$ctest_rc" \
  "$(( $(date +%s) - start ))" >"$out/gpu.md.tmp"
mv "$out/gpu.md.tmp" "$out/gpu.md"
stamp "wrote $out/gpu.md (gpu_bench exit $bench_rc, sampler_bench exit $sampler_rc)"
cat "$out/gpu.md"
[ "$bench_rc" -eq 0 ] && [ "$sampler_rc" -eq 0 ] && exit "$ctest_rc"
exit 1
