#pragma once
// The engine: runtime::Trainer runs any Task (runtime/engine/task.hpp) for its epochs, evaluates
// after each, keeps the epoch the task's selection prefers, writes and resumes checkpoints, stops
// on preemption, and sums up the run. It knows no task: the tasks (runtime/tasks/) compose the
// data path, models and optimizers, and each offers a factory and a `train` function.

#include <cstdint>
#include <functional>
#include <memory>

#include <halo/kernels/resources.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/checkpoint_types.hpp>
#include <halo/runtime/engine/results.hpp>
#include <halo/runtime/engine/task.hpp>

namespace halo::runtime {

using EpochCallback = std::function<void(const EpochStats&)>;

struct TrainState;

/// Trains `task` for `epochs` epochs. Every rank of task->comm() runs the same calls: the
/// Trainer is collective over it. With checkpoint.dir set it writes checkpoints (every
/// checkpoint.every epochs and when the run ends), resumes from the newest complete one when
/// checkpoint.resume, refuses a fresh start into a directory holding another run's, and stops
/// between two steps when the ranks agree that a preemption signal arrived.
class Trainer {
 public:
  Trainer(const kernels::Resources& res, std::unique_ptr<Task> task, int epochs,
          const CheckpointConfig& checkpoint = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// One epoch of steps; fills s's loss, time and communication fields. halo::Error when the
  /// loss stops being finite (the run diverged). With checkpoints on, the ranks agree after
  /// every step but the last whether to stop (the preemption flag): false when they stopped
  /// early; the next train_epoch of the same epoch, or a run() resumed from the checkpoint,
  /// continues at the next step.
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step = {});
  /// The task's scores of the current parameters (collective).
  Metrics evaluate();
  /// The epochs, each followed by evaluate(); leaves the kept epoch's parameters in the model
  /// (TrainResult::best_epoch). With checkpoints: resumes from the newest complete checkpoint
  /// when asked (the epochs it completed are not run again), writes checkpoints, and stops
  /// early when the ranks agree that a preemption signal arrived (TrainResult::preempted). A
  /// resumed run computes what an uninterrupted one does (on the CPU, bit for bit).
  TrainResult run(const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});

  std::int64_t batches_per_epoch() const;
  double preprocess_time_s() const;
  Task& task() { return *m_task; }

 private:
  /// Whether the ranks stop here (checkpoints on): the preemption flag reduced over them.
  bool stop_agreed();
  /// The run so far as a checkpoint holds it, and back (best: the best epoch's copies of the
  /// task's state()).
  TrainState capture(const TrainResult& result, std::vector<kernels::Tensor<float>>& best,
                     int epochs_done);
  void restore(const TrainState& state, TrainResult& result,
               std::vector<kernels::Tensor<float>>& best);
  /// Whether evaluation `e` of an epoch is kept over the kept one (`result`).
  bool better(const Metrics& e, const TrainResult& result) const;

  const kernels::Resources& m_res;
  std::unique_ptr<Task> m_task;
  Comm* m_comm = nullptr;
  int m_epochs = 0;
  CheckpointConfig m_checkpoint;
  CheckpointIdentity m_identity;  // what this run's checkpoints must match (checkpoints on)
  Selection m_selection;
  Partial m_partial;
  std::int64_t m_stop_checks = 0;
  double m_stop_check_s = 0;
};

/// The resident set of this process now (VmRSS), in bytes.
std::int64_t current_host_memory_bytes();

/// The process's peak resident set size so far, in bytes (never below the current one).
std::int64_t peak_host_memory_bytes();

/// Seconds since this process started (the kernel's start time, /proc/self/stat; 10 ms
/// resolution): exec, loading and MPI start-up included.
double seconds_since_process_start();

}  // namespace halo::runtime
