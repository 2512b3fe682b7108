// The GPU's numbers: device memory bandwidth (a device-to-device copy) and cuBLAS SGEMM peak as
// the machine's limits, then SpMM (cuSPARSE and the row-group kernel), the dense products of a
// GCN layer, and one GCN training epoch on the ogbn-arxiv and ogbn-products shapes, with the CPU
// epoch on the arxiv shape as the same-run baseline. Every benchmark skips without a CUDA device.
//
// Timing: host wall clock around the op and a synchronisation of its stream (UseManualTime),
// after a warm-up call; inputs are on the device before timing starts.
#include <benchmark/benchmark.h>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/runtime/runtime.hpp>

#include "support/machine.hpp"
#include "support/shapes.hpp"

namespace {

using namespace halo;
using kernels::Device;
using kernels::Tensor;

/// The process's CUDA Resources, or nullptr (and the benchmark is skipped) without a device.
const kernels::Resources* gpu(benchmark::State& state) {
  if (kernels::cuda_device_count() == 0) {
    state.SkipWithError("no usable CUDA device");
    return nullptr;
  }
  static const kernels::Resources res(Device::Cuda);
  return &res;
}

/// Runs `op` once to warm up, then times each iteration as op + stream synchronisation.
template <class Op>
void time_on(benchmark::State& state, const kernels::Resources& res, const Op& op) {
  op();
  res.synchronize();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    op();
    res.synchronize();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

/// A rows x cols matrix of uniform values in [-0.5, 0.5) on res's device, drawn on every CPU
/// core once per (shape, seed) and kept for the process: Google Benchmark calls a benchmark
/// function several times, and the products shape's inputs are billions of draws.
const Tensor<float>& random_device_matrix(const kernels::Resources& res, std::int64_t rows,
                                          std::int64_t cols, std::uint64_t seed) {
  static std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t>, Tensor<float>> cache;
  auto [it, added] = cache.try_emplace({rows, cols, seed});
  if (added) {
    std::vector<float> host(static_cast<std::size_t>(rows * cols));
    const kernels::Resources cpu(Device::Cpu);
    kernels::for_each_index(cpu.cpu_exec(), rows * cols, [&](std::int64_t k) {
      host[static_cast<std::size_t>(k)] =
          kernels::rng::uniform(seed, 0, static_cast<std::uint64_t>(k)) - 0.5f;
    });
    it->second = Tensor<float>::from_host(res, host, rows, cols);
  }
  return it->second;
}

// ---- the machine's limits ----------------------------------------------------------------------

/// Device-to-device copy of 1 GiB (64 MiB in smoke runs): bytes read + written per second.
double copy_bytes_per_second(const kernels::Resources& res) {
  static const double rate = [&res] {
    const std::size_t bytes = bench::smoke() ? std::size_t{64} << 20 : std::size_t{1} << 30;
    kernels::Buffer a(res, Device::Cuda, bytes), b(res, Device::Cuda, bytes);
    double best = 0;
    for (int i = 0; i < 6; ++i) {
      const auto start = std::chrono::steady_clock::now();
      kernels::copy_bytes(res, b.data(), Device::Cuda, a.data(), Device::Cuda, bytes);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / s);
    }
    return best;
  }();
  return rate;
}

void BM_DeviceCopy(benchmark::State& state) {
  const auto* res = gpu(state);
  if (res == nullptr) return;
  for (auto _ : state) state.SetIterationTime(1);
  state.counters["bytes_per_s"] = copy_bytes_per_second(*res);
}
BENCHMARK(BM_DeviceCopy)->Iterations(1)->UseManualTime();

/// cuBLAS SGEMM on n x n x n (8192; 1024 in smoke runs): FLOP/s, the best of the iterations.
double sgemm_peak(const kernels::Resources& res) {
  static const double peak = [&res] {
    const std::int64_t n = bench::smoke() ? 1024 : 8192;
    const auto& a = random_device_matrix(res, n, n, 1);
    auto c = Tensor<float>(res, n, n);
    double best = 0;
    for (int i = 0; i < 6; ++i) {
      const auto start = std::chrono::steady_clock::now();
      kernels::gemm<float>(res, kernels::Trans::No, kernels::Trans::No, 1.f, a.view(), a.view(),
                           0.f, c.view());
      res.synchronize();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i > 0) best = std::max(best, 2.0 * static_cast<double>(n) * n * n / s);
    }
    return best;
  }();
  return peak;
}

