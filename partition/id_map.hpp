#pragma once
// The three id spaces of one part of a partition: original, partition and local ids.

#include <cstdint>

#include <halo/kernels/tensor.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>
#include <halo/partition/partition_book.hpp>

namespace halo::partition {

/// The ids of the nodes one part knows about: its owned nodes and its halo (the remote
/// neighbours of owned nodes in the training graph).
///   - original ids: the input dataset's;
///   - partition ids: after relabelling; part k owns [book.begin(k), book.end(k)), in original
///     order within a part, so "who owns v" is book.owner(v) (a binary search over P + 1
///     offsets);
///   - local ids: 0 .. num_owned - 1 are the owned nodes (local i = partition id
///     book.begin(rank) + i), num_owned .. num_local - 1 the halo in ascending partition id,
///     hence grouped by owner.
/// Everything is O(owned + halo): no rank holds a per-node array of the whole graph. For a
/// one-part partition every id space is the same (identity()). Host tensors; move-only.
class IdMap {
 public:
  IdMap() = default;
  /// `original` holds the original id of every local node (owned, then halo); `halo` the
  /// partition ids of the halo, strictly ascending, none owned by `rank`. halo::LogicError
  /// otherwise (checked in O(halo)).
  IdMap(PartitionBook book, std::int32_t rank, kernels::Tensor<NodeId> original,
        kernels::Tensor<NodeId> halo);

  const PartitionBook& book() const { return m_book; }
  std::int32_t rank() const { return m_rank; }
  std::int32_t num_parts() const { return m_book.num_parts(); }
  std::int64_t num_owned() const { return m_book.num_parts() == 0 ? 0 : m_book.size(m_rank); }
  std::int64_t num_halo() const { return m_halo.numel(); }
  std::int64_t num_local() const { return num_owned() + num_halo(); }
  /// The partition id of local node 0.
  NodeId first_owned() const { return static_cast<NodeId>(m_book.begin(m_rank)); }
  /// True for a one-part partition: original, partition and local ids coincide.
  bool identity() const { return m_book.num_parts() == 1; }

  bool owns(NodeId partition_id) const {
    return partition_id >= first_owned() && partition_id < first_owned() + num_owned();
  }
  std::int32_t owner(NodeId partition_id) const { return m_book.owner(partition_id); }
  NodeId to_partition(std::int64_t local) const {
    return local < num_owned() ? static_cast<NodeId>(first_owned() + local)
                               : m_halo.data()[local - num_owned()];
  }
  NodeId to_original(std::int64_t local) const { return m_original.data()[local]; }
  /// The local id of an owned or halo node, -1 for any other (O(log halo)).
  std::int64_t to_local(NodeId partition_id) const;

  /// Original ids of the local nodes (owned, then halo).
  kernels::Span<const NodeId> original_ids() const { return m_original.span(); }
  /// Partition ids of the halo, ascending.
  kernels::Span<const NodeId> halo_ids() const { return m_halo.span(); }

 private:
  PartitionBook m_book;
  std::int32_t m_rank = 0;
  kernels::Tensor<NodeId> m_original;
  kernels::Tensor<NodeId> m_halo;
};

}  // namespace halo::partition
