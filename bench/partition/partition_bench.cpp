// Partitioning as `halo partition` runs it (METIS or random, relabelling, metrics, writing the
// directory), next to the METIS call alone; and the communication volume of METIS vs random.
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

#include "support/machine.hpp"
#include "support/shapes.hpp"

namespace {

using namespace halo;
namespace fs = std::filesystem;

const datasets::Dataset& cora() {
  static const kernels::Resources res;
  static const datasets::Dataset d = bench::cora(res);
  return d;
}

/// The power-law graph of the issue: 2^20 nodes, ~8M directed edges after symmetrisation
/// (2^12 nodes in smoke runs).
const datasets::Dataset& rmat() {
  static const kernels::Resources res;
  static const datasets::Dataset d = [] {
    datasets::RmatConfig c;
    c.scale = bench::smoke() ? 12 : 20;
    c.avg_degree = 8;
    c.num_features = 32;
    c.num_classes = 16;
    c.seed = 1;
    return datasets::make_rmat(res, c);
  }();
  return d;
}

/// Linux's resident-set figures of this process in bytes ("VmHWM" peak, "VmRSS" now).
double proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(line.find(':') + 1)) * 1024.0;
  return 0;
}

/// Resets the peak resident set to the current one (Linux: "5" > /proc/self/clear_refs).
void reset_peak_memory() { std::ofstream("/proc/self/clear_refs") << "5"; }

partition::PartitionConfig config(std::int32_t parts, partition::Method method) {
  partition::PartitionConfig c;
  c.num_parts = parts;
  c.method = method;
  return c;
}

/// partition_dataset + write_partitions, as `halo partition` does after loading the dataset.
void run_partition(benchmark::State& state, const datasets::Dataset& data) {
  const kernels::Resources res;
  const auto parts = static_cast<std::int32_t>(state.range(0));
  const fs::path dir =
      fs::temp_directory_path() / ("halo-partition-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const double rss_before = proc_status_bytes("VmRSS");
  reset_peak_memory();
  double metis = 0, total = 0, write = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const partition::PartitionResult r =
        partition::partition_dataset(res, data, config(parts, partition::Method::MetisKway));
    const auto written = std::chrono::steady_clock::now();
    partition::write_partitions(res, data, r, dir);
    const auto end = std::chrono::steady_clock::now();
    total += std::chrono::duration<double>(end - start).count();
    write += std::chrono::duration<double>(end - written).count();
    metis += r.timings.metis_s;
    state.PauseTiming();
    fs::remove_all(dir);
    state.ResumeTiming();
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["metis_s"] = metis / n;
  state.counters["total_s"] = total / n;
  state.counters["write_s"] = write / n;  // write_partitions alone (parts, checksums, rename)
  state.counters["around_metis"] = (total - metis) / metis;  // the budget: <= 0.30
  state.counters["peak_rss_MiB"] = proc_status_bytes("VmHWM") / 1048576.0;
  state.counters["rss_before_MiB"] = rss_before / 1048576.0;
  state.counters["nodes"] = static_cast<double>(data.num_nodes());
  state.counters["edges"] = static_cast<double>(data.graph.num_edges());
}

/// Communication volume and edge cut of one method (0 METIS k-way, 1 random) at P parts.
void run_quality(benchmark::State& state, const datasets::Dataset& data) {
  const kernels::Resources res;
  const auto parts = static_cast<std::int32_t>(state.range(0));
  const auto method =
      state.range(1) == 0 ? partition::Method::MetisKway : partition::Method::Random;
  partition::PartitionResult r;
  for (auto _ : state) r = partition::partition_dataset(res, data, config(parts, method));
  state.SetLabel(std::string(partition::to_string(method)));
  state.counters["comm_volume"] = static_cast<double>(r.metrics.comm_volume);
  state.counters["max_halo"] = static_cast<double>(r.metrics.max_halo);
  state.counters["edge_cut"] = static_cast<double>(r.metrics.edge_cut);
  state.counters["replication"] = r.metrics.replication_factor;
  state.counters["bal_nodes"] = r.metrics.nodes.balance;
  state.counters["bal_train"] = r.metrics.train.balance;
  state.counters["bal_edges"] = r.metrics.edges.balance;
}

void BM_PartitionCora(benchmark::State& s) { run_partition(s, cora()); }
void BM_PartitionRmat(benchmark::State& s) { run_partition(s, rmat()); }
void BM_CommVolumeCora(benchmark::State& s) { run_quality(s, cora()); }
void BM_CommVolumeRmat(benchmark::State& s) { run_quality(s, rmat()); }

void partition_sizes(benchmark::internal::Benchmark* b) {
  for (int p : {2, 8, 32}) b->Arg(p);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
void quality_sizes(benchmark::internal::Benchmark* b) {
  for (int method : {0, 1})
    for (int p : {2, 4, 8, 16, 32, 64}) b->Args({p, method});
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}

BENCHMARK(BM_PartitionCora)->Apply(partition_sizes)->MinTime(bench::smoke() ? 0.001 : 1.0);
BENCHMARK(BM_PartitionRmat)->Apply(partition_sizes)->Iterations(1);
BENCHMARK(BM_CommVolumeCora)->Apply(quality_sizes);
BENCHMARK(BM_CommVolumeRmat)->Apply(quality_sizes);

}  // namespace
