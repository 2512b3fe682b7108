#include <algorithm>
#include <cstring>
#include <numeric>

#include <halo/kernels/error.hpp>
#include <halo/runtime/data/remote_neighbors.hpp>
#include <halo/sampler/sample_body.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Span;

RemoteNeighbors::RemoteNeighbors(const partition::Part& part, Comm& comm)
    : m_part(&part),
      m_stats{part.book().num_nodes(), part.training_edges, part.max_degree},
      m_comm(comm),
      m_rows(part.graph.view(), part.ids.original_ids().data) {
  HALO_EXPECTS(part.ids.num_parts() == comm.size() && part.rank() == comm.rank(),
               "RemoteNeighbors: rank " + std::to_string(comm.rank()) + " of " +
                   std::to_string(comm.size()) + " holds part " + std::to_string(part.rank()) +
                   " of " + std::to_string(part.ids.num_parts()));
}

RemoteNeighbors::RemoteNeighbors(sampler::LocalNeighbors rows, std::span<const std::int32_t> owner,
                                 std::span<const NodeId> row, sampler::DegreeStats stats,
                                 Comm& comm)
    : m_owner(owner), m_row(row), m_stats(stats), m_comm(comm), m_rows(rows) {
  HALO_EXPECTS(
      owner.size() == row.size() && static_cast<std::int64_t>(owner.size()) == stats.num_nodes,
      "RemoteNeighbors: one owner and row per destination node");
}

sampler::DegreeStats RemoteNeighbors::stats() const { return m_stats; }

std::int64_t RemoteNeighbors::local_row(NodeId v) const {
  if (m_part) {
    HALO_EXPECTS(m_part->ids.owns(v), "RemoteNeighbors: asked for a row this rank does not own");
    return v - m_part->ids.first_owned();
  }
  HALO_EXPECTS(v >= 0 && static_cast<std::size_t>(v) < m_owner.size() &&
                   m_owner[static_cast<std::size_t>(v)] == m_comm.rank(),
               "RemoteNeighbors: asked for a row this rank does not own");
  return m_row[static_cast<std::size_t>(v)];
}

void RemoteNeighbors::reserve(const sampler::SamplerEnvelope& envelope,
                              const std::vector<int>& fanouts, bool replace) {
  const auto p = static_cast<std::size_t>(m_comm.size());
  const std::int64_t owned = m_rows.graph().num_rows, owned_edges = m_rows.graph().num_edges();
  const std::int64_t max_degree = m_stats.max_degree;
  std::int64_t ask = 0, edges = 0, served = 0, served_edges = 0;
  for (std::size_t l = 0; l < envelope.layers.size(); ++l) {
    const sampler::LayerEnvelope& b = envelope.layers[l];
    ask = std::max(ask, b.num_dst);
    edges = std::max(edges, b.num_edges);
    // Each peer asks at most its bound of distinct destinations, and at most the owned ones.
    const std::int64_t requests = static_cast<std::int64_t>(p) * std::min(b.num_dst, owned);
    const int k = fanouts[l];
    const std::int64_t per =
        k < 0 ? max_degree : (replace ? k : std::min<std::int64_t>(k, max_degree));
    std::int64_t draws = requests * per;
    if (k < 0 || !replace) draws = std::min(draws, static_cast<std::int64_t>(p) * owned_edges);
    served = std::max(served, requests);
    served_edges = std::max(served_edges, draws);
  }
  m_slot.reserve(static_cast<std::size_t>(ask));
  m_ask.reserve(static_cast<std::size_t>(ask));
  m_got_counts.reserve(static_cast<std::size_t>(ask));
  m_got_offsets.reserve(static_cast<std::size_t>(ask) + 1);
  m_got.reserve(static_cast<std::size_t>(edges));
  m_asked.reserve(static_cast<std::size_t>(served));
  m_local.reserve(static_cast<std::size_t>(served));
  m_served_offsets.reserve(static_cast<std::size_t>(served) + 1);
  m_served.reserve(static_cast<std::size_t>(served_edges));
  for (auto* v : {&m_count_out, &m_count_in, &m_cursor}) v->assign(p + 1, 0);
  m_bytes_out.assign(p, 0);
  m_bytes_in.assign(p, 0);
}

