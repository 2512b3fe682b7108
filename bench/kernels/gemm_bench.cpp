// GEMM throughput in the shapes of a GCN layer against OpenBLAS's own square-sgemm peak.
#include <benchmark/benchmark.h>

#include <halo/kernels/gemm.hpp>
#include <halo/kernels/tensor.hpp>

#include "support/machine.hpp"

namespace {

using namespace halo;
using kernels::Tensor;
using kernels::Trans;

void BM_SgemmPeak(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(bench::sgemm_peak_flops());
  state.counters["sgemm_peak_flops"] = bench::sgemm_peak_flops();
}
BENCHMARK(BM_SgemmPeak)->Iterations(1);

/// op(A) (m x k) * op(B) (k x n) with A, B as laid out in a GCN layer on n_nodes rows: the
/// forward X W (n x out), the weight gradient X^T dY (in x out), the input gradient dY W^T
/// (n x in). rows 0: the whole arxiv shape (169,343); else a mini-batch block's destinations
/// (GraphSAGE, batch 1024, fan-outs 10,5: ~6,000 rows in its first layer).
void BM_Gemm(benchmark::State& state) {
  const std::int64_t nodes = state.range(3) > 0 ? state.range(3) : (bench::smoke() ? 8467 : 169343);
  const std::int64_t in_f = state.range(0), out_f = state.range(1);
  const auto pass = state.range(2);  // 0 forward, 1 weight gradient, 2 input gradient
  const kernels::Resources res;
  Tensor<float> x = Tensor<float>::zeros(res, nodes, in_f);
  Tensor<float> w = Tensor<float>::zeros(res, in_f, out_f);
  Tensor<float> y = Tensor<float>::zeros(res, nodes, out_f);
  for (auto _ : state) {
    if (pass == 1) {
      kernels::gemm(res, Trans::Yes, Trans::No, 1.f, x.view(), y.view(), 0.f, w.view());
    } else if (pass == 2) {
      kernels::gemm(res, Trans::No, Trans::Yes, 1.f, y.view(), w.view(), 0.f, x.view());
    } else {
      kernels::gemm(res, Trans::No, Trans::No, 1.f, x.view(), w.view(), 0.f, y.view());
    }
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(nodes) * in_f * out_f;
  state.counters["flops"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  const double peak = bench::sgemm_peak_flops();  // measured right after, like-for-like
  state.counters["sgemm_peak_flops"] = peak;
  state.counters["fraction_of_peak"] =
      benchmark::Counter(flops / peak, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Gemm)
    ->Args({128, 256, 0, 0})
    ->Args({128, 256, 1, 0})
    ->Args({256, 40, 0, 0})
    ->Args({256, 40, 1, 0})
    ->Args({256, 40, 2, 0})
    ->Args({128, 256, 0, 6000})
    ->Args({128, 256, 1, 6000})
    ->ArgNames({"in", "out", "pass", "rows"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
