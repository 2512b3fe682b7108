#pragma once
// The one Trainer: every mode (full graph or sampled mini-batches, one process or one rank per
// part, CPU or GPU) is a choice of its parts, and runtime::train is its entry point.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/optimizer.hpp>
#include <halo/partition/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/checkpoint_types.hpp>
#include <halo/runtime/engine/profile.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>

namespace halo::runtime {

/// Which remote rows a rank's feature cache keeps (mini-batch runs with several ranks). The
/// candidates are the part's halo: the remote neighbours a batch is most likely to need.
enum class CachePolicy {
  Degree,  ///< the halo nodes of highest degree, fetched before the first epoch
  Access,  ///< the halo nodes the first epoch fetched most often, fetched after it
};

/// "degree" / "access"; parse_cache_policy throws halo::LogicError naming the accepted values.
std::string to_string(CachePolicy p);
CachePolicy parse_cache_policy(const std::string& s);

/// MiniBatchConfig::prefetch: a producer thread where it has a core of its own.
inline constexpr int kAutoPrefetch = -1;

/// What --prefetch auto applies on one rank: 1 where the rank's training threads and a producer
/// thread fit in the cores it may use (its own CPUs, `affinity_cpus`, and no more than its share
/// of the machine's `machine_cpus` with `ranks_on_machine` ranks on it), else 0. A producer that
/// shares cores with the training threads (and with other ranks') costs more than it hides:
/// bench/results/cluster, docs/performance.md.
int auto_prefetch(int threads, int affinity_cpus, int machine_cpus, int ranks_on_machine);

/// Mini-batch training: what a batch is and how batches are prepared.
struct MiniBatchConfig {
  /// Seeds (training nodes) per batch, over all ranks; the last batch of an epoch may be
  /// smaller.
  std::int64_t batch_size = 1024;
  /// One fan-out per layer, input layer first (sampler::SamplerConfig); -1 takes every
  /// neighbour.
  std::vector<int> fanouts = {25, 10};
  /// The heterogeneous task: fan-outs per layer and relation, input layer first
  /// (sampler::parse_hetero_fanouts); empty: `fanouts[l]` for every relation.
  std::vector<std::vector<int>> relation_fanouts = {};
  /// Sample neighbours with replacement.
  bool replace = false;
  /// Batches sampled and gathered ahead of the one being computed, by a producer thread (each
  /// one its own sampler and buffers); 0 prepares each batch on the training thread;
  /// kAutoPrefetch (the default): 1 where every rank's producer thread has a core of its own,
  /// else 0 (auto_prefetch). On a device batches are prepared in stream order (0 is used).
  int prefetch = kAutoPrefetch;
  /// MiB of remote feature rows each rank keeps (several ranks only; 0: none).
  double cache_mb = 0;
  CachePolicy cache_policy = CachePolicy::Degree;
  /// Train at most this many batches an epoch (0: all), a timed sample of an epoch too long to
  /// run whole: the epoch's first batches of its order; its loss averages them.
  std::int64_t max_batches = 0;
};

/// Batches an epoch of `seeds` training nodes takes under `mb`: ceil(seeds / batch_size),
/// at most mb.max_batches when that is set (the sampled batch sources, the heterogeneous task
/// and halo plan count alike).
std::int64_t epoch_batches(const MiniBatchConfig& mb, std::int64_t seeds);

/// Everything a run is, apart from its data: the model, the optimizer, the mode.
struct TrainConfig {
  nn::ModelConfig model;  // in_features and num_classes are taken from the data
  int epochs = 200;
  double lr = 0.01;
  double weight_decay = 5e-4;
  std::uint64_t seed = 0;
  /// Divide each row of sparse (bag-of-words) features by its L1 norm, as Kipf & Welling do for
  /// Cora; dense features (embeddings, the synthetic generator's) are used as given.
  bool normalize_features = true;
  /// Set: mini-batch training on sampled blocks; unset: full-graph training.
  std::optional<MiniBatchConfig> mini_batch;
  /// Full graph with several ranks: aggregate owned rows while the halo rows travel (false:
  /// wait for them first, for comparison).
  bool overlap = true;
  /// Checkpoints, resume and preemption (runtime/engine/checkpoint.hpp); off unless checkpoint.dir
  /// is set.
  CheckpointConfig checkpoint;
  /// The heterogeneous task's model (layer kind, layers, widths, dropout, R-GCN bases); the
  /// task reads it instead of `model`.
  nn::HeteroModelConfig hetero;
  /// The link-prediction task (temporal graphs): its encoder, scorer, window, split, sampling.
  LinkPredictionConfig link;
  /// Time the phases of every step and the kernels they call (EpochStats::profile); on a
  /// device this waits for it after every phase and kernel. Node classification only.
  bool profile = false;
};

/// halo::LogicError naming the field unless `config` is valid for a run of `ranks` ranks:
/// epochs >= 1, checkpoint.every >= 0 and checkpoint.keep >= 1, finite positive lr, finite
/// non-negative weight decay, dropout in [0, 1), batch size >= 1, one fan-out >= -1 per layer,
/// prefetch in [0, 16] or kAutoPrefetch, a finite cache size >= 0 (and 0 with one rank, where no
/// row is remote), overlap left on in mini-batch mode.
void check_config(const TrainConfig& config, int ranks);

/// What one epoch measured. Accuracies and losses come from an evaluation pass (no dropout)
/// after the epoch's updates, except train_loss, which is the mean loss the updates were
/// computed from.
struct EpochStats {
  int epoch = 0;  // 1-based
  int epochs = 0;
  double train_loss = 0;
  double train_accuracy = 0;
  double val_loss = 0;
  double val_accuracy = 0;
  double test_accuracy = 0;
  /// The heterogeneous task: Macro-F1 and Micro-F1 (class_counts, f1_scores); NaN otherwise.
  double val_macro_f1 = std::numeric_limits<double>::quiet_NaN();
  double test_macro_f1 = std::numeric_limits<double>::quiet_NaN();
  double test_micro_f1 = std::numeric_limits<double>::quiet_NaN();
  /// The link-prediction task: the validation MRR and MAP (NaN otherwise).
  double val_mrr = std::numeric_limits<double>::quiet_NaN();
  double val_map = std::numeric_limits<double>::quiet_NaN();
  double epoch_time_s = 0;  // the training step(s): forward, loss, backward, optimizer
  /// The heterogeneous task: the HGNN stages of the training step(s) (zero otherwise).
  nn::HeteroStageTimes stages;
  /// The heterogeneous task in mini-batch: edges sampled per relation this epoch (empty
  /// otherwise).
  std::vector<std::int64_t> sampled_edges;
  // Communication of several ranks (zero in one process). Bytes over all ranks, times the mean
  // over ranks.
  std::int64_t exchange_bytes = 0;  // full graph: halo rows sent
  double exchange_time_s = 0;       // packing until the messages completed
  double exchange_exposed_s = 0;    // the part of it not hidden behind computation
  double exchange_window_s = 0;     // the owned rows' products it could hide behind (overlap)
  double allreduce_time_s = 0;      // the gradient all-reduce
  // Mini-batch runs.
  std::int64_t sampling_bytes = 0;  // frontier requests and sampled neighbours sent
  std::int64_t feature_bytes = 0;   // remote feature rows received
  std::int64_t remote_rows = 0;     // input rows owned by another rank
  std::int64_t cache_hits = 0;      // of those, served by the cache
  double fetch_time_s = 0;          // spent fetching remote rows (per rank, mean)
  double batch_wait_s = 0;          // the training thread waiting for prepared batches
  std::int64_t host_syncs = 0;      // device runs: times the host waited for the device
  /// TrainConfig::profile: where the epoch's time went, on this rank.
  EpochProfile profile;
};

/// The result of a run.
struct TrainResult {
  /// The epoch whose parameters the model keeps: highest validation accuracy (ties: lower
  /// validation loss); the last epoch when there are no validation nodes.
  int best_epoch = 0;
  /// At best_epoch; NaN when there are no validation nodes.
  double val_accuracy = 0;
  double test_accuracy = 0;
  /// At best_epoch, the heterogeneous task only (NaN otherwise).
  double val_macro_f1 = std::numeric_limits<double>::quiet_NaN();
  double test_macro_f1 = std::numeric_limits<double>::quiet_NaN();
  double test_micro_f1 = std::numeric_limits<double>::quiet_NaN();
  /// The link-prediction task (NaN otherwise): the validation MRR and MAP of best_epoch (one of
  /// them selects it: LinkPredictionConfig::select_by), and the test metrics of its parameters,
  /// computed once after training.
  double val_mrr = std::numeric_limits<double>::quiet_NaN();
  double val_map = std::numeric_limits<double>::quiet_NaN();
  double test_mrr = std::numeric_limits<double>::quiet_NaN();
  double test_map = std::numeric_limits<double>::quiet_NaN();
  double test_auc = std::numeric_limits<double>::quiet_NaN();
  double final_train_loss = 0;
  double preprocess_time_s = 0;  // graph normalisation, feature preparation, set-up
  double train_time_s = 0;       // all epochs, evaluation included
  double epoch_time_median_s = 0;
  int world_size = 1;
  /// Medians over the epochs of the EpochStats fields of the same names.
  std::int64_t exchange_bytes_per_epoch = 0;
  double exchange_time_s = 0;
  double exchange_exposed_s = 0;
  /// The owned rows' aggregation of the layers whose exchange was in flight (overlap on): what
  /// the exchange can hide behind, so exchange - exposed <= this.
  double exchange_window_s = 0;
  /// Epoch time minus the exposed exchange and the all-reduce: the rank's own work.
  double compute_time_s = 0;
  /// 1 - exposed / exchange time over all epochs: the share of the exchange hidden behind the
  /// aggregation of owned rows (0 without overlap or without exchange).
  double exchange_hidden_fraction = 0;
  double allreduce_time_s = 0;
  /// Mini-batch runs.
  std::int64_t batches_per_epoch = 0;
  int prefetch = 0;  // batches prepared ahead, as applied (--prefetch auto resolved; 0 on a device)
  std::size_t sampler_envelope_bytes = 0;  // allocated once, every pipeline slot
  std::size_t sampler_peak_bytes = 0;      // the most one batch used
  double host_syncs_per_batch = 0;
  std::int64_t sampling_bytes_per_epoch = 0;
  std::int64_t feature_bytes_per_epoch = 0;
  /// cache hits / remote rows over all epochs (0 without remote rows).
  double cache_hit_rate = 0;
  double fetch_time_s = 0;  // median per epoch
  double batch_wait_s = 0;  // median per epoch: fetch and sampling time not hidden
  /// The heterogeneous task: the median per epoch of each HGNN stage.
  nn::HeteroStageTimes stages;
  /// TrainConfig::profile: the median of every field of EpochStats::profile.
  EpochProfile profile;
  /// Every epoch completed, the ones before a resume included.
  std::vector<EpochStats> history;
  /// Checkpoints (TrainConfig::checkpoint.dir set): the one the run resumed from (empty: a
  /// fresh start), the last one it wrote, whether a signal stopped it (then it has not run all
  /// its epochs and the model holds the best epoch so far), and the step-boundary reductions of
  /// the preemption flag (count, total seconds on this rank).
  std::string resumed_from;
  std::string checkpoint;
  bool preempted = false;
  std::int64_t preemption_checks = 0;
  double preemption_check_s = 0;
};

using EpochCallback = std::function<void(const EpochStats&)>;

/// One rank's part of the training graph and the communicator of the ranks: what a Trainer
/// trains on. One process is the one-part case over a SelfComm.
struct Shard {
  /// The Trainer takes the part's features (FeatureStore): a shard trains once.
  partition::Part part;
  std::int64_t num_features = 0;
  std::int64_t num_edges = 0;  // stored entries of the input graph (before symmetrisation)
  Comm* comm = nullptr;
  std::unique_ptr<Comm> own_comm;  // when the shard made its communicator (local_shard)
  std::string dataset;
  /// What a checkpoint of a run on this shard must match: "partition meta.json fnv1a64 0x..."
  /// (open_shard), or "dataset NAME fnv1a64 0x..." over the graph, labels and splits and the
  /// feature width (local_shard).
  std::string identity;
};

/// The whole of `ds` as the one part of a one-part partition, over a SelfComm. Moves `ds`'s
/// features, labels and splits (partition::make_local_part). Host tensors.
Shard local_shard(const kernels::Resources& res, datasets::Dataset&& ds);

/// Part comm.rank() of the partition in `dir`, checked against the other ranks: one all-reduce
/// that fails on every rank unless all opened the same meta.json (its checksum). Collective.
/// halo::IoError when the partition has not comm.size() parts or a part is missing or damaged.
Shard open_shard(const kernels::Resources& res, Comm& comm, const std::filesystem::path& dir);

/// A heterogeneous dataset as one process trains on it (the heterogeneous task, full graph), or
/// one part of a heterogeneous partition (open_hetero_shard): `graph` then holds the part's
/// local rows (partition::HeteroPart) and `layout` its owned counts and exchange lists.
struct HeteroShard {
  datasets::HeteroGraph graph;
  partition::HeteroPartLayout layout;  // empty in one process
  Comm* comm = nullptr;
  std::unique_ptr<Comm> own_comm;
  std::string dataset;
  /// What a checkpoint of a run on this shard must match, as Shard::identity (over the types,
  /// relations, labels and splits in one process).
  std::string identity;
};

/// `g` over a SelfComm.
HeteroShard local_hetero_shard(datasets::HeteroGraph&& g);

/// Part comm.rank() of the heterogeneous partition in `dir`, checked as open_shard does (one
/// all-reduce of meta.json's checksum). Collective. halo::IoError for a homogeneous partition,
/// a wrong number of ranks, or a missing or damaged part.
HeteroShard open_hetero_shard(const kernels::Resources& res, Comm& comm,
                              const std::filesystem::path& dir);

/// What a HeteroModel needs to know about `g`: types, node counts, feature widths (0 for the
/// featureless types, which get embeddings), relations, target type and classes.
nn::HeteroSchema hetero_schema(const datasets::HeteroGraph& g);

/// Per class c of `num_classes`: counts[3c] true positives, counts[3c + 1] false positives,
/// counts[3c + 2] false negatives of the predictions `pred` (one class per row) over `rows`
/// against `labels`. Host memory. Sums over processes add up (all-reduce them).
std::vector<double> class_counts(std::span<const std::int32_t> pred,
                                 std::span<const std::int32_t> labels,
                                 std::span<const kernels::NodeId> rows, std::int32_t num_classes);

/// Macro-F1 (the unweighted mean over the classes present in the labels or the predictions
/// of 2 tp / (2 tp + fp + fn), scikit-learn's `f1_score(average="macro")`) and Micro-F1 (the
/// same ratio over the summed counts: the accuracy, when every row has one label and one
/// prediction), from class_counts. NaN for both without rows.
struct F1Scores {
  double macro = 0, micro = 0;
};
F1Scores f1_scores(std::span<const double> counts);

/// A CPU Resources with res's thread count: where host-only steps (datasets::, preprocessing,
/// set-up) of a run on res's device take place.
kernels::Resources host_resources(const kernels::Resources& res);

/// A copy of `features` on res's device, sparse rows divided by their L1 norm when `normalize`
/// (dense ones are used as given): what the first layer reads.
kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize);

