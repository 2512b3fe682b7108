#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {

Graph graph_from_edges(const kernels::Resources& res, std::int64_t num_nodes,
                       std::span<const std::pair<NodeId, NodeId>> edges_src_dst) {
  HALO_EXPECTS(
      num_nodes >= 0 && num_nodes <= std::numeric_limits<NodeId>::max(),
      "graph_from_edges: num_nodes must be in [0, 2^31 - 1], got " + std::to_string(num_nodes));
  const auto m = static_cast<std::int64_t>(edges_src_dst.size());
  const std::pair<NodeId, NodeId>* edges = edges_src_dst.data();
  for (std::int64_t e = 0; e < m; ++e) {
    const auto [src, dst] = edges[e];
    HALO_EXPECTS(src >= 0 && src < num_nodes && dst >= 0 && dst < num_nodes,
                 "graph_from_edges: edge " + std::to_string(e) + " (" + std::to_string(src) +
                     " -> " + std::to_string(dst) + ") has a node id outside [0, " +
                     std::to_string(num_nodes) + ")");
  }

  // Two stable counting-sort passes (least significant key first): by source, then by
  // destination. The second pass visits sources in ascending order, so each row's columns come
  // out sorted without a comparison sort.
  std::vector<std::int64_t> src_offsets(static_cast<std::size_t>(num_nodes) + 1, 0);
  for (std::int64_t e = 0; e < m; ++e) ++src_offsets[static_cast<std::size_t>(edges[e].first)];
  detail::counts_to_offsets(src_offsets.data(), num_nodes);
  std::vector<NodeId> dst_by_src(static_cast<std::size_t>(m));
  {
    std::vector<std::int64_t> next(src_offsets.begin(), src_offsets.end() - 1);
    for (std::int64_t e = 0; e < m; ++e) {
      dst_by_src[static_cast<std::size_t>(next[static_cast<std::size_t>(edges[e].first)]++)] =
          edges[e].second;
    }
  }

  Graph g{detail::host_tensor<std::int64_t>(res, num_nodes + 1),
          detail::host_tensor<NodeId>(res, m), detail::host_tensor<float>(res, 0), num_nodes};
  std::int64_t* indptr = g.indptr.data();
  std::fill(indptr, indptr + num_nodes + 1, std::int64_t{0});
  for (std::int64_t e = 0; e < m; ++e) ++indptr[edges[e].second];
  detail::counts_to_offsets(indptr, num_nodes);
  std::vector<std::int64_t> next(indptr, indptr + num_nodes);
  NodeId* indices = g.indices.data();
  for (std::int64_t src = 0; src < num_nodes; ++src) {
    for (std::int64_t k = src_offsets[static_cast<std::size_t>(src)];
         k < src_offsets[static_cast<std::size_t>(src) + 1]; ++k) {
      const NodeId dst = dst_by_src[static_cast<std::size_t>(k)];
      indices[next[static_cast<std::size_t>(dst)]++] = static_cast<NodeId>(src);
    }
  }
  return g;
}

}  // namespace halo::datasets
