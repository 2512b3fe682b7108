#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include <halo/kernels/gather.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/runtime/halo_exchange.hpp>
#include <halo/runtime/trainer.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Row chunks of the owned block's product: between two chunks the requests are tested, which
// is when MPI moves messages that are too large to go out at once.
constexpr std::int64_t kChunks = 32;

struct Entry {
  std::int64_t row;  // owned local id
  NodeId col;        // global (partition) id
  float value;
};

// CSR of `entries` sorted by (row, col); columns mapped by `local_col`.
template <class F>
kernels::CsrMatrix<NodeId, float> to_csr(const kernels::Resources& res,
                                         const std::vector<Entry>& entries, std::int64_t rows,
                                         std::int64_t cols, F local_col) {
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<NodeId> indices;
  std::vector<float> values;
  indices.reserve(entries.size());
  values.reserve(entries.size());
  for (const Entry& e : entries) {
    ++indptr[static_cast<std::size_t>(e.row) + 1];
    indices.push_back(local_col(e.col));
    values.push_back(e.value);
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) indptr[r + 1] += indptr[r];
  const auto nnz = static_cast<std::int64_t>(indices.size());
  return {Tensor<std::int64_t>::from_host(res, indptr),
          Tensor<NodeId>::from_host(res, indices, nnz, 1),
          Tensor<float>::from_host(res, values, nnz, 1), cols, false};
}

// The transpose (cols x rows), rows sorted.
kernels::CsrMatrix<NodeId, float> transpose(const kernels::Resources& res,
                                            const kernels::CsrMatrix<NodeId, float>& a) {
  const std::int64_t rows = a.num_rows(), cols = a.num_cols;
  const std::int64_t* ip = a.indptr.data();
  const NodeId* ix = a.indices.data();
  const float* v = a.values.data();
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(cols) + 1, 0);
  for (std::int64_t e = 0; e < a.num_edges(); ++e) ++indptr[static_cast<std::size_t>(ix[e]) + 1];
  for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c) indptr[c + 1] += indptr[c];
  std::vector<std::int64_t> next(indptr.begin(), indptr.end() - 1);
  std::vector<NodeId> indices(static_cast<std::size_t>(a.num_edges()));
  std::vector<float> values(indices.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t e = ip[r]; e < ip[r + 1]; ++e) {
      const auto slot = static_cast<std::size_t>(next[static_cast<std::size_t>(ix[e])]++);
      indices[slot] = static_cast<NodeId>(r);
      values[slot] = v[e];
    }
  const auto nnz = static_cast<std::int64_t>(indices.size());
  return {Tensor<std::int64_t>::from_host(res, indptr),
          Tensor<NodeId>::from_host(res, indices, nnz, 1),
          Tensor<float>::from_host(res, values, nnz, 1), rows, false};
}

}  // namespace

