#pragma once
// Mini-batch training with one partition per rank: each rank trains its share of every batch,
// its frontiers sampled by the owners of the nodes, its input features fetched from them.

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/nn/optimizer.hpp>
#include <halo/partition/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/distributed.hpp>
#include <halo/runtime/minibatch.hpp>

namespace halo::runtime {

/// One block of a rank's batch, in host vectors (the layout of sampler::Block: destinations
/// are the first sources; src_ids are original node ids).
struct HostBlock {
  std::vector<std::int64_t> indptr;
  std::vector<kernels::NodeId> indices;
  std::vector<kernels::NodeId> src_ids;
  std::int64_t num_dst() const { return static_cast<std::int64_t>(indptr.size()) - 1; }
  std::int64_t num_src() const { return static_cast<std::int64_t>(src_ids.size()); }
};

/// GraphSAGE mini-batch training over `comm` (rank r holds part r). Every rank shuffles the
/// training nodes of the whole graph the way MiniBatchTrainer does (same seed, same epoch
/// keys) and takes, of every batch, the seeds it owns. Sampling goes hop by hop: the frontier
/// is grouped by owner and sent to the owners (all-to-all), which draw from their rows of
/// A ∪ Aᵀ (ordered by original id, as in one process) with sampler::hop_key and the node's
/// original id, so a rank's blocks equal what one NeighborSampler draws for its seeds. Input
/// features come from their owners (all-to-all); the loss is divided by the whole batch's size
/// and the gradients summed over the ranks, so every step is the one-process step.
/// Batch i + 1 is sampled and its feature rows sent (point to point) before batch i computes,
/// so the rows travel meanwhile. With mb.cache_mb > 0 the rows of the highest-degree remote
/// nodes that fit are fetched once and served locally. Evaluation is DistributedTrainer's
/// full-graph pass (halo exchange). SAGE only; mb.prefetch does not apply.
///
/// On a CUDA `res` the sampling and the feature rows stay on the host and travel over `comm`
/// (MPI); each batch's blocks and input features are assembled in page-locked host memory and
/// copied to the device asynchronously (one copy for the blocks, one for the features), where
/// the model computes; the gradients are summed over `data_comm` (an NcclComm) when given,
/// else staged through the host over `comm`.
class DistributedMiniBatchTrainer final : public EpochTrainer {
 public:
  DistributedMiniBatchTrainer(const kernels::Resources& res, Comm& comm,
                              const partition::Part& part, const TrainConfig& config,
                              const MiniBatchConfig& mb, nn::Model<float>& model,
                              Comm* data_comm = nullptr);
  double train_epoch(std::uint64_t epoch) override;
  Evaluation evaluate() override;
  void add_comm_stats(EpochStats& s) override;
  /// The preparation of the full-graph evaluation set-up (graph, exchange, features).
  double preprocess_time_s() const override { return m_full.preprocess_time_s(); }

  std::int64_t batches_per_epoch() const;
  /// Shuffles for `epoch` (collective-free) and returns this rank's seeds of batch `batch`, in
  /// the order of the whole batch.
  std::vector<kernels::NodeId> seeds(std::uint64_t epoch, std::int64_t batch);
  /// The blocks of `seeds` (this rank's share of (epoch, batch)), input layer first.
  /// Collective: every rank calls it for the same (epoch, batch).
  std::vector<HostBlock> sample(const std::vector<kernels::NodeId>& seeds, std::uint64_t epoch,
                                std::int64_t batch);

 private:
  /// A batch sampled, its feature rows in flight.
  struct Pending {
    std::int64_t batch = 0;
    std::vector<kernels::NodeId> seeds;
    std::vector<HostBlock> blocks;
    std::vector<std::vector<float>> replies;  // rows this rank sends, kept until sent
    std::vector<float> recv;                  // rows asked from each owner, in owner order
    std::vector<std::int64_t> recv_offsets;
    std::vector<Request> requests;
  };
  HostBlock sample_hop(const std::vector<kernels::NodeId>& frontier, std::uint64_t key, int fanout);
  /// Samples batch (collective), exchanges the ids of the input rows it needs and posts the
  /// rows' transfers.
  Pending prepare(std::uint64_t epoch, std::int64_t batch);
  /// Waits for the rows and assembles the input features (owned, cached, received) on res's
  /// device (through m_stage on a GPU).
  const kernels::FeatureMatrix<float>& finish(Pending& b);
  /// The layers' view of `blocks` on res's device: the host vectors themselves on the CPU, else
  /// one asynchronous copy of all of them from m_stage_blocks into m_blocks.
  std::vector<nn::Adjacency<float>> upload(const std::vector<HostBlock>& blocks);
  const float* owned_row(kernels::NodeId original) const;
  /// Fetches the rows of the highest-degree remote nodes that fit `budget_bytes`, once.
  void fill_cache(std::int64_t budget_bytes);
  int owner(kernels::NodeId original) const;
  std::int64_t local(kernels::NodeId original) const;

  const kernels::Resources& m_res;
  Comm& m_comm;       // host memory: sampling, feature rows
  Comm& m_data_comm;  // gradients
  const partition::Part& m_part;
  TrainConfig m_config;
  MiniBatchConfig m_mb;
  nn::Model<float>& m_model;
  DistributedTrainer m_full;                          // evaluation
  std::vector<kernels::NodeId> m_old_to_new;          // original id -> partition id, every node
  kernels::CsrMatrix<kernels::NodeId, float> m_rows;  // owned rows, original ids, ascending
  std::vector<float> m_dense;  // owned features, dense and prepared (row-normalised if sparse)
  std::int64_t m_num_features = 0;
  std::vector<kernels::NodeId> m_train;  // every training node (original ids), ascending
  std::uint64_t m_order_epoch = ~std::uint64_t{0};
  std::vector<kernels::NodeId> m_order;
  nn::Adam<float> m_optimizer;
  kernels::Tensor<float> m_dlogits;
  kernels::FeatureMatrix<float> m_x;  // a batch's input rows (dense), storage kept across batches
  kernels::Tensor<kernels::NodeId> m_iota;  // 0 .. batch size - 1: the loss rows
  GradientScratch m_flat;
  kernels::PinnedBuffer m_stage, m_stage_blocks;  // a batch's features and blocks (GPU runs)
  kernels::Buffer m_blocks;                       // the blocks on the device
  std::int64_t m_bytes = 0;  // sampling and feature traffic sent by this rank this epoch
  std::unordered_map<kernels::NodeId, std::size_t> m_cache;  // remote node -> row in m_cache_rows
  std::vector<float> m_cache_rows;
};

}  // namespace halo::runtime
