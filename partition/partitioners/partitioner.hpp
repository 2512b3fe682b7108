#pragma once
// Assigning nodes to parts: METIS (k-way or recursive bisection) with multi-constraint vertex
// weights, and the random hash baseline.

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/metrics.hpp>
#include <halo/partition/partition_book.hpp>
#include <halo/partition/partition_types.hpp>

namespace halo::partition {

using datasets::Dataset;
using datasets::Graph;
using kernels::NodeId;

/// The part of every node, indexed by the node's original id.
struct Assignment {
  std::vector<std::int32_t> part;
  /// Wall time of the METIS call alone (0 for the random method).
  double metis_seconds = 0;
  /// METIS's own value of its objective (edge cut or volume); -1 for the random method.
  std::int64_t metis_objective = -1;
  /// Nodes moved after METIS to bring every part within the requested imbalance.
  std::int64_t rebalance_moves = 0;
};

/// The graph METIS partitions: A ∪ Aᵀ of `graph`'s structure (values ignored) without
/// self-loops or duplicate entries, rows sorted. Host only.
Graph partitioning_graph(const kernels::Resources& res, const Graph& graph);

/// The largest number of adjacency entries (and of summed vertex weights per constraint) the
/// linked METIS accepts: 2^31 - 1 with Debian's 32-bit idx_t (IDXTYPEWIDTH 32).
std::int64_t metis_index_limit();

/// Throws halo::Error naming the limit when a graph with `adjacency_entries` symmetric entries
/// and `directed_edges` edges (the total of the "edges" balance weights) cannot be given to
/// the linked METIS. assign_parts calls it before building METIS's arrays.
void check_metis_size(std::int64_t adjacency_entries, std::int64_t directed_edges);

/// Assigns every node of `ds` to one of config.num_parts parts. `symmetric` must be
/// partitioning_graph(res, ds.graph). Method::Auto is resolve_method's; LpMultilevel is
/// lp_multilevel_parts (lp_multilevel.hpp). METIS methods call METIS once with one vertex weight
/// per chosen constraint (see Balance; a constraint whose weights are all zero is dropped), ubvec
/// 1 + imbalance for each, the objective and the seed; P = 1 skips METIS. The random method
/// puts node v in part rng::below(seed, stream, v, P). After METIS, a greedy pass moves nodes out
/// of any part above (1 + imbalance) * total / P on a chosen constraint (METIS treats the
/// imbalance as a target; this makes it a bound whenever greedy moves can reach it). The random
/// method is not rebalanced. Deterministic for a fixed config.
/// Throws halo::LogicError for an invalid config (P outside [1, 1024], imbalance outside
/// (0, 1], no constraint, volume with recursive bisection) and halo::Error when the graph exceeds
/// metis_index_limit() (the message names the limit) or METIS reports an error.
Assignment assign_parts(const kernels::Resources& res, const Dataset& ds, const Graph& symmetric,
                        const PartitionConfig& config);

/// The same with the vertex weights given: weights[j][v] >= 0 is node v's weight on constraint
/// j (one entry per row of `symmetric`; all-zero columns are dropped, none left: nodes). What
/// the heterogeneous partitioner balances (one column per node type, one for training nodes).
Assignment assign_parts(const Graph& symmetric, std::vector<std::vector<std::int32_t>> weights,
                        const PartitionConfig& config);

/// What METIS k-way needs per symmetric adjacency entry, its O(nodes) arrays included: measured
/// 67 and 79 bytes on R-MAT scale 20 and 22 (`halo partition --method metis` against `--method
/// random`, peak RSS over entries; bench/results/partition.md).
inline constexpr std::int64_t kMetisBytesPerEntry = 80;

/// The method Method::Auto stands for on a graph of `adjacency_entries` symmetric entries whose
/// largest balance-weight total is `largest_weight`: MetisKway when both are within
/// metis_index_limit() and METIS's memory (kMetisBytesPerEntry an entry) is within
/// `memory_budget` (0: no budget), else LpMultilevel. Any other method is itself.
Method resolve_method(Method m, std::int64_t adjacency_entries, std::int64_t largest_weight,
                      std::size_t memory_budget = 0);

/// Called with a short description at the start of each long phase ("METIS k-way, 8 parts").
using Progress = std::function<void(std::string_view phase)>;

/// Wall times of the phases of partition_dataset, in seconds.
struct PartitionTimings {
  double symmetrize_s = 0;
  double metis_s = 0;   ///< the METIS call alone
  double assign_s = 0;  ///< assign_parts, METIS included
  double relabel_s = 0;
  double metrics_s = 0;
  double total_s = 0;
};

/// Everything `halo partition` computes before writing: the assignment, the relabelling, the
/// metrics.
struct PartitionResult {
  PartitionConfig config;
  /// The training graph S = partitioning_graph(ds.graph): what METIS partitioned and what the
  /// parts store (write_partitions).
  Graph symmetric;
  Assignment assignment;
  Relabelling relabelling;
  PartitionMetrics metrics;
  PartitionTimings timings;
};

/// partitioning_graph, assign_parts, relabel and compute_metrics in one go (the metrics on S,
/// the graph training exchanges). Same errors.
PartitionResult partition_dataset(const kernels::Resources& res, const Dataset& ds,
                                  const PartitionConfig& config, const Progress& progress = {});

/// The same with S given: `symmetric` must equal partitioning_graph(res, ds.graph) (for a store
/// whose graph is S already, a second mapping of its files: nothing is copied).
PartitionResult partition_dataset(const kernels::Resources& res, const Dataset& ds, Graph symmetric,
                                  const PartitionConfig& config, const Progress& progress = {});

}  // namespace halo::partition