std::vector<std::pair<std::int64_t, NodeId>> symmetric_owned_edges(Comm& comm,
                                                                   const partition::Part& part) {
  const auto p = static_cast<std::size_t>(comm.size());
  const NodeId begin = static_cast<NodeId>(part.book.begin(part.rank));
  const std::int64_t owned = part.num_owned();
  auto is_owned = [&](NodeId g) { return g >= begin && g < begin + owned; };
  // Every stored edge and its reverse; the reverse of an edge whose other end is remote goes to
  // that end's owner.
  std::vector<std::pair<std::int64_t, NodeId>> edges;  // (owned local row, global column)
  std::vector<std::vector<NodeId>> reverse(p);         // (global row, global column) pairs
  const std::int64_t* ip = part.graph.indptr.data();
  const NodeId* ix = part.graph.indices.data();
  const NodeId* col_ids = part.column_ids.data();
  for (std::int64_t r = 0; r < owned; ++r) {
    const auto g = static_cast<NodeId>(begin + r);
    for (std::int64_t e = ip[r]; e < ip[r + 1]; ++e) {
      const NodeId u = col_ids[ix[e]];
      if (u == g) continue;  // self-loops: GCN adds its own, SAGE has none
      edges.emplace_back(r, u);
      if (is_owned(u)) {
        edges.emplace_back(u - begin, g);
      } else {
        auto& to = reverse[static_cast<std::size_t>(part.book.owner(u))];
        to.push_back(u);
        to.push_back(g);
      }
    }
  }
  std::vector<std::int64_t> offsets;
  const std::vector<NodeId> received = alltoallv_lists(comm, reverse, offsets);
  for (std::size_t i = 0; i + 1 < received.size(); i += 2)
    edges.emplace_back(received[i] - begin, received[i + 1]);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

HaloExchange::HaloExchange(const kernels::Resources& res, Comm& comm, const partition::Part& part,
                           nn::ModelKind kind, bool overlap, Comm* data_comm)
    : m_comm(data_comm != nullptr ? *data_comm : comm), m_kind(kind), m_overlap(overlap) {
  HALO_EXPECTS(comm.memory_device() == kernels::Device::Cpu,
               "halo exchange: the set-up communicator must take host memory (MPI)");
  HALO_EXPECTS(m_comm.size() == comm.size() && m_comm.rank() == comm.rank(),
               "halo exchange: the data communicator must have the ranks of the set-up one");
  HALO_EXPECTS(
      m_comm.memory_device() == kernels::Device::Cpu || m_comm.memory_device() == res.device(),
      "halo exchange: a device-memory communicator (NCCL) needs a CUDA Resources");
  m_staged = res.device() != m_comm.memory_device();
  HALO_EXPECTS(part.book.num_parts() == comm.size() && part.rank == comm.rank(),
               "distributed training: rank " + std::to_string(comm.rank()) + " of " +
                   std::to_string(comm.size()) + " got part " + std::to_string(part.rank) +
                   " of a partition into " + std::to_string(part.book.num_parts()) +
                   " parts (run one rank per part)");
  const auto p = static_cast<std::size_t>(comm.size());
  const NodeId begin = static_cast<NodeId>(part.book.begin(part.rank));
  const std::int64_t owned = part.num_owned();
  const NodeId end = static_cast<NodeId>(begin + owned);
  auto is_owned = [&](NodeId g) { return g >= begin && g < end; };

  // 1. A ∪ Aᵀ on the owned rows.
  const std::vector<std::pair<std::int64_t, NodeId>> edges = symmetric_owned_edges(comm, part);

  // 2. Halo nodes (ascending global id = grouped by owner) and each rank's requests.
  std::vector<NodeId> halo;
  for (const auto& e : edges)
    if (!is_owned(e.second)) halo.push_back(e.second);
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  std::vector<std::vector<NodeId>> requests(p);
  m_halo_offsets.assign(p + 1, 0);
  for (const NodeId u : halo) {
    const auto j = static_cast<std::size_t>(part.book.owner(u));
    requests[j].push_back(u);
    ++m_halo_offsets[j + 1];
  }
  for (std::size_t j = 0; j < p; ++j) m_halo_offsets[j + 1] += m_halo_offsets[j];
  const std::vector<NodeId> wanted = alltoallv_lists(comm, requests, m_send_offsets);
  std::vector<NodeId> send_rows(wanted.size());
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    HALO_ASSERT(is_owned(wanted[i]), 1);
    send_rows[i] = wanted[i] - begin;
  }
  m_send_rows =
      Tensor<NodeId>::from_host(res, send_rows, static_cast<std::int64_t>(send_rows.size()), 1);
  // The blocks are built on the host (the loops below read them), then moved to res's device.
  const kernels::Resources host = host_resources(res);
  auto upload = [&](Csr& a) {
    if (res.device() != kernels::Device::Cpu) a = a.copy_to(res, res.device());
  };

  // 3. Degrees of the owned rows in the training graph, then those of the halo from the owners.
  std::vector<std::int64_t> degree(static_cast<std::size_t>(owned), kind == nn::ModelKind::Gcn);
  for (const auto& e : edges) ++degree[static_cast<std::size_t>(e.first)];
  std::vector<std::vector<std::int64_t>> replies(p);
  for (std::size_t j = 0; j < p; ++j)
    for (std::int64_t i = m_send_offsets[j]; i < m_send_offsets[j + 1]; ++i)
      replies[j].push_back(
          degree[static_cast<std::size_t>(send_rows[static_cast<std::size_t>(i)])]);
  std::vector<std::int64_t> reply_offsets;
  const std::vector<std::int64_t> halo_degree = alltoallv_lists(comm, replies, reply_offsets);
  HALO_ASSERT(halo_degree.size() == halo.size(), 1);
  auto degree_of = [&](NodeId g) {
    if (is_owned(g)) return degree[static_cast<std::size_t>(g - begin)];
    const auto it = std::lower_bound(halo.begin(), halo.end(), g);
    return halo_degree[static_cast<std::size_t>(it - halo.begin())];
  };

  // 4. Weights, as datasets::gcn_normalize computes them (GCN) or 1 / degree (SAGE mean).
  std::vector<Entry> own, remote;
  const bool gcn = kind == nn::ModelKind::Gcn;
  auto inv_sqrt = [](std::int64_t d) { return 1.0 / std::sqrt(static_cast<double>(d)); };
  std::size_t e = 0;
  for (std::int64_t r = 0; r < owned; ++r) {
    const auto g = static_cast<NodeId>(begin + r);
    const std::int64_t d = degree[static_cast<std::size_t>(r)];
    bool self_done = !gcn;
    for (; e < edges.size() && edges[e].first == r; ++e) {
      const NodeId u = edges[e].second;
      if (!self_done && u > g) {
        own.push_back({r, g, static_cast<float>(inv_sqrt(d) * inv_sqrt(d))});
        self_done = true;
      }
      const float w = gcn ? static_cast<float>(inv_sqrt(d) * inv_sqrt(degree_of(u)))
                          : static_cast<float>(1.0 / static_cast<double>(d));
      (is_owned(u) ? own : remote).push_back({r, u, w});
    }
    if (!self_done) own.push_back({r, g, static_cast<float>(inv_sqrt(d) * inv_sqrt(d))});
  }
  m_own = to_csr(host, own, owned, owned, [&](NodeId g) { return g - begin; });
  m_own.symmetric = gcn;  // D^-1/2 (A + I) D^-1/2 restricted to owned x owned is symmetric
  if (!gcn) m_own_t = transpose(host, m_own);
  m_halo = to_csr(host, remote, owned, static_cast<std::int64_t>(halo.size()), [&](NodeId g) {
    return static_cast<NodeId>(std::lower_bound(halo.begin(), halo.end(), g) - halo.begin());
  });
  m_halo_t = transpose(host, m_halo);
  for (Csr* a : {&m_own, &m_own_t, &m_halo, &m_halo_t}) upload(*a);
}

