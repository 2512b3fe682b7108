#include <algorithm>
#include <cstring>
#include <utility>

#include <halo/kernels/error.hpp>
#include <halo/runtime/data/distributed_embedding.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

DistributedEmbedding::DistributedEmbedding(Comm& comm,
                                           std::unique_ptr<nn::SparseEmbedding<float>> owned,
                                           std::vector<std::int32_t> owner, std::vector<NodeId> row)
    : m_comm(comm), m_owned(std::move(owned)), m_owner(std::move(owner)), m_row(std::move(row)) {
  HALO_EXPECTS(m_owned != nullptr && m_owner.size() == m_row.size(),
               "DistributedEmbedding: an owner and a row for every node");
  m_slot.assign(static_cast<std::size_t>(m_owned->num_rows()), -1);
}

void DistributedEmbedding::lookup(const kernels::Resources& res, kernels::Span<const NodeId> ids,
                                  Tensor<float>& out) {
  const auto p = static_cast<std::size_t>(m_comm.size());
  const int me = m_comm.rank();
  const std::int64_t dim = m_owned->dim();
  m_want.assign(p, {});
  std::vector<std::vector<NodeId>> ask(p);
  for (std::int64_t i = 0; i < ids.size; ++i) {
    const auto v = static_cast<std::size_t>(ids[i]);
    HALO_EXPECTS(v < m_owner.size(), "DistributedEmbedding: a node outside the type");
    const auto j = static_cast<std::size_t>(m_owner[v]);
    if (m_owner[v] == me) continue;
    m_want[j].push_back(i);
    ask[j].push_back(ids[i]);
  }
  m_asked = alltoallv_lists(m_comm, ask, m_asked_at);
  // The rows asked of this rank, per asking rank.
  const Tensor<float>& table = m_owned->table();
  std::vector<std::vector<float>> reply(p);
  for (std::size_t j = 0; j < p; ++j)
    for (std::int64_t k = m_asked_at[j]; k < m_asked_at[j + 1]; ++k) {
      const float* r = table.data() +
                       m_row[static_cast<std::size_t>(m_asked[static_cast<std::size_t>(k)])] * dim;
      reply[j].insert(reply[j].end(), r, r + dim);
    }
  std::vector<std::int64_t> got_at;  // in floats
  const std::vector<float> got = alltoallv_lists(m_comm, reply, got_at);
  for (std::size_t j = 0; j < p; ++j)
    m_bytes_sent +=
        static_cast<std::int64_t>(ask[j].size() * sizeof(NodeId) + reply[j].size() * sizeof(float));
  kernels::ensure_shape(res, out, ids.size, dim);
  for (std::int64_t i = 0; i < ids.size; ++i) {
    const auto v = static_cast<std::size_t>(ids[i]);
    if (m_owner[v] == me) std::copy_n(table.data() + m_row[v] * dim, dim, out.data() + i * dim);
  }
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t k = 0; k < m_want[j].size(); ++k)
      std::copy_n(got.data() + got_at[j] + static_cast<std::int64_t>(k) * dim, dim,
                  out.data() + m_want[j][k] * dim);
}

