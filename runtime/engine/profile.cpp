#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/engine/profile.hpp>

namespace halo::runtime {
namespace {}  // namespace

EpochProfile median_profile(std::span<const EpochProfile> epochs) {
  EpochProfile m;
  const auto field = [&](auto get) {
    std::vector<double> v;
    for (const EpochProfile& p : epochs) v.push_back(static_cast<double>(get(p)));
    return detail::median(std::move(v));
  };
  m.sample_s = field([](const EpochProfile& p) { return p.sample_s; });
  m.gather_s = field([](const EpochProfile& p) { return p.gather_s; });
  m.copy_s = field([](const EpochProfile& p) { return p.copy_s; });
  m.wait_s = field([](const EpochProfile& p) { return p.wait_s; });
  m.forward_s = field([](const EpochProfile& p) { return p.forward_s; });
  m.loss_s = field([](const EpochProfile& p) { return p.loss_s; });
  m.backward_s = field([](const EpochProfile& p) { return p.backward_s; });
  m.optimizer_s = field([](const EpochProfile& p) { return p.optimizer_s; });
  for (std::size_t k = 0; k < m.ops.ops.size(); ++k) {
    kernels::OpCounters& c = m.ops.ops[k];
    c.seconds = field([k](const EpochProfile& p) { return p.ops.ops[k].seconds; });
    c.bytes = field([k](const EpochProfile& p) { return p.ops.ops[k].bytes; });
    c.flops = field([k](const EpochProfile& p) { return p.ops.ops[k].flops; });
    c.calls =
        static_cast<std::int64_t>(field([k](const EpochProfile& p) { return p.ops.ops[k].calls; }));
  }
  return m;
}

double measure_triad_bytes_per_s(const kernels::Resources& res, bool small) {
  const int threads = res.cpu_exec().num_threads;
  const std::int64_t n = small ? (1 << 20) : (16 << 20);  // 16 Mi floats = 64 MiB per array
  std::vector<float> a(static_cast<std::size_t>(n)), b(a.size(), 1.f), c(a.size(), 2.f);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.f * c[i];
    best = std::max(best, 12.0 * static_cast<double>(n) / detail::seconds_since(t0));
  }
  if (a[static_cast<std::size_t>(n / 2)] != 7.f) HALO_FAIL("measure_triad: wrong result");
  return best;
}

double measure_sgemm_flops_per_s(const kernels::Resources& res, bool small) {
  const int n = small ? 256 : 2048;
  std::vector<float> a(static_cast<std::size_t>(n) * n, 1.f), b(a), c(a.size());
  const kernels::Resources host(kernels::Device::Cpu, res.cpu_exec().num_threads);
  const kernels::MatrixView<const float> av{a.data(), n, n}, bv{b.data(), n, n};
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    kernels::gemm(host, kernels::Trans::No, kernels::Trans::No, 1.f, av, bv, 0.f,
                  kernels::MatrixView<float>{c.data(), n, n});
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) / detail::seconds_since(t0));
  }
  return best;
}

MachineLimits measure_machine_limits(const kernels::Resources& res, bool small) {
  return {measure_triad_bytes_per_s(res, small), measure_sgemm_flops_per_s(res, small)};
}

double limit_seconds(const kernels::OpCounters& c, const MachineLimits& m) {
  const double memory = m.triad_bytes_per_s > 0 ? c.bytes / m.triad_bytes_per_s : 0;
  const double compute = m.sgemm_flops_per_s > 0 ? c.flops / m.sgemm_flops_per_s : 0;
  return std::max(memory, compute);
}

std::string profile_table(const EpochProfile& p, double epoch_s, const MachineLimits& m,
                          bool mini_batch) {
  std::string out;
  char line[256];
  const auto share = [&](double s) { return epoch_s > 0 ? 100 * s / epoch_s : 0.0; };
  const auto phase = [&](const char* name, double s) {
    std::snprintf(line, sizeof line, "  %-22s %10.3f ms %6.1f%%\n", name, s * 1e3, share(s));
    out += line;
  };
  std::snprintf(line, sizeof line, "profile (median epoch %.3f ms; this rank):\n", epoch_s * 1e3);
  out += line;
  if (mini_batch) {
    phase("sample", p.sample_s);
    phase("gather", p.gather_s);
    phase("copy to device", p.copy_s);
    phase("wait for batch", p.wait_s);
  }
  phase("forward", p.forward_s);
  phase("loss", p.loss_s);
  phase("backward", p.backward_s);
  phase("optimizer", p.optimizer_s);
  std::snprintf(line, sizeof line, "  %-12s %10s %7s %7s %9s %9s %8s %9s %7s\n", "kernel", "ms",
                "calls", "GB", "GFLOP", "GB/s", "GFLOP/s", "limit ms", "limit%");
  out += line;
  kernels::OpCounters total;
  double total_limit = 0;
  for (int k = 0; k < kernels::kNumOps; ++k) {
    const kernels::OpCounters& c = p.ops.ops[static_cast<std::size_t>(k)];
    if (c.calls == 0) continue;
    const double limit = limit_seconds(c, m);
    total.seconds += c.seconds;
    total.bytes += c.bytes;
    total.flops += c.flops;
    total.calls += c.calls;
    total_limit += limit;
    const double s = std::max(c.seconds, 1e-12);
    std::snprintf(line, sizeof line, "  %-12s %10.3f %7lld %7.3f %9.3f %9.2f %8.2f %9.3f %6.1f%%\n",
                  kernels::to_string(static_cast<kernels::Op>(k)), c.seconds * 1e3,
                  static_cast<long long>(c.calls), c.bytes / 1e9, c.flops / 1e9, c.bytes / s / 1e9,
                  c.flops / s / 1e9, limit * 1e3, 100 * limit / s);
    out += line;
  }
  const double s = std::max(total.seconds, 1e-12);
  std::snprintf(line, sizeof line, "  %-12s %10.3f %7lld %7.3f %9.3f %9.2f %8.2f %9.3f %6.1f%%\n",
                "all kernels", total.seconds * 1e3, static_cast<long long>(total.calls),
                total.bytes / 1e9, total.flops / 1e9, total.bytes / s / 1e9, total.flops / s / 1e9,
                total_limit * 1e3, 100 * total_limit / s);
  out += line;
  std::snprintf(line, sizeof line,
                "  machine: triad %.1f GB/s, sgemm %.1f GFLOP/s; the epoch at %.1f%% of the limit "
                "of its kernels\n",
                m.triad_bytes_per_s / 1e9, m.sgemm_flops_per_s / 1e9,
                epoch_s > 0 ? 100 * total_limit / epoch_s : 0.0);
  out += line;
  return out;
}

}  // namespace halo::runtime
