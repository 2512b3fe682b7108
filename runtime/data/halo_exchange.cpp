#include <algorithm>
#include <chrono>
#include <cmath>

#include <halo/kernels/gather.hpp>
#include <halo/kernels/gcn_norm.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/shard.hpp>

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

/// A CSR being built row by row on the host.
struct Builder {
  std::vector<std::int64_t> indptr{0};
  std::vector<NodeId> indices;
  std::vector<float> values;
  void add(NodeId c, double w) {
    indices.push_back(c);
    values.push_back(static_cast<float>(w));
  }
  void end_row() { indptr.push_back(static_cast<std::int64_t>(indices.size())); }
  kernels::CsrMatrix<NodeId, float> take(const kernels::Resources& res, std::int64_t cols) {
    const auto nnz = static_cast<std::int64_t>(indices.size());
    return {Tensor<std::int64_t>::from_host(res, indptr),
            Tensor<NodeId>::from_host(res, indices, nnz, 1),
            Tensor<float>::from_host(res, values, nnz, 1), cols, false};
  }
};

}  // namespace

HaloExchange::HaloExchange(const kernels::Resources& res, const partition::Part& part,
                           nn::GraphPreparation graph, bool overlap, Comm& comm)
    : m_comm(comm),
      m_graph(graph),
      m_overlap(overlap),
      m_recv_offsets(part.recv_offsets),
      m_send_offsets(part.send_offsets) {
  HALO_EXPECTS(
      m_comm.memory_device() == kernels::Device::Cpu || m_comm.memory_device() == res.device(),
      "halo exchange: a device-memory communicator (NCCL) needs a CUDA Resources");
  m_staged = res.device() != m_comm.memory_device();
  HALO_EXPECTS(part.ids.num_parts() == comm.size() && part.rank() == comm.rank(),
               "distributed training: rank " + std::to_string(comm.rank()) + " of " +
                   std::to_string(comm.size()) + " got part " + std::to_string(part.rank()) +
                   " of a partition into " + std::to_string(part.ids.num_parts()) +
                   " parts (run one rank per part)");
  const std::int64_t owned = part.num_owned();
  const bool gcn = graph == nn::GraphPreparation::Symmetric;
  const bool attention = graph == nn::GraphPreparation::SelfLoops;
  const bool loops = gcn || attention;  // S + I
  const std::int64_t* ip = part.graph.indptr.data();
  const NodeId* ix = part.graph.indices.data();
  const std::int64_t* degree = part.degrees.data();
  // GCN: D̂^-1/2 (S + I) D̂^-1/2 with d̂ = degree + 1, the self-loop where a sorted row puts it;
  // SAGE: 1 / degree; attention: S + I, weight 1. Owned columns are ascending within a row
  // (owned local ids follow the original order the rows are stored in). Attention also keeps
  // the whole row over [owned; halo] columns (local ids as the part stores them): local_graph.
  Builder own, remote, local;
  for (std::int64_t r = 0; r < owned; ++r) {
    const auto d_r = static_cast<double>(degree[r] + (gcn ? 1 : 0));
    const double self_w = gcn ? kernels::gcn_weight(d_r, d_r) : 1.0;
    bool self_done = !loops;
    for (std::int64_t e = ip[r]; e < ip[r + 1]; ++e) {
      const NodeId c = ix[e];
      if (c < owned && !self_done && c > r) {
        own.add(static_cast<NodeId>(r), self_w);
        if (attention) local.add(static_cast<NodeId>(r), 1.0);
        self_done = true;
      }
      const double w = gcn         ? kernels::gcn_weight(d_r, static_cast<double>(degree[c] + 1))
                       : attention ? 1.0
                                   : 1.0 / d_r;
      if (c < owned)
        own.add(c, w);
      else
        remote.add(static_cast<NodeId>(c - owned), w);
      if (attention) local.add(c, 1.0);
    }
    if (!self_done) {
      own.add(static_cast<NodeId>(r), self_w);
      if (attention) local.add(static_cast<NodeId>(r), 1.0);
    }
    own.end_row();
    remote.end_row();
    if (attention) local.end_row();
  }
  // The blocks are built on the host, then moved to res's device.
  const kernels::Resources host = host_resources(res);
  m_own = own.take(host, owned);
  // D̂^-1/2 (S + I) D̂^-1/2 and S + I restricted to owned x owned are symmetric (S is).
  m_own.symmetric = loops;
  if (!loops) m_own_t = transpose(host, m_own);
  m_halo = remote.take(host, part.num_halo());
  m_halo_t = transpose(host, m_halo);
  if (attention) {
    m_local = local.take(host, owned + part.num_halo());
    if (!part.ids.identity()) {  // the global ids of [owned; halo]: attention dropout masks
      const NodeId* original = part.ids.original_ids().data;
      m_column_ids = Tensor<NodeId>::from_host(
          res, std::vector<NodeId>(original, original + owned + part.num_halo()));
    }
  }
  m_send_rows = part.send_rows.copy_to(res, res.device());
  for (Csr* a : {&m_own, &m_own_t, &m_halo, &m_halo_t, &m_local})
    if (res.device() != kernels::Device::Cpu) *a = a->copy_to(res, res.device());
}

