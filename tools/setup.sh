#!/usr/bin/env bash
# Installs Halo's dependencies (Debian 12 packages), builds, and runs the main job or the tests.
#
#   bash tools/setup.sh run    # install, build (CPU, Release), train on the built-in dataset
#   bash tools/setup.sh test   # install, then the whole suite: CPU build under ASan+UBSan, the
#                              # bench preset (Release, built; its install is checked by
#                              # tests/install), and, when nvcc exists, a CUDA build whose GPU
#                              # cases skip without a GPU
#   bash tools/setup.sh deps   # install only
#
# Idempotent: packages already installed are not fetched again; builds are incremental.
# Runs as root (apt-get); prefix with sudo otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config git clang-format
  libopenblas-openmp-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  mpich libmpich-dev libmetis-dev
  zlib1g-dev libzip-dev clang libclang-rt-14-dev libomp-dev
  libcurl4-openssl-dev libssl-dev python3 python3-matplotlib python3-numpy
  libscotch-dev slurm-wlm munge prometheus ccache fuse3 libfuse3-dev)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  use_mpich
}

# libscotch-dev depends on mpi-default-dev, which is Open MPI on Debian, and Debian then points
# the mpicc/mpicxx/mpiexec alternatives at Open MPI. Halo is built and tested with MPICH (the
# build asks for MPICH's wrappers by name too, CMakeLists.txt): point the alternatives back, so
# that a plain `mpiexec` in the scripts and the installed package's consumers find MPICH.
use_mpich() {
  [ -x /usr/bin/mpicc.mpich ] || return 0
  update-alternatives --set mpi /usr/bin/mpicc.mpich >/dev/null
  update-alternatives --set mpirun /usr/bin/mpirun.mpich >/dev/null
}

find_nvcc() {
  command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true
}

jobs() { nproc 2>/dev/null || echo 2; }

# Compiler caching for the builds below (ccache is in PACKAGES): a rebuild after a small change,
# or a second checkout of the same sources, recompiles only what changed. Nothing else differs.
# Paths are hashed relative to the checkout (and not the build directory's own path), so a
# clone elsewhere hits the objects another checkout compiled.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
launcher() {
  command -v ccache >/dev/null || return 0
  local l
  for l in C CXX CUDA; do echo "-DCMAKE_${l}_COMPILER_LAUNCHER=ccache"; done
}

run_main() {
  cmake --preset cpu-release $(launcher) >/dev/null
  cmake --build build/cpu-release --parallel "$(jobs)"
  build/cpu-release/tools/halo/halo train --json build/cpu-release/train.json
}

run_lint() {
  echo "== lint: clang-format (.clang-format) =="
  find kernels datasets nn partition runtime cluster sampler tools tests bench examples \
      \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
    xargs -0 clang-format --dry-run --Werror
}

run_tests() {
  # ctest runs several test programs at once, each with an OpenMP team per core: workers that
  # spin while idle (libgomp's default) starve the other programs' threads many times over.
  export OMP_WAIT_POLICY=passive
  run_lint
  echo "== CPU build, ASan + UBSan =="
  cmake --preset cpu-debug $(launcher) >/dev/null
  cmake --build build/cpu-debug --parallel "$(jobs)"
  ctest --test-dir build/cpu-debug -L "cpu|mpi" --output-on-failure --parallel "$(jobs)"
  # The long accuracy runs (label accuracy) go to an optimised build: the CUDA one below, or
  # this one when there is no nvcc.
  echo "== fuzzers (clang, libFuzzer, ASan + UBSan): replay the saved corpus =="
  bash tests/fuzz/run.sh replay
  # The Release build without CUDA, benchmarks included (preset bench = cpu-release plus bench/;
  # -Werror differs with CUDA off and at -O3); its code is tested above. Its install is then
  # used as a user's project would use it (find_package, every public header, no flags leaking).
  echo "== CPU release build with the benchmarks (preset bench) and the install check =="
  cmake --preset bench $(launcher) >/dev/null
  # A new user's build prints no warning (the compiler cache replays a cached object's).
  cmake --build build/bench --parallel "$(jobs)" 2>&1 | tee build/bench-build.log
  if grep -q "warning:" build/bench-build.log; then
    grep -m 5 "warning:" build/bench-build.log
    echo "setup.sh: the release build printed warnings (build/bench-build.log)" >&2
    return 1
  fi
  bash tests/install/run.sh build/bench
  # The README's examples as a user runs them after `setup.sh run` (build/cpu-release: the
  # objects are the bench preset's, from the compiler cache).
  echo "== the README's example commands, as written (tools/check_examples.sh) =="
  cmake --preset cpu-release $(launcher) >/dev/null
  cmake --build build/cpu-release --parallel "$(jobs)"
  bash tools/check_examples.sh build/cpu-release

  local nvcc
  nvcc=$(find_nvcc)
  if [ -z "$nvcc" ]; then
    echo "== CUDA build skipped: nvcc not found (install the CUDA Toolkit to build the GPU backend) =="
    ctest --test-dir build/cpu-debug -L accuracy --output-on-failure --parallel "$(jobs)"
    return 0
  fi
  echo "== CUDA build ($nvcc); CUDA cases skip when no GPU is present =="
  cmake --preset cuda-release -DCMAKE_CUDA_COMPILER="$nvcc" $(launcher) >/dev/null
  cmake --build build/cuda-release --parallel "$(jobs)"
  # The CPU and MPI cases ran above under ASan + UBSan; here the GPU cases (they skip without a
  # GPU) and the accuracy runs.
  ctest --test-dir build/cuda-release -L "cuda|accuracy" --output-on-failure --parallel "$(jobs)"
  echo "== benchmark smoke run (smallest sizes, one repetition) =="
  bash bench/smoke.sh build/cuda-release
}

case "${1:-}" in
  deps) install_deps ;;
  run) install_deps; run_main ;;
  test) install_deps; run_tests ;;
  *) echo "usage: bash tools/setup.sh run|test|deps" >&2; exit 2 ;;
esac
