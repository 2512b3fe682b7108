// Dataset loading: the first parse (Planetoid pickles, plain text, R-MAT generation) against the
// open of the store written after it, with the peak resident memory of each load.
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/readers/planetoid.hpp>
#include <halo/datasets/store/store.hpp>

#include "support/machine.hpp"

namespace {

using namespace halo;
namespace fs = std::filesystem;

/// A kB value from /proc/self/status ("VmRSS", "VmHWM").
double status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
  }
  return 0;
}

/// Resets the peak-RSS mark (VmHWM) to the current RSS (Linux >= 4.0).
void reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

std::size_t dataset_bytes(const datasets::Dataset& ds) {
  std::size_t b = ds.graph.indptr.bytes() + ds.graph.indices.bytes() + ds.graph.values.bytes() +
                  ds.labels.bytes() + ds.train_idx.bytes() + ds.val_idx.bytes() +
                  ds.test_idx.bytes();
  std::visit(
      [&](const auto& x) {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, kernels::Tensor<float>>) {
          b += x.bytes();
        } else {
          b += x.indptr.bytes() + x.indices.bytes() + x.values.bytes();
        }
      },
      ds.features);
  return b;
}

/// Scratch directory for the benchmark's files, removed at exit.
const fs::path& scratch() {
  static const struct Dir {
    fs::path path = fs::temp_directory_path() / ("halo_load_bench_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

const kernels::Resources& res() {
  static const kernels::Resources r;
  return r;
}

/// Runs `load` once per iteration and reports the peak RSS growth of the load against the
/// size of the dataset it returns.
template <class Load>
void measure(benchmark::State& state, const Load& load) {
  double peak_growth_kb = 0;
  std::size_t bytes = 0;
  for (auto _ : state) {
    reset_peak_rss();
    const double before = status_kb("VmRSS");
    datasets::Dataset ds = load();
    peak_growth_kb = std::max(peak_growth_kb, status_kb("VmHWM") - before);
    bytes = dataset_bytes(ds);
    benchmark::DoNotOptimize(ds);
  }
  state.counters["dataset_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["peak_rss_growth_MB"] = peak_growth_kb * 1024 / 1e6;
  state.counters["peak_over_size"] = peak_growth_kb * 1024 / static_cast<double>(bytes);
}

fs::path planetoid_raw() { return fs::path(HALO_BENCH_DATASETS) / "planetoid" / "raw"; }

const fs::path& cora_cache() {
  static const fs::path dir = [] {
    const fs::path d = scratch() / "cache-cora";
    datasets::write_store(res(), datasets::read_planetoid(res(), planetoid_raw(), "cora"), d,
                          "bench");
    return d;
  }();
  return dir;
}

datasets::RmatConfig rmat_config() {
  datasets::RmatConfig c;
  c.scale = bench::smoke() ? 12 : 20;  // 4096 or 1,048,576 nodes
  c.avg_degree = 8;
  c.num_features = bench::smoke() ? 16 : 128;
  c.num_classes = 16;
  return c;
}

/// The R-MAT dataset written once as plain text and as a cache entry.
const fs::path& rmat_files() {
  static const fs::path dir = [] {
    const datasets::Dataset ds = datasets::make_rmat(res(), rmat_config());
    datasets::write_directory(res(), ds, scratch() / "rmat-plain");
    datasets::write_store(res(), ds, scratch() / "cache-rmat", "bench");
    return scratch();
  }();
  return dir;
}

void BM_CoraPlanetoidParse(benchmark::State& s) {
  measure(s, [] { return datasets::read_planetoid(res(), planetoid_raw(), "cora"); });
}
void BM_CoraCacheLoad(benchmark::State& s) {
  const fs::path& dir = cora_cache();
  measure(s, [&] { return datasets::open_store(res(), dir); });
}
void BM_RmatGenerate(benchmark::State& s) {
  measure(s, [] { return datasets::make_rmat(res(), rmat_config()); });
}
void BM_RmatPlainParse(benchmark::State& s) {
  const fs::path dir = rmat_files() / "rmat-plain";
  measure(s, [&] { return datasets::read_directory(res(), dir); });
}
void BM_RmatCacheLoad(benchmark::State& s) {
  const fs::path dir = rmat_files() / "cache-rmat";
  measure(s, [&] { return datasets::open_store(res(), dir); });
}

BENCHMARK(BM_CoraPlanetoidParse)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CoraCacheLoad)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RmatGenerate)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_RmatPlainParse)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_RmatCacheLoad)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
