// Element-wise ops on an activation of the ogbn-arxiv shape (169,343 x 256) against the triad.
#include <benchmark/benchmark.h>

#include <halo/kernels/elementwise.hpp>
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

}  // namespace
