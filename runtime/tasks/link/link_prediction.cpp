// The Trainer's link-prediction task (EvolveGCN's set-up on temporal graphs), its data and its
// ranking metrics.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/engine/detail/task_support.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>
#include <halo/runtime/tasks/task_model_file.hpp>

namespace halo::runtime {

using datasets::TemporalEdge;
using kernels::NodeId;
using kernels::Tensor;

namespace {

using detail::Clock;
using detail::seconds_since;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

LinkSelect parse_link_select(const std::string& name) {
  if (name == "map") return LinkSelect::Map;
  if (name == "mrr") return LinkSelect::Mrr;
  throw LogicError("link prediction: unknown selection metric '" + name + "' (map or mrr)");
}

std::string to_string(LinkSelect s) { return s == LinkSelect::Map ? "map" : "mrr"; }

LinkSplit link_split(std::int64_t num_steps, const LinkPredictionConfig& c) {
  HALO_EXPECTS(c.window >= 1, "link prediction: the window must be >= 1 step");
  HALO_EXPECTS(c.negatives >= 1, "link prediction: negatives per positive must be >= 1");
  HALO_EXPECTS(c.positive_weight > 0 && c.negative_weight > 0,
               "link prediction: class weights must be > 0");
  HALO_EXPECTS(std::isfinite(c.train_fraction) && std::isfinite(c.val_fraction) &&
                   c.train_fraction > 0 && c.val_fraction >= 0 &&
                   c.train_fraction + c.val_fraction < 1,
               "link prediction: the split needs train > 0, val >= 0 and train + val < 1");
  if (const std::string problem = link_split_problem(num_steps, c); !problem.empty())
    throw LogicError(problem);
  const auto t = static_cast<double>(num_steps);
  LinkSplit s;
  s.train_begin = c.window;
  s.train_end = std::llround(c.train_fraction * t);
  s.val_end = s.train_end + std::llround(c.val_fraction * t);
  s.test_end = num_steps;
  return s;
}

std::string link_split_problem(std::int64_t num_steps, const LinkPredictionConfig& c) {
  const auto t = static_cast<double>(num_steps);
  const std::int64_t train_end = std::llround(c.train_fraction * t);
  const std::int64_t val_end = train_end + std::llround(c.val_fraction * t);
  if (train_end <= c.window)
    return "--window " + std::to_string(c.window) + ": " + std::to_string(num_steps) +
           " snapshots give " + std::to_string(train_end) +
           " training snapshots, and a training step predicts snapshot t from the --window "
           "before it, so none is left (use more snapshots or a smaller --window)";
  if (val_end >= num_steps)
    return "--link-split: " + std::to_string(num_steps) + " snapshots leave no test snapshot";
  return "";
}

namespace {

/// The snapshots and the parts of a TemporalShard every rank holds whole: the inputs (every
/// node of the run in each), each step's targets and active nodes, and how many leading
/// snapshots training reads.
struct TemporalCommon {
  std::vector<datasets::Snapshot> inputs;
  std::int64_t read_by_training = 0;
};

TemporalCommon temporal_common(const kernels::Resources& res, const datasets::TemporalGraph& g,
                               const datasets::SnapshotConfig& snapshots, double train_fraction,
                               TemporalShard& s) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "temporal shard: prepares host data (a CPU Resources)");
  HALO_EXPECTS(train_fraction > 0, "temporal shard: the training share must be > 0");
  s.dataset = g.name;
  s.train_fraction = train_fraction;
  s.num_nodes = g.num_nodes();
  s.num_events = g.num_events();
  s.snapshots = snapshots;
  TemporalCommon c;
  c.inputs = datasets::make_snapshots(g, snapshots);
  datasets::SnapshotConfig own_span = snapshots;
  own_span.window_snapshots = 1;  // the events of each step's own span
  const std::vector<datasets::Snapshot> spans = datasets::make_snapshots(g, own_span);
  const auto steps = static_cast<std::int64_t>(c.inputs.size());
  c.read_by_training = train_fraction >= 1
                           ? steps
                           : std::max<std::int64_t>(
                                 1, std::llround(train_fraction * static_cast<double>(steps)) - 1);
  std::vector<char> seen(static_cast<std::size_t>(s.num_nodes));
  for (std::int64_t t = 0; t < steps; ++t) {
    auto& in = c.inputs[static_cast<std::size_t>(t)];
    in.num_nodes = s.num_nodes;  // every node of the run, in every step
    // The nodes with a neighbour: the endpoints of the snapshot's pairs.
    std::fill(seen.begin(), seen.end(), 0);
    for (const TemporalEdge& e : in.edges)
      seen[static_cast<std::size_t>(e.src)] = seen[static_cast<std::size_t>(e.dst)] = 1;
    std::vector<NodeId> active;
    for (std::int64_t v = 0; v < s.num_nodes; ++v)
      if (seen[static_cast<std::size_t>(v)] != 0) active.push_back(static_cast<NodeId>(v));
    s.active.push_back(std::move(active));
    std::vector<TemporalEdge> target;
    for (const TemporalEdge& e : spans[static_cast<std::size_t>(t)].edges)
      if (e.src != e.dst) target.push_back(e), target.push_back({e.dst, e.src});
    std::sort(target.begin(), target.end());
    target.erase(std::unique(target.begin(), target.end()), target.end());
    s.targets.push_back(std::move(target));
  }
  return c;
}

/// Caps every bucket at `cap` (the largest degree training reads) and sets num_features.
void cap_buckets(TemporalShard& s, std::int64_t cap) {
  for (auto& degree : s.degree_bucket)
    for (std::int32_t& d : degree) d = std::min(d, static_cast<std::int32_t>(cap));
  s.num_features = cap + 1;
}

}  // namespace

