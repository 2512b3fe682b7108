#include <algorithm>
#include <exception>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/sampler/detail/run.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/neighbor_source.hpp>
#include <halo/sampler/sample_body.hpp>

namespace halo::sampler {

LocalNeighbors::LocalNeighbors(kernels::CsrView<kernels::NodeId, float> graph,
                               const kernels::NodeId* row_keys)
    : m_graph(graph), m_row_keys(row_keys), m_stats(degree_stats(graph)) {}

void LocalNeighbors::count(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                           int fanout, bool replace, std::int64_t* counts) {
  detail::run(res, dst.size, detail::CountBody{m_graph, dst, fanout, replace, counts});
}

void LocalNeighbors::fill(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                          int fanout, bool replace, std::uint64_t hop_key,
                          const std::int64_t* offsets, kernels::NodeId* out) {
  detail::run(res, dst.size,
              detail::FillBody{m_graph, dst, fanout, replace, hop_key, offsets, out, m_row_keys});
}

FileNeighbors::FileNeighbors(const datasets::Graph& graph)
    : m_graph(graph.view()), m_indices(graph.indices.storage()), m_stats(degree_stats(m_graph)) {
  HALO_EXPECTS(graph.indices.mapped(), "FileNeighbors: the graph's column ids are not a file");
}

void FileNeighbors::count(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                          int fanout, bool replace, std::int64_t* counts) {
  detail::run(res, dst.size, detail::CountBody{m_graph, dst, fanout, replace, counts});
}

void FileNeighbors::fill(const kernels::Resources& /*res*/,
                         kernels::Span<const kernels::NodeId> dst, int fanout, bool replace,
                         std::uint64_t hop_key, const std::int64_t* offsets, kernels::NodeId* out) {
  using kernels::NodeId;
  constexpr std::size_t kId = sizeof(NodeId);
  std::exception_ptr error;
#pragma omp parallel num_threads(kReadDepth) if (dst.size >= 64)
  {
    thread_local std::vector<NodeId> row;  // a short row, per thread, grown once
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t i = 0; i < dst.size; ++i) {
      try {
        const NodeId v = dst[i];
        const std::int64_t start = m_graph.indptr[v], d = m_graph.indptr[v + 1] - start;
        const std::int64_t k = offsets[i + 1] - offsets[i];
        NodeId* o = out + offsets[i];
        detail::draw_positions(kernels::rng::key(hop_key, static_cast<std::uint64_t>(v)), d, k,
                               fanout >= 0 && replace, o);
        if (k == 0) continue;
        if (d * static_cast<std::int64_t>(kId) <= kWholeRowBytes) {
          row.resize(static_cast<std::size_t>(d));
          m_indices.read_file(static_cast<std::size_t>(start) * kId, row.data(),
                              static_cast<std::size_t>(d) * kId);
          for (std::int64_t j = 0; j < k; ++j) o[j] = row[static_cast<std::size_t>(o[j])];
        } else {
          for (std::int64_t j = 0; j < k; ++j)
            m_indices.read_file(static_cast<std::size_t>(start + o[j]) * kId, o + j, kId);
        }
      } catch (...) {
#pragma omp critical(halo_file_neighbors_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace halo::sampler
