#pragma once
// Link prediction on temporal graphs (EvolveGCN's task): its configuration, data, model and
// ranking metrics. The Trainer's LinkPrediction task (runtime/tasks/link/link_prediction.cpp)
// trains on them.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/csr.hpp>
#include <halo/nn/evolvegcn.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/engine/trainer.hpp>
#include <halo/runtime/tasks/link/link_config.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>

namespace halo::runtime {

/// The steps of each split, as [begin, end) of the step index: train begins at the window.
struct LinkSplit {
  std::int64_t train_begin = 0, train_end = 0, val_end = 0, test_end = 0;
};

/// The split of `num_steps` steps under `config`; halo::LogicError unless the training steps
/// outnumber the window and the test split is not empty.
LinkSplit link_split(std::int64_t num_steps, const LinkPredictionConfig& config);

/// Why `num_steps` steps cannot be split under `config` (the window leaves no training step,
/// or no test step is left), in the words of halo train's flags; empty when they can. What
/// link_split throws as halo::LogicError, for a caller that checks before reading data.
std::string link_split_problem(std::int64_t num_steps, const LinkPredictionConfig& config);

/// The temporal data a link-prediction run trains on, prepared once: a rank's rows of every
/// snapshot (step) t of the events cut by `snapshots` (one process: the one part, every node,
/// over a SelfComm), where over every node of the run
///   - exchange[t]: the GCN matrix D^-1/2 (A + I) D^-1/2 of the snapshot made symmetric, over
///     the rows the rank owns at t, as a HaloExchange (its halo rows from their owners);
///   - degree_bucket[t][r]: owned row r's one-hot input column, min(degree, cap) with the
///     degree its neighbour count in that symmetric snapshot and cap the largest such degree
///     over the snapshots training reads, over every rank (so that no validation or test step
///     has a column training never saw), at most datasets::kMaxDegreeBucket;
///   - owned[t]: the nodes the rank owns at t, ascending (the rows of degree_bucket[t], of
///     exchange[t] and of the embeddings after a window ending at t); owner[t][v]: the owner
///     of every node v (one process: all 0);
///   - active[t]: the nodes with a neighbour in that snapshot, ascending;
///   - targets[t]: the distinct pairs (u, v), u != v, of the events in step t's own span, in
///     both directions (EvolveGCN adds each event's reverse), sorted: what predicting step t
///     means (also under cumulative snapshots);
///   - traffic[t], degree_bytes[t]: what moving the snapshot to this rank cost (its rows'
///     deltas and migrations, distribute_snapshots; the halo degrees, temporal_step_part).
/// active and targets are the same on every rank (every rank reads the events). num_features
/// = cap + 1.
struct TemporalShard {
  std::string dataset;
  /// The training share the degree cap was taken for (LinkPredictionConfig::train_fraction of
  /// the run that trains on it; the Trainer checks they agree).
  double train_fraction = 0;
  std::int64_t num_nodes = 0;
  std::int64_t num_events = 0;
  std::int64_t num_features = 0;
  datasets::SnapshotConfig snapshots;
  std::vector<std::unique_ptr<HaloExchange>> exchange;
  std::vector<std::vector<std::int32_t>> degree_bucket;
  std::vector<std::vector<kernels::NodeId>> owned;
  std::vector<std::vector<std::int32_t>> owner;
  std::vector<std::vector<kernels::NodeId>> active;
  std::vector<std::vector<datasets::TemporalEdge>> targets;
  std::vector<SnapshotTraffic> traffic;
  std::vector<std::int64_t> degree_bytes;
  Comm* comm = nullptr;
  std::unique_ptr<Comm> own_comm;  // one process: the shard's SelfComm
  std::int64_t num_steps() const { return static_cast<std::int64_t>(degree_bucket.size()); }
};

/// `g` cut by `snapshots` and prepared as TemporalShard describes, in one process (the
/// one-part case of distributed_temporal_shard, over its own SelfComm), for training on the
/// first round(train_fraction T) steps (the run's LinkPredictionConfig::train_fraction): the
/// cap is taken over the snapshots training reads, the first round(train_fraction T) - 1 (at
/// least one; every snapshot when train_fraction >= 1, for a caller that only inspects
/// snapshots). Host.
TemporalShard local_temporal_shard(const kernels::Resources& res, const datasets::TemporalGraph& g,
                                   const datasets::SnapshotConfig& snapshots,
                                   double train_fraction);

/// This rank's part of `g` cut by `snapshots` (collective over `comm`, every rank with the same
/// arguments), prepared as TemporalShard describes: the rank's rows of every snapshot are moved
/// to it as distribute_snapshots moves them under `owner` (owner[t][v] for every step t and
/// node v, e.g. read_snapshot_owners), and per step it keeps the GCN matrix over the rows it
/// owns as a HaloExchange (GCN normalisation with the halo's degrees from their owners).
/// Every rank reads the events themselves (`g`): the targets and the active nodes of every
/// step, what the pairs are drawn from, are the same on every rank. Host; `comm` must outlive
/// the shard.
TemporalShard distributed_temporal_shard(const kernels::Resources& res,
                                         const datasets::TemporalGraph& g,
                                         const datasets::SnapshotConfig& snapshots,
                                         const std::vector<std::vector<std::int32_t>>& owner,
                                         Comm& comm, double train_fraction);

/// Draws of one negative before it is given up (sample_negatives).
inline constexpr std::uint64_t kNegativeDraws = 8;

/// Appends up to `count` training negatives of a step to (src, dst), EvolveGCN's "smart"
/// sampling: u the source of a positive drawn uniformly (sources as frequent as among the
/// positives), v drawn uniformly from `pool` (the nodes active in the window's snapshots, once
/// per snapshot; [0, num_nodes) when empty), the pair redrawn while u == v or (u, v) is a
/// positive (`positives` sorted, not empty); a negative whose kNegativeDraws draws were all
/// rejected is left out, so no appended pair is a self pair or a positive (a step whose pool
/// holds few other nodes gets fewer negatives; the loss weighs those it has). Counter-based
/// from `key`: the same pairs for the same key.
void sample_negatives(std::span<const datasets::TemporalEdge> positives,
                      std::span<const kernels::NodeId> pool, std::int64_t num_nodes,
                      std::uint64_t key, std::uint64_t count, std::vector<kernels::NodeId>& src,
                      std::vector<kernels::NodeId>& dst);

/// What a link-prediction run trains: the temporal encoder and the pair scorer.
struct LinkModel {
  nn::TemporalModel<float> encoder;
  nn::PairScorer<float> scorer;
};

/// The task (docs/dynamic.md): one step per training snapshot (the encoder over its window, the
/// scorer on its pairs and sampled negatives, the class-weighted loss, Adam); scores "val_mrr"
/// and "val_map" after every epoch (one of them selects the kept epoch:
/// LinkPredictionConfig::select_by), and with the kept parameters "test_mrr", "test_map",
/// "test_auc" (Task::finish). One process or a rank's part of the snapshots
/// (distributed_temporal_shard), CPU; checkpoints stop and resume between two snapshots.
std::unique_ptr<Task> link_prediction(const kernels::Resources& res, TemporalShard& shard,
                                      const TrainConfig& config, LinkModel& model);

/// A trained link-prediction model and what its run measured.
struct LinkTrainRun {
  LinkModel model;
  TrainResult result;
};

/// Builds config.link's model for `shard` (its input width: the degree buckets of the data)
/// and trains it; the model keeps the kept epoch's parameters. Collective over shard.comm.
LinkTrainRun train(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                   const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});