TemporalShard local_temporal_shard(const kernels::Resources& res, const datasets::TemporalGraph& g,
                                   const datasets::SnapshotConfig& snapshots,
                                   double train_fraction) {
  // The one part: every node owned by rank 0 at every step.
  const auto steps = datasets::snapshot_boundaries(g, snapshots).size() - 1;
  const std::vector<std::vector<std::int32_t>> owner(
      steps, std::vector<std::int32_t>(static_cast<std::size_t>(g.num_nodes()), 0));
  auto self = std::make_unique<SelfComm>();
  TemporalShard s = distributed_temporal_shard(res, g, snapshots, owner, *self, train_fraction);
  s.own_comm = std::move(self);
  return s;
}

TemporalShard distributed_temporal_shard(const kernels::Resources& res,
                                         const datasets::TemporalGraph& g,
                                         const datasets::SnapshotConfig& snapshots,
                                         const std::vector<std::vector<std::int32_t>>& owner,
                                         Comm& comm, double train_fraction) {
  TemporalShard s;
  const TemporalCommon c = temporal_common(res, g, snapshots, train_fraction, s);
  HALO_EXPECTS(owner.size() == c.inputs.size(),
               "distributed_temporal_shard: one owner map per snapshot (" +
                   std::to_string(c.inputs.size()) + "), got " + std::to_string(owner.size()));
  for (const auto& o : owner)
    HALO_EXPECTS(static_cast<std::int64_t>(o.size()) == s.num_nodes,
                 "distributed_temporal_shard: an owner map must cover every node of the run");
  const std::vector<TemporalRows> rows = distribute_snapshots(c.inputs, owner, comm, s.traffic);
  std::int64_t cap = 0;
  for (std::size_t t = 0; t < c.inputs.size(); ++t) {
    TemporalStepPart sp = temporal_step_part(res, rows[t], owner[t], comm);
    s.exchange.push_back(std::make_unique<HaloExchange>(res, sp.part,
                                                        nn::GraphPreparation::Symmetric,
                                                        /*overlap=*/true, comm));
    if (static_cast<std::int64_t>(t) < c.read_by_training)
      for (const std::int32_t d : sp.degree) cap = std::max<std::int64_t>(cap, d);
    s.degree_bucket.push_back(std::move(sp.degree));
    s.degree_bytes.push_back(sp.degree_bytes);
    s.owned.push_back(rows[t].owned);
  }
  s.owner = owner;
  comm.allreduce(kernels::Span<std::int64_t>{&cap, 1}, ReduceOp::Max);
  cap_buckets(s, cap);
  s.comm = &comm;
  return s;
}

void sample_negatives(std::span<const TemporalEdge> positives, std::span<const NodeId> pool,
                      std::int64_t num_nodes, std::uint64_t key, std::uint64_t count,
                      std::vector<NodeId>& src, std::vector<NodeId>& dst) {
  HALO_EXPECTS(!positives.empty() && num_nodes >= 1, "sample_negatives: needs positives and nodes");
  const auto npos = static_cast<std::uint64_t>(positives.size());
  const auto npool = static_cast<std::uint64_t>(pool.empty() ? num_nodes : pool.size());
  for (std::uint64_t j = 0; j < count; ++j)
    for (std::uint64_t a = 0; a < kNegativeDraws; ++a) {
      const std::uint64_t i = 2 * (j * kNegativeDraws + a);
      const NodeId u =
          positives[kernels::rng::mul_hi64(kernels::rng::draw_keyed(key, i), npos)].src;
      const std::uint64_t k = kernels::rng::mul_hi64(kernels::rng::draw_keyed(key, i + 1), npool);
      const NodeId v = pool.empty() ? static_cast<NodeId>(k) : pool[k];
      if (u != v && !std::binary_search(positives.begin(), positives.end(), TemporalEdge{u, v})) {
        src.push_back(u), dst.push_back(v);
        break;
      }
    }
}

// ---- metrics -----------------------------------------------------------------------------------

double mean_reciprocal_rank(std::span<const float> scores, std::span<const std::int8_t> positive) {
  HALO_EXPECTS(scores.size() == positive.size(), "mean_reciprocal_rank: one label per score");
  std::vector<float> sorted(scores.begin(), scores.end());
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (positive[i] == 0) continue;
    const auto lo = std::lower_bound(sorted.begin(), sorted.end(), scores[i]);
    const auto hi = std::upper_bound(sorted.begin(), sorted.end(), scores[i]);
    const auto higher = static_cast<double>(sorted.end() - hi);
    const auto tied_others = static_cast<double>(hi - lo - 1);
    sum += 1.0 / (1.0 + higher + tied_others / 2);
    ++count;
  }
  return count == 0 ? kNaN : sum / static_cast<double>(count);
}

namespace {

/// The entries streamed through RankingCounts: the positives, then the negatives.
RankingCounts count_ranking(std::span<const float> scores, std::span<const std::int8_t> positive) {
  RankingCounts c;
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (positive[i] != 0) c.add_positive(scores[i]);
  c.freeze();
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (positive[i] == 0) c.add_negative(scores[i]);
  return c;
}

}  // namespace

double average_precision(std::span<const float> scores, std::span<const std::int8_t> positive) {
  HALO_EXPECTS(scores.size() == positive.size(), "average_precision: one label per score");
  return count_ranking(scores, positive).average_precision();
}

double roc_auc(std::span<const float> scores, std::span<const std::int8_t> positive) {
  HALO_EXPECTS(scores.size() == positive.size(), "roc_auc: one label per score");
  return count_ranking(scores, positive).roc_auc();
}

