#pragma once
// The configuration of a training run: the engine's fields (epochs, checkpoints), the data
// path's (mini-batches, feature cache), the optimizer's, and one section per task (`model`:
// node classification, `hetero`: heterogeneous classification, `link`: link prediction).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <halo/nn/hetero_model.hpp>
#include <halo/nn/model_types.hpp>
#include <halo/runtime/engine/checkpoint_types.hpp>
#include <halo/runtime/tasks/link/link_config.hpp>

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
  /// Node classification's evaluation on sampled neighbourhoods: one fan-out per layer, input
  /// layer first, drawn the same at every evaluation (keyed by the run's seed); the training,
  /// validation and test nodes are scored in batches of batch_size. Empty (the default): the
  /// exact evaluation over every neighbour (layer by layer in one process on the CPU, else the
  /// full-graph pass). For graphs whose hidden representations do not fit on disk (DGL's and
  /// PyG's ogbn-papers100M examples evaluate the same way).
  std::vector<int> eval_fanouts = {};
  /// The sampler envelope's margin (homogeneous batches on the host): the largest blocks of
  /// the first kProbeBatches batches of epoch 0, sampled before the run, times
  /// 1 + envelope_margin, within the sampler's bound; a batch that needs more grows its slot's
  /// buffers a quarter past its need (not per batch). A large margin gives the bound.
  double envelope_margin = 0.25;
};

/// Batches sampled before the run to measure the envelope (MiniBatchConfig::envelope_margin).
inline constexpr std::int64_t kProbeBatches = 16;

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
  /// Bytes the run may hold (0: no limit). One process's mini-batch evaluation
  /// (runtime::LayerwiseInference) keeps its hidden representations in memory when the
  /// features, the graph and they fit under it and they are at most half the data or 512 MiB
  /// (LayerwiseInference::keeps_in_memory), else in a temporary file (spill_dir); the results
  /// are the same either way. A store larger than it opens mapped (tools: --memory-budget).
  std::size_t memory_budget = 0;
  /// Where evaluation spills (empty: std::filesystem::temp_directory_path()).
  std::string spill_dir;
  /// Time the phases of every step and the kernels they call (EpochStats::profile); on a
  /// device this waits for it after every phase and kernel.
  bool profile = false;
};

/// halo::LogicError naming the field unless the shared fields are valid: epochs >= 1,
/// checkpoint.every >= 0, checkpoint.keep >= 1, finite positive lr, finite weight decay >= 0,
/// batch size >= 1, fan-outs >= -1, prefetch in [0, 16] or kAutoPrefetch, a finite cache >= 0
/// (with one rank it holds nothing: no row is remote; an elastic job keeps its flags on any
/// rank count), overlap on in mini-batch mode. A task checks its own section (its model's
/// layers, widths, dropout, one fan-out per layer) where it builds model and batches.
void check_config(const TrainConfig& config);

/// The identity fields every task's checkpoints share (Task::identity): `data` (the shard's
/// identity), the ranks (`ranks` > 0: a task whose state differs between ranks; 0: a task whose
/// every rank holds the same state, so its checkpoints resume on any number of ranks), then
/// `model` (the task's model fields), the optimizer, the seed, the preprocessing and the mode
/// with its batch settings.
CheckpointIdentity config_identity(const TrainConfig& config, const std::string& data, int ranks,
                                   const CheckpointIdentity& model);

/// `v` as text that reads back to the same double ("%.17g"): identity values.
std::string exact_number(double v);

}  // namespace halo::runtime
