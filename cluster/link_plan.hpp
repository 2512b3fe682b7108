#pragma once
// The resource plan of link prediction on a snapshot series (EvolveGCN-O, GCRN) in one process:
// memory from the prepared snapshots' sizes, the encoder's caches over its window, the pair
// scorer and the ranking evaluation's arrays; epoch time from the calibrated costs of a training
// step's products (docs/scheduler.md, "Link prediction").

#include <cstdint>
#include <string>
#include <vector>

#include <halo/cluster/plan.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>

namespace halo::cluster {

/// What the plan of a link-prediction run needs to know about its snapshots.
struct LinkCounts {
  std::string dataset;
  std::int64_t num_nodes = 0, num_events = 0, num_features = 0;
  /// Per step (snapshot): stored entries of its GCN matrix (self-loops included), its distinct
  /// directed pairs to predict, its nodes with a neighbour.
  std::vector<std::int64_t> entries, targets, active;
};

/// The counts of a prepared one-process shard (runtime::local_temporal_shard).
LinkCounts link_counts(const runtime::TemporalShard& s);

/// Bytes the encoder holds at its peak over a training step's forward and backward (its caches
/// over the window and the largest temporaries), for `nodes` rows.
std::int64_t temporal_step_bytes(const nn::TemporalModelConfig& model, int window,
                                 std::int64_t nodes);

/// The plan of `config` (config.link) on `c` in one process with `threads` threads on the CPU.
/// halo::LogicError for another device or counts that cannot be split (link_split).
Plan make_link_plan(const LinkCounts& c, const runtime::TrainConfig& config, const CostModel& costs,
                    const std::string& device, int threads);

}  // namespace halo::cluster
