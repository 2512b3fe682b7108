#pragma once
// Private helpers of the partitioners: the METIS call on raw arrays and the greedy rebalance.

#include <cstdint>
#include <metis.h>
#include <vector>

#include <halo/partition/partitioners/partitioner.hpp>

namespace halo::partition::detail {

/// The columns (one weight per node each) interleaved as METIS's vwgt, after dropping all-zero
/// columns (none left: one column of ones, which `columns` then holds).
std::vector<idx_t> interleave(std::vector<std::vector<std::int32_t>>& columns, std::int64_t n);

/// METIS (k-way, or recursive bisection for Method::MetisRecursive) of the symmetric CSR
/// (indptr, adj) with optional edge weights `adjwgt` (one per entry, nullptr: 1) and `ncon`
/// vertex weights per node, ubvec 1 + imbalance, the config's objective and seed, the best of
/// `ncuts` tries (METIS_OPTION_NCUTS); `tpwgts` (nparts x ncon fractions, each constraint's
/// summing to 1; nullptr: equal parts) the parts' target shares. No rebalance. halo::Error when
/// METIS fails.
Assignment metis_call(std::int64_t n, const std::int64_t* indptr, const NodeId* adj, idx_t* adjwgt,
                      std::vector<idx_t>& vwgt, std::size_t ncon, const PartitionConfig& c,
                      int ncuts = 1, real_t* tpwgts = nullptr);

/// Greedy moves until every part is within floor((1 + imbalance) * total / P) on every
/// constraint, or no single move helps (partitioner.cpp). Returns the moves.
std::int64_t rebalance(const std::int64_t* rows, const NodeId* cols, std::int64_t n,
                       const std::vector<idx_t>& vwgt, std::size_t ncon, double imbalance,
                       std::int32_t num_parts, std::vector<idx_t>& part);

}  // namespace halo::partition::detail