void RankingCounts::add_positive(float score) {
  HALO_EXPECTS(!m_frozen, "RankingCounts: a positive after freeze()");
  m_positives.push_back(score);
}

void RankingCounts::freeze() {
  HALO_EXPECTS(!m_frozen, "RankingCounts: frozen twice");
  m_frozen = true;
  std::sort(m_positives.begin(), m_positives.end(), std::greater<>());
  for (const float x : m_positives) {
    if (m_level.empty() || x != m_level.back()) m_level.push_back(x), m_pos_at.push_back(0);
    ++m_pos_at.back();
  }
  m_neg_at.assign(m_level.size(), 0);
  m_neg_equal.assign(m_level.size(), 0);
}

void RankingCounts::add_negative(float score) {
  HALO_EXPECTS(m_frozen, "RankingCounts: a negative before freeze()");
  ++m_negatives;
  // The first level <= the score: the highest threshold the negative reaches.
  const auto k = static_cast<std::size_t>(
      std::lower_bound(m_level.begin(), m_level.end(), score, std::greater<>()) - m_level.begin());
  if (k == m_level.size()) return;  // below every positive
  ++m_neg_at[k];
  if (m_level[k] == score) ++m_neg_equal[k];
}

double RankingCounts::average_precision() const {
  HALO_EXPECTS(m_frozen, "RankingCounts: freeze() first");
  if (m_positives.empty()) return kNaN;
  // Only the thresholds at a positive's score add to the sum: the positives' distinct scores,
  // highest first, each with the negatives first reaching it (O(entries log positives), no
  // full sort).
  const auto total = static_cast<double>(m_positives.size());
  double ap = 0, tp = 0, seen = 0;
  for (std::size_t k = 0; k < m_level.size(); ++k) {
    tp += m_pos_at[k];
    seen += m_pos_at[k] + m_neg_at[k];
    ap += m_pos_at[k] / total * (tp / seen);
  }
  return ap;
}

double RankingCounts::roc_auc() const {
  HALO_EXPECTS(m_frozen, "RankingCounts: freeze() first");
  const auto pos = static_cast<double>(m_positives.size());
  const auto neg = static_cast<double>(m_negatives);
  if (pos == 0 || neg == 0) return kNaN;
  // Mann-Whitney: per positive, the negatives scored below it and half those tied with it.
  double reached = 0, u = 0;  // negatives scored >= the current level
  for (std::size_t k = 0; k < m_level.size(); ++k) {
    reached += m_neg_at[k];
    const double below = neg - reached;
    u += m_pos_at[k] * (below + m_neg_equal[k] / 2);
  }
  return u / (pos * neg);
}

// ---- the task ----------------------------------------------------------------------------------

namespace {

/// Link prediction on a TemporalShard: step t's pairs from the encoder's embeddings after
/// snapshots t - window .. t - 1. Each rank's encoder computes the rows it owns at step t - 1
/// (its GCN's halo rows come from their owners); a training step scores the pairs whose source
/// the rank owns, with the destinations' embeddings fetched from their owners and their
/// gradients sent back, and the gradients of the parameters are summed over the ranks;
/// evaluation gathers every embedding on every rank (the ranking protocol scores every pair).
/// One process is the one-part case: every row owned, nothing fetched, the sums over one rank.
class LinkPrediction final : public Task {
 public:
  LinkPrediction(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                 LinkModel& model);
  Comm& comm() override { return m_comm; }
  Selection selection() const override {
    return {m_config.link.select_by == LinkSelect::Map ? "val_map" : "val_mrr", ""};
  }
  CheckpointIdentity identity() const override;
  double preprocess_time_s() const override { return m_preprocess_s; }
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step, Partial& at,
                   const std::function<bool()>& stop) override;
  Metrics evaluate() override;
  std::vector<NamedTensor> state() override { return detail::parameter_state(m_params); }
  std::vector<NamedTensor> optimizer_state() override {
    return detail::adam_state(m_optimizer, m_params);
  }
  std::vector<std::pair<std::string, std::int64_t>> counters() const override {
    return {{"adam.steps", m_optimizer.steps()}};
  }
  void set_counter(const std::string& name, std::int64_t value) override {
    if (name != "adam.steps") unknown_counter(name);
    m_optimizer.set_steps(value);
  }
  std::int64_t batches_per_epoch() const override {
    return m_split.train_end - m_split.train_begin;
  }
  void finish(TrainResult& result) override;
  /// Per test step with pairs to predict: (step, MRR, MAP, AUC).
  std::vector<std::array<double, 4>> test_steps() {
    std::vector<std::array<double, 4>> v;
    for (std::int64_t t = m_split.val_end; t < m_split.test_end; ++t) {
      const StepMetrics m = score_step(t, true);
      if (!std::isnan(m.mrr)) v.push_back({static_cast<double>(t), m.mrr, m.ap, m.auc});
    }
    return v;
  }
  /// Every node's embedding after the window before step t (window <= t <= steps), in node id
  /// order (on a rank's part, gathered from every rank's rows). Valid until the next pass.
  const Tensor<float>& all_embeddings(std::int64_t t);

