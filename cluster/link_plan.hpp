#pragma once
// The resource plan of link prediction on a snapshot series (EvolveGCN-O, GCRN), in one process
// or across the ranks of a snapshot partition series:
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

/// One rank's share of every snapshot of a snapshot partition series, per step: the rows it owns,
/// their entries in the step's GCN matrix (self-loops included), and its halo (the other ranks'
/// nodes those rows neighbour).
struct LinkPartCounts {
  std::vector<std::int64_t> owned, entries, halo;
};

/// What the plan of a link-prediction run needs to know about its snapshots.
struct LinkCounts {
  std::string dataset;
  std::int64_t num_nodes = 0, num_events = 0, num_features = 0;
  /// Per step (snapshot): stored entries of its GCN matrix (self-loops included), its distinct
  /// directed pairs to predict, its nodes with a neighbour.
  std::vector<std::int64_t> entries, targets, active;
  /// Across ranks (a snapshot partition series): each rank's share; empty in one process.
  std::vector<LinkPartCounts> parts;
};

/// The counts of a prepared one-process shard (runtime::local_temporal_shard).
LinkCounts link_counts(const runtime::TemporalShard& s);

/// The counts of `s` split over `parts` ranks by `owner` (owner[t][v] for every step and node,
/// runtime::read_snapshot_owners): link_counts with every rank's share.
LinkCounts link_partition_counts(const runtime::TemporalShard& s,
                                 const std::vector<std::vector<std::int32_t>>& owner,
                                 std::int32_t parts);

/// Bytes the encoder holds at its peak over a training step's forward and backward (its caches
/// over the window and the largest temporaries), for `nodes` rows.
std::int64_t temporal_step_bytes(const nn::TemporalModelConfig& model, int window,
                                 std::int64_t nodes);

/// The plan of `config` (config.link) on `c` with `threads` threads per rank on the CPU: in one
/// process, or with c.parts one plan per rank of the series (its rows, their halo exchanges,
/// the embeddings' all-gather and the gradients' all-reduce). halo::LogicError for another
/// device or counts that cannot be split (link_split).
Plan make_link_plan(const LinkCounts& c, const runtime::TrainConfig& config, const CostModel& costs,
                    const std::string& device, int threads);

}  // namespace halo::cluster
