#include <cstdio>
#include <cstdlib>

#include <halo/kernels/atomic_file.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/tools/halo/checkpoint_options.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {

void add_checkpoint_options(CLI::App* sub, CheckpointOptions& o) {
  sub->footer(
      "Exit codes: 0 done, 1 data or runtime error, 2 usage error, " +
      std::to_string(runtime::kExitPreempted) +
      " preempted (SIGUSR1 or SIGTERM with --checkpoint-dir: the ranks stopped after the same "
      "step, the checkpoint is committed; requeue and run again with --resume auto)");
  sub->add_option("--checkpoint-dir", o.dir,
                  "Write checkpoints to DIR (one subdirectory each, the newest 2 kept; every "
                  "rank must see DIR); SIGUSR1/SIGTERM then checkpoint and exit with code 75 "
                  "(docs/checkpoints.md)");
  sub->add_option("--checkpoint-every", o.every,
                  "With --checkpoint-dir: a checkpoint every N epochs (0 = only when the run "
                  "ends: after its last epoch or on a signal)")
      ->check(integer_range(0, 1000000))
      ->capture_default_str();
  sub->add_option("--resume", o.resume,
                  "With --checkpoint-dir: auto = continue from the newest complete checkpoint "
                  "there (none: start fresh); the data, model and training flags must match, "
                  "only --epochs may change")
      ->check(CLI::IsMember({"auto"}));
}

void check_checkpoint_options(CLI::App* sub) {
  if (sub->get_option("--checkpoint-dir")->count() > 0) return;
  for (const char* flag : {"--checkpoint-every", "--resume"})
    if (sub->get_option(flag)->count() > 0)
      throw CLI::ValidationError(flag, "needs --checkpoint-dir");
}

runtime::CheckpointConfig checkpoint_config(const CheckpointOptions& o) {
  runtime::CheckpointConfig c;
  c.dir = o.dir;
  c.every = o.every;
  c.resume = o.resume == "auto";
  return c;
}

void prepare_checkpoints(const CheckpointOptions& o, int rank) {
  if (o.dir.empty()) return;
  // Before any data is read: a fresh run into another run's checkpoints (the Trainer refuses
  // it too, for library callers).
  if (o.resume.empty())
    if (const std::string problem = runtime::fresh_start_problem(o.dir); !problem.empty())
      throw UsageError(problem);
  runtime::install_preemption_handlers();
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  if (rank == 0 && restarts != nullptr)
    std::fprintf(stderr, "halo train: SLURM_RESTART_COUNT=%s (requeued job)\n", restarts);
}

void report_preemption(const runtime::TrainResult& r) {
  std::fprintf(stderr,
               "halo train: preempted after %zu epochs: checkpoint %s, committed %.3f s after the "
               "signal; exit code %d\n",
               r.history.size(), r.checkpoint.c_str(), r.checkpoint_after_signal_s,
               runtime::kExitPreempted);
  if (const char* file = std::getenv("HALO_PREEMPTED_FILE"); file != nullptr && *file != '\0')
    kernels::write_file_atomically(file, r.checkpoint + "\n");
}

}  // namespace halo::cli