/// What a trained model gives on `shard`: its scores (the validation MRR and MAP, the test MRR,
/// MAP and AUC, as training reports them) and per test step with pairs to predict (step, MRR,
/// MAP, AUC).
struct LinkPredictionResult {
  Metrics metrics;
  std::vector<std::array<double, 4>> test_steps;
};
LinkPredictionResult predict_link(const kernels::Resources& res, TemporalShard& shard,
                                  const TrainConfig& config, LinkModel& model);

/// Every node's embedding (num_nodes x hidden, node id order, host) after the encoder's window
/// before step `step` (config.link.window <= step <= the shard's steps; the last gives the
/// representation after the whole series, what predicts the step after it): what the scorer
/// reads. On a rank's part, collective, and every rank gets every row.
kernels::Tensor<float> embed_link(const kernels::Resources& res, TemporalShard& shard,
                                  const TrainConfig& config, LinkModel& model, std::int64_t step);

/// Writes `model`, trained with `config` on `shard`, to `path` as a model file of task "link":
/// the encoder's kind and widths, the scorer's width, the task's configuration (window, split,
/// negatives, class weights, selection), the snapshots and the events file's `columns`
/// (datasets::parse_temporal_layout's text), the dataset's name and `result`'s record; the
/// encoder's and scorer's parameters by name.
void save_link_model(const kernels::Resources& res, const std::filesystem::path& path,
                     LinkModel& model, const TrainConfig& config, const TemporalShard& shard,
                     const std::string& columns, const TrainResult& result);

