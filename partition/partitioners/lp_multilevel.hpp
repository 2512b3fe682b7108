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
  /// KaMinPar's C: a graph of more than C * P nodes is coarsened, down to 2 * C nodes; a level
  /// is split into a block per C nodes at most (see lp_multilevel_parts).
  std::int64_t contraction_limit = 2000;
  /// Label-propagation rounds per coarsening level and per refinement level.
  int clustering_rounds = 5;
  int refinement_rounds = 5;
};

/// What lp_multilevel_parts did, beside the assignment.
struct LpMultilevelStats {
  int levels = 0;                     ///< coarsening levels (0: METIS on the input itself)
  int spilled_levels = 0;             ///< of those, the ones held on disk (memory_budget)
  std::int64_t coarsest_nodes = 0;    ///< nodes of the coarsest level (the input: no levels)
  std::int64_t coarsest_entries = 0;  ///< its adjacency entries
  double coarsen_s = 0, initial_s = 0, refine_s = 0;
};

/// Assigns every node of the symmetric graph `symmetric` (S: no self-loops, both directions,
/// distinct entries) to one of config.num_parts parts, KaMinPar's deep multilevel scheme in
/// deterministic form. A graph of at most C * P nodes (C = contraction_limit) goes to METIS
/// directly (k-way and recursive bisection, each the best of 4 tries, the smaller cut kept), then
/// steps 4-5. Larger graphs:
/// 1. coarsening: size-constrained label propagation (each node, by increasing log2 degree and
///    then id, joins the neighbouring cluster it has the most edge weight to, unless it would
///    exceed imbalance * total / P' on a constraint, P' = clamp(nodes / C, 2, P); isolated nodes
///    are grouped in id order), then contraction (cluster weights summed, parallel edges merged
///    with their weights summed), until a level has at most 2 * C nodes or stops shrinking;
/// 2. blocks: one block standing for all P final parts, split in two by METIS recursive
///    bisection of the coarsest graph (target weights in the ratio of the final parts each side
///    stands for: ceil(f / 2) and floor(f / 2)); on every finer level, every block standing for
///    several parts is split the same way (METIS on the block's induced subgraph) while the level
///    has at least C nodes per block after the split, and on the input until there are P;
///    each split round is refined (step 3) before the next, so the decisions about whole
///    communities are taken on coarse graphs and corrected on every finer one (partitioning the
///    coarsest graph into P at once cut 1.2x more on a planted partition with 40 communities
///    into 16 parts);
/// 3. uncoarsening: the blocks projected to each finer level and refined by balanced label
///    propagation (a node moves to the adjacent block it has strictly more edge weight to, when
///    that block stays within floor((1 + imbalance) * total * f / P) on every constraint, f its
///    final parts);
/// 4. the same refinement on the input;
/// 5. partitioner.cpp's greedy rebalance, as after METIS.
/// METIS's 32-bit weights: edge weights clamped, vertex weights scaled down where a total
/// exceeds the limit.
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
