#pragma once
// Elastic runs: a partition of K parts trained on any R ranks, 1 <= R <= K. Rank r takes a
// contiguous group of parts, merged at start-up into one part of an R-part partition whose
// book has the groups' boundaries (docs/distributed.md, "Fewer ranks than parts").

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/partition/formats/partition_format.hpp>

namespace halo::partition {

/// The parts R ranks of `meta`'s partition take: R + 1 part indices, rank r taking parts
/// groups[r] .. groups[r + 1) - 1, every group non-empty and contiguous. The groups minimise
/// the largest group's share of the partition's own balance constraints (meta.config.balance:
/// owned nodes, training nodes, stored entries; a group's cost is its largest share over the
/// constraints, times R), so every rank computes the same groups from meta.json alone.
/// R == K: one part each. halo::IoError unless 1 <= ranks <= K.
std::vector<std::int32_t> part_groups(const PartitionMeta& meta, std::int32_t ranks);

/// Rank `rank`'s group of parts of the partition in `dir` (part_groups(meta, ranks)), read and
/// merged into one part of the R-part partition whose book is meta.book at the groups'
/// boundaries: its owned nodes are the group's (partition ids [book.begin(first),
/// book.end(last))), its halo the union of the parts' halos that the group does not own, its
/// exchange lists the parts' lists merged per target group (deduplicated). R == K: read_part.
/// R == 1: the identity part of the whole graph, local ids the original ids, exactly as
/// make_local_part builds it from the dataset (what one process trains on). Reads and checks
/// every part of the group like read_part, twice (merge_parts); reads nothing of any other part
/// (no collective). Host tensors.
Part read_part_group(const kernels::Resources& res, const std::filesystem::path& dir,
                     const PartitionMeta& meta, std::int32_t ranks, std::int32_t rank,
                     const PartReadOptions& options = {});

/// What one rank of an R-rank run of a partition holds: its group of parts' sizes (what halo
/// plan models a rank from: cluster::PartCounts).
struct GroupCounts {
  std::int64_t num_owned = 0;
  /// The union of the parts' halos that the group does not own (exact: the parts' halo_ids).
  std::int64_t num_halo = 0;
  std::int64_t num_edges = 0;  // entries of the owned rows of S
  /// Entries whose column is a halo node of the group: each part's cut entries times the share
  /// of its halo that stays remote (an estimate; exact for one part per rank). -1 when the
  /// parts do not record theirs.
  std::int64_t num_halo_entries = -1;
  std::int64_t num_train = 0;
  /// Rows sent per exchange (exact: each part's send rows to parts outside the group, once).
  std::int64_t num_send = 0;
  /// Sparse features: stored entries of the owned rows.
  std::int64_t feature_nnz = 0;
  /// Bytes of the part files the rank reads.
  std::int64_t file_bytes = 0;
};

/// The counts of every rank of an R-rank run of the partition in `dir` (part_groups), for each
/// R of `rank_counts`: meta.json's sizes, and for R < K each part file's halo and send lists
/// (checksums verified), read once per R and counted with bitmaps (memory: one part's lists and
/// a bit per node).
std::vector<std::vector<GroupCounts>> group_counts(const std::filesystem::path& dir,
                                                   const PartitionMeta& meta,
                                                   const std::vector<std::int32_t>& rank_counts);

/// Reads part j of a partition (read_part with its options).
using PartReader = std::function<Part(std::int32_t)>;

/// Merges parts first .. last - 1 of a partition (consecutive; `read` returns them as read_part
/// does) into part `rank` of the partition whose book is `group_book` (the partition's book at
/// the groups' boundaries), as read_part_group. Two passes, each reading every part once: the
/// first keeps each part's small arrays (ids, degrees, row lengths, labels, splits, send lists,
/// dense features), the second copies its rows' entries (and sparse features); so one part and
/// the merged part are in memory at a time.
Part merge_parts(const kernels::Resources& res, const PartReader& read, std::int32_t first,
                 std::int32_t last, const PartitionBook& group_book, std::int32_t rank);

}  // namespace halo::partition
