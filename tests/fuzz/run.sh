#!/usr/bin/env bash
# Builds the libFuzzer targets of the dataset readers with clang and runs them.
#   bash tests/fuzz/run.sh replay          # replay the saved corpus once (CI): no crash, no leak
#   bash tests/fuzz/run.sh fuzz [SECONDS]  # fuzz each target for SECONDS (default 60)
# Build directory: $HALO_FUZZ_BUILD (default build/fuzz). New inputs found while fuzzing go to
# build/fuzz/corpus/<target>, not to the saved corpus in tests/fuzz/corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-replay}
seconds=${2:-60}
build=${HALO_FUZZ_BUILD:-build/fuzz}
targets=(plain pickle npy matrix_market edge_list ogb_csv temporal hetero)

cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cxx" ]; then
  echo "fuzz: clang++ not found (install clang and libclang-rt-14-dev)" >&2
  exit 1
fi
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
  "${launcher[@]}" >/dev/null
cmake --build "$build" --parallel "$(nproc 2>/dev/null || echo 2)"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  corpus=tests/fuzz/corpus/$t
  case "$mode" in
    replay)
      if ! log=$("$build/fuzz_$t" -runs=0 "$corpus" 2>&1); then
        echo "$log"
        echo "fuzz replay: $t FAILED"
        exit 1
      fi
      echo "fuzz replay: $t ok ($(ls "$corpus" | wc -l) inputs)"
      ;;
    fuzz)
      mkdir -p "$build/corpus/$t"
      echo "== fuzz: $t for ${seconds}s =="
      "$build/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 \
        -print_final_stats=1 "$build/corpus/$t" "$corpus"
      ;;
    *)
      echo "usage: bash tests/fuzz/run.sh replay|fuzz [SECONDS]" >&2
      exit 2
      ;;
  esac
done
