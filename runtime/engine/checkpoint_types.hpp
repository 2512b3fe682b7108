#pragma once
// What a run checkpoints and where (runtime::TrainConfig::checkpoint), and the exit code of a
// preempted run. The format and the rules are in docs/checkpoints.md.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace halo::runtime {

/// The exit code of a run stopped by SIGUSR1 or SIGTERM after its checkpoint was committed
/// (EX_TEMPFAIL of sysexits.h): "preempted, requeue me". The generated sbatch script
/// (cluster/slurm.hpp) requeues the job on it.
inline constexpr int kExitPreempted = 75;

struct CheckpointConfig {
  /// Where the checkpoints go (one subdirectory each); empty: no checkpoints, and signals are
  /// not turned into a checkpoint. Every rank must see the same directory.
  std::filesystem::path dir;
  /// A checkpoint after every `every` epochs; 0: only when the run ends (after its last epoch,
  /// or stopped by a signal), which it always does when `dir` is set.
  int every = 0;
  /// Before the first epoch: continue from the newest complete checkpoint in `dir` (none: start
  /// fresh).
  bool resume = false;
  /// Complete checkpoints kept in `dir`; older ones are removed after each commit.
  int keep = 2;
};

/// What a checkpoint must match to be resumed, as (field, value) pairs: the data ("partition
/// meta.json fnv1a64 0x..." or "dataset NAME fnv1a64 0x..."), the ranks, the architecture and
/// every TrainConfig field except `epochs` and `checkpoint`.
using CheckpointIdentity = std::vector<std::pair<std::string, std::string>>;

}  // namespace halo::runtime