 private:
  std::span<const nn::TemporalStep<float>> window(std::int64_t t) const {
    const std::int64_t w = m_config.link.window;
    return {m_steps.data() + (t - w), static_cast<std::size_t>(w)};
  }
  /// The embeddings of every node before step t, the scorer prepared on them.
  void embed_all(std::int64_t t) { m_model.scorer.prepare(all_embeddings(t)); }
  /// One training step on step t's pairs (src, dst, label; every rank passes all of them): sets
  /// every parameter's gradient (summed over the ranks) and returns the loss, normalised by
  /// the weight `total_weight` of all the pairs.
  double train_step(std::int64_t t, const std::vector<NodeId>& src, const std::vector<NodeId>& dst,
                    const std::vector<std::int8_t>& label, double total_weight,
                    detail::PhaseClock& clock);
  /// Sums `params`' gradients over the ranks (one reduction).
  void sum_gradients(const std::vector<nn::Parameter<float>*>& params);
  void sum_over_ranks(std::span<float> v);
  /// Step t's pairs: each source node with a positive pair ranks every other node (MRR), and
  /// AP (and with `auc` the ROC AUC) over every pair u != v.
  struct StepMetrics {
    double mrr = kNaN, ap = kNaN, auc = kNaN;
    /// Every score of the step(s) equal: the model ranks nothing (all metrics are then ties).
    bool tied = false;
  };
  StepMetrics score_step(std::int64_t t, bool auc);
  /// The mean of each metric over the steps [begin, end) that have pairs to predict.
  StepMetrics score_steps(std::int64_t begin, std::int64_t end, bool auc);

  const kernels::Resources& m_res;
  TemporalShard& m_shard;
  Comm& m_comm;
  TrainConfig m_config;
  LinkModel& m_model;
  LinkSplit m_split;
  std::vector<nn::Parameter<float>*> m_params;
  std::vector<nn::TemporalStep<float>> m_steps;
  nn::Adam<float> m_optimizer;
  // Every node's embeddings (embed_all), a training step's (owned rows, then the fetched ones)
  // and its pairs in those rows; what the epoch moved and waited for.
  Tensor<float> m_all, m_local;
  std::vector<NodeId> m_src, m_dst;
  std::vector<std::int64_t> m_row;  // a training step's row of each node (train_step)
  std::vector<std::int8_t> m_label;
  std::int64_t m_fetch_bytes = 0;
  double m_allreduce_s = 0;
  Tensor<float> m_grad_flat;  // the gradient all-reduce's buffers
  std::vector<float> m_grad_host;
  double m_preprocess_s = 0;
};

std::vector<nn::Parameter<float>*> link_parameters(LinkModel& m) {
  std::vector<nn::Parameter<float>*> v = m.encoder.parameters();
  for (auto* p : m.scorer.parameters()) v.push_back(p);
  return v;
}

LinkPrediction::LinkPrediction(const kernels::Resources& res, TemporalShard& shard,
                               const TrainConfig& config, LinkModel& model)
    : m_res(res),
      m_shard(shard),
      m_comm(*shard.comm),
      m_config(config),
      m_model(model),
      m_split(link_split(shard.num_steps(), config.link)),
      m_params(link_parameters(model)),
      m_optimizer(res, m_params, detail::adam_config(config.lr, config.weight_decay)) {
  check_config(config);
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "train: link prediction runs on the CPU");
  HALO_EXPECTS(shard.num_steps() == static_cast<std::int64_t>(shard.exchange.size()) &&
                   shard.owner.size() == shard.exchange.size(),
               "train: the temporal shard is not prepared (local_temporal_shard / "
               "distributed_temporal_shard)");
  HALO_EXPECTS(m_comm.size() == 1 || config.link.model.kind == nn::TemporalKind::EvolveGcnO,
               "train: distributed link prediction trains evolvegcn-o (GCRN's per-node state "
               "would have to follow the rows that migrate between snapshots)");
  HALO_EXPECTS(!config.mini_batch, "train: link prediction trains on whole snapshots");
  HALO_EXPECTS(shard.train_fraction == config.link.train_fraction,
               "train: the temporal shard was prepared for training share " +
                   std::to_string(shard.train_fraction) + ", the run trains on " +
                   std::to_string(config.link.train_fraction) +
                   " (pass link.train_fraction to local_temporal_shard / "
                   "distributed_temporal_shard: the degree cap must not see later snapshots)");
  HALO_EXPECTS(model.encoder.config().in_features == shard.num_features,
               "train: the link model was not built for this data's input width");
  const auto start = Clock::now();
  for (std::int64_t t = 0; t < shard.num_steps(); ++t) {
    const auto i = static_cast<std::size_t>(t);
    m_steps.push_back({shard.exchange[i]->adjacency(), shard.degree_bucket[i]});
  }
  model.encoder.set_gradient_sum([this](std::span<float> g) { sum_over_ranks(g); });
  m_preprocess_s = seconds_since(start);
}

CheckpointIdentity LinkPrediction::identity() const {
  // The data: every step's pairs to predict and owner map (the same on every rank; the degree
  // buckets follow from the pairs), the node count, the snapshots.
  const TemporalShard& d = m_shard;
  std::uint64_t h = partition::fnv1a64(&d.num_nodes, sizeof d.num_nodes);
  h = partition::fnv1a64(&d.num_features, sizeof d.num_features, h);
  for (std::size_t t = 0; t < d.targets.size(); ++t) {
    for (const TemporalEdge& e : d.targets[t]) {
      h = partition::fnv1a64(&e.src, sizeof e.src, h);
      h = partition::fnv1a64(&e.dst, sizeof e.dst, h);
    }
    const std::vector<std::int32_t>& b = d.owner[t];
    h = partition::fnv1a64(b.data(), b.size() * sizeof(std::int32_t), h);
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(h));
  const LinkPredictionConfig& c = m_config.link;
  const datasets::SnapshotConfig& sn = d.snapshots;
  return config_identity(m_config, "temporal " + d.dataset + " fnv1a64 " + hex, m_comm.size(),
                         {{"model.kind", nn::to_string(c.model.kind)},
                          {"model.hidden", std::to_string(c.model.hidden)},
                          {"model.in_features", std::to_string(d.num_features)},
                          {"link.scorer_hidden", std::to_string(c.scorer_hidden)},
                          {"link.window", std::to_string(c.window)},
                          {"link.train_fraction", exact_number(c.train_fraction)},
                          {"link.val_fraction", exact_number(c.val_fraction)},
                          {"link.negatives", std::to_string(c.negatives)},
                          {"link.positive_weight", exact_number(c.positive_weight)},
                          {"link.negative_weight", exact_number(c.negative_weight)},
                          {"link.select_by", to_string(c.select_by)},
                          {"snapshots", std::to_string(sn.num_snapshots) + " window " +
                                            std::to_string(sn.window_snapshots)}});
}

