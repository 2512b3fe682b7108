#include <algorithm>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/partition/partition_book.hpp>

namespace halo::partition {

PartitionBook::PartitionBook(std::vector<std::int64_t> offsets) : m_offsets(std::move(offsets)) {
  HALO_EXPECTS(m_offsets.size() >= 2, "PartitionBook: needs at least one part (2 offsets)");
  HALO_EXPECTS(m_offsets.front() == 0, "PartitionBook: offsets must start at 0");
  HALO_EXPECTS(std::is_sorted(m_offsets.begin(), m_offsets.end()),
               "PartitionBook: offsets must not decrease");
}

std::int32_t PartitionBook::owner(std::int64_t v) const {
  HALO_EXPECTS(v >= 0 && v < num_nodes(), "PartitionBook::owner: node " + std::to_string(v) +
                                              " is outside [0, " + std::to_string(num_nodes()) +
                                              ")");
  // The last offset <= v that starts a part: upper_bound skips the empty parts starting at v.
  const auto it = std::upper_bound(m_offsets.begin(), m_offsets.end(), v);
  return static_cast<std::int32_t>(it - m_offsets.begin()) - 1;
}

Relabelling relabel(std::span<const std::int32_t> part, std::int32_t num_parts) {
  HALO_EXPECTS(num_parts >= 1, "relabel: needs at least one part");
  const auto n = static_cast<std::int64_t>(part.size());
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(num_parts) + 1, 0);
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int32_t k = part[static_cast<std::size_t>(v)];
    HALO_EXPECTS(k >= 0 && k < num_parts, "relabel: node " + std::to_string(v) + " has part " +
                                              std::to_string(k) + ", outside [0, " +
                                              std::to_string(num_parts) + ")");
    ++offsets[static_cast<std::size_t>(k) + 1];
  }
  for (std::size_t k = 0; k < static_cast<std::size_t>(num_parts); ++k)
    offsets[k + 1] += offsets[k];
  Relabelling r;
  r.new_to_old.resize(static_cast<std::size_t>(n));
  r.old_to_new.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
  for (std::int64_t v = 0; v < n; ++v) {
    const auto id = next[static_cast<std::size_t>(part[static_cast<std::size_t>(v)])]++;
    r.new_to_old[static_cast<std::size_t>(id)] = static_cast<NodeId>(v);
    r.old_to_new[static_cast<std::size_t>(v)] = static_cast<NodeId>(id);
  }
  r.book = PartitionBook(std::move(offsets));
  return r;
}

}  // namespace halo::partition
