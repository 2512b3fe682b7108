#pragma once
// The partition book: contiguous ownership of relabelled node ids, and the relabelling itself.

#include <cstdint>
#include <span>
#include <vector>

#include <halo/kernels/types.hpp>

namespace halo::partition {

using kernels::NodeId;

/// Who owns which node after relabelling: part k owns the new ids [offset(k), offset(k + 1)).
/// Holds only the P + 1 offsets, so every rank can keep a copy.
class PartitionBook {
 public:
  PartitionBook() = default;
  /// `offsets` has P + 1 >= 2 entries, starts at 0 and never decreases (empty parts are
  /// allowed); else halo::LogicError.
  explicit PartitionBook(std::vector<std::int64_t> offsets);

  std::int32_t num_parts() const { return static_cast<std::int32_t>(m_offsets.size()) - 1; }
  std::int64_t num_nodes() const { return m_offsets.empty() ? 0 : m_offsets.back(); }
  /// The first new id part k owns.
  std::int64_t begin(std::int32_t k) const { return m_offsets[static_cast<std::size_t>(k)]; }
  /// One past the last new id part k owns.
  std::int64_t end(std::int32_t k) const { return m_offsets[static_cast<std::size_t>(k) + 1]; }
  std::int64_t size(std::int32_t k) const { return end(k) - begin(k); }
  const std::vector<std::int64_t>& offsets() const { return m_offsets; }

  /// The part owning new id `v` in [0, num_nodes()): a binary search over the offsets
  /// (O(log P); an empty part never owns anything). halo::LogicError when out of range.
  std::int32_t owner(std::int64_t v) const;

 private:
  std::vector<std::int64_t> m_offsets;
};

/// The relabelling of a partition: new ids are contiguous per part, and within a part follow
/// the original order (node u before w in the same part iff u < w).
struct Relabelling {
  PartitionBook book;
  /// new id -> original id.
  std::vector<NodeId> new_to_old;
  /// original id -> new id.
  std::vector<NodeId> old_to_new;
};

/// The relabelling of `part` (original id -> part in [0, num_parts)). O(n + P), a counting sort.
/// halo::LogicError when a part id is out of range.
Relabelling relabel(std::span<const std::int32_t> part, std::int32_t num_parts);

}  // namespace halo::partition
