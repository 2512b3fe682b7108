#pragma once
// What the subcommands that run work share: usage errors found after parsing, output checks,
// the ranks a launcher started, the Resources of --device and --threads, and the data a
// command reads (a dataset in one process, or this rank's part of a partition).

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/dataset_options.hpp>

namespace halo::cli {

/// A usage error found after parsing (it needs the data, the model file or the launcher): the
/// command prints it as "halo <command>: <what>" and exits with code 2.
struct UsageError : Error {
  using Error::Error;
};

/// "16GiB", "512MiB", "2G", "1e9": bytes. Units are binary (KiB, MiB, GiB, TiB, and K, M, G, T
/// alike) or decimal (kB, MB, GB, TB); no unit is bytes. std::nullopt for anything else, or
/// less than one byte.
std::optional<std::int64_t> parse_bytes(const std::string& text);

/// Refuses, before any work, an output path that cannot be written (kernels::check_output_file):
/// anything there but a regular file (a directory, a device, a FIFO; a symbolic link is judged
/// by its target, which the write replaces), a missing parent, a place where a file cannot be
/// created. UsageError naming `flag`, the path and the reason. An empty path is not checked.
void check_output(const std::string& path, const char* flag);

/// The same for an output directory (kernels::check_output_directory_path): an existing
/// directory that takes files, or one that can be created. An empty path is not checked.
void check_output_directory(const std::string& path, const char* flag);

/// The communicator of the ranks the launcher started: a SelfComm without a launcher, else
/// the world (error messages and log lines then name the rank). Several ranks need a partition:
/// without `partitions` it is a UsageError naming --partitions (every rank would do the same
/// work and write the same files); `command` names the subcommand in the message. With
/// set_stall_timeout, the stall watchdog watches every collective and exchange.
std::unique_ptr<runtime::Comm> world_comm(const std::string& partitions, const char* command);

/// The stall watchdog's timeout for the communicator world_comm makes (runtime::MpiOptions::
/// stall_timeout_s; `halo train --stall-timeout`); 0, the default, leaves it off.
void set_stall_timeout(double seconds);

/// The Resources of `device` ("cpu" or "cuda") and `threads` (0: --threads not given; then
/// OMP_NUM_THREADS, else the cores shared by the ranks started on this host). CUDA: device 0 in
/// one process, the rank's local GPU with several; LogicError when no CUDA device is usable.
kernels::Resources make_resources(const std::string& device, int threads, int ranks);

/// The data of a run: the dataset `data` names in one process, or with `partitions` set this
/// rank's part of the partition (collective over `world`).
runtime::Shard open_data(const kernels::Resources& res, runtime::Comm& world,
                         const DatasetOptions& data, const std::string& partitions);

/// A result number for --json: null when it is NaN (nothing was measured), which JSON cannot hold.
inline nlohmann::json json_number(double v) {
  return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
}

}  // namespace halo::cli