kernels::CsrView<NodeId, float> HaloExchange::local_graph() const {
  HALO_EXPECTS(m_graph == nn::GraphPreparation::SelfLoops,
               "halo exchange: the local graph is prepared for attention (self_loops) only; this "
               "one was prepared " +
                   nn::to_string(m_graph));
  return m_local.view();
}

void HaloExchange::exchange_rows(const kernels::Resources& res, kernels::MatrixView<float> x) {
  HALO_EXPECTS(x.rows == num_owned() + num_halo(),
               "halo exchange: exchange_rows needs one row per owned and halo node");
  const std::int64_t w = x.cols;
  const double start = now();
  const auto send = scratch(res, m_send_buf, m_send_rows.numel(), w);
  kernels::gather_rows<kernels::NodeId, float>(
      res, kernels::ConstMatrixView<float>{x.data, num_owned(), w}, m_send_rows.span(), send);
  post(res, Direction::Forward, w, send.data, x.data + num_owned() * w);  // halo rows in place
  posted(start);
  finish(res);
}

void HaloExchange::reduce_rows(const kernels::Resources& res, kernels::MatrixView<float> dx) {
  HALO_EXPECTS(dx.rows == num_owned() + num_halo(),
               "halo exchange: reduce_rows needs one row per owned and halo node");
  const std::int64_t w = dx.cols;
  const auto recv = scratch(res, m_recv_buf, m_send_rows.numel(), w);
  const double start = now();
  post(res, Direction::Backward, w, dx.data + num_owned() * w, recv.data);
  posted(start);
  finish(res);
  if (m_send_rows.numel() > 0)
    kernels::scatter_add_rows<kernels::NodeId, float>(
        res, recv, m_send_rows.span(), kernels::MatrixView<float>{dx.data, num_owned(), w});
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
  const auto& out = d == Direction::Forward ? m_send_offsets : m_recv_offsets;
  const auto& in = d == Direction::Forward ? m_recv_offsets : m_send_offsets;
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
  bool pending = !m_requests.empty() && overlaps_on_host();
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
    m_window_mpi += after - t;
    if (done) {
      m_stats.exchange_s += after - m_posted_at;
      pending = false;
      m_posted_at = -1;  // completion already counted
    }
  }
}

void HaloExchange::finish(const kernels::Resources& res) {
  const double t = now();
  if (m_window_from >= 0)  // the owned product since posting, outside the MPI calls
    m_stats.overlap_window_s += t - m_window_from - m_window_mpi;
  m_window_from = -1;
  if (m_posted_at >= 0) {  // else completed at the post or seen complete by test_all
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
  // With overlap, what runs from here to finish() is the window the messages can hide behind.
  m_window_from = in_flight && overlaps_on_host() ? t : -1;
  m_window_mpi = 0;
}

void HaloExchange::check(kernels::Aggregate aggregate, kernels::ConstMatrixView<float> in,
                         kernels::MatrixView<float> out) const {
  HALO_EXPECTS(
      aggregate == (nn::sums(m_graph) ? kernels::Aggregate::Sum : kernels::Aggregate::Mean),
      "halo exchange: prepared for another aggregation (" + nn::to_string(m_graph) + ")");
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
  local_product(res, nn::sums(m_graph) ? m_own : m_own_t, dy, out);
  finish(res);
  if (m_send_rows.numel() > 0)
    kernels::scatter_add_rows<kernels::NodeId, float>(res, recv, m_send_rows.span(), out);
}

}  // namespace halo::runtime

