#pragma once
// A rank's share of the training graph and the exchange of halo rows between ranks.

#include <cstdint>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/csr.hpp>
#include <halo/nn/hetero.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/module.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

/// What the exchanges of one rank did since the last reset. Times are wall seconds.
struct ExchangeStats {
  std::int64_t bytes_sent = 0;  // payload of every message this rank sent
  /// From the start of packing the rows to send until the rank saw every message complete.
  double exchange_s = 0;
  /// The part of exchange_s the rank spent not computing: packing, posting, waiting.
  double exposed_s = 0;
  /// With overlap, from posting an exchange whose messages are in flight to waiting for them,
  /// outside MPI calls: the owned rows' product, the work the transfer can hide behind
  /// (exchange_s - exposed_s <= overlap_window_s).
  double overlap_window_s = 0;
};

/// The full-graph aggregation of one part, as an nn::Propagation over the part's owned rows:
/// the halo rows a layer needs are received from their owners while the edges whose source is
/// owned are aggregated. For a one-part partition (one process) there is nothing to exchange
/// and it is the plain product.
///
/// Construction is local (no collective): the part's training graph (partition::Part::graph,
/// S's owned rows) is prepared as `graph` says (nn::GraphPreparation): Symmetric,
/// D̂^-1/2 (S + I) D̂^-1/2 with the degrees the part stores for its halo too
/// (kernels::gcn_weight); Mean, S with weights 1 / degree (the mean as a weighted sum);
/// SelfLoops, S + I with weight 1, kept whole for local_graph() as well. It is split
/// into the owned block (columns = owned nodes) and the halo block (columns = halo nodes, grouped
/// by owner); the part's send and receive lists say which rows travel to and from whom.
///
/// forward(x): packs the rows peers need, posts the receives and sends, aggregates the owned
/// block in row chunks (testing the requests between chunks so that MPI makes progress), waits,
/// then adds the halo block's product. backward mirrors it: the halo block's adjoint product is
/// sent to the owners first, the owned block's adjoint computed meanwhile, and what arrives is
/// added to the rows it belongs to. With `overlap` false the same messages are sent, but the
/// rank waits for them before computing.
///
/// Devices: the blocks and send lists live on res's device and the layer's rows are gathered
/// there (`part` stays on the host; it is read during construction only). The rows travel over
/// `comm`. When comm.memory_device() is res's device (CPU + MpiComm, CUDA + NcclComm) they go
/// straight from and into the tensors; when res is CUDA and comm takes host memory, they are
/// staged through page-locked host buffers (device -> host copy and a stream synchronisation
/// before posting, host -> device copy on res's stream after the wait). A CPU res with a
/// device-memory comm is refused (halo::LogicError), as is a comm whose size and rank are not
/// the part's.
class HaloExchange final : public nn::Propagation<float> {
 public:
  HaloExchange(const kernels::Resources& res, const partition::Part& part,
               nn::GraphPreparation graph, bool overlap, Comm& comm);

  void forward(const kernels::Resources& res, kernels::Aggregate aggregate,
               kernels::ConstMatrixView<float> x, kernels::MatrixView<float> out) override;
  void backward(const kernels::Resources& res, kernels::Aggregate aggregate,
                kernels::ConstMatrixView<float> dy, kernels::MatrixView<float> out) override;

  /// Attention (GraphPreparation::SelfLoops only, LogicError otherwise): S + I's owned rows over
  /// the [owned; halo] columns (the part's local ids), unweighted.
  kernels::CsrView<kernels::NodeId, float> local_graph() const override;
  /// The original ids of the owned and halo nodes (empty for one part: the identity).
  kernels::Span<const kernels::NodeId> column_ids() const override { return m_column_ids.span(); }
  /// x's halo rows (after its num_owned owned rows) received from their owners, whose rows
  /// this part's send lists name are sent to the peers (the forward messages, without overlap).
  void exchange_rows(const kernels::Resources& res, kernels::MatrixView<float> x) override;
  /// dx's halo rows sent back to their owners, which add them to the owned rows they sent.
  void reduce_rows(const kernels::Resources& res, kernels::MatrixView<float> dx) override;