void BM_SgemmPeak(benchmark::State& state) {
  const auto* res = gpu(state);
  if (res == nullptr) return;
  for (auto _ : state) state.SetIterationTime(1);
  state.counters["flops"] = sgemm_peak(*res);
}
BENCHMARK(BM_SgemmPeak)->Iterations(1)->UseManualTime();

// ---- graphs
// --------------------------------------------------------------------------------------

struct Graph {
  datasets::Dataset data;                             // host
  kernels::CsrMatrix<kernels::NodeId, float> normal;  // device: D^-1/2 (A + I) D^-1/2
};

/// 0: ogbn-arxiv shape, 1: ogbn-products shape; built on first use and kept for the process.
Graph& graph(const kernels::Resources& res, int shape) {
  static std::unique_ptr<Graph> graphs[2];
  if (!graphs[shape]) {
    const kernels::Resources host(Device::Cpu);
    auto g = std::make_unique<Graph>();
    g->data = shape == 0 ? bench::arxiv_shape(host) : bench::products_shape(host);
    auto normal = datasets::gcn_normalize<float>(host, g->data.graph);
    normal.symmetric = true;
    g->normal = normal.copy_to(res, Device::Cuda);
    graphs[shape] = std::move(g);
  }
  return *graphs[shape];
}

const char* shape_name(int shape) { return shape == 0 ? "arxiv" : "products"; }

// ---- SpMM
// ----------------------------------------------------------------------------------------

