#pragma once
// The checkpoint flags of `halo train` (--checkpoint-dir, --checkpoint-every, --resume) and what
// a run with checkpoints does before training: the preemption handlers and the requeue count.

#include <CLI/CLI.hpp>
#include <string>

#include <halo/runtime/engine/checkpoint_types.hpp>
#include <halo/runtime/runtime.hpp>

namespace halo::cli {

struct CheckpointOptions {
  std::string dir;
  int every = 0;
  std::string resume;  // "" or "auto"
};

/// Registers the flags on `sub`, bound to `o` (which must outlive the parse).
void add_checkpoint_options(CLI::App* sub, CheckpointOptions& o);

/// Checks across the flags, from the subcommand's parse callback (CLI::ValidationError: a usage
/// error): --checkpoint-every and --resume need --checkpoint-dir.
void check_checkpoint_options(CLI::App* sub);

/// The runtime's configuration of `o` (empty dir: no checkpoints).
runtime::CheckpointConfig checkpoint_config(const CheckpointOptions& o);

/// Before training with checkpoints: a run without --resume refuses a directory holding
/// another run's checkpoints (UsageError); SIGUSR1 and SIGTERM become a checkpoint and exit
/// code runtime::kExitPreempted instead of ending the process; rank 0 logs SLURM_RESTART_COUNT
/// when Slurm set it (the job was requeued that many times).
void prepare_checkpoints(const CheckpointOptions& o, int rank);

/// Rank 0 of a preempted run (its checkpoint committed): says so on stderr and, when
/// HALO_PREEMPTED_FILE is set, writes the checkpoint's path to that file (the generated sbatch
/// script's second sign of a preemption, for launchers that lose the exit code).
void report_preemption(const runtime::TrainResult& result);

}  // namespace halo::cli
