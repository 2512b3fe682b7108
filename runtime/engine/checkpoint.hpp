#pragma once
// Checkpoints of a training run, agreed by every rank, and the preemption flag that SIGUSR1 and
// SIGTERM set. Layout, resume rules and signals: docs/checkpoints.md.
//
// A checkpoint is a directory <dir>/epoch-EEEEEE-step-SSSSSS holding one shard per rank
// (rank-R.bin, written to a temporary name and renamed) and manifest.json, which rank 0 writes
// (temporary name + rename) only after every rank reported its shard written. A directory
// without a manifest, or whose shards do not match the manifest's sizes and checksums, is not a
// checkpoint: it is skipped when resuming and removed by the next commit.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/checkpoint_types.hpp>
#include <halo/runtime/engine/results.hpp>

namespace halo::runtime {

/// The version of the shard files and manifest this Halo writes and the only one it resumes
/// (3: the tasks' named scores and stage times in the result and the history).
inline constexpr std::uint32_t kCheckpointVersion = 4;

/// The progress of a run, on the host: what one rank's shard holds. The ranks' shards hold the
/// same values (the parameters are replicated); each rank restores its own.
struct TrainState {
  int epoch = 0;          ///< epochs completed
  std::int64_t step = 0;  ///< steps of epoch `epoch + 1` taken (0: at an epoch boundary)
  /// The running sums of the epoch in progress (step > 0): the loss sum, its rows, the time of
  /// the gradient all-reduce.
  double loss_sum = 0;
  std::int64_t loss_rows = 0;
  double allreduce_s = 0;
  /// The optimizers' step counts by name (bias correction): "adam.steps", and per embedding
  /// table "sparse_adam.steps/<table>".
  std::vector<std::pair<std::string, std::int64_t>> counters;
  /// best_epoch, its metrics (what the selection compares with), final_train_loss and the
  /// history of the epochs completed; the other fields are recomputed from the history.
  TrainResult result;
  /// Named float arrays: "param/<name>", "adam.m/<name>", "adam.v/<name>", "best/<name>".
  struct Array {
    std::string name;
    std::int64_t rows = 0, cols = 0;
    std::vector<float> values;
  };
  std::vector<Array> arrays;
};

/// Writes `state` as checkpoint (state.epoch, state.step) in config.dir and commits it; then
/// removes incomplete checkpoints and all but the newest config.keep complete ones. Collective:
/// every rank writes its shard, the ranks exchange their success flags, sizes and checksums, and
/// rank 0 writes the manifest only when all succeeded. Returns the checkpoint's directory.
/// halo::IoError on every rank when a rank failed (naming it) or the manifest was not written.
std::filesystem::path write_checkpoint(Comm& comm, const CheckpointConfig& config,
                                       const CheckpointIdentity& identity, const TrainState& state);

/// A checkpoint found by read_newest_checkpoint.
struct FoundCheckpoint {
  std::filesystem::path dir;
  TrainState state;
};

/// The newest complete checkpoint in `dir` whose shards every rank read and checked
/// (collective); incomplete or damaged ones are skipped with a warning; nullopt when none (or no
/// `dir`). halo::IoError, one line naming the checkpoint and what differs, when the newest
/// complete one was written by another format version, another number of ranks, for other data,
/// another model or another training configuration: it is never silently replaced.
std::optional<FoundCheckpoint> read_newest_checkpoint(Comm& comm, const std::filesystem::path& dir,
                                                      const CheckpointIdentity& identity);

/// Why a run that does not resume cannot start writing checkpoints into `dir`: it holds a
/// complete checkpoint (another run's; naming the newest), whose pruning would then remove
/// this run's checkpoints or that run's, and whose `--resume auto` would then resume either.
/// Empty when `dir` holds none (or does not exist). Rank 0's view of the directory.
std::string fresh_start_problem(const std::filesystem::path& dir);

/// SIGUSR1 and SIGTERM set the preemption flag (async-signal-safe; SA_RESTART) instead of
/// ending the process. A Trainer with a checkpoint directory reduces the flag over the ranks
/// at every step boundary, so all stop after the same step; it then checkpoints and returns
/// with TrainResult::preempted (halo train exits with kExitPreempted).
void install_preemption_handlers();
/// Sets the flag as the handlers do (tests, embedding programs); clear_preemption resets it.
void request_preemption();
void clear_preemption();
/// This process's flag (not reduced).
bool preemption_requested();
/// Seconds since this process's flag was first set (by a signal or request_preemption); -1
/// when it is not set.
double preemption_age_s();

}  // namespace halo::runtime
