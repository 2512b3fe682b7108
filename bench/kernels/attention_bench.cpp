// Multi-head attention ops (SDDMM, segment softmax, per-head weighted aggregation and its
// adjoint) on the ogbn-arxiv-shaped graph, against the triad bandwidth of this machine.
#include <benchmark/benchmark.h>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/attention.hpp>
#include <halo/kernels/rng.hpp>

#include "support/machine.hpp"
#include "support/shapes.hpp"

namespace {

using namespace halo;
using kernels::Tensor;

struct Inputs {
  kernels::Resources res;
  kernels::CsrMatrix<kernels::NodeId, float> graph;  // symmetrised, unweighted
  Tensor<float> a, b, scores, row_max, row_sum;
  std::int64_t width = 0, heads = 0;
};

Tensor<float> random(const kernels::Resources& res, std::int64_t rows, std::int64_t cols,
                     std::uint64_t stream) {
  std::vector<float> host(static_cast<std::size_t>(rows * cols));
  for (std::size_t k = 0; k < host.size(); ++k) host[k] = kernels::rng::uniform(7, stream, k);
  return Tensor<float>::from_host(res, host, rows, cols);
}

Inputs& inputs(std::int64_t width, std::int64_t heads) {
  static Inputs in = [] {
    Inputs i;
    i.graph = datasets::symmetrize(i.res, bench::arxiv_shape(i.res).graph);
    return i;
  }();
  if (in.width != width || in.heads != heads) {
    const std::int64_t n = in.graph.num_rows(), m = in.graph.num_edges();
    in.a = random(in.res, n, width, 1);
    in.b = random(in.res, n, width, 2);
    in.scores = random(in.res, m, heads, 3);
    in.row_max = Tensor<float>(in.res, n, heads);
    in.row_sum = Tensor<float>(in.res, n, heads);
    in.width = width;
    in.heads = heads;
  }
  return in;
}

/// Bytes an op must move at least: the CSR arrays, `gathered` floats per edge (a source row,
/// per-edge values), `per_row` floats per row (destination rows, statistics).
double op_bytes(const Inputs& in, double gathered, double per_row) {
  const double n = static_cast<double>(in.graph.num_rows());
  const double m = static_cast<double>(in.graph.num_edges());
  return 8.0 * (n + 1) + 4.0 * m + 4.0 * m * gathered + 4.0 * n * per_row;
}

void report(benchmark::State& state, const Inputs& in, double bytes) {
  const double triad = bench::triad_bytes_per_second();
  state.counters["bytes_per_s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["triad_bytes_per_s"] = triad;
  state.counters["fraction_of_triad"] =
      benchmark::Counter(bytes / triad, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["edges_per_s"] = benchmark::Counter(static_cast<double>(in.graph.num_edges()),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

// Args: width (H * d), heads.
void BM_Sddmm(benchmark::State& state) {
  Inputs& in = inputs(state.range(0), state.range(1));
  for (auto _ : state) {
    kernels::sddmm(in.res, in.graph.view(), in.a.view(), in.b.view(), in.scores.view());
    benchmark::DoNotOptimize(in.scores.data());
  }
  // a row per destination, b row and a score per head per edge.
  report(state, in, op_bytes(in, static_cast<double>(in.width + in.heads), in.width));
}
BENCHMARK(BM_Sddmm)
    ->ArgsProduct({{64, 256}, {1, 4}})
    ->ArgNames({"width", "heads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_SegmentSoftmax(benchmark::State& state) {
  Inputs& in = inputs(64, state.range(0));
  const kernels::SoftmaxSegments<kernels::NodeId, float> parts[] = {
      {in.graph.view(), in.scores.view()}};
  for (auto _ : state) {
    kernels::segment_softmax<kernels::NodeId, float>(in.res, parts, in.row_max.view(),
                                                     in.row_sum.view());
    benchmark::DoNotOptimize(in.scores.data());
  }
  // scores read, alpha written; two statistics per row and head.
  report(state, in, op_bytes(in, 2.0 * static_cast<double>(in.heads), 2.0 * in.heads));
}
BENCHMARK(BM_SegmentSoftmax)
    ->Arg(1)
    ->Arg(4)
    ->ArgName("heads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// Arg 2: 0 the aggregation, 1 its adjoint.
void BM_WeightedAggregate(benchmark::State& state) {
  Inputs& in = inputs(state.range(0), state.range(1));
  for (auto _ : state) {
    if (state.range(2) == 0) {
      kernels::weighted_aggregate(in.res, in.graph.view(), in.scores.view(), in.b.view(),
                                  in.a.view());
    } else {
      kernels::weighted_aggregate_transposed(in.res, in.graph.view(), in.scores.view(), in.b.view(),
                                             in.a.view());
    }
    benchmark::DoNotOptimize(in.a.data());
  }
  report(state, in, op_bytes(in, static_cast<double>(in.width + in.heads), in.width));
}
BENCHMARK(BM_WeightedAggregate)
    ->ArgsProduct({{64, 256}, {4}, {0, 1}})
    ->ArgNames({"width", "heads", "adjoint"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
