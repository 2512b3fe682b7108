#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <halo/datasets/store/store.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/log.hpp>
#include <halo/partition/formats/part_group.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {

namespace fs = std::filesystem;

namespace {
/// `check(path)`, its halo::IoError a usage error naming `flag`; an empty path is not checked.
void check_as_flag(const std::string& path, const char* flag,
                   void (*check)(const std::filesystem::path&)) {
  if (path.empty()) return;
  try {
    check(path);
  } catch (const IoError& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
}
}  // namespace

void check_output(const std::string& path, const char* flag) {
  check_as_flag(path, flag, kernels::check_output_file);
}

void check_output_directory(const std::string& path, const char* flag) {
  check_as_flag(path, flag, kernels::check_output_directory_path);
}

namespace {
double g_stall_timeout_s = 0;
}  // namespace

void set_stall_timeout(double seconds) { g_stall_timeout_s = seconds; }

std::unique_ptr<runtime::Comm> world_comm(const std::string& partitions, const char* command) {
  if (runtime::launcher_world_size() <= 1) return std::make_unique<runtime::SelfComm>();
  if (partitions.empty())
    throw UsageError("--partitions: " + std::to_string(runtime::launcher_world_size()) +
                     " ranks were started, which work on one part each of a partition (halo "
                     "partition --parts P, then mpiexec -n P halo " +
                     command + " --partitions DIR); without it every rank would do the same work");
  runtime::MpiOptions options;
  options.stall_timeout_s = g_stall_timeout_s;
  std::unique_ptr<runtime::Comm> world = runtime::make_world_comm(options);
  set_error_rank(world->rank());
  set_log_rank(world->rank());
  return world;
}

namespace {
int rank_threads(int requested) {
  if (requested > 0) return requested;
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return 0;  // the OpenMP runtime's choice
  const int local = std::max(1, runtime::launcher_local_size());
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
}
}  // namespace

kernels::Resources make_resources(const std::string& device, int threads, int ranks) {
  const int n = rank_threads(threads);
  if (device == "cpu") return kernels::Resources(kernels::Device::Cpu, n);
  if (kernels::cuda_device_count() == 0) throw LogicError("--device cuda: no usable CUDA device");
  return kernels::Resources(kernels::Device::Cuda, n, ranks > 1 ? runtime::local_cuda_device() : 0);
}

runtime::Shard open_data(const kernels::Resources& res, runtime::Comm& world,
                         const DatasetOptions& data, const std::string& partitions) {
  // Rows are read from a store's file when they are float32; float16 / bfloat16 rows are
  // converted to float32 in memory when opened, which a budget below them cannot hold.
  const auto check_narrow = [&](datasets::FeatureDtype dtype, std::uint64_t converted,
                                const std::string& what) {
    if (dtype == datasets::FeatureDtype::F32 || converted <= data.memory_budget) return;
    throw UsageError("--memory-budget " + std::to_string(data.memory_budget) + " bytes: " + what +
                     " holds its features as " + datasets::feature_dtype_name(dtype) +
                     ", converted to float32 in memory when opened (" + std::to_string(converted) +
                     " bytes, more than the budget); only float32 rows are read from the "
                     "store's file: prepare the store with --feature-dtype f32, or raise "
                     "--memory-budget");
  };
  const bool cpu_budget = data.memory_budget > 0 && res.device() == kernels::Device::Cpu;
  if (partitions.empty()) {
    if (cpu_budget && datasets::is_store(data.dataset)) {
      const datasets::StoreCounts c = datasets::read_store_counts(data.dataset);
      if (c.bytes_on_disk > data.memory_budget && !c.sparse_features)
        check_narrow(c.feature_dtype,
                     static_cast<std::uint64_t>(c.num_nodes) *
                         static_cast<std::uint64_t>(c.num_features) * 4,
                     "the store '" + data.dataset + "'");
    }
    return runtime::local_shard(res, load_dataset(runtime::host_resources(res), data));
  }
  // A partition referencing a store: the rank's rows stay in the store's file when its part
  // (graph file and owned rows) is larger than --memory-budget, as one process maps a store
  // larger than it (load_dataset).
  partition::PartReadOptions read;
  if (cpu_budget) {
    const partition::PartitionMeta meta = partition::read_partition_meta(partitions);
    const auto k = static_cast<std::int32_t>(meta.parts.size());
    if (meta.feature_store && !meta.hetero && world.size() <= k) {
      // This rank's group of parts (partition::part_groups): their files and owned rows.
      const std::vector<std::int32_t> groups = partition::part_groups(meta, world.size());
      const std::int32_t first = groups[static_cast<std::size_t>(world.rank())];
      const std::int32_t last = groups[static_cast<std::size_t>(world.rank()) + 1];
      std::int64_t file_bytes = 0, owned = 0;
      for (std::int32_t j = first; j < last; ++j) {
        file_bytes += meta.parts[static_cast<std::size_t>(j)].file_bytes;
        owned += meta.parts[static_cast<std::size_t>(j)].num_owned;
      }
      const auto rows = static_cast<std::size_t>(owned * meta.num_features) *
                        (meta.feature_store->dtype == datasets::FeatureDtype::F32 ? 4 : 2);
      read.map_store_features = static_cast<std::size_t>(file_bytes) + rows > data.memory_budget;
      if (read.map_store_features)
        check_narrow(meta.feature_store->dtype,
                     static_cast<std::uint64_t>(owned * meta.num_features) * 4,
                     (last - first == 1
                          ? "part " + std::to_string(first)
                          : "parts " + std::to_string(first) + "-" + std::to_string(last - 1)) +
                         " of '" + partitions + "' (its store)");
    }
  }
  return runtime::open_shard(res, world, partitions, read);
}

/// "16GiB", "512MiB", "2G", "1e9": bytes. Units are binary (KiB, MiB, GiB, TiB, and K, M, G, T
/// alike) or decimal (kB, MB, GB, TB); no unit is bytes.
std::optional<std::int64_t> parse_bytes(const std::string& text) {
  std::size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(end);
  unit.erase(
      std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }),
      unit.end());
  double scale = 1;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "TB")
    scale = 1e12;
  else
    return std::nullopt;
  const double bytes = v * scale;
  if (!std::isfinite(bytes) || bytes < 1 || bytes > 9.2e18) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

}  // namespace halo::cli