void LinkPrediction::sum_over_ranks(std::span<float> v) {
  const auto start = Clock::now();
  m_comm.allreduce(kernels::Span<float>{v.data(), static_cast<std::int64_t>(v.size())},
                   ReduceOp::Sum);
  m_allreduce_s += seconds_since(start);
}

void LinkPrediction::sum_gradients(const std::vector<nn::Parameter<float>*>& params) {
  detail::allreduce_gradients(m_res, m_comm, params, 0.0, m_grad_flat, m_grad_host, m_allreduce_s);
}

const Tensor<float>& LinkPrediction::all_embeddings(std::int64_t t) {
  HALO_EXPECTS(t >= m_config.link.window && t <= m_shard.num_steps(),
               "link prediction: the embeddings before step " + std::to_string(t) + " (window " +
                   std::to_string(m_config.link.window) + ", " +
                   std::to_string(m_shard.num_steps()) + " steps)");
  const Tensor<float>& e = m_model.encoder.forward(window(t));
  // Every rank's rows in rank order; rank j's are the nodes it owns at t - 1, ascending.
  std::vector<std::size_t> counts;
  const std::vector<std::byte> rows =
      m_comm.allgatherv(e.data(), static_cast<std::size_t>(e.numel()) * sizeof(float), counts);
  const std::int64_t h = e.cols();
  const std::vector<std::int32_t>& owner = m_shard.owner[static_cast<std::size_t>(t - 1)];
  std::vector<std::size_t> next(counts.size(), 0);  // rows taken from each rank so far
  std::vector<std::size_t> begin(counts.size(), 0);
  for (std::size_t j = 1; j < counts.size(); ++j) begin[j] = begin[j - 1] + counts[j - 1];
  m_all = Tensor<float>(m_res, m_shard.num_nodes, h);
  const auto row_bytes = static_cast<std::size_t>(h) * sizeof(float);
  for (std::int64_t v = 0; v < m_shard.num_nodes; ++v) {
    const auto j = static_cast<std::size_t>(owner[static_cast<std::size_t>(v)]);
    const std::size_t at = begin[j] + row_bytes * next[j]++;
    HALO_EXPECTS(at + row_bytes <= begin[j] + counts[j],
                 "link prediction: a rank sent fewer embeddings than it owns rows");
    std::memcpy(&m_all(v, 0), rows.data() + at, row_bytes);
  }
  return m_all;
}

