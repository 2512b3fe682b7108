#pragma once
// Repartitioning that follows a graph through its snapshots: METIS from scratch relabelled by
// maximum overlap, streaming placement of new nodes (LDG), migration-aware repartitioning
// (Scotch), and the migration plans between consecutive assignments.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/metrics.hpp>
#include <halo/partition/partition_types.hpp>

namespace halo::partition {

/// Which nodes change part between two consecutive assignments. Node ids are those the
/// snapshots share (the temporal graph's dense ids); nodes [0, num_nodes_before) exist in
/// both, nodes [num_nodes_before, num_nodes_after) are new and only placed.
struct MigrationPlan {
  std::int64_t num_nodes_before = 0;
  std::int64_t num_nodes_after = 0;
  /// Old nodes whose part changes, ascending, with their parts before and after.
  std::vector<NodeId> moved;
  std::vector<std::int32_t> from;
  std::vector<std::int32_t> to;
  /// The part of every new node, in id order (num_nodes_after - num_nodes_before entries).
  std::vector<std::int32_t> placed;
  friend bool operator==(const MigrationPlan&, const MigrationPlan&) = default;
};

/// The plan that turns `before` into `after` (after.size() >= before.size(), else
/// halo::LogicError).
MigrationPlan migration_plan(std::span<const std::int32_t> before,
                             std::span<const std::int32_t> after);

/// `before` with `plan` applied (halo::LogicError when the plan does not start from `before`:
/// a size or a `from` part that differs).
std::vector<std::int32_t> apply_migration(std::span<const std::int32_t> before,
                                          const MigrationPlan& plan);

/// The assignment problem, solved exactly (Hungarian method, O(n^3)): for the n x n row-major
/// `weight`, the column of every row of a permutation maximising the summed weight. Ties go
/// to the lexicographically first optimum the method reaches (deterministic).
std::vector<std::int32_t> max_weight_assignment(std::span<const std::int64_t> weight,
                                                std::int32_t n);

/// `part` (nodes [0, part.size())) with its labels permuted to agree most with `previous`
/// (nodes [0, previous.size()), previous.size() <= part.size()): the permutation maximises
/// the number of nodes keeping their part (max_weight_assignment on the P x P overlap). An
/// assignment that is `previous` up to renaming of parts, on the old nodes, comes back equal to
/// it there.
std::vector<std::int32_t> relabel_by_overlap(std::span<const std::int32_t> previous,
                                             std::span<const std::int32_t> part,
                                             std::int32_t num_parts);

/// Linear deterministic greedy (LDG; Stanton and Kliot, KDD 2012) for nodes
/// [first_new, n) of `symmetric`, in id order, where part[v] for v < first_new is fixed: node
/// v goes to argmax_k |N(v) ∩ V_k| * (1 - |V_k| / C) with C = (1 + imbalance) * n / P and N(v)
/// its already placed neighbours, over the parts below C (all parts when none is); ties, and
/// nodes without placed neighbours, go to the part with fewest nodes, then the lowest index.
/// `part` must hold n entries (those from first_new on are overwritten).
void place_streaming(const datasets::Graph& symmetric, std::int64_t first_new,
                     std::int32_t num_parts, double imbalance, std::vector<std::int32_t>& part);

/// One snapshot's assignment and what it cost.
struct SnapshotPartition {
  /// Part of every node of the snapshot.
  std::vector<std::int32_t> part;
  /// compute_metrics of `part` on the snapshot.
  PartitionMetrics metrics;
  /// Nodes of the previous snapshot whose part changed, and nodes new in this one.
  std::int64_t migrated = 0;
  std::int64_t new_nodes = 0;
  /// Whether METIS repartitioned from scratch (snapshot 0, Scratch, Streaming's periodic
  /// repartitions).
  bool from_scratch = false;
  /// Wall time of the assignment (metrics excluded).
  double seconds = 0;
};

/// Assigns the nodes of a snapshot (`ds`, with `symmetric` = partitioning_graph of its graph)
/// given the previous snapshot's assignment `previous` (empty for the first snapshot; its nodes
/// must be a prefix of ds's). `index` is the snapshot's position (Streaming's
/// repartition_every counts it). Deterministic for a fixed config. halo::LogicError for an
/// invalid config; halo::Error when METIS or Scotch fail.
SnapshotPartition repartition_snapshot(const kernels::Resources& res, const datasets::Dataset& ds,
                                       const datasets::Graph& symmetric,
                                       std::span<const std::int32_t> previous, std::int64_t index,
                                       const RepartitionConfig& config);

}  // namespace halo::partition