/// The model `config.model` describes for data of `in_features` and `num_classes`.
nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config);

struct TrainState;

/// Trains `model` on `shard` with the parts `config` chooses:
///   - graph: the shard's HaloExchange (a local product in one process);
///   - batches: the full graph, or sampled blocks (FullGraphBatches / SampledBatches);
///   - features: a FeatureStore of the owned rows (and remote ones, cached or fetched);
///   - task: node classification (mean NLL over the batch's seeds, accuracy per split);
///   - sync: none in one process, the gradients summed over the ranks otherwise;
///   - optimizer: Adam (PyTorch semantics).
/// Every rank computes what one process computes on the whole graph, up to the order of
/// floating-point sums: the loss of a step is divided by its seeds over all ranks, dropout and
/// sampling are keyed by original node ids. Collective over shard.comm for P > 1. Keeps
/// references to its arguments. On a CUDA `res` (model built on it) the data are uploaded once
/// and the steps run on the device; the gradients travel over NCCL when the build has it.
///
/// `model` is any nn::Network: the built-in nn::Model, or one composed from Halo's layers
/// (examples/custom_model.cpp). Its shape() decides the graph (GCN-normalised or plain) and the
/// layers a mini-batch samples; config.model's kind, layers and widths are then not used.
class Trainer {
 public:
  Trainer(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
          nn::Network<float>& model);
  /// The heterogeneous node-classification task: `model` on the full graph of `shard` or on
  /// sampled typed blocks (config.mini_batch; CPU), in one process or across the ranks of a
  /// partition (each rank its seeds of every global batch, the relations' rows and the input
  /// features fetched from their owners), mean NLL over the training nodes of the target type,
  /// accuracy, Macro-F1 and Micro-F1 per split, Adam on the dense parameters and SparseAdam
  /// (nn::SparseAdam, no weight decay) on the embeddings of the featureless types, the HGNN stages
  /// timed per epoch. Sparse features are row-normalised as config.normalize_features says.
  /// Checkpoints as for node classification: the parameters, the embeddings, both optimizers'
  /// moments and step counts; mini-batch epochs stop and resume between batches.
  Trainer(const kernels::Resources& res, HeteroShard& shard, const TrainConfig& config,
          nn::HeteroModel<float>& model);
  /// The link-prediction task (runtime/tasks/link/link_prediction.hpp, docs/dynamic.md): one step
  /// per training snapshot (the encoder over its window, the scorer on its pairs and sampled
  /// negatives, the class-weighted loss, Adam), the validation MRR after every epoch, the test
  /// MRR, MAP and AUC of the kept epoch in TrainResult. One process, CPU, no checkpoints.
  Trainer(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
          LinkModel& model);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Called after every optimizer step with the 0-based batch index of the epoch.
  using StepCallback = std::function<void(std::int64_t batch)>;
  /// One epoch of steps; fills s's loss, time and communication fields. halo::Error when the
  /// loss stops being finite (the run diverged). With checkpoints on, the ranks agree after
  /// every step but the last whether to stop (the preemption flag): false when they stopped
  /// early; the next train_epoch of the same epoch, or a run() resumed from the checkpoint,
  /// continues at the next step.
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step = {});
  struct Evaluation {
    double train_accuracy = 0, val_loss = 0, val_accuracy = 0, test_accuracy = 0;
    double val_macro_f1 = std::numeric_limits<double>::quiet_NaN();
    double test_macro_f1 = std::numeric_limits<double>::quiet_NaN();
    double test_micro_f1 = std::numeric_limits<double>::quiet_NaN();
    // Link prediction: the validation MRR and MAP, and the one of them that selects the epoch.
    double val_mrr = std::numeric_limits<double>::quiet_NaN();
    double val_map = std::numeric_limits<double>::quiet_NaN();
    double val_score = std::numeric_limits<double>::quiet_NaN();
  };
  /// A full-graph forward pass without dropout, scored on every split (collective).
  Evaluation evaluate();
  /// config.epochs epochs, each followed by evaluate(); leaves the best epoch's parameters in
  /// the model (see TrainResult::best_epoch). With config.checkpoint.dir: resumes from the
  /// newest complete checkpoint when asked (the epochs it completed are not run again), writes
  /// a checkpoint every config.checkpoint.every epochs and when it ends, and stops early when
  /// the ranks agree that a preemption signal arrived (TrainResult::preempted). A resumed run
  /// computes what an uninterrupted one does (on the CPU, bit for bit).
  TrainResult run(const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});

  std::int64_t batches_per_epoch() const;
  double preprocess_time_s() const;

  /// Where an epoch stopped between two steps continues, with its running sums (a fresh
  /// epoch: step 0, zero sums).
  struct Partial {
    std::uint64_t epoch = 0;
    std::int64_t step = 0;
    double loss_sum = 0;
    std::int64_t loss_rows = 0;
    double allreduce_s = 0;
  };
  /// The task part: what a step trains and an evaluation scores (node classification,
  /// heterogeneous node classification), with the graph, batches, features and optimizers it
  /// composes, and what a checkpoint holds of it. Defined in trainer.cpp.
  class Task;

 private:
  /// Whether the ranks stop here (checkpoints on): the preemption flag reduced over them.
  bool stop_agreed();
  /// The run so far as a checkpoint holds it, and back (best: the best epoch's copies of the
  /// task's state()).
  TrainState capture(const TrainResult& result, std::vector<kernels::Tensor<float>>& best,
                     double best_val_loss, int epochs_done);
  void restore(const TrainState& state, TrainResult& result,
               std::vector<kernels::Tensor<float>>& best, double& best_val_loss);

  const kernels::Resources& m_res;
  Comm* m_comm = nullptr;
  int m_epochs = 0;
  CheckpointConfig m_checkpoint;
  CheckpointIdentity m_identity;  // what this run's checkpoints must match (checkpoints on)
  std::unique_ptr<Task> m_task;
  Partial m_partial;
  std::int64_t m_stop_checks = 0;
  double m_stop_check_s = 0;
};

