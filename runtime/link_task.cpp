// The Trainer's link-prediction task (EvolveGCN's set-up on temporal graphs), its data and its
// ranking metrics.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/runtime/detail/task.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/link_prediction.hpp>
#include <halo/runtime/trainer.hpp>

namespace halo::runtime {

using datasets::TemporalEdge;
using detail::NamedTensor;
using kernels::NodeId;
using kernels::Tensor;

namespace {

using detail::Clock;
using detail::seconds_since;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

LinkSplit link_split(std::int64_t num_steps, const LinkPredictionConfig& c) {
  HALO_EXPECTS(c.window >= 1, "link prediction: the window must be >= 1 step");
  HALO_EXPECTS(c.negatives >= 1, "link prediction: negatives per positive must be >= 1");
  HALO_EXPECTS(c.positive_weight > 0 && c.negative_weight > 0,
               "link prediction: class weights must be > 0");
  HALO_EXPECTS(std::isfinite(c.train_fraction) && std::isfinite(c.val_fraction) &&
                   c.train_fraction > 0 && c.val_fraction >= 0 &&
                   c.train_fraction + c.val_fraction < 1,
               "link prediction: the split needs train > 0, val >= 0 and train + val < 1");
  const auto t = static_cast<double>(num_steps);
  LinkSplit s;
  s.train_begin = c.window;
  s.train_end = std::llround(c.train_fraction * t);
  s.val_end = s.train_end + std::llround(c.val_fraction * t);
  s.test_end = num_steps;
  HALO_EXPECTS(s.train_end > s.train_begin,
               "link prediction: the window (" + std::to_string(c.window) +
                   " steps) leaves no training step among the first " +
                   std::to_string(s.train_end) + " of " + std::to_string(num_steps) +
                   " (use more snapshots or a smaller --window)");
  HALO_EXPECTS(s.val_end < s.test_end, "link prediction: the split leaves no test step (" +
                                           std::to_string(num_steps) + " snapshots)");
  return s;
}

TemporalShard local_temporal_shard(const kernels::Resources& res, const datasets::TemporalGraph& g,
                                   const datasets::SnapshotConfig& snapshots,
                                   double train_fraction) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "local_temporal_shard: prepares host data (a CPU Resources)");
  HALO_EXPECTS(train_fraction > 0, "local_temporal_shard: the training share must be > 0");
  TemporalShard s;
  s.dataset = g.name;
  s.num_nodes = g.num_nodes();
  s.num_events = g.num_events();
  s.snapshots = snapshots;
  std::vector<datasets::Snapshot> inputs = datasets::make_snapshots(g, snapshots);
  datasets::SnapshotConfig own_span = snapshots;
  own_span.window_snapshots = 1;  // the events of each step's own span
  const std::vector<datasets::Snapshot> spans = datasets::make_snapshots(g, own_span);
  const auto steps = static_cast<std::int64_t>(inputs.size());
  const std::int64_t read_by_training =
      train_fraction >= 1 ? steps
                          : std::max<std::int64_t>(
                                1, std::llround(train_fraction * static_cast<double>(steps)) - 1);
  std::int64_t cap = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    auto& in = inputs[static_cast<std::size_t>(t)];
    in.num_nodes = s.num_nodes;  // every node of the run, in every step
    const datasets::Graph sym = datasets::symmetrize(res, datasets::snapshot_graph(res, in));
    s.adjacency.push_back(datasets::gcn_normalize<float>(res, sym));
    std::vector<std::int32_t> degree(static_cast<std::size_t>(s.num_nodes));
    std::vector<NodeId> active;
    const std::int64_t* indptr = sym.indptr.data();
    for (std::int64_t v = 0; v < s.num_nodes; ++v) {
      const std::int64_t d =
          std::min<std::int64_t>(indptr[v + 1] - indptr[v], datasets::kMaxDegreeBucket);
      degree[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(d);
      if (d > 0) active.push_back(static_cast<NodeId>(v));
      if (t < read_by_training) cap = std::max(cap, d);
    }
    s.degree_bucket.push_back(std::move(degree));
    s.active.push_back(std::move(active));
    std::vector<TemporalEdge> target;
    for (const TemporalEdge& e : spans[static_cast<std::size_t>(t)].edges)
      if (e.src != e.dst) target.push_back(e), target.push_back({e.dst, e.src});
    std::sort(target.begin(), target.end());
    target.erase(std::unique(target.begin(), target.end()), target.end());
    s.targets.push_back(std::move(target));
  }
  for (auto& degree : s.degree_bucket)
    for (std::int32_t& d : degree) d = std::min(d, static_cast<std::int32_t>(cap));
  s.num_features = cap + 1;
  s.own_comm = std::make_unique<SelfComm>();
  s.comm = s.own_comm.get();
  return s;
}

