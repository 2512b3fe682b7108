#include <algorithm>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/partition/id_map.hpp>

namespace halo::partition {

IdMap::IdMap(PartitionBook book, std::int32_t rank, kernels::Tensor<NodeId> original,
             kernels::Tensor<NodeId> halo)
    : m_book(std::move(book)),
      m_rank(rank),
      m_original(std::move(original)),
      m_halo(std::move(halo)) {
  HALO_EXPECTS(rank >= 0 && rank < m_book.num_parts(),
               "IdMap: rank " + std::to_string(rank) + " outside the partition's parts");
  HALO_EXPECTS(
      m_original.device() == kernels::Device::Cpu && m_halo.device() == kernels::Device::Cpu,
      "IdMap: host tensors expected");
  HALO_EXPECTS(m_original.numel() == num_local(),
               "IdMap: one original id per owned and halo node expected");
  const NodeId* h = m_halo.data();
  for (std::int64_t i = 0; i < num_halo(); ++i) {
    HALO_EXPECTS(
        h[i] >= 0 && h[i] < m_book.num_nodes() && !owns(h[i]) && (i == 0 || h[i - 1] < h[i]),
        "IdMap: halo ids must be remote partition ids in strictly ascending order");
  }
}

std::int64_t IdMap::to_local(NodeId partition_id) const {
  if (owns(partition_id)) return partition_id - first_owned();
  const NodeId* begin = m_halo.data();
  const NodeId* end = begin + m_halo.numel();
  const NodeId* it = std::lower_bound(begin, end, partition_id);
  return it != end && *it == partition_id ? num_owned() + (it - begin) : -1;
}

}  // namespace halo::partition