double LinkPrediction::train_step(std::int64_t t, const std::vector<NodeId>& src,
                                  const std::vector<NodeId>& dst,
                                  const std::vector<std::int8_t>& label, double total_weight,
                                  detail::PhaseClock& clock) {
  const LinkPredictionConfig& lc = m_config.link;
  std::vector<float> logits, d_logits;
  const int me = m_comm.rank();
  const auto p = static_cast<std::size_t>(m_comm.size());
  const std::vector<NodeId>& own = m_shard.owned[static_cast<std::size_t>(t - 1)];
  const std::vector<std::int32_t>& owner = m_shard.owner[static_cast<std::size_t>(t - 1)];
  const auto owned = static_cast<std::int64_t>(own.size());
  const auto owner_of = [&](NodeId v) { return owner[static_cast<std::size_t>(v)]; };
  // The row of an owned node, then of a fetched one: m_row is set for this step's owned and
  // fetched nodes, the only ones looked up (another node's entry may be an earlier step's).
  m_row.resize(static_cast<std::size_t>(m_shard.num_nodes), -1);
  for (std::int64_t r = 0; r < owned; ++r) m_row[static_cast<std::size_t>(own[r])] = r;
  const auto row_of = [&](NodeId v) { return m_row[static_cast<std::size_t>(v)]; };
  // This rank's pairs (those whose source it owns) and the destinations it must fetch.
  std::vector<NodeId> remote;
  m_src.clear(), m_dst.clear(), m_label.clear();
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (owner_of(src[i]) != me) continue;
    m_src.push_back(src[i]), m_dst.push_back(dst[i]), m_label.push_back(label[i]);
    if (owner_of(dst[i]) != me) remote.push_back(dst[i]);
  }
  std::sort(remote.begin(), remote.end());
  remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
  for (std::size_t k = 0; k < remote.size(); ++k)
    m_row[static_cast<std::size_t>(remote[k])] = owned + static_cast<std::int64_t>(k);
  std::vector<std::vector<NodeId>> want(p);
  for (const NodeId v : remote) want[static_cast<std::size_t>(owner_of(v))].push_back(v);
  std::vector<std::int64_t> asked_at, got_at, back_at;
  const std::vector<NodeId> asked = alltoallv_lists(m_comm, want, asked_at);
  const Tensor<float>& e = m_model.encoder.forward(window(t));
  const std::int64_t h = e.cols();
  const auto rows_of = [&](const Tensor<float>& x, std::span<const NodeId> ids, auto row) {
    std::vector<float> v;
    v.reserve(ids.size() * static_cast<std::size_t>(h));
    for (const NodeId id : ids) v.insert(v.end(), &x(row(id), 0), &x(row(id), 0) + h);
    return v;
  };
  std::vector<std::vector<float>> reply(p);
  for (std::size_t j = 0; j < p; ++j)
    reply[j] =
        rows_of(e,
                std::span<const NodeId>(asked.data() + asked_at[j],
                                        static_cast<std::size_t>(asked_at[j + 1] - asked_at[j])),
                row_of);
  const std::vector<float> got = alltoallv_lists(m_comm, reply, got_at);
  m_local = Tensor<float>(m_res, owned + static_cast<std::int64_t>(remote.size()), h);
  std::copy_n(e.data(), e.numel(), m_local.data());
  std::size_t k = 0;
  for (std::size_t j = 0; j < p; ++j)
    for (const NodeId v : want[j])
      std::copy_n(got.data() + h * static_cast<std::int64_t>(k++), h, &m_local(row_of(v), 0));
  for (std::size_t i = 0; i < m_src.size(); ++i) {
    m_src[i] = static_cast<NodeId>(row_of(m_src[i]));
    m_dst[i] = static_cast<NodeId>(row_of(m_dst[i]));
  }
  m_model.scorer.prepare(m_local);
  logits.resize(m_src.size());
  d_logits.resize(m_src.size());
  m_model.scorer.score(m_src, m_dst, logits);
  clock.lap(&EpochProfile::forward_s);  // with the exchange of the embeddings' rows
  const double loss = nn::weighted_logistic_loss<float>(logits, m_label, lc.positive_weight,
                                                        lc.negative_weight, d_logits, total_weight);
  clock.lap(&EpochProfile::loss_s);
  const Tensor<float>& de = m_model.scorer.backward(m_src, m_dst, d_logits);
  // The fetched rows' gradients go back to their owners, which add them to the rows they sent.
  std::vector<std::vector<float>> back(p);
  for (std::size_t j = 0; j < p; ++j) back[j] = rows_of(de, want[j], row_of);
  const std::vector<float> returned = alltoallv_lists(m_comm, back, back_at);
  Tensor<float> d_own(m_res, owned, h);
  std::copy_n(de.data(), d_own.numel(), d_own.data());
  for (std::size_t i = 0; i < asked.size(); ++i) {
    float* row = &d_own(row_of(asked[i]), 0);
    const float* add = returned.data() + h * static_cast<std::int64_t>(i);
    for (std::int64_t c = 0; c < h; ++c) row[c] += add[c];
  }
  m_fetch_bytes += static_cast<std::int64_t>(asked.size() * sizeof(NodeId) +
                                             (got.size() + returned.size()) * sizeof(float));
  m_model.encoder.backward(d_own);  // sums its GCN's gradients over the ranks
  sum_gradients(m_model.scorer.parameters());
  clock.lap(&EpochProfile::backward_s);  // with the gradients' exchange and sums
  return m_comm.sum(loss);
}

bool LinkPrediction::train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step,
                                 Partial& at, const std::function<bool()>& stop) {
  const auto start = Clock::now();
  const LinkPredictionConfig& lc = m_config.link;
  for (auto& x : m_shard.exchange) x->reset_stats();
  m_fetch_bytes = 0;
  // A stopped epoch continues at its next training snapshot with its running sums.
  m_allreduce_s = at.allreduce_s;
  double loss_sum = at.loss_sum;
  std::int64_t steps = at.loss_rows;  // training snapshots with a loss so far
  std::vector<NodeId> src, dst, pool;
  std::vector<std::int8_t> label;
  const std::int64_t snapshots = m_split.train_end - m_split.train_begin;
  detail::PhaseClock clock(m_res, m_config.profile, s.profile);
  for (std::int64_t i = at.step; i < snapshots; ++i) {
    const std::int64_t t = m_split.train_begin + i;
    const std::vector<TemporalEdge>& pos = m_shard.targets[static_cast<std::size_t>(t)];
    if (pos.empty()) continue;  // nothing to predict at this step
    clock.mark();
    src.clear(), dst.clear(), label.clear();
    for (const TemporalEdge& e : pos)
      src.push_back(e.src), dst.push_back(e.dst), label.push_back(1);
    // Negatives from (seed, epoch, step): the same in every run of the seed, on every rank.
    const std::uint64_t key = kernels::rng::key(
        m_config.seed, kernels::rng::stream_id(kernels::rng::kStreamNegative, epoch,
                                               static_cast<std::uint64_t>(t)));
    pool.clear();
    for (std::int64_t w = t - lc.window; w < t; ++w) {
      const std::vector<NodeId>& a = m_shard.active[static_cast<std::size_t>(w)];
      pool.insert(pool.end(), a.begin(), a.end());
    }
    sample_negatives(pos, pool, m_shard.num_nodes, key,
                     static_cast<std::uint64_t>(lc.negatives) * pos.size(), src, dst);
    label.resize(src.size(), 0);
    // The step's pairs (its targets and drawn negatives) are its batch, drawn on this thread.
    s.profile.wait_s += clock.lap(&EpochProfile::sample_s);
    const double total_weight = static_cast<double>(pos.size()) * lc.positive_weight +
                                static_cast<double>(src.size() - pos.size()) * lc.negative_weight;
    const double loss = train_step(t, src, dst, label, total_weight, clock);
    detail::expect_finite(loss, epoch, i);
    clock.mark();
    m_optimizer.step(m_res);
    clock.lap(&EpochProfile::optimizer_s);
    if (on_step) on_step(i);
    loss_sum += loss;
    ++steps;
    if (i + 1 < snapshots && stop()) {
      at = {epoch, i + 1, loss_sum, steps, m_allreduce_s};
      return false;
    }
  }
  if (steps == 0)
    throw IoError(
        "train: no training snapshot holds an event to predict (the dataset's events "
        "fall outside the training snapshots " +
        std::to_string(m_split.train_begin) + ".." + std::to_string(m_split.train_end - 1) + ")");
  s.train_loss = loss_sum / static_cast<double>(steps);
  s.epoch_time_s = seconds_since(start);
  s.exchange_bytes = 0, s.exchange_time_s = 0, s.exchange_exposed_s = 0;
  for (const auto& x : m_shard.exchange) {
    s.exchange_bytes += x->stats().bytes_sent;
    s.exchange_time_s += x->stats().exchange_s;
    s.exchange_exposed_s += x->stats().exposed_s;
  }
  s.feature_bytes = m_fetch_bytes;
  s.allreduce_time_s = m_allreduce_s;
  detail::reduce_epoch_counters(m_comm, s);
  return true;
}