void RemoteNeighbors::count(const kernels::Resources& res, Span<const NodeId> dst, int fanout,
                            bool replace, std::int64_t* counts) {
  HALO_EXPECTS(!m_count_out.empty(), "RemoteNeighbors: reserve() before the first hop");
  const auto p = static_cast<std::size_t>(m_comm.size());
  const int me = m_comm.rank();
  // The destinations, grouped by owner (in rank order, each group in frontier order).
  std::fill(m_count_out.begin(), m_count_out.end(), 0);
  for (std::int64_t i = 0; i < dst.size; ++i)
    ++m_count_out[static_cast<std::size_t>(owner(dst[i])) + 1];
  std::partial_sum(m_count_out.begin(), m_count_out.end(), m_cursor.begin());
  m_slot.resize(static_cast<std::size_t>(dst.size));  // within the reserved capacity
  m_ask.resize(static_cast<std::size_t>(dst.size));
  for (std::int64_t i = 0; i < dst.size; ++i) {
    const auto at = m_cursor[static_cast<std::size_t>(owner(dst[i]))]++;
    m_ask[static_cast<std::size_t>(at)] = dst[i];
    m_slot[static_cast<std::size_t>(i)] = at;
  }
  for (std::size_t j = 0; j < p; ++j) m_count_out[j] = m_count_out[j + 1];  // counts per owner
  m_comm.alltoall({m_count_out.data(), static_cast<std::int64_t>(p)},
                  {m_count_in.data(), static_cast<std::int64_t>(p)});
  std::int64_t asked = 0;
  for (std::size_t j = 0; j < p; ++j) {
    m_bytes_out[j] = static_cast<std::size_t>(m_count_out[j]) * sizeof(NodeId);
    m_bytes_in[j] = static_cast<std::size_t>(m_count_in[j]) * sizeof(NodeId);
    if (static_cast<int>(j) != me) m_bytes += static_cast<std::int64_t>(m_bytes_out[j]);
    asked += m_count_in[j];
  }
  m_asked.resize(static_cast<std::size_t>(asked));
  m_comm.alltoallv(m_ask.data(), m_bytes_out, m_asked.data(), m_bytes_in);

  // Serve: the draws of every row asked for, counted on this rank's rows.
  m_local.resize(m_asked.size());
  for (std::size_t k = 0; k < m_asked.size(); ++k)
    m_local[k] = static_cast<NodeId>(local_row(m_asked[k]));
  m_served_offsets.resize(m_asked.size() + 1);
  m_served_offsets[0] = 0;
  m_rows.count(res, {m_local.data(), asked}, fanout, replace, m_served_offsets.data() + 1);
  // Counts travel back in the order they were asked; then scanned into the served offsets.
  for (std::size_t j = 0; j < p; ++j) {
    std::swap(m_bytes_out[j], m_bytes_in[j]);
    m_bytes_out[j] = m_bytes_out[j] / sizeof(NodeId) * sizeof(std::int64_t);
    m_bytes_in[j] = m_bytes_in[j] / sizeof(NodeId) * sizeof(std::int64_t);
    if (static_cast<int>(j) != me) m_bytes += static_cast<std::int64_t>(m_bytes_out[j]);
  }
  m_got_counts.resize(m_ask.size());
  m_comm.alltoallv(m_served_offsets.data() + 1, m_bytes_out, m_got_counts.data(), m_bytes_in);
  std::partial_sum(m_served_offsets.begin(), m_served_offsets.end(), m_served_offsets.begin());
  m_got_offsets.resize(m_ask.size() + 1);
  m_got_offsets[0] = 0;
  std::partial_sum(m_got_counts.begin(), m_got_counts.end(), m_got_offsets.begin() + 1);
  for (std::int64_t i = 0; i < dst.size; ++i)
    counts[i] = m_got_counts[static_cast<std::size_t>(m_slot[static_cast<std::size_t>(i)])];
}

void RemoteNeighbors::fill(const kernels::Resources& res, Span<const NodeId> dst, int fanout,
                           bool replace, std::uint64_t hop_key, const std::int64_t* offsets,
                           NodeId* out) {
  const auto p = static_cast<std::size_t>(m_comm.size());
  const int me = m_comm.rank();
  // Draw the rows asked for (keyed by their original ids), as partition ids.
  m_served.resize(static_cast<std::size_t>(m_served_offsets.back()));
  m_rows.fill(res, {m_local.data(), static_cast<std::int64_t>(m_local.size())}, fanout, replace,
              hop_key, m_served_offsets.data(), m_served.data());
  if (m_part)
    for (NodeId& v : m_served) v = m_part->ids.to_partition(v);
  // Draws per requester (served, in the order asked) and per owner (got, in ask order).
  std::int64_t served_at = 0, got_at = 0;
  for (std::size_t j = 0; j < p; ++j) {
    const std::int64_t served_end = served_at + m_count_in[j], got_end = got_at + m_count_out[j];
    m_bytes_out[j] =
        static_cast<std::size_t>(m_served_offsets[static_cast<std::size_t>(served_end)] -
                                 m_served_offsets[static_cast<std::size_t>(served_at)]) *
        sizeof(NodeId);
    m_bytes_in[j] = static_cast<std::size_t>(m_got_offsets[static_cast<std::size_t>(got_end)] -
                                             m_got_offsets[static_cast<std::size_t>(got_at)]) *
                    sizeof(NodeId);
    if (static_cast<int>(j) != me) m_bytes += static_cast<std::int64_t>(m_bytes_out[j]);
    served_at = served_end;
    got_at = got_end;
  }
  m_got.resize(static_cast<std::size_t>(m_got_offsets.back()));
  m_comm.alltoallv(m_served.data(), m_bytes_out, m_got.data(), m_bytes_in);
  for (std::int64_t i = 0; i < dst.size; ++i) {
    const auto slot = static_cast<std::size_t>(m_slot[static_cast<std::size_t>(i)]);
    const std::int64_t n = offsets[i + 1] - offsets[i];
    HALO_ASSERT(n == m_got_counts[slot], 1);
    std::copy_n(m_got.data() + m_got_offsets[slot], n, out + offsets[i]);
  }
}

}  // namespace halo::runtime
