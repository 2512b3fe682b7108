#pragma once
// Multilevel partitioning for graphs METIS cannot hold: size-constrained label propagation to
// coarsen, METIS on the contracted graph, projection and balanced label-propagation refinement.

#include <cstdint>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

namespace halo::partition {

/// Knobs of lp_multilevel_parts (the defaults are what `halo partition` uses).
struct LpMultilevelConfig {
  /// Coarsen until a level has at most contraction_limit * P nodes (KaMinPar's C).
  std::int64_t contraction_limit = 2000;
  /// Label-propagation rounds per coarsening level and per refinement level.
  int clustering_rounds = 5;
  int refinement_rounds = 5;
};

/// What lp_multilevel_parts did, beside the assignment.
struct LpMultilevelStats {
  int levels = 0;                     ///< coarsening levels (0: METIS on the input itself)
  int spilled_levels = 0;             ///< of those, the ones held on disk (memory_budget)
  std::int64_t coarsest_nodes = 0;    ///< nodes of the graph METIS partitioned
  std::int64_t coarsest_entries = 0;  ///< its adjacency entries
  double coarsen_s = 0, initial_s = 0, refine_s = 0;
};

/// Assigns every node of the symmetric graph `symmetric` (S: no self-loops, both directions,
/// distinct entries) to one of config.num_parts parts, KaMinPar's scheme in deterministic form:
/// 1. coarsening: size-constrained label propagation (each node, by increasing log2 degree and
///    then id, joins the neighbouring cluster it has the most edge weight to, unless it would
///    exceed imbalance * total / P' on a constraint, P' = min(P, nodes / contraction_limit);
///    isolated nodes are grouped in id order), then contraction (cluster weights summed, parallel
///    edges merged with their weights summed), until a level has at most contraction_limit * P
///    nodes or stops shrinking;
/// 2. METIS on the coarsest graph with its edge and vertex weights: k-way and recursive
///    bisection, each the best of 4 tries, the smaller cut kept (the weights are scaled down if
///    a total exceeds METIS's 32-bit limit);
/// 3. uncoarsening: the assignment projected to each finer level and refined by balanced label
///    propagation (a node moves to the adjacent part it has strictly more edge weight to, when
///    that part stays within floor((1 + imbalance) * total / P) on every constraint);
/// 4. on the input graph, partitioner.cpp's greedy rebalance, as after METIS.
/// `weights` as assign_parts's (one column per constraint; all-zero columns dropped, none: one
/// per node). The objective is the edge cut (Objective::Volume is refined as the cut).
/// Memory: the input, O(nodes) per level and the coarse graphs (each smaller than the one
/// before; 8 bytes an entry, 12 past 2^32 total edge weight). A coarse level that could exceed
/// config.memory_budget (12 bytes for each entry of the finer level) is written to two scratch
/// files in config.scratch_dir (the system's temporary directory when empty) and mapped, its
/// pages dropped from the process as the passes go (datasets::MappedPageTrimmer); the files are
/// unlinked once mapped. The result does not depend on the budget. Deterministic: the same result
/// for any thread count. halo::LogicError for an invalid config, halo::Error when METIS fails.
Assignment lp_multilevel_parts(const datasets::Graph& symmetric,
                               std::vector<std::vector<std::int32_t>> weights,
                               const PartitionConfig& config, const LpMultilevelConfig& lp = {},
                               LpMultilevelStats* stats = nullptr);

}  // namespace halo::partition
