#include "support/machine.hpp"

#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <vector>

namespace halo::bench {

bool smoke() {
  const char* v = std::getenv("HALO_BENCH_SMOKE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

double triad_bytes_per_second() {
  {
    const std::int64_t n = smoke() ? (1 << 20) : (16 << 20);  // 16M floats = 64 MiB per array
    std::vector<float> a(n), b(n, 1.f), c(n, 2.f);
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.f * c[i];
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 3.0 * 4.0 * static_cast<double>(n) / s);
    }
    if (a[n / 2] != 7.f) std::abort();  // keeps the loop alive and checks it
    return best;
  }
}

double sgemm_peak_flops() {
  {
    const int n = smoke() ? 256 : 2048;
    std::vector<float> a(static_cast<std::size_t>(n) * n, 1.f), b(a), c(a.size());
    openblas_set_num_threads(omp_get_max_threads());
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
                  0.f, c.data(), n);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 2.0 * n * n * static_cast<double>(n) / s);
    }
    return best;
  }
}

}  // namespace halo::bench
