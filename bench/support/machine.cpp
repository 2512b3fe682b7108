#include "support/machine.hpp"

#include <cstdlib>
#include <cstring>

#include <halo/runtime/engine/profile.hpp>

namespace halo::bench {

bool smoke() {
  const char* v = std::getenv("HALO_BENCH_SMOKE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// The measurements `halo train --profile` compares its kernels with (runtime/engine/profile.hpp),
// on all OpenMP threads.
double triad_bytes_per_second() {
  return runtime::measure_triad_bytes_per_s(kernels::Resources(kernels::Device::Cpu), smoke());
}

double sgemm_peak_flops() {
  return runtime::measure_sgemm_flops_per_s(kernels::Resources(kernels::Device::Cpu), smoke());
}

}  // namespace halo::bench
