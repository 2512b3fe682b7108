#pragma once
// Mini-batch training in one process: sampled blocks, prepared ahead on a background thread (CPU)
// or in stream order on the GPU.

#include <cstdint>
#include <memory>
#include <vector>

#include <halo/nn/optimizer.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::runtime {

struct MiniBatchConfig {
  /// Seeds (training nodes) per batch; the last batch of an epoch may be smaller.
  std::int64_t batch_size = 1024;
  /// One fan-out per layer, input layer first (sampler::SamplerConfig); -1 takes every
  /// neighbour.
  std::vector<int> fanouts = {25, 10};
  /// Sample neighbours with replacement.
  bool replace = false;
  /// Batches sampled and gathered ahead of the one being computed, on a background thread
  /// (each one its own sampler and buffers); 0 does everything on the training thread.
  int prefetch = 1;
  /// Distributed runs only: MiB of feature rows of the highest-degree remote nodes each rank
  /// keeps, fetched once (0: none).
  double cache_mb = 0;
};

/// `ids` in the order of an epoch's batches: sorted by a key drawn per (seed, epoch, node id)
/// (ties by id). Every process computes the same order for the same ids.
std::vector<kernels::NodeId> shuffled_seeds(std::uint64_t seed, std::uint64_t epoch,
                                            std::vector<kernels::NodeId> ids);

/// GraphSAGE-style training: every epoch shuffles the training nodes (keyed by seed and epoch),
/// cuts them into batches, samples each batch's blocks (sampler::NeighborSampler on the
/// symmetric graph without self-loops), gathers the input nodes' features and the seeds' labels,
/// and takes one Adam step per batch. With prefetch > 0 a producer thread (one OpenMP thread)
/// prepares batch i + 1 .. i + prefetch while batch i computes. Dropout masks are keyed by
/// (seed, epoch and batch, layer, global node id). SAGE layers take the mean over the sampled
/// neighbours; GCN layers get each block with a self-loop per destination and weights that
/// estimate the full graph's normalised row without bias ((d_i / s_i) / sqrt(d̂_i d̂_j) for s_i
/// of d_i neighbours sampled, 1 / d̂_i for the self-loop; exact when every neighbour is taken).
/// Evaluation is a full-graph forward pass, which equals full-neighbour blocks for every node.
/// On a CUDA `res` (`model` built on it) the graph is prepared on the host, the features,
/// labels and splits are uploaded once, the sampler works on its device copy of the graph, and
/// every batch is sampled, gathered and normalised on res's stream (no producer thread:
/// `prefetch` does not apply; one sampler). The shuffled seeds are computed on the host and
/// uploaded once per epoch. Keeps references to `data` and `model`.
class MiniBatchTrainer final : public EpochTrainer {
 public:
  MiniBatchTrainer(const kernels::Resources& res, const datasets::Dataset& data,
                   const TrainConfig& config, const MiniBatchConfig& mb, nn::Model<float>& model);
  ~MiniBatchTrainer() override;
  MiniBatchTrainer(const MiniBatchTrainer&) = delete;
  MiniBatchTrainer& operator=(const MiniBatchTrainer&) = delete;

  /// One pass over the shuffled training nodes; returns the mean loss over them.
  double train_epoch(std::uint64_t epoch) override;
  Evaluation evaluate() override;

  std::int64_t batches_per_epoch() const;
  /// Bytes every sampler allocated up front (one per pipeline slot), summed.
  std::size_t sampler_envelope_bytes() const;
  /// The most bytes one batch used in its sampler, over all batches so far.
  std::size_t sampler_peak_bytes() const;
  double preprocess_time_s() const override { return m_preprocess_time_s; }
  /// On a device: the times per batch of the last epoch that the host waited for the device
  /// (the sampler's read-back of block sizes, the gathered sparse features' entry count; the
  /// loss is summed on the device and read once per epoch); 0 on the CPU, where nothing waits
  /// for a device.
  double host_syncs_per_batch() const { return m_host_syncs_per_batch; }

 private:
  struct Slot;
  void prepare(Slot& slot, std::int64_t batch, std::uint64_t epoch);
  double compute(Slot& slot, std::int64_t batch, std::uint64_t epoch);

  bool on_device() const { return m_res.device() != kernels::Device::Cpu; }
  /// Where batches are prepared: the producer thread's Resources on the CPU, res on a device.
  const kernels::Resources& prepare_res() const { return on_device() ? m_res : m_producer_res; }

  const kernels::Resources& m_res;
  const kernels::Resources m_producer_res;  // one thread: the pipeline's sampling and gathers
  const datasets::Dataset& m_data;
  TrainConfig m_config;
  MiniBatchConfig m_mb;
  nn::Model<float>& m_model;
  double m_preprocess_time_s = 0;  // set while m_full is built: declared before it
  std::int64_t m_host_syncs = 0;   // this epoch's, on a device
  double m_host_syncs_per_batch = 0;
  /// The sampled graph (plain, symmetric; always on the host: the sampler's source) and the
  /// prepared features (on res's device).
  FullGraphInputs m_full;
  Targets m_targets;  // labels and splits on res's device
  /// Evaluation graph on res's device: GCN's Â; SAGE on a device: m_full.graph's copy (empty
  /// for SAGE on the CPU, which evaluates on m_full.graph).
  kernels::CsrMatrix<kernels::NodeId, float> m_eval_graph;
  kernels::Tensor<std::int64_t> m_degree_indptr;  // GCN on a device: m_full.graph's indptr
  std::vector<std::unique_ptr<Slot>> m_slots;
  std::vector<kernels::NodeId> m_order;        // this epoch's seeds
  kernels::Tensor<kernels::NodeId> m_order_d;  // the same on a device (empty on the CPU)
  kernels::Tensor<float> m_loss_total;         // a device epoch's summed loss (empty on the CPU)
  kernels::Tensor<kernels::NodeId> m_iota;     // 0 .. batch size - 1: the loss rows
  nn::Adam<float> m_optimizer;
  kernels::Tensor<float> m_dlogits;
};

}  // namespace halo::runtime
