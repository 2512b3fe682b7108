// Element-wise ops on an activation of the ogbn-arxiv shape (169,343 x 256) against the triad.
#include <benchmark/benchmark.h>
#include <vector>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/tensor.hpp>

#include "support/machine.hpp"

namespace {

using namespace halo;
using kernels::Tensor;

std::int64_t rows() { return bench::smoke() ? 8467 : 169343; }

void report(benchmark::State& state, double bytes) {
  const double triad = bench::triad_bytes_per_second();
  state.counters["bytes_per_s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["fraction_of_triad"] =
      benchmark::Counter(bytes / triad, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Dropout(benchmark::State& state) {
  const kernels::Resources res;
  Tensor<float> x = Tensor<float>::zeros(res, rows(), 256), y(res, rows(), 256);
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    kernels::dropout(res, kernels::DropoutKey{0, ++epoch, 1, 0}, 0.5f, x.view(), y.view());
    benchmark::ClobberMemory();
  }
  report(state, 2.0 * static_cast<double>(x.bytes()));
}
BENCHMARK(BM_Dropout)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Relu(benchmark::State& state) {
  const kernels::Resources res;
  Tensor<float> x = Tensor<float>::zeros(res, rows(), 256), y(res, rows(), 256);
  for (auto _ : state) {
    kernels::relu(res, x.span(), y.span());
    benchmark::ClobberMemory();
  }
  report(state, 2.0 * static_cast<double>(x.bytes()));
}
BENCHMARK(BM_Relu)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReluBackward(benchmark::State& state) {
  const kernels::Resources res;
  Tensor<float> y = Tensor<float>::zeros(res, rows(), 256),
                dy = Tensor<float>::zeros(res, rows(), 256), dx(res, rows(), 256);
  for (auto _ : state) {
    kernels::relu_backward(res, y.span(), dy.span(), dx.span(), 2.f);
    benchmark::ClobberMemory();
  }
  report(state, 3.0 * static_cast<double>(y.bytes()));
}
BENCHMARK(BM_ReluBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Axpy(benchmark::State& state) {
  const kernels::Resources res;
  Tensor<float> x = Tensor<float>::zeros(res, rows(), 256),
                y = Tensor<float>::zeros(res, rows(), 256);
  for (auto _ : state) {
    kernels::axpy(res, 1.f, x.span(), y.span());
    benchmark::ClobberMemory();
  }
  report(state, 3.0 * static_cast<double>(y.bytes()));
}
BENCHMARK(BM_Axpy)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AddBias(benchmark::State& state) {
  const kernels::Resources res;
  Tensor<float> x = Tensor<float>::zeros(res, rows(), 256), b = Tensor<float>::zeros(res, 256, 1);
  for (auto _ : state) {
    kernels::add_bias(res, x.view(), b.span());
    benchmark::ClobberMemory();
  }
  report(state, 2.0 * static_cast<double>(x.bytes()));
}
BENCHMARK(BM_AddBias)->Unit(benchmark::kMillisecond)->UseRealTime();

// A mini-batch's input rows (GraphSAGE on the arxiv shape, fan-outs 10,5: ~60k of the 169k
// rows of 128 features, in a random order) gathered on the producer's one thread, then dropped
// out (the model's input dropout before) or dropped out as they are gathered (gather_dropout).
// Bytes: the gathered rows read once and written once, as the fused pass moves them.
struct InputRows {
  const kernels::Resources res{kernels::Device::Cpu, 1};
  Tensor<float> x = Tensor<float>::zeros(res, rows(), 128);
  Tensor<kernels::NodeId> ids;
  Tensor<float> gathered, y;
  InputRows() {
    const std::int64_t n = rows() * 6 / 17;
    std::vector<kernels::NodeId> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      v[static_cast<std::size_t>(i)] = static_cast<kernels::NodeId>(
          kernels::rng::below(1, kernels::rng::kStreamSynthetic, static_cast<std::uint64_t>(i),
                              static_cast<std::uint64_t>(rows())));
    ids = Tensor<kernels::NodeId>::from_host(res, v);
    gathered = Tensor<float>(res, n, 128);
    y = Tensor<float>(res, n, 128);
  }
  kernels::DropoutKey key(std::uint64_t epoch) const { return {0, epoch, 0, 0, ids.span()}; }
  double bytes() const { return 2.0 * static_cast<double>(y.bytes()); }
};

void BM_GatherThenDropout(benchmark::State& state) {
  InputRows in;
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    kernels::gather_rows<kernels::NodeId, float>(in.res, in.x.view(), in.ids.span(),
                                                 in.gathered.view());
    kernels::dropout(in.res, in.key(++epoch), 0.5f, in.gathered.view(), in.y.view());
    benchmark::ClobberMemory();
  }
  report(state, in.bytes());
}
BENCHMARK(BM_GatherThenDropout)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GatherDropout(benchmark::State& state) {
  InputRows in;
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    kernels::gather_dropout(in.res, in.key(++epoch), 0.5f, in.x.view(), in.ids.span(), in.y.view());
    benchmark::ClobberMemory();
  }
  report(state, in.bytes());
}
BENCHMARK(BM_GatherDropout)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