kernels::MatrixView<float> HaloExchange::scratch(const kernels::Resources& res, Tensor<float>& t,
                                                 std::int64_t rows, std::int64_t cols) {
  if (t.numel() < rows * cols) t = Tensor<float>(res, rows * cols, 1);
  return {t.data(), rows, cols};
}

void HaloExchange::post(const kernels::Resources& res, Direction d, std::int64_t width,
                        const float* send, float* recv) {
  const int tag = d == Direction::Forward ? 1 : 2;
  // Forward: send the rows peers need (send lists), receive the halo. Backward: the reverse.
  const auto& out = d == Direction::Forward ? m_send_offsets : m_halo_offsets;
  const auto& in = d == Direction::Forward ? m_halo_offsets : m_send_offsets;
  const auto row_bytes = static_cast<std::size_t>(width) * sizeof(float);
  if (m_staged) {
    // Device rows -> page-locked host memory, complete before MPI reads it. The synchronisation
    // also guarantees that the previous exchange's copy out of m_recv_host has finished.
    const std::size_t send_bytes = static_cast<std::size_t>(out.back()) * row_bytes;
    const std::size_t recv_bytes = static_cast<std::size_t>(in.back()) * row_bytes;
    if (m_send_host.bytes() < send_bytes) m_send_host = kernels::PinnedBuffer(res, send_bytes);
    if (m_recv_host.bytes() < recv_bytes) m_recv_host = kernels::PinnedBuffer(res, recv_bytes);
    kernels::copy_bytes_async(res, m_send_host.data(), kernels::Device::Cpu, send, res.device(),
                              send_bytes);
    res.synchronize();
    send = static_cast<const float*>(m_send_host.data());
    m_unstage_to = recv;
    m_unstage_bytes = recv_bytes;
    recv = static_cast<float*>(m_recv_host.data());
  }
  m_requests.clear();
  for (int j = 0; j < m_comm.size(); ++j) {
    const auto k = static_cast<std::size_t>(j);
    if (in[k + 1] > in[k])
      m_requests.push_back(m_comm.irecv(
          recv + in[k] * width, static_cast<std::size_t>(in[k + 1] - in[k]) * row_bytes, j, tag));
  }
  for (int j = 0; j < m_comm.size(); ++j) {
    const auto k = static_cast<std::size_t>(j);
    if (out[k + 1] == out[k]) continue;
    const auto bytes = static_cast<std::size_t>(out[k + 1] - out[k]) * row_bytes;
    m_requests.push_back(m_comm.isend(send + out[k] * width, bytes, j, tag));
    m_stats.bytes_sent += static_cast<std::int64_t>(bytes);
  }
  if (!m_overlap) m_comm.wait_all(m_requests);
}

