#pragma once
// A rank's share of the training graph and the exchange of halo rows between ranks.

#include <cstdint>
#include <utility>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/csr.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/module.hpp>
#include <halo/partition/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

/// What the exchanges of one rank did since the last reset. Times are wall seconds.
struct ExchangeStats {
  std::int64_t bytes_sent = 0;  // payload of every message this rank sent
  /// From the start of packing the rows to send until the rank saw every message complete.
  double exchange_s = 0;
  /// The part of exchange_s the rank spent not computing: packing, posting, waiting.
  double exposed_s = 0;
};

/// A ∪ Aᵀ restricted to the owned rows of `part` (this rank's part), without self-loops or
/// duplicates: sorted (owned local row, global partition id of the neighbour) pairs. The
/// reverse of an edge stored by another part arrives from that part (collective: every rank
/// calls it with its part).
std::vector<std::pair<std::int64_t, kernels::NodeId>> symmetric_owned_edges(
    Comm& comm, const partition::Part& part);

/// The aggregation of a partitioned graph for one rank, as an nn::Propagation over the rank's
/// owned rows: the halo rows a layer needs are received from their owners while the edges
/// whose source is owned are aggregated.
///
/// Construction (collective: every rank of `comm` constructs one, each with its own part)
/// builds the graph the single-process trainer uses, restricted to the owned rows: A ∪ Aᵀ
/// without duplicates (the reverse of an edge stored by another part is sent to the owner of its
/// source), then for GCN D^-1/2 (A + I) D^-1/2 with the global degrees (each halo node's
/// degree comes from its owner) and for SAGE A without self-loops and weights 1 / degree (the
/// mean as a weighted sum). It is split into the owned block (columns = owned nodes) and the halo
/// block (columns = halo nodes in ascending global id, hence grouped by owner); each rank learns
/// from the others which of its rows they need (the send lists).
///
/// forward(x): packs the rows peers need, posts the receives and sends, aggregates the owned
/// block in row chunks (testing the requests between chunks so that MPI makes progress), waits,
/// then adds the halo block's product. backward mirrors it: the halo block's adjoint product is
/// sent to the owners first, the owned block's adjoint computed meanwhile, and what arrives is
/// added to the rows it belongs to. With `overlap` false the same messages are sent, but the
/// rank waits for them before computing.
///
/// Devices: the blocks and send lists live on res's device and the layer's rows are
/// gathered there (`part` stays on the host; it is read during construction only). `comm`
/// (host memory, e.g. MpiComm) carries the set-up; the rows travel over `data_comm` (default:
/// `comm`). When data_comm's memory_device() is res's device (CPU + MpiComm, CUDA + NcclComm)
/// the rows go straight from and into the tensors; when res is CUDA and data_comm takes host
/// memory, they are staged through page-locked host buffers (device -> host copy and a stream
/// synchronisation before posting, host -> device copy on res's stream after the wait). A CPU
/// res with a device-memory data_comm is refused (halo::LogicError).
class HaloExchange final : public nn::Propagation<float> {
 public:
  HaloExchange(const kernels::Resources& res, Comm& comm, const partition::Part& part,
               nn::ModelKind kind, bool overlap, Comm* data_comm = nullptr);

  void forward(const kernels::Resources& res, kernels::Aggregate aggregate,
               kernels::ConstMatrixView<float> x, kernels::MatrixView<float> out) override;
  void backward(const kernels::Resources& res, kernels::Aggregate aggregate,
                kernels::ConstMatrixView<float> dy, kernels::MatrixView<float> out) override;

  /// The layers' view of this graph: num_owned x num_owned, sources keyed by `source_ids` (the
  /// owned nodes' original ids, for dropout masks equal to one process's).
  nn::Adjacency<float> adjacency(kernels::Span<const kernels::NodeId> source_ids) {
    nn::Adjacency<float> a(num_owned(), num_owned(), *this);
    a.source_ids = source_ids;
    return a;
  }
  std::int64_t num_owned() const { return m_own.num_rows(); }
  std::int64_t num_halo() const { return m_halo.num_cols; }

  const ExchangeStats& stats() const { return m_stats; }
  void reset_stats() { m_stats = {}; }

 private:
  using Csr = kernels::CsrMatrix<kernels::NodeId, float>;
  enum class Direction { Forward, Backward };
  /// Posts the transfers of `send` (rows on res's device) into `recv`; stages through host
  /// memory when m_staged.
  void post(const kernels::Resources& res, Direction d, std::int64_t width, const float* send,
            float* recv);
  void local_product(const kernels::Resources& res, const Csr& a, kernels::ConstMatrixView<float> x,
                     kernels::MatrixView<float> out);
  /// The layer's aggregate must be the one this exchange was built for; shapes must match.
  void check(kernels::Aggregate aggregate, kernels::ConstMatrixView<float> in,
             kernels::MatrixView<float> out) const;
  void posted(double start);  // after post(): counts packing and posting as exposed
  /// Waits for the requests (the wait counts as exposed), then, when staged, queues the copy of
  /// the received rows to the device on res's stream.
  void finish(const kernels::Resources& res);
  static kernels::MatrixView<float> scratch(const kernels::Resources& res,
                                            kernels::Tensor<float>& t, std::int64_t rows,
                                            std::int64_t cols);

  Comm& m_comm;           // carries the rows (data_comm)
  bool m_staged = false;  // rows on a CUDA device, m_comm takes host memory
  nn::ModelKind m_kind;
  bool m_overlap;
  Csr m_own, m_own_t, m_halo, m_halo_t;  // m_own_t empty when m_own is symmetric (GCN)
  std::vector<std::int64_t> m_halo_offsets;
  std::vector<std::int64_t> m_send_offsets;
  kernels::Tensor<kernels::NodeId> m_send_rows;    // owned local ids, concatenated per peer
  kernels::Tensor<float> m_send_buf, m_recv_buf;   // message buffers, grown to the widest layer
  kernels::PinnedBuffer m_send_host, m_recv_host;  // staging (m_staged), grown as needed
  float* m_unstage_to = nullptr;  // where finish() copies m_recv_host, and how many bytes
  std::size_t m_unstage_bytes = 0;
  std::vector<Request> m_requests;
  double m_posted_at = 0;  // when the last post ended; -1 once test_all saw completion
  ExchangeStats m_stats;
};

}  // namespace halo::runtime