/// Args: shape, feature columns, algorithm (0 cuSPARSE, 1 row-group). Bytes counted as the
/// least an SpMM moves: CSR arrays, one gathered x row per edge, the output.
void BM_Spmm(benchmark::State& state) {
  const auto* res = gpu(state);
  if (res == nullptr) return;
  const int shape = static_cast<int>(state.range(0));
  const std::int64_t cols = state.range(1);
  const Graph& g = graph(*res, shape);
  const std::int64_t n = g.normal.num_rows();
#if HALO_WITH_CUDA  // gpu() returned a device, so this is a CUDA build; the guard is for the linker
  const auto algorithm = state.range(2) == 0 ? kernels::detail::SpmmAlgorithm::Cusparse
                                             : kernels::detail::SpmmAlgorithm::RowGroup;
  const auto& x = random_device_matrix(*res, n, cols, 3);
  Tensor<float> out(*res, n, cols);
  const kernels::detail::SpmmRowBody<kernels::NodeId, float> body{g.normal.view(), x.view(),
                                                                  out.view(), false};
  time_on(state, *res, [&] { kernels::detail::spmm_rows_cuda(*res, body, algorithm); });
#endif
  const double m = static_cast<double>(g.normal.num_edges());
  const double bytes = 8.0 * (n + 1) + m * 8.0 + m * cols * 4.0 + n * cols * 4.0;
  const double copy = copy_bytes_per_second(*res);
  state.counters["bytes_per_s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["fraction_of_copy_bw"] =
      benchmark::Counter(bytes / copy, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["edges"] = m;
  state.SetLabel(std::string(shape_name(shape)) +
                 (state.range(2) == 0 ? " cusparse" : " row-group"));
}
BENCHMARK(BM_Spmm)
    ->ArgsProduct({{0, 1}, {16, 40, 128, 256}, {0, 1}})
    ->ArgNames({"shape", "cols", "cusparse0_rowgroup1"})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// ---- the dense products of a GCN layer
// ------------------------------------------------------------

/// X W for every node of the products shape: (n x in) (in x out); FLOP/s against the peak.
void BM_GemmLayer(benchmark::State& state) {
  const auto* res = gpu(state);
  if (res == nullptr) return;
  const std::int64_t n = graph(*res, 1).normal.num_rows();
  const std::int64_t in = state.range(0), out = state.range(1);
  const auto& x = random_device_matrix(*res, n, in, 4);
  const auto& w = random_device_matrix(*res, in, out, 5);
  Tensor<float> y(*res, n, out);
  time_on(state, *res, [&] {
    kernels::gemm<float>(*res, kernels::Trans::No, kernels::Trans::No, 1.f, x.view(), w.view(), 0.f,
                         y.view());
  });
  const double flops = 2.0 * static_cast<double>(n) * in * out;
  state.counters["flops"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["fraction_of_peak"] =
      benchmark::Counter(flops / sgemm_peak(*res), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GemmLayer)
    ->Args({100, 256})
    ->Args({256, 256})
    ->Args({256, 47})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// ---- one training epoch
// --------------------------------------------------------------------------

/// A GCN (2 layers, 256 hidden) and its trainer on one device, built once (preprocessing the
/// products shape takes far longer than its epochs) and warmed up by one epoch.
struct EpochSetup {
  EpochSetup(const kernels::Resources& res, const datasets::Dataset& d, runtime::TrainConfig c)
      : shard(runtime::local_shard(res, d.clone(runtime::host_resources(res)))),
        model(runtime::make_model(res, shard.num_features, shard.part.num_classes, c)),
        trainer(res, runtime::node_classification(res, shard, c, model), c.epochs, c.checkpoint) {
    trainer.train_epoch(++epoch, stats);
  }
  runtime::Shard shard;
  nn::Model<float> model;
  runtime::Trainer trainer;  // refers to shard and model: the setup never moves (unique_ptr)
  runtime::EpochStats stats;
  std::uint64_t epoch = 0;
};

/// One epoch (forward + loss + backward + Adam, as `halo train` runs it) per iteration.
/// `key` names the (device, shape) pair whose setup is kept across calls.
void run_epochs(benchmark::State& state, const kernels::Resources& res, const datasets::Dataset& d,
                int key) {
  static std::map<int, std::unique_ptr<EpochSetup>> setups;
  auto& setup = setups[key];
  if (!setup) {
    runtime::TrainConfig config;
    config.model.kind = nn::ModelKind::Gcn;
    config.model.hidden = 256;
    setup = std::make_unique<EpochSetup>(res, d, config);
  }
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    // train_epoch ends with a synchronisation.
    setup->trainer.train_epoch(++setup->epoch, setup->stats);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["nodes"] = static_cast<double>(d.num_nodes());
  state.counters["edges"] = static_cast<double>(d.graph.num_edges());
}

/// Arg: shape (0 arxiv, 1 products).
void BM_GcnEpochCuda(benchmark::State& state) {
  const auto* res = gpu(state);
  if (res == nullptr) return;
  const int shape = static_cast<int>(state.range(0));
  run_epochs(state, *res, graph(*res, shape).data, shape);
  state.SetLabel(shape_name(shape));
}
BENCHMARK(BM_GcnEpochCuda)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->MinTime(bench::smoke() ? 0.001 : 2.0);

/// The same-run baseline: the arxiv-shape epoch on every CPU core of the GPU's host.
void BM_GcnEpochCpu(benchmark::State& state) {
  const auto* res = gpu(state);  // only where the GPU numbers exist, to compare with them
  if (res == nullptr) return;
  static const kernels::Resources cpu(Device::Cpu);
  run_epochs(state, cpu, graph(*res, 0).data, /*key: CPU, arxiv*/ 2);
  state.SetLabel("arxiv");
}
BENCHMARK(BM_GcnEpochCpu)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->MinTime(bench::smoke() ? 0.001 : 2.0);

}  // namespace
