#pragma once
// The sampler's CPU launch: kernels::launch, except that short loops stay on the calling thread.

#include <cstdint>

#include <halo/kernels/exec.hpp>

namespace halo::sampler::detail {

/// Below this many indices a loop runs on the calling thread: a parallel region costs
/// microseconds, far more on an oversubscribed machine, than a few thousand ids take.
constexpr std::int64_t kMinParallel = 4096;

template <class Body>
void run(const kernels::Resources& res, std::int64_t n, const Body& body) {
  if (res.device() == kernels::Device::Cpu && n < kMinParallel) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  kernels::launch(res, n, body);
}

}  // namespace halo::sampler::detail