/// A saved link-prediction model and what it needs to be applied again.
struct LinkModelFile {
  LinkModel model;
  TrainConfig config;
  std::string dataset;
  datasets::SnapshotConfig snapshots;
  std::string columns;
};

/// Reads a model save_link_model wrote. halo::IoError naming `path` for another task's model, a
/// damaged file or arrays that do not fit the architecture.
LinkModelFile load_link_model(const kernels::Resources& res, const std::filesystem::path& path);

// ---- metrics (EvolveGCN's protocol, docs/dynamic.md) -------------------------------------------
// Every candidate is a (score, positive) entry; a tie between scores is broken neither way:
// an entry tied with k others takes the mean of the ranks they span.

/// Mean over the positive entries of 1 / rank, rank = 1 + (entries scored higher) + (other
/// entries scored equal) / 2 (one source node's row: EvolveGCN's MRR averages this over the
/// rows with a positive). NaN without positives.
double mean_reciprocal_rank(std::span<const float> scores, std::span<const std::int8_t> positive);

/// Average precision (scikit-learn's average_precision_score): sum over the distinct scores s,
/// highest first, of (recall at s - recall at the previous score) * precision at s, where
/// entries scored >= s count as predicted. NaN without positives.
double average_precision(std::span<const float> scores, std::span<const std::int8_t> positive);

/// The area under the ROC curve: the probability that a positive entry scores above a negative
/// one, ties counting 1/2 (Mann-Whitney). NaN without positives or without negatives.
double roc_auc(std::span<const float> scores, std::span<const std::int8_t> positive);

/// average_precision and roc_auc of entries too many to keep (every ordered pair of nodes),
/// in memory for the positives only: add_positive for every positive entry, freeze(), then
/// add_negative for every negative entry; average_precision() and roc_auc() then give those
/// functions' values over the entries (the functions stream their entries through it). A
/// negative costs O(log distinct positive scores). halo::LogicError for calls out of that
/// order.
class RankingCounts {
 public:
  void add_positive(float score);
  void freeze();
  void add_negative(float score);
  double average_precision() const;
  double roc_auc() const;

 private:
  bool m_frozen = false;
  std::vector<float> m_positives;
  std::vector<float> m_level;  // the positives' distinct scores, descending
  /// Per level: the positives at it; the negatives first reaching it (scored >= it and below
  /// the level before); of those, the ones equal to it.
  std::vector<double> m_pos_at, m_neg_at, m_neg_equal;
  std::int64_t m_negatives = 0;
};

}  // namespace halo::runtime