void sample_negatives(std::span<const TemporalEdge> positives, std::span<const NodeId> pool,
                      std::int64_t num_nodes, std::uint64_t key, std::uint64_t count,
                      std::vector<NodeId>& src, std::vector<NodeId>& dst) {
  HALO_EXPECTS(!positives.empty() && num_nodes >= 1, "sample_negatives: needs positives and nodes");
  const auto npos = static_cast<std::uint64_t>(positives.size());
  const auto npool = static_cast<std::uint64_t>(pool.empty() ? num_nodes : pool.size());
  for (std::uint64_t j = 0; j < count; ++j) {
    NodeId u = 0, v = 0;
    for (std::uint64_t a = 0; a < 8; ++a) {
      const std::uint64_t i = 2 * (j * 8 + a);
      u = positives[kernels::rng::mul_hi64(kernels::rng::draw_keyed(key, i), npos)].src;
      const std::uint64_t k = kernels::rng::mul_hi64(kernels::rng::draw_keyed(key, i + 1), npool);
      v = pool.empty() ? static_cast<NodeId>(k) : pool[k];
      if (u != v && !std::binary_search(positives.begin(), positives.end(), TemporalEdge{u, v}))
        break;
    }
    src.push_back(u), dst.push_back(v);
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

/// The entries' indices, highest score first.
std::vector<std::int64_t> descending(std::span<const float> scores) {
  std::vector<std::int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::int64_t a, std::int64_t b) { return scores[a] > scores[b]; });
  return order;
}

}  // namespace

double average_precision(std::span<const float> scores, std::span<const std::int8_t> positive) {
  HALO_EXPECTS(scores.size() == positive.size(), "average_precision: one label per score");
  const auto total = std::count_if(positive.begin(), positive.end(), [](auto p) { return p; });
  if (total == 0) return kNaN;
  const std::vector<std::int64_t> order = descending(scores);
  double ap = 0, tp = 0, seen = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    double group_tp = 0;
    for (; j < order.size() && scores[order[j]] == scores[order[i]]; ++j)
      group_tp += positive[order[j]] != 0 ? 1 : 0;
    tp += group_tp;
    seen += static_cast<double>(j - i);
    ap += group_tp / static_cast<double>(total) * (tp / seen);
    i = j;
  }
  return ap;
}

double roc_auc(std::span<const float> scores, std::span<const std::int8_t> positive) {
  HALO_EXPECTS(scores.size() == positive.size(), "roc_auc: one label per score");
  const auto pos = static_cast<double>(
      std::count_if(positive.begin(), positive.end(), [](auto p) { return p; }));
  const double neg = static_cast<double>(scores.size()) - pos;
  if (pos == 0 || neg == 0) return kNaN;
  std::vector<std::int64_t> order = descending(scores);
  std::reverse(order.begin(), order.end());  // ascending
  double rank_sum = 0;                       // of the positives, 1-based, ties at their mean rank
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    double group_pos = 0;
    for (; j < order.size() && scores[order[j]] == scores[order[i]]; ++j)
      group_pos += positive[order[j]] != 0 ? 1 : 0;
    rank_sum += group_pos * (static_cast<double>(i + 1 + j) / 2);
    i = j;
  }
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

// ---- the task ----------------------------------------------------------------------------------

namespace {

/// Link prediction on a TemporalShard: step t's pairs from the encoder's embeddings after
/// snapshots t - window .. t - 1.
class LinkPrediction final : public Trainer::Task {
 public:
  LinkPrediction(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                 LinkModel& model);
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const Trainer::StepCallback& on_step,
                   Trainer::Partial& at, const std::function<bool()>& stop) override;
  Trainer::Evaluation evaluate() override;
  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> v;
    for (auto* p : m_params) v.push_back({p->name, &p->value});
    return v;
  }
  std::int64_t batches_per_epoch() const override {
    return m_split.train_end - m_split.train_begin;
  }
  void finish(TrainResult& result) override;

 private:
  /// The embeddings before step t, the scorer prepared on them.
  void embed(std::int64_t t);
  /// Step t's pairs: each source node with a positive pair ranks every other node (MRR); with
  /// `all_pairs` also AP and AUC over every pair u != v.
  struct StepMetrics {
    double mrr = kNaN, ap = kNaN, auc = kNaN;
  };
  StepMetrics score_step(std::int64_t t, bool all_pairs);

  const kernels::Resources& m_res;
  TemporalShard& m_shard;
  TrainConfig m_config;
  LinkModel& m_model;
  LinkSplit m_split;
  std::vector<nn::Parameter<float>*> m_params;
  std::vector<nn::TemporalStep<float>> m_steps;
  nn::Adam<float> m_optimizer;
};