  /// The layers' view of this graph: num_owned x num_owned, sources keyed by `source_ids` (the
  /// owned nodes' original ids, for dropout masks equal to one process's; empty when they are
  /// 0 .. num_owned - 1).
  nn::Adjacency<float> adjacency(kernels::Span<const kernels::NodeId> source_ids = {}) {
    nn::Adjacency<float> a(num_owned(), num_owned(), *this);
    a.source_ids = source_ids;
    return a;
  }
  std::int64_t num_owned() const { return m_own.num_rows(); }
  std::int64_t num_halo() const { return m_halo.num_cols; }
  /// The stored entries of the owned rows (over owned and halo columns, self-loops included).
  std::int64_t num_entries() const { return m_own.num_edges() + m_halo.num_edges(); }
  /// The owned block: the owned rows over the owned columns (local ids; for one part, the
  /// whole prepared graph), on res's device.
  kernels::CsrView<kernels::NodeId, float> owned_block() const { return m_own.view(); }

  const ExchangeStats& stats() const { return m_stats; }
  /// Bytes of its prepared graphs (owned and halo blocks, their transposes), id lists and
  /// message buffers: the full-graph adjacency the plan's "adjacency" item predicts.
  std::size_t bytes() const;
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
  /// Overlap on a host communicator: the owned product runs in chunks while messages travel
  /// (a device communicator queues its transfers on the stream instead).
  bool overlaps_on_host() const {
    return m_overlap && m_comm.memory_device() == kernels::Device::Cpu;
  }
  /// Waits for the requests (the wait counts as exposed), then, when staged, queues the copy of
  /// the received rows to the device on res's stream.
  void finish(const kernels::Resources& res);
  static kernels::MatrixView<float> scratch(const kernels::Resources& res,
                                            kernels::Tensor<float>& t, std::int64_t rows,
                                            std::int64_t cols);

  Comm& m_comm;           // carries the rows
  bool m_staged = false;  // rows on a CUDA device, m_comm takes host memory
  nn::GraphPreparation m_graph;
  bool m_overlap;
  Csr m_own, m_own_t, m_halo, m_halo_t;           // m_own_t empty when m_own is symmetric (GCN)
  Csr m_local;                                    // attention: owned x (owned + halo), S + I
  kernels::Tensor<kernels::NodeId> m_column_ids;  // attention on P > 1 parts: original ids
  std::vector<std::int64_t> m_recv_offsets;       // halo positions per owner (Part::recv_offsets)
  std::vector<std::int64_t> m_send_offsets;
  kernels::Tensor<kernels::NodeId> m_send_rows;    // owned local ids, concatenated per peer
  kernels::Tensor<float> m_send_buf, m_recv_buf;   // message buffers, grown to the widest layer
  kernels::PinnedBuffer m_send_host, m_recv_host;  // staging (m_staged), grown as needed
  float* m_unstage_to = nullptr;  // where finish() copies m_recv_host, and how many bytes
  std::size_t m_unstage_bytes = 0;
  std::vector<Request> m_requests;
  double m_posted_at = 0;     // when the last post ended; -1 once test_all saw completion
  double m_window_from = -1;  // overlap: when the window of the exchange in flight opened
  double m_window_mpi = 0;    // time in MPI calls since then (not part of the window)
  ExchangeStats m_stats;
};

/// The halo exchange of a heterogeneous part (partition::HeteroPartLayout), per node type: the
/// model's HeteroHalo. gather sends every owned row a peer's halo holds and receives the halo
/// rows, all types' messages posted before one wait (tag: the type); scatter_add sends the halo
/// rows' gradients back to their owners, which add them to the rows they sent. Host tensors and
/// a host-memory comm where rows move (halo::LogicError otherwise; the one part of one process
/// moves none and runs on any device); construction is local.
class HeteroHaloExchange final : public nn::HeteroHalo<float> {
 public:
  HeteroHaloExchange(const kernels::Resources& res, const partition::HeteroPartLayout& layout,
                     Comm& comm);
  void gather(const kernels::Resources& res, std::span<kernels::Tensor<float>> x) override;
  void scatter_add(const kernels::Resources& res, std::span<kernels::Tensor<float>> dx) override;
  const ExchangeStats& stats() const { return m_stats; }
  void reset_stats() { m_stats = {}; }

 private:
  /// Type t's rows, `width` floats each: checks the shape every process must agree on.
  void check(std::span<kernels::Tensor<float>> x) const;

  Comm& m_comm;
  const partition::HeteroPartLayout& m_layout;
  std::vector<std::vector<float>> m_send, m_recv;  // per type, grown to the widest layer
  std::vector<Request> m_requests;
  ExchangeStats m_stats;
};

}  // namespace halo::runtime
