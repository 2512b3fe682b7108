#pragma once
// What a run measures: per epoch (EpochStats) and over the run (TrainResult). Common fields, and
// the task's named scores and stage times (Metrics): the engine records them without knowing
// the task.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <halo/runtime/engine/metrics.hpp>
#include <halo/runtime/engine/profile.hpp>

namespace halo::runtime {

/// What one epoch measured. `metrics` come from the task's evaluation after the epoch's updates
/// (no dropout); train_loss is the mean loss the updates were computed from.
struct EpochStats {
  int epoch = 0;  // 1-based
  int epochs = 0;
  double train_loss = 0;
  /// The task's scores (Task::evaluate), by name: "val_loss", "val_accuracy", "test_accuracy",
  /// ... as the task reports them.
  Metrics metrics;
  double epoch_time_s = 0;  // the training step(s): forward, loss, backward, optimizer
  /// Seconds of the task's named stages of the training step(s) (e.g. "subgraph_build_s");
  /// empty for a task that times none.
  Metrics stage_times;
  /// Sampled mini-batches: edges sampled per edge type (relation) this epoch (empty otherwise).
  std::vector<std::int64_t> sampled_edges;
  // Communication of several ranks (zero in one process). Bytes over all ranks, times the mean
  // over ranks.
  std::int64_t exchange_bytes = 0;  // full graph: halo rows sent
  double exchange_time_s = 0;       // packing until the messages completed
  double exchange_exposed_s = 0;    // the part of it not hidden behind computation
  double exchange_window_s = 0;     // the owned rows' products it could hide behind (overlap)
  double allreduce_time_s = 0;      // the gradient all-reduce
  // Mini-batch runs.
  std::int64_t sampling_bytes = 0;  // frontier requests and sampled neighbours sent
  std::int64_t feature_bytes = 0;   // remote feature rows received
  std::int64_t remote_rows = 0;     // input rows owned by another rank
  std::int64_t cache_hits = 0;      // of those, served by the cache
  double fetch_time_s = 0;          // spent fetching remote rows (per rank, mean)
  double batch_wait_s = 0;          // the training thread waiting for prepared batches
  // Feature rows read from a store's file (FeatureStore::from_file), over all ranks: rows
  // asked of it, of those served by the row cache, bytes read, and seconds reading (mean).
  std::int64_t disk_rows = 0;
  std::int64_t disk_hits = 0;
  std::int64_t disk_bytes = 0;
  double disk_read_s = 0;
  std::int64_t host_syncs = 0;  // device runs: times the host waited for the device
  /// TrainConfig::profile: where the epoch's time went, on this rank.
  EpochProfile profile;
};

/// The result of a run.
struct TrainResult {
  /// The epoch whose parameters the model keeps: the best by the task's selection
  /// (Task::selection: e.g. the highest validation accuracy, ties to the lower validation
  /// loss); the last epoch when the selecting score is NaN (no validation data).
  int best_epoch = 0;
  /// best_epoch's scores (EpochStats::metrics), and what the task computes once with the kept
  /// parameters after training (Task::finish: scores the task computes once, e.g. on its test
  /// data).
  Metrics metrics;
  double final_train_loss = 0;
  double preprocess_time_s = 0;  // graph normalisation, feature preparation, set-up
  double train_time_s = 0;       // all epochs, evaluation included
  double epoch_time_median_s = 0;
  int world_size = 1;
  /// Medians over the epochs of the EpochStats fields of the same names.
  std::int64_t exchange_bytes_per_epoch = 0;
  double exchange_time_s = 0;
  double exchange_exposed_s = 0;
  /// The owned rows' aggregation of the layers whose exchange was in flight (overlap on): what
  /// the exchange can hide behind, so exchange - exposed <= this.
  double exchange_window_s = 0;
  /// Epoch time minus the exposed exchange and the all-reduce: the rank's own work.
  double compute_time_s = 0;
  /// 1 - exposed / exchange time over all epochs: the share of the exchange hidden behind the
  /// aggregation of owned rows (0 without overlap or without exchange).
  double exchange_hidden_fraction = 0;
  double allreduce_time_s = 0;
  /// Mini-batch runs.
  std::int64_t batches_per_epoch = 0;
  int prefetch = 0;  // batches prepared ahead, as applied (--prefetch auto resolved; 0 on a device)
  /// The sampler's buffers, every pipeline slot: the envelope measured by the first batches
  /// (kProbeBatches, with MiniBatchConfig::envelope_margin), after any growth; the most one
  /// batch used; the bound the envelope would be unmeasured; growths past the measured one.
  std::size_t sampler_envelope_bytes = 0;
  std::size_t sampler_peak_bytes = 0;
  std::size_t sampler_bound_bytes = 0;
  std::int64_t sampler_growths = 0;
  double host_syncs_per_batch = 0;
  /// The evaluation's layer-wise inference (one process): its buffers at their peak (hidden
  /// representations in memory, or the logits when they went to a file, and one chunk's), and
  /// the bytes one evaluation wrote to its spill file (0: in memory). Both 0 for the full-graph
  /// pass.
  std::size_t evaluation_bytes = 0;
  std::int64_t evaluation_spill_bytes = 0;
  /// Bytes one evaluation read from files: feature rows from a store's features.bin
  /// (FeatureStore::from_file) and its hidden layers back from the spill file.
  std::int64_t evaluation_read_bytes = 0;
  /// What the run's main parts hold, in bytes, by name (the task's inventory: node
  /// classification's graph, features, model and optimizer, sampler envelope, evaluation...),
  /// beside the measured peak: `--json`'s "memory".
  std::vector<std::pair<std::string, std::int64_t>> memory;
  std::int64_t sampling_bytes_per_epoch = 0;
  std::int64_t feature_bytes_per_epoch = 0;
  /// cache hits / remote rows over all epochs (0 without remote rows).
  double cache_hit_rate = 0;
  double fetch_time_s = 0;  // median per epoch
  double batch_wait_s = 0;  // median per epoch: fetch and sampling time not hidden
  /// Feature rows read from a store's file: bytes (median per epoch, all ranks), the row
  /// cache's hits / rows asked over all epochs, seconds reading (median per epoch, per rank).
  std::int64_t disk_bytes_per_epoch = 0;
  double disk_cache_hit_rate = 0;
  double disk_read_s = 0;
  /// The median per epoch of each of the task's stage times (EpochStats::stage_times).
  Metrics stage_times;
  /// TrainConfig::profile: the median of every field of EpochStats::profile.
  EpochProfile profile;
  /// Every epoch completed, the ones before a resume included.
  std::vector<EpochStats> history;
  /// Checkpoints (a checkpoint directory set): the one the run resumed from (empty: a fresh
  /// start), the last one it wrote, whether a signal stopped it (then it has not run all its
  /// epochs and the model holds the best epoch so far), and the step-boundary reductions of the
  /// preemption flag (count, total seconds on this rank).
  std::string resumed_from;
  std::string checkpoint;
  bool preempted = false;
  std::int64_t preemption_checks = 0;
  double preemption_check_s = 0;
  /// A preempted run: seconds from the first preemption signal (or request) on any rank to
  /// its checkpoint committed (the grace a scheduler must leave); -1 otherwise.
  double checkpoint_after_signal_s = -1;
};

}  // namespace halo::runtime