std::vector<nn::Parameter<float>*> link_parameters(LinkModel& m) {
  std::vector<nn::Parameter<float>*> v = m.encoder.parameters();
  for (auto* p : m.scorer.parameters()) v.push_back(p);
  return v;
}

kernels::AdamConfig link_adam(const TrainConfig& c) {
  kernels::AdamConfig a;
  a.lr = c.lr;
  a.weight_decay = c.weight_decay;
  return a;
}

LinkPrediction::LinkPrediction(const kernels::Resources& res, TemporalShard& shard,
                               const TrainConfig& config, LinkModel& model)
    : m_res(res),
      m_shard(shard),
      m_config(config),
      m_model(model),
      m_split(link_split(shard.num_steps(), config.link)),
      m_params(link_parameters(model)),
      m_optimizer(res, m_params, link_adam(config)) {
  check_config(config, shard.comm->size());
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "train: link prediction runs on the CPU");
  HALO_EXPECTS(shard.comm->size() == 1, "train: link prediction trains in one process");
  HALO_EXPECTS(!config.mini_batch, "train: link prediction trains on whole snapshots");
  HALO_EXPECTS(config.checkpoint.dir.empty(),
               "train: link prediction has no checkpoints yet (checkpoint.dir must be empty)");
  HALO_EXPECTS(model.encoder.config().in_features == shard.num_features,
               "train: the link model was not built for this data's input width");
  const auto start = Clock::now();
  for (std::int64_t t = 0; t < shard.num_steps(); ++t)
    m_steps.push_back({shard.adjacency[static_cast<std::size_t>(t)].view(),
                       shard.degree_bucket[static_cast<std::size_t>(t)]});
  preprocess_time_s = seconds_since(start);
}

void LinkPrediction::embed(std::int64_t t) {
  const std::int64_t w = m_config.link.window;
  const std::span<const nn::TemporalStep<float>> window(m_steps.data() + (t - w),
                                                        static_cast<std::size_t>(w));
  m_model.scorer.prepare(m_model.encoder.forward(window));
}

bool LinkPrediction::train_epoch(std::uint64_t epoch, EpochStats& s,
                                 const Trainer::StepCallback& on_step, Trainer::Partial& at,
                                 const std::function<bool()>& stop) {
  (void)at, (void)stop;  // no checkpoints: an epoch always runs to its end
  const auto start = Clock::now();
  const LinkPredictionConfig& lc = m_config.link;
  double loss_sum = 0;
  std::int64_t steps = 0;
  std::vector<NodeId> src, dst, pool;
  std::vector<std::int8_t> label;
  std::vector<float> logits, d_logits;
  for (std::int64_t t = m_split.train_begin; t < m_split.train_end; ++t) {
    const std::vector<TemporalEdge>& pos = m_shard.targets[static_cast<std::size_t>(t)];
    if (pos.empty()) continue;  // nothing to predict at this step
    src.clear(), dst.clear(), label.clear();
    for (const TemporalEdge& e : pos)
      src.push_back(e.src), dst.push_back(e.dst), label.push_back(1);
    // Negatives from (seed, epoch, step): the same in every run of the seed.
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
    embed(t);
    logits.resize(src.size());
    d_logits.resize(src.size());
    m_model.scorer.score(src, dst, logits);
    const double loss = nn::weighted_logistic_loss<float>(logits, label, lc.positive_weight,
                                                          lc.negative_weight, d_logits);
    if (!std::isfinite(loss))
      throw Error("train: the loss became " + std::string(std::isnan(loss) ? "nan" : "infinite") +
                  " in epoch " + std::to_string(epoch) + ", step " + std::to_string(t) +
                  ": the run diverged (try a lower --lr)");
    m_model.encoder.backward(m_model.scorer.backward(src, dst, d_logits));
    m_optimizer.step(m_res);
    if (on_step) on_step(steps);
    loss_sum += loss;
    ++steps;
  }
  HALO_EXPECTS(steps > 0, "train: no training step has a pair to predict");
  s.train_loss = loss_sum / static_cast<double>(steps);
  s.epoch_time_s = seconds_since(start);
  return true;
}