namespace halo::runtime {

HeteroHaloExchange::HeteroHaloExchange(const kernels::Resources& res,
                                       const partition::HeteroPartLayout& layout, Comm& comm)
    : m_comm(comm), m_layout(layout) {
  HALO_EXPECTS(
      !layout.num_owned.empty() && layout.num_parts == comm.size() && layout.rank == comm.rank(),
      "HeteroHaloExchange: the part is not this rank's (" + std::to_string(layout.num_parts) +
          " parts, rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
          ")");
  // Rows move through host memory: a part that exchanges none (one process) runs anywhere.
  bool moves = false;
  for (std::size_t t = 0; t < layout.num_owned.size(); ++t)
    moves = moves || layout.send_offsets[t].back() > 0 || layout.recv_offsets[t].back() > 0;
  HALO_EXPECTS(!moves || (res.device() == kernels::Device::Cpu &&
                          comm.memory_device() == kernels::Device::Cpu),
               "HeteroHaloExchange: heterogeneous partitions train on the CPU (host tensors and "
               "a host-memory communicator)");
  m_send.resize(layout.num_owned.size());
  m_recv.resize(layout.num_owned.size());
}

void HeteroHaloExchange::check(std::span<Tensor<float>> x) const {
  HALO_EXPECTS(x.size() == m_layout.num_owned.size(),
               "HeteroHaloExchange: one tensor per node type");
  for (std::size_t t = 0; t < x.size(); ++t)
    HALO_EXPECTS(x[t].rows() == m_layout.original[t].numel(),
                 "HeteroHaloExchange: type " + std::to_string(t) + " needs " +
                     std::to_string(m_layout.original[t].numel()) + " rows (owned and halo), got " +
                     std::to_string(x[t].rows()));
}

void HeteroHaloExchange::gather(const kernels::Resources& res, std::span<Tensor<float>> x) {
  (void)res;
  check(x);
  const double start = now();
  const auto p = static_cast<std::size_t>(m_layout.num_parts);
  m_requests.clear();
  for (std::size_t t = 0; t < x.size(); ++t) {
    const std::int64_t w = x[t].cols();
    const auto& so = m_layout.send_offsets[t];
    const NodeId* rows = m_layout.send_rows[t].data();
    m_send[t].resize(static_cast<std::size_t>(so[p] * w));
    for (std::int64_t s = 0; s < so[p]; ++s)
      std::copy_n(x[t].data() + static_cast<std::int64_t>(rows[s]) * w, w,
                  m_send[t].data() + s * w);
    const std::int64_t owned = m_layout.num_owned[t];
    const auto& ro = m_layout.recv_offsets[t];
    for (std::size_t j = 0; j < p; ++j) {
      const int peer = static_cast<int>(j), tag = static_cast<int>(t);
      if (ro[j + 1] > ro[j])
        m_requests.push_back(m_comm.irecv(x[t].data() + (owned + ro[j]) * w,
                                          static_cast<std::size_t>((ro[j + 1] - ro[j]) * w) * 4,
                                          peer, tag));
      if (so[j + 1] > so[j]) {
        const auto bytes = static_cast<std::size_t>((so[j + 1] - so[j]) * w) * 4;
        m_requests.push_back(m_comm.isend(m_send[t].data() + so[j] * w, bytes, peer, tag));
        m_stats.bytes_sent += static_cast<std::int64_t>(bytes);
      }
    }
  }
  m_comm.wait_all(m_requests);
  m_stats.exchange_s += now() - start;
  m_stats.exposed_s += now() - start;
}

void HeteroHaloExchange::scatter_add(const kernels::Resources& res, std::span<Tensor<float>> dx) {
  (void)res;
  check(dx);
  const double start = now();
  const auto p = static_cast<std::size_t>(m_layout.num_parts);
  m_requests.clear();
  for (std::size_t t = 0; t < dx.size(); ++t) {
    const std::int64_t w = dx[t].cols(), owned = m_layout.num_owned[t];
    const auto& so = m_layout.send_offsets[t];
    const auto& ro = m_layout.recv_offsets[t];
    m_recv[t].resize(static_cast<std::size_t>(so[p] * w));
    for (std::size_t j = 0; j < p; ++j) {
      const int peer = static_cast<int>(j), tag = static_cast<int>(t);
      if (so[j + 1] > so[j])
        m_requests.push_back(m_comm.irecv(m_recv[t].data() + so[j] * w,
                                          static_cast<std::size_t>((so[j + 1] - so[j]) * w) * 4,
                                          peer, tag));
      if (ro[j + 1] > ro[j]) {
        const auto bytes = static_cast<std::size_t>((ro[j + 1] - ro[j]) * w) * 4;
        m_requests.push_back(m_comm.isend(dx[t].data() + (owned + ro[j]) * w, bytes, peer, tag));
        m_stats.bytes_sent += static_cast<std::int64_t>(bytes);
      }
    }
  }
  m_comm.wait_all(m_requests);
  // In peer order, so that the sums are the same on every run.
  for (std::size_t t = 0; t < dx.size(); ++t) {
    const std::int64_t w = dx[t].cols();
    const NodeId* rows = m_layout.send_rows[t].data();
    for (std::int64_t s = 0; s < m_layout.send_offsets[t][p]; ++s) {
      float* to = dx[t].data() + static_cast<std::int64_t>(rows[s]) * w;
      const float* from = m_recv[t].data() + s * w;
      for (std::int64_t c = 0; c < w; ++c) to[c] += from[c];
    }
  }
  m_stats.exchange_s += now() - start;
  m_stats.exposed_s += now() - start;
}

std::size_t HaloExchange::bytes() const {
  std::size_t total = m_column_ids.bytes() + m_send_rows.bytes() + m_send_buf.capacity_bytes() +
                      m_recv_buf.capacity_bytes();
  for (const Csr* a : {&m_own, &m_own_t, &m_halo, &m_halo_t, &m_local})
    total += a->indptr.bytes() + a->indices.bytes() + a->values.bytes();
  return total;
}

}  // namespace halo::runtime
