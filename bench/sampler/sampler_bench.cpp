// Neighbour sampling throughput: sampled edges per second, fan-outs 15, 10, 5 and batches of 1024
// seeds on the R-MAT graph of the issue, at 1 and 2 threads, without and with replacement, and
// on a CUDA device (skipped without one).
#include <algorithm>
#include <benchmark/benchmark.h>
#include <cstdint>
#include <utility>
#include <vector>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "support/machine.hpp"

namespace {

using namespace halo;
using kernels::NodeId;

constexpr std::int64_t kBatch = 1024;

/// 2^20 nodes, ~8M directed edges after symmetrisation (2^12 nodes in smoke runs).
const datasets::Graph& rmat() {
  static const kernels::Resources res;
  static const datasets::Dataset d = [] {
    datasets::RmatConfig c;
    c.scale = bench::smoke() ? 12 : 20;
    c.avg_degree = 8;
    c.num_features = 1;
    c.seed = 1;
    return datasets::make_rmat(res, c);
  }();
  return d.graph;
}

/// Every node once, in a random order: consecutive slices are the batches of an epoch.
std::vector<NodeId> shuffled_nodes(std::int64_t n) {
  const std::uint64_t key = kernels::rng::key(1, kernels::rng::kStreamShuffle);
  std::vector<std::pair<std::uint64_t, NodeId>> keyed(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v)
    keyed[static_cast<std::size_t>(v)] = {
        kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(v)), static_cast<NodeId>(v)};
  std::sort(keyed.begin(), keyed.end());
  std::vector<NodeId> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = keyed[i].second;
  return out;
}

/// Samples batches of one epoch (batch b of thread t: b = t, t + num_threads, ...) and reports
/// sampled edges per second. Google Benchmark sums the rate over its threads. On CUDA each batch
/// ends with res.synchronize(), so the rate counts finished batches (sample() reads the sizes
/// back, so the stream is idle by then anyway); the seeds come from host memory.
void sample_batches(benchmark::State& state, const kernels::Resources& res, bool replace,
                    std::int64_t batch_size = kBatch) {
  const datasets::Graph& g = rmat();
  const std::int64_t size = std::min(batch_size, g.num_rows());
  sampler::NeighborSampler s(res, g, size, {{15, 10, 5}, replace, /*seed=*/1});
  static const std::vector<NodeId> nodes = shuffled_nodes(rmat().num_rows());
  const std::int64_t batches_per_epoch = g.num_rows() / size;
  std::int64_t edges = 0, inputs = 0, syncs = 0, batch = state.thread_index();
  for (auto _ : state) {
    const std::int64_t b = batch % batches_per_epoch;
    const sampler::MiniBatch& mb = s.sample(res, {nodes.data() + b * size, size},
                                            static_cast<std::uint64_t>(batch / batches_per_epoch),
                                            static_cast<std::uint64_t>(b));
    res.synchronize();
    // num_entries: the block's edge count as a host value (indptr may be device memory)
    for (const sampler::Block& blk : mb.blocks) edges += blk.csr.num_entries;
    inputs += mb.input_nodes.size;
    syncs += s.host_syncs_last_batch();
    batch += state.threads();
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["sampled_edges_per_s"] =
      benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
  state.counters["edges_per_batch"] =
      benchmark::Counter(static_cast<double>(edges) / n, benchmark::Counter::kAvgThreads);
  state.counters["input_nodes_per_batch"] =
      benchmark::Counter(static_cast<double>(inputs) / n, benchmark::Counter::kAvgThreads);
  state.counters["host_syncs_per_batch"] =
      benchmark::Counter(static_cast<double>(syncs) / n, benchmark::Counter::kAvgThreads);
  state.counters["peak_MiB"] = benchmark::Counter(static_cast<double>(s.peak_bytes()) / 1048576.0,
                                                  benchmark::Counter::kAvgThreads);
  state.counters["envelope_MiB"] = benchmark::Counter(
      static_cast<double>(s.envelope_bytes()) / 1048576.0, benchmark::Counter::kAvgThreads);
}

/// One sampler whose loops run on `threads` OpenMP threads. Args: threads, replace (0 or 1).
void BM_SampleRmat(benchmark::State& state) {
  const kernels::Resources res(kernels::Device::Cpu, static_cast<int>(state.range(0)));
  sample_batches(state, res, state.range(1) != 0);
}

/// One single-threaded sampler per benchmark thread: batches in parallel instead of the loops
/// of one batch, so no thread ever waits at a barrier (how a pipeline with one sampler per
/// worker would run). Args: replace (0 or 1).
void BM_SampleRmatBatchPerThread(benchmark::State& state) {
  const kernels::Resources res(kernels::Device::Cpu, 1);
  sample_batches(state, res, state.range(0) != 0);
}

/// One sampler on CUDA device 0 (its buffers and the graph's copy on the device). Args: replace,
/// batch size (the 1024, and 8192: a GPU needs larger batches to fill itself).
void BM_SampleRmatCuda(benchmark::State& state) {
  if (kernels::cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const kernels::Resources res(kernels::Device::Cuda);
  sample_batches(state, res, state.range(0) != 0, state.range(1));
}

BENCHMARK(BM_SampleRmat)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"threads", "replace"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(bench::smoke() ? 0.001 : 2.0);
BENCHMARK(BM_SampleRmatCuda)
    ->ArgsProduct({{0, 1}, {kBatch, 8 * kBatch}})
    ->ArgNames({"replace", "batch"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(bench::smoke() ? 0.001 : 2.0);
BENCHMARK(BM_SampleRmatBatchPerThread)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("replace")
    ->Threads(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(bench::smoke() ? 0.001 : 2.0);

}  // namespace
