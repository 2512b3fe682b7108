#pragma once
// Full-graph training with one partition per rank: the same model as one process computes.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include <halo/nn/optimizer.hpp>
#include <halo/partition/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/halo_exchange.hpp>
#include <halo/runtime/minibatch.hpp>
#include <halo/runtime/trainer.hpp>

namespace halo::runtime {

/// Sums every parameter's gradient and `loss` over the ranks of `comm` in one all-reduce
/// (through `scratch`, kept by the caller so that it is allocated once); the gradients are
/// overwritten with the sums. Returns the summed loss. Host gradients and a host-memory comm.
double allreduce_gradients(Comm& comm, const std::vector<nn::Parameter<float>*>& params,
                           double loss, std::vector<float>& scratch);

/// allreduce_gradients' scratch for gradients on any device: the flat vector of every gradient
/// and the loss, on the device and (when the comm takes host memory) on the host.
struct GradientScratch {
  kernels::Tensor<float> device;
  std::vector<float> host;
};
/// The same for gradients on res's device: packed into one flat tensor on the device, summed
/// there when comm.memory_device() is res's device (NcclComm), else through the host (MpiComm
/// with CUDA gradients: device -> host, all-reduce, host -> device). Returns (synchronising
/// res's stream) once the summed loss is on the host; the gradients are summed in stream order.
double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           GradientScratch& scratch);

/// Rank comm.rank()'s side of distributed full-graph training on `part` (part comm.rank() of a
/// partition into comm.size() parts). Every layer aggregates through a HaloExchange; the loss is
/// normalised by the number of training nodes of all ranks, so the weight gradients all-reduced
/// (summed) over the ranks are those of one process; every rank then takes the same Adam step.
/// Dropout masks are keyed by the nodes' original ids and parameters initialised from the
/// seed, so the run computes what train_full_graph computes on the unpartitioned dataset, up to
/// the order of floating-point sums. Keeps references to its arguments.
///
/// On a CUDA `res` the part's features, labels and splits are uploaded once, the model (built on
/// res) computes on the device, and the halo rows and gradients travel over `data_comm`
/// (an NcclComm from make_nccl_comm(comm, res): device to device), or, when it is null, over
/// `comm` through page-locked host staging. `comm` (host memory, MPI) carries the set-up and the
/// evaluation counters. `part` stays on the host.
class DistributedTrainer final : public EpochTrainer {
 public:
  DistributedTrainer(const kernels::Resources& res, Comm& comm, const partition::Part& part,
                     const TrainConfig& config, nn::Model<float>& model, bool overlap,
                     Comm* data_comm = nullptr);
  double train_epoch(std::uint64_t epoch) override;
  Evaluation evaluate() override;
  void add_comm_stats(EpochStats& s) override;
  double preprocess_time_s() const override { return m_preprocess_time_s; }

 private:
  nn::Context context(bool training, std::uint64_t epoch) const;
  nn::Adjacency<float> graph();

  const kernels::Resources& m_res;
  Comm& m_comm;       // host memory: set-up, counters
  Comm& m_data_comm;  // gradients (and, through m_exchange, halo rows)
  TrainConfig m_config;
  nn::Model<float>& m_model;
  double m_preprocess_time_s = 0;  // set while m_exchange is built: declared before it
  HaloExchange m_exchange;
  kernels::FeatureMatrix<float> m_features;
  // The part's per-node arrays on res's device (copies on the host too: they are small).
  kernels::Tensor<kernels::NodeId> m_original_ids, m_train_idx, m_val_idx, m_test_idx;
  kernels::Tensor<std::int32_t> m_labels;
  nn::Adam<float> m_optimizer;
  kernels::Tensor<float> m_dlogits;
  GradientScratch m_flat;                                       // allreduce_gradients' scratch
  std::int64_t m_num_train = 0, m_num_val = 0, m_num_test = 0;  // over all ranks
  double m_allreduce_s = 0;
};

/// How train_distributed trains: full graph (overlap or not), or mini-batches
/// (DistributedMiniBatchTrainer) when `mini_batch` is set.
struct DistributedOptions {
  bool overlap = true;
  std::optional<MiniBatchConfig> mini_batch;
};

/// Trains on the partition in `dir` with one rank per part (collective over `comm`): reads part
/// comm.rank() only, builds the model from the partition's sizes, runs config.epochs and leaves
/// the best validation epoch's parameters in the returned model. Throws halo::IoError when the
/// partition has not comm.size() parts or a part file is missing or corrupt.
///
/// With a CUDA `res` (one GPU per rank, see local_cuda_device()), `comm` bootstraps an NcclComm
/// (make_nccl_comm) that carries the halo rows and the gradients device to device, while `comm`
/// keeps the host traffic (set-up, counters, the mini-batch sampling and feature requests);
/// without NCCL in the build the device traffic is staged through host memory over `comm`.
struct DistributedRun {
  nn::Model<float> model;
  TrainResult result;
};
DistributedRun train_distributed(const kernels::Resources& res, Comm& comm,
                                 const std::filesystem::path& dir, const TrainConfig& config,
                                 const DistributedOptions& options,
                                 const EpochCallback& on_epoch = {});

}  // namespace halo::runtime
