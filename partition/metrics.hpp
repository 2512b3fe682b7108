#pragma once
// Quality of a partition: edge cut, communication volume, replication factor, balance.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>

namespace halo::partition {

using kernels::NodeId;

/// Per-part weights of one balance constraint and its balance max / mean (1 when the total is 0).
struct ConstraintLoad {
  std::vector<std::int64_t> per_part;
  double balance = 1.0;
};

struct PartitionMetrics {
  /// Undirected edges {u, v}, u != v, of the symmetrised graph whose ends lie in different parts.
  std::int64_t edge_cut = 0;
  /// Sum over parts of the halo size: the distinct remote neighbours, in the training graph
  /// S = A ∪ Aᵀ, of a part's nodes. Each halo row crosses once per direction of the halo
  /// exchange, so a layer of width w sends comm_volume * w * 4 bytes forward (and as many back).
  std::int64_t comm_volume = 0;
  /// The largest halo of one part.
  std::int64_t max_halo = 0;
  /// (owned + halo nodes, summed over parts) / nodes = 1 + comm_volume / nodes (1 when empty).
  double replication_factor = 1.0;
  /// Halo size of every part.
  std::vector<std::int64_t> halo;
  /// Loads of the three constraints (whether or not they were balanced): owned nodes, owned
  /// training nodes, stored edges of owned rows.
  ConstraintLoad nodes;
  ConstraintLoad train;
  ConstraintLoad edges;
};

/// The metrics of `part` (original id -> part in [0, num_parts)) on dataset `ds` whose
/// partitioning graph (see partitioning_graph: the training graph S) is `symmetric`: cut and
/// halos on S, the edge load on the input's rows (what METIS balanced). O(nodes + edges),
/// serial.
PartitionMetrics compute_metrics(const datasets::Dataset& ds, const datasets::Graph& symmetric,
                                 std::span<const std::int32_t> part, std::int32_t num_parts);

/// The metrics as a human-readable table: one summary block and one line per part (the first
/// `max_part_lines` parts; the rest are summarised as "...").
std::string format_metrics(const PartitionMetrics& m, std::int32_t max_part_lines = 16);

}  // namespace halo::partition
