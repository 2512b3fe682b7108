// SpMM throughput on the ogbn-arxiv-shaped graph against the triad bandwidth of this machine.
#include <benchmark/benchmark.h>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/spmm.hpp>

#include "support/machine.hpp"
#include "support/shapes.hpp"

namespace {

using namespace halo;
using kernels::Tensor;

struct Inputs {
  kernels::Resources res;
  kernels::CsrMatrix<kernels::NodeId, float> graph;  // GCN-normalised: weighted, with self-loops
  Tensor<float> x, out;
};

Inputs& inputs(std::int64_t cols) {
  static Inputs in = [] {
    Inputs i;
    const datasets::Dataset d = bench::arxiv_shape(i.res);
    i.graph = datasets::gcn_normalize<float>(i.res, datasets::symmetrize(i.res, d.graph));
    return i;
  }();
  if (in.x.cols() != cols) {
    const std::int64_t n = in.graph.num_rows();
    std::vector<float> host(static_cast<std::size_t>(n * cols));
    for (std::size_t k = 0; k < host.size(); ++k) host[k] = kernels::rng::uniform(7, 0, k);
    in.x = Tensor<float>::from_host(in.res, host, n, cols);
    in.out = Tensor<float>(in.res, n, cols);
  }
  return in;
}

/// Bytes an SpMM must move at least: the CSR arrays, one gathered x row per edge, the output.
double spmm_bytes(const Inputs& in, std::int64_t cols) {
  const double n = static_cast<double>(in.graph.num_rows());
  const double m = static_cast<double>(in.graph.num_edges());
  return 8.0 * (n + 1) + m * (4.0 + 4.0) + m * cols * 4.0 + n * cols * 4.0;
}

/// bytes/s of the op, the triad measured right after it, and their ratio.
void report(benchmark::State& state, double bytes) {
  const double triad = bench::triad_bytes_per_second();
  state.counters["bytes_per_s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["triad_bytes_per_s"] = triad;
  state.counters["fraction_of_triad"] =
      benchmark::Counter(bytes / triad, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Triad(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(bench::triad_bytes_per_second());
  state.counters["triad_bytes_per_s"] = bench::triad_bytes_per_second();
}
BENCHMARK(BM_Triad)->Iterations(1);

void BM_Spmm(benchmark::State& state) {
  const std::int64_t cols = state.range(0);
  Inputs& in = inputs(cols);
  for (auto _ : state) {
    kernels::spmm(in.res, in.graph.view(), in.x.view(), in.out.view());
    benchmark::DoNotOptimize(in.out.data());
  }
  report(state, spmm_bytes(in, cols));
  state.counters["edges"] = static_cast<double>(in.graph.num_edges());
}
BENCHMARK(BM_Spmm)
    ->Arg(16)
    ->Arg(40)
    ->Arg(128)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// Arg 1: whether the matrix is flagged symmetric (row-parallel path) or not (column blocks).
void BM_SpmmTransposed(benchmark::State& state) {
  const std::int64_t cols = state.range(0);
  Inputs& in = inputs(cols);
  auto a = in.graph.view();
  a.symmetric = state.range(1) != 0;
  for (auto _ : state) {
    kernels::spmm_transposed(in.res, a, in.x.view(), in.out.view());
    benchmark::DoNotOptimize(in.out.data());
  }
  report(state, spmm_bytes(in, cols));
}
BENCHMARK(BM_SpmmTransposed)
    ->ArgsProduct({{40, 256}, {0, 1}})
    ->ArgNames({"cols", "symmetric"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