void DistributedEmbedding::set_gradient(const kernels::Resources& res,
                                        kernels::Span<const NodeId> ids,
                                        const Tensor<float>& grad) {
  const auto p = static_cast<std::size_t>(m_comm.size());
  const int me = m_comm.rank();
  const std::int64_t dim = m_owned->dim();
  HALO_EXPECTS(grad.rows() == ids.size && (ids.size == 0 || grad.cols() == dim),
               "DistributedEmbedding: one gradient row per looked-up id");
  // The remote rows' gradients go back to their owners, in the order they were asked.
  std::vector<std::vector<float>> back(p);
  for (std::size_t j = 0; j < p; ++j)
    for (const std::int64_t i : m_want[j])
      back[j].insert(back[j].end(), grad.data() + i * dim, grad.data() + (i + 1) * dim);
  std::vector<std::int64_t> back_at;
  const std::vector<float> returned = alltoallv_lists(m_comm, back, back_at);
  for (std::size_t j = 0; j < p; ++j)
    m_bytes_sent += static_cast<std::int64_t>(back[j].size() * sizeof(float));
  // Sums per owned row: this rank's rows first, then the returned ones by rank.
  m_touched.clear();
  m_sum.clear();
  const auto add = [&](NodeId node, const float* g) {
    const auto r = static_cast<std::size_t>(m_row[static_cast<std::size_t>(node)]);
    if (m_slot[r] < 0) {
      m_slot[r] = static_cast<std::int64_t>(m_touched.size());
      m_touched.push_back(static_cast<NodeId>(r));
      m_sum.insert(m_sum.end(), g, g + dim);
      return;
    }
    float* s = m_sum.data() + m_slot[r] * dim;
    for (std::int64_t c = 0; c < dim; ++c) s[c] += g[c];
  };
  for (std::int64_t i = 0; i < ids.size; ++i)
    if (m_owner[static_cast<std::size_t>(ids[i])] == me) add(ids[i], grad.data() + i * dim);
  for (std::size_t k = 0; k < m_asked.size(); ++k)
    add(m_asked[k], returned.data() + static_cast<std::int64_t>(k) * dim);
  for (const NodeId r : m_touched) m_slot[static_cast<std::size_t>(r)] = -1;
  // One process counts a SparseAdam step when its pass read any row of the type.
  const std::int64_t read = m_comm.sum(static_cast<std::int64_t>(ids.size));
  if (read == 0) return;
  if (m_touched.empty()) return m_owned->set_no_gradient(res);
  const auto n = static_cast<std::int64_t>(m_touched.size());
  const Tensor<float> g = Tensor<float>::from_host(res, m_sum, n, dim);
  m_owned->set_gradient(res, kernels::Span<const NodeId>(m_touched.data(), n), g);
}

std::unique_ptr<nn::SparseEmbedding<float>> DistributedEmbedding::gather(
    const kernels::Resources& res) {
  const std::int64_t dim = m_owned->dim();
  const Tensor<float>& mine = m_owned->table();
  std::vector<std::size_t> counts;
  const std::vector<std::byte> all = m_comm.allgatherv(
      mine.data(), static_cast<std::size_t>(mine.numel()) * sizeof(float), counts);
  std::vector<std::size_t> first(counts.size() + 1, 0);  // each rank's first row in `all`
  for (std::size_t k = 0; k < counts.size(); ++k)
    first[k + 1] = first[k] + counts[k] / (sizeof(float) * static_cast<std::size_t>(dim));
  const auto n = static_cast<std::int64_t>(m_owner.size());
  std::vector<float> table(static_cast<std::size_t>(n * dim));
  for (std::int64_t v = 0; v < n; ++v) {
    const auto k = static_cast<std::size_t>(m_owner[static_cast<std::size_t>(v)]);
    const std::size_t row = first[k] + static_cast<std::size_t>(m_row[static_cast<std::size_t>(v)]);
    std::memcpy(table.data() + v * dim,
                all.data() + row * static_cast<std::size_t>(dim) * sizeof(float),
                static_cast<std::size_t>(dim) * sizeof(float));
  }
  auto whole = std::make_unique<nn::SparseEmbedding<float>>(
      res, m_owned->name(), std::span<const NodeId>(), n, dim, 0, 0);
  whole->table() = Tensor<float>::from_host(res, table, n, dim);
  return whole;
}

SpreadEmbeddings spread_embeddings(const kernels::Resources& res, Comm& comm,
                                   nn::HeteroModel<float>& model,
                                   const partition::HeteroPartLayout& layout, TypeOwners& owners) {
  SpreadEmbeddings s;
  if (comm.size() == 1 || model.embeddings().empty()) return s;
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "train: learnable embeddings on a heterogeneous partition train on the CPU");
  if (owners.owner.empty()) owners = gather_type_owners(layout, comm);
  const kernels::Resources host(kernels::Device::Cpu, res.cpu_exec().num_threads);
  const nn::HeteroSchema& schema = model.schema();
  for (std::int32_t t = 0; t < static_cast<std::int32_t>(schema.in_features.size()); ++t) {
    const auto ut = static_cast<std::size_t>(t);
    if (!nn::learns_embedding(model.config().featureless, schema, t)) continue;
    const NodeId* o = layout.original[ut].data();
    const std::vector<NodeId> owned(o, o + layout.num_owned[ut]);
    s.tables.push_back(std::make_unique<DistributedEmbedding>(
        comm, model.embedding_part(host, t, layout.global_nodes[ut], owned), owners.owner[ut],
        owners.row[ut]));
    model.spread_embedding(t, s.tables.back().get());
    s.types.push_back(t);
  }
  return s;
}

}  // namespace halo::runtime