LinkPrediction::StepMetrics LinkPrediction::score_step(std::int64_t t, bool auc) {
  const std::vector<TemporalEdge>& pos = m_shard.targets[static_cast<std::size_t>(t)];
  StepMetrics m;
  if (pos.empty()) return m;
  embed_all(t);
  const std::int64_t n = m_shard.num_nodes;
  std::vector<float> row(static_cast<std::size_t>(n)), cand;
  std::vector<std::int8_t> is_pos(static_cast<std::size_t>(n), 0), cand_pos;
  // Every ordered pair u != v is an entry (pos is sorted by source). First the rows with a
  // positive: each ranks every other node (MRR) and gives its positives' scores; then every
  // row's negatives go to the positives' levels. Memory O(nodes + positives): the rows with a
  // positive are scored twice rather than every entry kept.
  RankingCounts ranking;
  double mrr_sum = 0;
  std::int64_t rows = 0;
  for (std::size_t first = 0, next = 0; first < pos.size(); first = next) {
    const NodeId u = pos[first].src;
    while (next < pos.size() && pos[next].src == u) ++next;
    m_model.scorer.score_row(u, row);
    for (std::size_t k = first; k < next; ++k) is_pos[static_cast<std::size_t>(pos[k].dst)] = 1;
    cand.clear(), cand_pos.clear();
    for (std::int64_t v = 0; v < n; ++v)
      if (v != u)
        cand.push_back(row[static_cast<std::size_t>(v)]),
            cand_pos.push_back(is_pos[static_cast<std::size_t>(v)]);
    mrr_sum += mean_reciprocal_rank(cand, cand_pos);
    ++rows;
    for (std::size_t k = first; k < next; ++k) {
      ranking.add_positive(row[static_cast<std::size_t>(pos[k].dst)]);
      is_pos[static_cast<std::size_t>(pos[k].dst)] = 0;
    }
  }
  ranking.freeze();
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (std::size_t u = 0, next = 0; u < static_cast<std::size_t>(n); ++u) {
    const std::size_t first = next;
    while (next < pos.size() && static_cast<std::size_t>(pos[next].src) == u) ++next;
    m_model.scorer.score_row(static_cast<NodeId>(u), row);
    for (std::size_t k = first; k < next; ++k) is_pos[static_cast<std::size_t>(pos[k].dst)] = 1;
    for (std::size_t v = 0; v < row.size(); ++v) {
      if (v == u) continue;
      lo = std::min(lo, row[v]), hi = std::max(hi, row[v]);
      if (is_pos[v] == 0) ranking.add_negative(row[v]);
    }
    for (std::size_t k = first; k < next; ++k) is_pos[static_cast<std::size_t>(pos[k].dst)] = 0;
  }
  m.mrr = mrr_sum / static_cast<double>(rows);
  m.tied = lo == hi;
  m.ap = ranking.average_precision();
  if (auc) m.auc = ranking.roc_auc();
  return m;
}

/// The mean over the steps [begin, end) that have pairs to predict.
template <class F>
double mean_over_steps(std::int64_t begin, std::int64_t end, F&& metric) {
  double sum = 0;
  std::int64_t count = 0;
  for (std::int64_t t = begin; t < end; ++t) {
    const double x = metric(t);
    if (std::isnan(x)) continue;
    sum += x;
    ++count;
  }
  return count == 0 ? kNaN : sum / static_cast<double>(count);
}

LinkPrediction::StepMetrics LinkPrediction::score_steps(std::int64_t begin, std::int64_t end,
                                                        bool auc) {
  std::vector<StepMetrics> m;
  for (std::int64_t t = begin; t < end; ++t) m.push_back(score_step(t, auc));
  const auto mean = [&](double StepMetrics::*field) {
    return mean_over_steps(0, static_cast<std::int64_t>(m.size()),
                           [&](std::int64_t i) { return m[static_cast<std::size_t>(i)].*field; });
  };
  // Tied: every step with pairs to score scored all its candidates the same.
  bool tied = false;
  for (const StepMetrics& x : m) {
    if (std::isnan(x.mrr)) continue;
    if (!x.tied) return {mean(&StepMetrics::mrr), mean(&StepMetrics::ap), mean(&StepMetrics::auc)};
    tied = true;
  }
  return {mean(&StepMetrics::mrr), mean(&StepMetrics::ap), mean(&StepMetrics::auc), tied};
}

Metrics LinkPrediction::evaluate() {
  // Without validation pairs both are NaN: the last epoch is kept.
  const StepMetrics m = score_steps(m_split.train_end, m_split.val_end, false);
  return {{"val_mrr", m.mrr}, {"val_map", m.ap}};
}