/// A trained model and what its run measured.
struct TrainRun {
  nn::Model<float> model;
  TrainResult result;
};

/// Builds the model for `shard`, trains it with a Trainer and returns it with the parameters
/// of the best epoch. Collective over shard.comm.
TrainRun train(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
               const EpochCallback& on_epoch = {}, const Trainer::StepCallback& on_step = {});

/// A trained heterogeneous model and what its run measured.
struct HeteroTrainRun {
  nn::HeteroModel<float> model;
  TrainResult result;
};

/// Builds config.hetero's model for `shard` and trains it (the heterogeneous task); the model
/// keeps the best epoch's parameters and embeddings.
HeteroTrainRun train(const kernels::Resources& res, HeteroShard& shard, const TrainConfig& config,
                     const EpochCallback& on_epoch = {}, const Trainer::StepCallback& on_step = {});

/// A trained link-prediction model and what its run measured.
struct LinkTrainRun {
  LinkModel model;
  TrainResult result;
};

/// Builds config.link's model for `shard` (its input width: the degree buckets of the data)
/// and trains it (the link-prediction task); the model keeps the best epoch's parameters.
LinkTrainRun train(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                   const EpochCallback& on_epoch = {}, const Trainer::StepCallback& on_step = {});

/// What a model file records about a run (nn::ModelFileInfo): the dataset, the preprocessing
/// (`config.normalize_features`; `structural_features` as the data were loaded) and, as one
/// JSON object, the training configuration and `result`'s summary (best epoch, accuracies,
/// final loss, ranks). Model::save stores it beside the architecture and parameters.
nn::ModelFileInfo model_file_info(const TrainConfig& config, const TrainResult& result,
                                  const std::string& dataset,
                                  const std::string& structural_features = "");

/// The resident set of this process now (VmRSS), in bytes.
std::int64_t current_host_memory_bytes();

/// The process's peak resident set size so far, in bytes (never below the current one).
std::int64_t peak_host_memory_bytes();

}  // namespace halo::runtime