void HaloExchange::local_product(const kernels::Resources& res, const Csr& a,
                                 kernels::ConstMatrixView<float> x,
                                 kernels::MatrixView<float> out) {
  const auto view = a.view();
  const std::int64_t rows = view.num_rows;
  // Chunks give a host communicator's progress engine a turn between them. A device
  // communicator (NCCL) queues its transfers on the same stream, so chunks would only add
  // launches: it runs the product whole and waits in finish().
  bool pending = !m_requests.empty() && m_overlap && m_comm.memory_device() == kernels::Device::Cpu;
  const std::int64_t chunks = pending ? kChunks : 1;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
    auto part = view;
    part.indptr += r0;
    part.num_rows = r1 - r0;
    if (chunks > 1) part.num_entries = -1;  // a chunk's count is indptr[r1] - indptr[r0]
    kernels::spmm(res, part, x, kernels::MatrixView<float>{out.row(r0), r1 - r0, out.cols});
    if (!pending) continue;
    // Time inside MPI counts as exposed: on a shared-memory transport the copies happen there.
    const double t = now();
    const bool done = m_comm.test_all(m_requests);
    const double after = now();
    m_stats.exposed_s += after - t;
    if (done) {
      m_stats.exchange_s += after - m_posted_at;
      pending = false;
      m_posted_at = -1;  // completion already counted
    }
  }
}

void HaloExchange::finish(const kernels::Resources& res) {
  if (m_posted_at >= 0) {  // else completed at the post or seen complete by test_all
    const double t = now();
    m_comm.wait_all(m_requests);
    const double done = now();
    m_stats.exposed_s += done - t;
    m_stats.exchange_s += done - m_posted_at;
  }
  if (m_unstage_bytes > 0)  // ordered before the product that reads the rows
    kernels::copy_bytes_async(res, m_unstage_to, res.device(), m_recv_host.data(),
                              kernels::Device::Cpu, m_unstage_bytes);
  m_unstage_to = nullptr;
  m_unstage_bytes = 0;
}

void HaloExchange::posted(double start) {
  const double t = now();
  m_stats.exposed_s += t - start;
  m_stats.exchange_s += t - start;
  // Nothing in flight (no peers, or post() already waited): the exchange is complete.
  const bool in_flight =
      std::any_of(m_requests.begin(), m_requests.end(), [](const Request& r) { return r.active; });
  m_posted_at = in_flight ? t : -1;
}

void HaloExchange::check(kernels::Aggregate aggregate, kernels::ConstMatrixView<float> in,
                         kernels::MatrixView<float> out) const {
  HALO_EXPECTS(aggregate == (m_kind == nn::ModelKind::Gcn ? kernels::Aggregate::Sum
                                                          : kernels::Aggregate::Mean),
               "halo exchange: built for another model kind");
  HALO_EXPECTS(in.rows == num_owned() && out.rows == num_owned() && out.cols == in.cols,
               "halo exchange: shape mismatch");
}

void HaloExchange::forward(const kernels::Resources& res, kernels::Aggregate aggregate,
                           kernels::ConstMatrixView<float> x, kernels::MatrixView<float> out) {
  check(aggregate, x, out);
  const std::int64_t w = x.cols;
  const double start = now();
  const auto send = scratch(res, m_send_buf, m_send_rows.numel(), w);
  const auto recv = scratch(res, m_recv_buf, num_halo(), w);
  kernels::gather_rows<kernels::NodeId, float>(res, x, m_send_rows.span(), send);
  post(res, Direction::Forward, w, send.data, recv.data);
  posted(start);
  local_product(res, m_own, x, out);
  finish(res);
  if (num_halo() > 0) kernels::spmm_accumulate(res, m_halo.view(), recv, out);
}

void HaloExchange::backward(const kernels::Resources& res, kernels::Aggregate aggregate,
                            kernels::ConstMatrixView<float> dy, kernels::MatrixView<float> out) {
  check(aggregate, dy, out);
  const std::int64_t w = dy.cols;
  const auto send = scratch(res, m_send_buf, num_halo(), w);  // dL/d(halo rows), to their owners
  const auto recv = scratch(res, m_recv_buf, m_send_rows.numel(), w);
  if (num_halo() > 0) kernels::spmm(res, m_halo_t.view(), dy, send);
  const double start = now();
  post(res, Direction::Backward, w, send.data, recv.data);
  posted(start);
  local_product(res, m_kind == nn::ModelKind::Gcn ? m_own : m_own_t, dy, out);
  finish(res);
  if (m_send_rows.numel() > 0)
    kernels::scatter_add_rows<kernels::NodeId, float>(res, recv, m_send_rows.span(), out);
}

}  // namespace halo::runtime
