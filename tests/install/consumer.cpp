// A user's program against an installed Halo: builds a Resources and a small Tensor.
#include <cstdio>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>

// Deliberately unused parameter. This file is built with -Wall -Wpedantic -Werror (the user's
// choice, without -Wextra): it fails only if Halo imposes its own -Wextra -Werror on its users.
static int answer(int unused) { return 42; }

int main() {
  const halo::kernels::Resources res(halo::kernels::Device::Cpu, /*num_threads=*/1);
  const auto t = halo::kernels::Tensor<float>::from_host(res, std::vector<float>{1, 2, 3, 4}, 2, 2);
  const std::vector<float> back = t.to_vector(res);
  float sum = 0;
  for (const float v : back) sum += v;
  if (t.rows() != 2 || t.cols() != 2 || sum != 10.0f || answer(0) != 42) {
    std::fprintf(stderr, "consumer: unexpected result (sum %g)\n", static_cast<double>(sum));
    return 1;
  }
  std::printf("consumer: Halo %s, tensor 2x2 sum %g\n", HALO_VERSION, static_cast<double>(sum));
  return 0;
}