LinkPrediction::StepMetrics LinkPrediction::score_step(std::int64_t t, bool all_pairs) {
  const std::vector<TemporalEdge>& pos = m_shard.targets[static_cast<std::size_t>(t)];
  StepMetrics m;
  if (pos.empty()) return m;
  embed(t);
  const std::int64_t n = m_shard.num_nodes;
  std::vector<float> row(static_cast<std::size_t>(n)), cand;
  std::vector<std::int8_t> is_pos(static_cast<std::size_t>(n)), cand_pos;
  std::vector<float> all_scores;
  std::vector<std::int8_t> all_pos;
  double mrr_sum = 0;
  std::int64_t rows = 0;
  std::size_t next = 0;  // pos is sorted by source
  for (std::int64_t u = 0; u < n; ++u) {
    const std::size_t first = next;
    while (next < pos.size() && pos[next].src == u) ++next;
    if (first == next && !all_pairs) continue;
    m_model.scorer.score_row(static_cast<NodeId>(u), row);
    std::fill(is_pos.begin(), is_pos.end(), 0);
    for (std::size_t k = first; k < next; ++k) is_pos[static_cast<std::size_t>(pos[k].dst)] = 1;
    cand.clear(), cand_pos.clear();
    for (std::int64_t v = 0; v < n; ++v)
      if (v != u)
        cand.push_back(row[static_cast<std::size_t>(v)]),
            cand_pos.push_back(is_pos[static_cast<std::size_t>(v)]);
    if (first != next) {
      mrr_sum += mean_reciprocal_rank(cand, cand_pos);
      ++rows;
    }
    if (all_pairs) {
      all_scores.insert(all_scores.end(), cand.begin(), cand.end());
      all_pos.insert(all_pos.end(), cand_pos.begin(), cand_pos.end());
    }
  }
  m.mrr = mrr_sum / static_cast<double>(rows);
  if (all_pairs) {
    m.ap = average_precision(all_scores, all_pos);
    m.auc = roc_auc(all_scores, all_pos);
  }
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

Trainer::Evaluation LinkPrediction::evaluate() {
  Trainer::Evaluation e;
  e.train_accuracy = e.val_accuracy = e.test_accuracy = e.val_loss = kNaN;
  e.val_mrr = mean_over_steps(m_split.train_end, m_split.val_end,
                              [&](std::int64_t t) { return score_step(t, false).mrr; });
  // Without validation pairs the last epoch is kept (a MRR of 0 selects nothing over it).
  if (std::isnan(e.val_mrr)) e.val_mrr = 0;
  return e;
}

void LinkPrediction::finish(TrainResult& result) {
  std::vector<StepMetrics> m;
  for (std::int64_t t = m_split.val_end; t < m_split.test_end; ++t)
    m.push_back(score_step(t, true));
  const auto mean = [&](double StepMetrics::*field) {
    return mean_over_steps(0, static_cast<std::int64_t>(m.size()),
                           [&](std::int64_t i) { return m[static_cast<std::size_t>(i)].*field; });
  };
  result.test_mrr = mean(&StepMetrics::mrr);
  result.test_map = mean(&StepMetrics::ap);
  result.test_auc = mean(&StepMetrics::auc);
  result.val_accuracy = result.test_accuracy = kNaN;
}

}  // namespace

Trainer::Trainer(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                 LinkModel& model)
    : m_res(res), m_comm(shard.comm), m_epochs(config.epochs), m_checkpoint(config.checkpoint) {
  m_task = std::make_unique<LinkPrediction>(res, shard, config, model);
}

LinkTrainRun train(const kernels::Resources& res, TemporalShard& shard, const TrainConfig& config,
                   const EpochCallback& on_epoch, const Trainer::StepCallback& on_step) {
  check_config(config, shard.comm->size());
  nn::TemporalModelConfig mc = config.link.model;
  mc.in_features = shard.num_features;
  LinkTrainRun run{
      LinkModel{nn::TemporalModel<float>(res, mc, config.seed),
                nn::PairScorer<float>(res, mc.hidden, config.link.scorer_hidden, config.seed)},
      {}};
  Trainer trainer(res, shard, config, run.model);
  run.result = trainer.run(on_epoch, on_step);
  return run;
}

}  // namespace halo::runtime
