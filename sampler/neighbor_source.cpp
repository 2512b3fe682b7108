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

}  // namespace halo::sampler