void LinkPrediction::finish(TrainResult& result) {
  const StepMetrics m = score_steps(m_split.val_end, m_split.test_end, true);
  if (m.tied)
    HALO_LOG_WARN(
        "link prediction: every test pair scored the same, so the ranking metrics are ties "
        "(MRR and MAP at chance): the model learned nothing to tell pairs apart; check the "
        "events' time column and the snapshots (a time column that holds ratings makes "
        "meaningless snapshots)");
  result.metrics.merge({{"test_mrr", m.mrr}, {"test_map", m.ap}, {"test_auc", m.auc}});
}

}  // namespace

std::unique_ptr<Task> link_prediction(const kernels::Resources& res, TemporalShard& shard,
                                      const TrainConfig& config, LinkModel& model) {
  return std::make_unique<LinkPrediction>(res, shard, config, model);
}

LinkTrainRun train(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                   const EpochCallback& on_epoch, const StepCallback& on_step) {
  check_config(config);
  nn::TemporalModelConfig mc = config.link.model;
  mc.in_features = shard.num_features;
  LinkTrainRun run{
      LinkModel{nn::TemporalModel<float>(res, mc, config.seed),
                nn::PairScorer<float>(res, mc.hidden, config.link.scorer_hidden, config.seed)},
      {}};
  Trainer trainer(res, link_prediction(res, shard, config, run.model), config.epochs,
                  config.checkpoint);
  run.result = trainer.run(on_epoch, on_step);
  return run;
}

LinkPredictionResult predict_link(const kernels::Resources& res, TemporalShard& shard,
                                  const TrainConfig& config, LinkModel& model) {
  LinkPrediction task(res, shard, config, model);
  TrainResult r;
  r.metrics = task.evaluate();
  task.finish(r);
  return {r.metrics, task.test_steps()};
}

Tensor<float> embed_link(const kernels::Resources& res, TemporalShard& shard,
                         const TrainConfig& config, LinkModel& model, std::int64_t step) {
  LinkPrediction task(res, shard, config, model);
  return task.all_embeddings(step).clone(res);
}

// ---- model files ------------------------------------------------------------------------------

void save_link_model(const kernels::Resources& res, const std::filesystem::path& path,
                     LinkModel& model, const TrainConfig& config, const TemporalShard& shard,
                     const std::string& columns, const TrainResult& result) {
  const LinkPredictionConfig& c = config.link;
  const nlohmann::json m = {{"kind", nn::to_string(c.model.kind)},
                            {"in_features", model.encoder.config().in_features},
                            {"hidden", c.model.hidden},
                            {"scorer_hidden", c.scorer_hidden},
                            {"window", c.window},
                            {"train_fraction", c.train_fraction},
                            {"val_fraction", c.val_fraction},
                            {"negatives", c.negatives},
                            {"positive_weight", c.positive_weight},
                            {"negative_weight", c.negative_weight},
                            {"select_by", to_string(c.select_by)},
                            {"seed", config.seed},
                            {"snapshots",
                             {{"num_snapshots", shard.snapshots.num_snapshots},
                              {"window_seconds", shard.snapshots.window_seconds},
                              {"window_snapshots", shard.snapshots.window_snapshots}}},
                            {"columns", columns}};
  nn::ModelFileInfo info;
  info.task = "link";
  info.task_model = m.dump();
  info.dataset = shard.dataset;
  info.training = training_record(config, result);
  write_task_model(res, path, info, detail::parameter_state(link_parameters(model)));
}

LinkModelFile load_link_model(const kernels::Resources& res, const std::filesystem::path& path) {
  const nn::ModelFile file = read_task_model(path, "link");
  TrainConfig config;
  datasets::SnapshotConfig snapshots;
  std::string columns;
  try {
    const nlohmann::json m = nlohmann::json::parse(file.info.task_model);
    LinkPredictionConfig& c = config.link;
    c.model.kind = nn::parse_temporal_kind(m.at("kind").get<std::string>());
    c.model.in_features = m.at("in_features").get<std::int64_t>();
    c.model.hidden = m.at("hidden").get<std::int64_t>();
    c.scorer_hidden = m.at("scorer_hidden").get<std::int64_t>();
    c.window = m.at("window").get<int>();
    c.train_fraction = m.at("train_fraction").get<double>();
    c.val_fraction = m.at("val_fraction").get<double>();
    c.negatives = m.at("negatives").get<int>();
    c.positive_weight = m.at("positive_weight").get<double>();
    c.negative_weight = m.at("negative_weight").get<double>();
    c.select_by = parse_link_select(m.at("select_by").get<std::string>());
    config.seed = m.at("seed").get<std::uint64_t>();
    const nlohmann::json& sn = m.at("snapshots");
    snapshots.num_snapshots = sn.at("num_snapshots").get<std::int64_t>();
    snapshots.window_seconds = sn.at("window_seconds").get<std::int64_t>();
    snapshots.window_snapshots = sn.at("window_snapshots").get<std::int64_t>();
    columns = m.at("columns").get<std::string>();
  } catch (const std::exception& e) {
    throw IoError(path.string() + ": the link model's description is damaged (" + e.what() + ")");
  }
  const nn::TemporalModelConfig& mc = config.link.model;
  LinkModelFile out{
      LinkModel{nn::TemporalModel<float>(res, mc, config.seed),
                nn::PairScorer<float>(res, mc.hidden, config.link.scorer_hidden, config.seed)},
      config, file.info.dataset, snapshots, columns};
  read_task_arrays(res, path, file, detail::parameter_state(link_parameters(out.model)));
  return out;
}

}  // namespace halo::runtime
