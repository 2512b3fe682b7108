// Link prediction: the ranking metrics against plain definitions (ties included), the split,
// the prepared temporal data, and the task training on a tiny generated temporal graph.
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <set>
#include <vector>

#include <halo/kernels/rng.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>

#include "support/testing.hpp"

namespace halo::runtime {
namespace {

using Scores = std::vector<float>;
using Labels = std::vector<std::int8_t>;

// Plain references, quadratic, straight from the definitions.
double ref_mrr(const Scores& s, const Labels& y) {
  double sum = 0;
  int count = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!y[i]) continue;
    double rank = 1;
    for (std::size_t j = 0; j < s.size(); ++j)
      if (j != i) rank += s[j] > s[i] ? 1.0 : s[j] == s[i] ? 0.5 : 0.0;
    sum += 1 / rank;
    ++count;
  }
  return count ? sum / count : NAN;
}

double ref_ap(const Scores& s, const Labels& y) {
  double total = 0;
  for (auto v : y) total += v;
  std::vector<float> thresholds(s.begin(), s.end());
  std::sort(thresholds.rbegin(), thresholds.rend());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  double ap = 0, prev_recall = 0;
  for (const float t : thresholds) {
    double tp = 0, predicted = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] >= t) predicted += 1, tp += y[i];
    ap += (tp / total - prev_recall) * (tp / predicted);
    prev_recall = tp / total;
  }
  return ap;
}

double ref_auc(const Scores& s, const Labels& y) {
  double wins = 0, pairs = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < s.size(); ++j)
      if (y[i] && !y[j]) pairs += 1, wins += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
  return wins / pairs;
}

TEST(LinkMetrics, HandCheckedValuesWithTies) {
  // Positives at ranks 1 and 3.5 (tied with one negative over ranks 3-4).
  const Scores s = {0.9f, 0.1f, 0.8f, 0.5f, 0.5f};
  const Labels y = {1, 0, 0, 1, 0};
  EXPECT_DOUBLE_EQ(mean_reciprocal_rank(s, y), (1.0 + 1 / 3.5) / 2);
  // Thresholds 0.9 (P 1, R 1/2), 0.8 (no new positive), 0.5 (P 2/4, R 1): AP = 1/2 + 1/2 * 1/2.
  EXPECT_DOUBLE_EQ(average_precision(s, y), 0.75);
  // Positive 0.9 beats all 3 negatives; 0.5 beats 0.1, ties 0.5: (3 + 1.5) / 6.
  EXPECT_DOUBLE_EQ(roc_auc(s, y), 0.75);
  // All tied: every positive takes the mean rank.
  const Scores flat(4, 1.0f);
  EXPECT_DOUBLE_EQ(mean_reciprocal_rank(flat, Labels{1, 0, 0, 0}), 1 / 2.5);
  EXPECT_DOUBLE_EQ(average_precision(flat, Labels{1, 0, 1, 0}), 0.5);
  EXPECT_DOUBLE_EQ(roc_auc(flat, Labels{1, 0, 1, 0}), 0.5);
  EXPECT_TRUE(std::isnan(mean_reciprocal_rank(s, Labels{0, 0, 0, 0, 0})));
  EXPECT_TRUE(std::isnan(average_precision(s, Labels{0, 0, 0, 0, 0})));
  EXPECT_TRUE(std::isnan(roc_auc(s, Labels{1, 1, 1, 1, 1})));
}

TEST(LinkMetrics, MatchPlainDefinitionsOnRandomInputsWithTies) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const int n = 5 + static_cast<int>(seed % 17);
    Scores s(n);
    Labels y(n);
    for (int i = 0; i < n; ++i) {
      // Few distinct values: many ties.
      s[i] = static_cast<float>(kernels::rng::below(seed, 1, i, 4)) * 0.25f;
      y[i] = kernels::rng::below(seed, 2, i, 3) == 0 ? 1 : 0;
    }
    y[0] = 1, y[1] = 0;
    EXPECT_NEAR(mean_reciprocal_rank(s, y), ref_mrr(s, y), 1e-12) << seed;
    EXPECT_NEAR(average_precision(s, y), ref_ap(s, y), 1e-12) << seed;
    EXPECT_NEAR(roc_auc(s, y), ref_auc(s, y), 1e-12) << seed;
  }
}

/// The streamed counts, negatives in any order, give the plain definitions' AP and AUC on
/// inputs with many ties; a score below every positive, only positives, no positive; calls out
/// of order are refused.
TEST(LinkMetrics, RankingCountsEqualTheFunctionsOverTheSameEntries) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const int n = 3 + static_cast<int>(seed % 29);
    Scores s(n);
    Labels y(n);
    for (int i = 0; i < n; ++i) {
      s[i] = static_cast<float>(kernels::rng::below(seed, 3, i, 5)) * 0.25f - 0.5f;
      y[i] = kernels::rng::below(seed, 4, i, 3) == 0 ? 1 : 0;
    }
    if (seed % 5 == 0) std::fill(y.begin(), y.end(), 1);  // no negative
    if (seed % 7 == 0) std::fill(y.begin(), y.end(), 0);  // no positive
    RankingCounts c;
    for (int i = 0; i < n; ++i)
      if (y[i]) c.add_positive(s[i]);
    c.freeze();
    for (int i = n - 1; i >= 0; --i)  // any order
      if (!y[i]) c.add_negative(s[i]);
    const bool any_pos = std::count(y.begin(), y.end(), 1) > 0;
    const bool any_neg = std::count(y.begin(), y.end(), 0) > 0;
    SCOPED_TRACE(seed);
    if (!any_pos) {
      EXPECT_TRUE(std::isnan(c.average_precision()));
    } else {
      EXPECT_NEAR(c.average_precision(), ref_ap(s, y), 1e-12);
    }
    if (!any_pos || !any_neg) {
      EXPECT_TRUE(std::isnan(c.roc_auc()));
    } else {
      EXPECT_NEAR(c.roc_auc(), ref_auc(s, y), 1e-12);
    }
  }
  RankingCounts c;
  EXPECT_THROW(c.add_negative(0.5f), LogicError);
  c.add_positive(0.5f);
  c.freeze();
  EXPECT_THROW(c.add_positive(0.5f), LogicError);
  c.add_negative(-1.0f);  // below every positive
  EXPECT_EQ(c.average_precision(), 1.0);
  EXPECT_EQ(c.roc_auc(), 1.0);
}

TEST(LinkSplit, EvolveGcnProportionsAndErrors) {
  LinkPredictionConfig c;
  const LinkSplit s = link_split(88, c);
  EXPECT_EQ(s.train_begin, 10);
  EXPECT_EQ(s.train_end, 62);
  EXPECT_EQ(s.val_end - s.train_end, 9);
  EXPECT_EQ(s.test_end - s.val_end, 17);
  EXPECT_THROW(link_split(12, c), LogicError);  // 8 training steps for a window of 10
  c.train_fraction = 0.8;
  c.val_fraction = 0.2;
  EXPECT_THROW(link_split(88, c), LogicError);
}

/// A temporal graph whose every step has each leaf (file ids 10, 12, ...) message one of two
/// hubs (file ids 1, 3), plus one noise event: the hubs' degree tells a model where the pairs go.
datasets::TemporalGraph hub_graph(int leaves, int steps) {
  std::vector<datasets::RawTemporalEvent> events;
  for (int t = 0; t < steps; ++t) {
    for (int u = 0; u < leaves; ++u) events.push_back({10 + 2 * u, 1 + 2 * (u % 2), t * 10, 0});
    events.push_back({10 + 2 * static_cast<std::int64_t>(kernels::rng::below(3, 4, t, leaves)),
                      10 + 2 * static_cast<std::int64_t>(kernels::rng::below(3, 5, t, leaves)),
                      t * 10 + 5, 0});
  }
  return datasets::make_temporal_graph(events, false, "hubs");
}

TEST(LinkPredictionTask, PreparesSnapshotsDegreesAndTargets) {
  const datasets::TemporalGraph g = hub_graph(6, 4);
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 4;
  const TemporalShard s = local_temporal_shard(testing::host(), g, sc, 1.0);
  ASSERT_EQ(s.num_steps(), 4);
  EXPECT_EQ(s.num_nodes, 8);
  for (std::int64_t t = 0; t < 4; ++t) {
    // One process: the one part, every node owned by rank 0, nothing to exchange.
    EXPECT_EQ(s.exchange[t]->num_owned(), 8);
    EXPECT_EQ(s.exchange[t]->num_halo(), 0);
    EXPECT_EQ(s.owned[t].size(), 8u);
    EXPECT_EQ(s.owner[t], std::vector<std::int32_t>(8, 0));
    // Every step has the 6 leaf -> hub pairs and their reverses (the noise pair may add two),
    // no self pair, sorted, each pair's reverse present.
    const auto& p = s.targets[t];
    for (const auto& e : p) {
      EXPECT_NE(e.src, e.dst);
      EXPECT_TRUE(std::binary_search(p.begin(), p.end(), datasets::TemporalEdge{e.dst, e.src}));
    }
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
    EXPECT_GE(p.size(), 12u);
    EXPECT_LE(p.size(), 14u);
    // The active nodes, ascending.
    for (std::size_t i = 1; i < s.active[t].size(); ++i)
      EXPECT_LT(s.active[t][i - 1], s.active[t][i]);
  }
  // The first event is leaf 10 -> hub 1: ids 0 and 1. Hub 1 has the 3 even leaves as
  // neighbours (the noise pairs join leaves only).
  EXPECT_GE(s.degree_bucket[0][1], 3);
  EXPECT_EQ(s.num_features,
            1 + *std::max_element(s.degree_bucket.back().begin(), s.degree_bucket.back().end()));
}

/// The neighbour counts of the symmetric graph of the events with time < end, u != v.
std::vector<int> degrees_before(const datasets::TemporalGraph& g, std::int64_t end) {
  std::vector<std::vector<int>> nb(static_cast<std::size_t>(g.num_nodes()));
  for (std::int64_t i = 0; i < g.num_events(); ++i)
    if (g.time[i] < end && g.src[i] != g.dst[i])
      nb[g.src[i]].push_back(g.dst[i]), nb[g.dst[i]].push_back(g.src[i]);
  std::vector<int> d;
  for (auto& n : nb) {
    std::sort(n.begin(), n.end());
    d.push_back(static_cast<int>(std::unique(n.begin(), n.end()) - n.begin()));
  }
  return d;
}

/// One process is the one-part case of the distributed data path: every node owned by rank 0,
/// no halo, and each step's matrix the plain D^-1/2 (A + I) D^-1/2 of the snapshot made
/// symmetric (N(v): the nodes sharing an event with v in the step's span, v itself for a
/// self-loop event, which counts once), over node ids.
TEST(LinkPredictionTask, OneProcessIsTheOnePartOfTheGcnMatrices) {
  std::vector<datasets::RawTemporalEvent> events = {
      {1, 2, 0, 0},  {2, 1, 1, 0},  {2, 3, 2, 0},
      {4, 4, 3, 0},                                  // step 0: a reciprocal pair, a self-loop
      {3, 1, 10, 0}, {5, 6, 11, 0},                  // step 1
      {6, 6, 20, 0}, {1, 5, 21, 0}, {5, 1, 22, 0}};  // step 2; node 7 only later
  events.push_back({7, 2, 35, 0});                   // step 3
  const datasets::TemporalGraph g = datasets::make_temporal_graph(events, false, "small");
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 4;
  sc.window_snapshots = 1;
  const TemporalShard s = local_temporal_shard(testing::host(), g, sc, 1.0);
  const std::int64_t n = g.num_nodes();
  ASSERT_EQ(s.num_steps(), 4);
  const std::vector<std::int64_t> bound = datasets::snapshot_boundaries(g, sc);
  for (std::int64_t t = 0; t < 4; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    std::vector<std::set<std::int64_t>> nb(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < g.num_events(); ++i)
      if (g.time[i] >= bound[t] && g.time[i] < bound[t + 1])
        nb[g.src[i]].insert(g.dst[i]), nb[g.dst[i]].insert(g.src[i]);
    const kernels::CsrView<kernels::NodeId, float> a = s.exchange[t]->owned_block();
    ASSERT_EQ(a.num_rows, n);
    EXPECT_EQ(s.exchange[t]->num_halo(), 0);
    EXPECT_EQ(s.owner[t], std::vector<std::int32_t>(static_cast<std::size_t>(n), 0));
    for (std::int64_t v = 0; v < n; ++v) {
      const auto hat = [&](std::int64_t u) {  // |N(u) with u|
        std::set<std::int64_t> x = nb[u];
        x.insert(u);
        return static_cast<double>(x.size());
      };
      std::set<std::int64_t> row = nb[v];
      row.insert(v);
      std::vector<std::pair<std::int64_t, double>> got;
      for (std::int64_t k = a.indptr[v]; k < a.indptr[v + 1]; ++k)
        got.emplace_back(a.indices[k], a.values[k]);
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got.size(), row.size()) << "node " << v;
      std::size_t k = 0;
      for (const std::int64_t u : row) {
        EXPECT_EQ(got[k].first, u) << "node " << v;
        EXPECT_NEAR(got[k].second, 1 / std::sqrt(hat(v) * hat(u)), 1e-6) << "node " << v;
        ++k;
      }
      EXPECT_EQ(s.degree_bucket[t][v], static_cast<std::int32_t>(nb[v].size())) << "node " << v;
    }
  }
}

TEST(LinkPredictionTask, CapsDegreeBucketsAtWhatTrainingReads) {
  // A star growing by one leaf per step: under cumulative snapshots the hub's degree at the
  // last steps exceeds every degree training reads; its bucket is capped, not a new column.
  std::vector<datasets::RawTemporalEvent> events;
  for (int t = 0; t < 10; ++t) events.push_back({100 + t, 0, t * 10, 0});
  const datasets::TemporalGraph g = datasets::make_temporal_graph(events, false, "growing");
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 10;
  const TemporalShard s = local_temporal_shard(testing::host(), g, sc, 0.5);
  ASSERT_EQ(s.num_steps(), 10);
  // Training predicts steps < round(0.5 * 10) = 5 and reads snapshots 0 .. 3.
  const std::vector<int> read = degrees_before(g, 40);
  const int cap = *std::max_element(read.begin(), read.end());
  EXPECT_EQ(s.num_features, cap + 1);
  for (std::int64_t t = 0; t < 10; ++t) {
    const std::vector<int> raw = degrees_before(g, (t + 1) * 10);
    for (std::int64_t v = 0; v < s.num_nodes; ++v)
      EXPECT_EQ(s.degree_bucket[t][v], std::min(raw[v], cap)) << "step " << t << " node " << v;
  }
  EXPECT_GT(degrees_before(g, 100)[1], cap);  // node 1 is the hub (leaf 100 comes first)
  // Every snapshot sets the width without a training share.
  EXPECT_EQ(local_temporal_shard(testing::host(), g, sc, 1.0).num_features, 11);
}

TEST(LinkPredictionTask, SamplesNegativesFromPositiveSourcesAndTheWindowsNodes) {
  // Source 2 has 3 of the 4 positives: 3 in 4 negatives start there.
  const std::vector<datasets::TemporalEdge> pos = {{2, 5}, {2, 6}, {2, 7}, {4, 5}};
  // 9 active in two snapshots; 5 makes a positive with both sources (redrawn either way).
  const std::vector<kernels::NodeId> pool = {1, 3, 5, 8, 9, 9};
  std::vector<kernels::NodeId> src, dst, src2, dst2;
  const std::uint64_t count = 4000;
  sample_negatives(pos, pool, 10, 77, count, src, dst);
  sample_negatives(pos, pool, 10, 77, count, src2, dst2);
  ASSERT_EQ(src.size(), count);
  EXPECT_EQ(src, src2);
  EXPECT_EQ(dst, dst2);
  std::vector<int> from(10), to(10);
  for (std::size_t i = 0; i < src.size(); ++i) {
    ++from[src[i]], ++to[dst[i]];
    EXPECT_NE(src[i], dst[i]);
    EXPECT_FALSE(
        std::binary_search(pos.begin(), pos.end(), datasets::TemporalEdge{src[i], dst[i]}));
  }
  EXPECT_EQ(from[2] + from[4], static_cast<int>(count));
  EXPECT_NEAR(from[2] / double(count), 0.75, 0.03);
  EXPECT_EQ(to[1] + to[3] + to[8] + to[9], static_cast<int>(count));
  EXPECT_NEAR(to[9] / double(count), 0.4, 0.03);  // 2 of the 5 allowed entries
  // An empty pool draws from every node.
  src.clear(), dst.clear();
  sample_negatives(pos, {}, 10, 78, 400, src, dst);
  EXPECT_GT(*std::max_element(dst.begin(), dst.end()), 7);
  EXPECT_THROW(sample_negatives({}, pool, 10, 1, 1, src, dst), LogicError);
}

TEST(LinkPredictionTask, NegativesNeverRepeatAPositiveOrAPairOfOneNode) {
  // The pool holds the positives' endpoints only: every draw from source 0 is the self pair
  // (0, 0) or the positive (0, 1); from source 1, (1, 0) or (1, 1). Nothing is left to keep.
  const std::vector<datasets::TemporalEdge> pos = {{0, 1}, {1, 0}};
  std::vector<kernels::NodeId> src, dst;
  sample_negatives(pos, std::vector<kernels::NodeId>{0, 1}, 4, 5, 100, src, dst);
  EXPECT_TRUE(src.empty());
  EXPECT_TRUE(dst.empty());
  // One node more (2): the negatives kept are exactly the valid pairs (0, 2) and (1, 2); the
  // draws that found one within their 8 tries are most of them, the others are left out.
  sample_negatives(pos, std::vector<kernels::NodeId>{0, 1, 2}, 4, 6, 400, src, dst);
  ASSERT_EQ(src.size(), dst.size());
  EXPECT_GT(src.size(), 300u);
  EXPECT_LE(src.size(), 400u);
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(dst[i], 2) << i;
}

TEST(LinkPredictionTask, RepeatedStepsArePredictedNearlyPerfectly) {
  // Two stars of 3 and 6 leaves, every edge again at every step, and two nodes seen in the
  // first step only: step t + 1 repeats step t, so a correct scorer, labels and metric give
  // MRR and AUC near 1 (a sign, label or indexing bug would not).
  std::vector<datasets::RawTemporalEvent> events = {{50, 51, 0, 0}};
  for (int t = 0; t < 12; ++t)
    for (int l = 0; l < 9; ++l) events.push_back({10 + l, l < 3 ? 1 : 2, t * 10 + 1, 0});
  const datasets::TemporalGraph g = datasets::make_temporal_graph(events, false, "stars");
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 12;
  sc.window_snapshots = 1;
  TrainConfig config;
  config.epochs = 40;
  config.lr = 0.02;
  config.weight_decay = 0;
  config.seed = 1;
  config.link.window = 2;
  config.link.negatives = 5;
  config.link.model.hidden = 8;
  config.link.scorer_hidden = 16;
  config.link.train_fraction = 0.6;
  config.link.val_fraction = 0.1;
  TemporalShard shard = local_temporal_shard(testing::host(), g, sc, 0.6);
  for (const auto kind : {nn::TemporalKind::EvolveGcnO, nn::TemporalKind::Gcrn}) {
    SCOPED_TRACE(nn::to_string(kind));
    config.link.model.kind = kind;
    const TrainResult r = train(testing::host(), shard, config).result;
    // The best MRR: 1 for a leaf's row; a hub's row ranks its k leaves together, unfiltered,
    // at best the mean of 1/1 .. 1/k.
    const auto best_hub = [](int k) {
      double sum = 0;
      for (int i = 1; i <= k; ++i) sum += 1.0 / i;
      return sum / k;
    };
    EXPECT_GT(r.metrics.at("test_mrr"), 0.97 * (9 + best_hub(3) + best_hub(6)) / 11);
    EXPECT_GT(r.metrics.at("test_auc"), 0.95);
    EXPECT_GT(r.metrics.at("test_map"), 0.8);
  }
}

/// The hub graph of 8 leaves over 14 one-step snapshots, one process.
TemporalShard hub_shard() {
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 14;
  sc.window_snapshots = 1;
  return local_temporal_shard(testing::host(), hub_graph(8, 14), sc, 0.6);  // hub_config's
}

/// A small model trained briefly on hub_shard().
TrainConfig hub_config(int epochs, std::uint64_t seed) {
  TrainConfig config;
  config.epochs = epochs;
  config.lr = 0.02;
  config.weight_decay = 0;
  config.seed = seed;
  config.link.window = 3;
  config.link.negatives = 4;
  config.link.model.hidden = 6;
  config.link.scorer_hidden = 8;
  config.link.train_fraction = 0.6;
  config.link.val_fraction = 0.2;
  return config;
}

TEST(LinkPredictionTask, TrainsOnATinyTemporalGraphAndReplaysFromItsSeed) {
  TemporalShard shard = hub_shard();
  TrainConfig config = hub_config(25, 3);
  for (const auto kind : {nn::TemporalKind::EvolveGcnO, nn::TemporalKind::Gcrn}) {
    SCOPED_TRACE(nn::to_string(kind));
    config.link.model.kind = kind;
    const LinkTrainRun a = train(testing::host(), shard, config);
    const TrainResult& r = a.result;
    ASSERT_EQ(r.history.size(), 25u);
    EXPECT_LT(r.history.back().train_loss, 0.8 * r.history.front().train_loss);
    // The leaf -> hub pairs outrank the others (a leaf's two hub candidates look alike).
    EXPECT_GT(r.metrics.at("test_auc"), 0.8);
    EXPECT_GT(r.metrics.at("test_mrr"), 0.3);
    EXPECT_GT(r.metrics.at("test_map"), 0.3);
    config.epochs = 2;
    const LinkTrainRun b = train(testing::host(), shard, config);
    const LinkTrainRun c = train(testing::host(), shard, config);
    EXPECT_EQ(b.result.final_train_loss, c.result.final_train_loss);
    EXPECT_EQ(b.result.metrics.at("test_mrr"), c.result.metrics.at("test_mrr"));
    config.epochs = 25;
  }
}

// embed_link gives what the scorer ranks: per test step, the trained scorer on its embeddings,
// every source with a positive ranking every other node (the plain MRR above), reproduces the
// step's MRR predict_link reports; every step from the window to the series' end has rows.
TEST(LinkPredictionTask, EmbeddingsAreWhatTheScorerRanks) {
  TemporalShard shard = hub_shard();
  const TrainConfig config = hub_config(5, 3);
  LinkTrainRun run = train(testing::host(), shard, config);
  const LinkPredictionResult p = predict_link(testing::host(), shard, config, run.model);
  ASSERT_FALSE(p.test_steps.empty());
  const std::int64_t n = shard.num_nodes;
  for (const auto& row : p.test_steps) {
    const auto t = static_cast<std::int64_t>(row[0]);
    SCOPED_TRACE(t);
    const kernels::Tensor<float> e = embed_link(testing::host(), shard, config, run.model, t);
    ASSERT_EQ(e.rows(), n);
    ASSERT_EQ(e.cols(), config.link.model.hidden);
    run.model.scorer.prepare(e);
    double sum = 0;
    int rows = 0;
    std::vector<float> scores(static_cast<std::size_t>(n));
    for (std::int64_t u = 0; u < n; ++u) {
      Labels positive(static_cast<std::size_t>(n), 0);
      bool any = false;
      for (const auto& x : shard.targets[static_cast<std::size_t>(t)])
        if (x.src == u) positive[static_cast<std::size_t>(x.dst)] = 1, any = true;
      if (!any) continue;
      run.model.scorer.score_row(static_cast<kernels::NodeId>(u), scores);
      Scores s;
      Labels y;
      for (std::int64_t v = 0; v < n; ++v)
        if (v != u)
          s.push_back(scores[static_cast<std::size_t>(v)]),
              y.push_back(positive[static_cast<std::size_t>(v)]);
      sum += ref_mrr(s, y);
      ++rows;
    }
    EXPECT_NEAR(sum / rows, row[1], 1e-12);
    // MAP and AUC over every ordered pair u != v, from the plain definitions.
    Scores all;
    Labels all_y;
    for (std::int64_t u = 0; u < n; ++u) {
      run.model.scorer.score_row(static_cast<kernels::NodeId>(u), scores);
      for (std::int64_t v = 0; v < n; ++v) {
        if (v == u) continue;
        all.push_back(scores[static_cast<std::size_t>(v)]);
        const auto& p = shard.targets[static_cast<std::size_t>(t)];
        all_y.push_back(
            std::binary_search(p.begin(), p.end(),
                               datasets::TemporalEdge{static_cast<kernels::NodeId>(u),
                                                      static_cast<kernels::NodeId>(v)}));
      }
    }
    EXPECT_NEAR(ref_ap(all, all_y), row[2], 1e-12);
    EXPECT_NEAR(ref_auc(all, all_y), row[3], 1e-12);
  }
  EXPECT_EQ(embed_link(testing::host(), shard, config, run.model, shard.num_steps()).rows(), n);
  EXPECT_THROW(embed_link(testing::host(), shard, config, run.model, config.link.window - 1),
               LogicError);
}

TEST(LinkPredictionTask, RefusesAShardPreparedForAnotherTrainingShare) {
  // A shard whose degree cap saw every snapshot (share 1) under a run that trains on 0.6: its
  // validation and test degrees would leak into the input width.
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 14;
  sc.window_snapshots = 1;
  TemporalShard all = local_temporal_shard(testing::host(), hub_graph(8, 14), sc, 1.0);
  try {
    train(testing::host(), all, hub_config(1, 1));
    ADD_FAILURE() << "a shard of another training share was trained on";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("training share"), std::string::npos) << e.what();
  }
}

TEST(LinkPredictionTask, KeepsTheEpochOfBestValidationMapOrMrr) {
  TemporalShard shard = hub_shard();
  TrainConfig config = hub_config(12, 5);
  for (const LinkSelect by : {LinkSelect::Map, LinkSelect::Mrr}) {
    SCOPED_TRACE(to_string(by));
    config.link.select_by = by;
    const TrainResult r = train(testing::host(), shard, config).result;
    ASSERT_EQ(r.history.size(), 12u);
    const auto score = [&](const EpochStats& s) {
      return by == LinkSelect::Map ? s.metrics.at("val_map") : s.metrics.at("val_mrr");
    };
    std::size_t best = 0;  // the first epoch of the highest score
    for (std::size_t e = 0; e < r.history.size(); ++e) {
      EXPECT_GE(r.history[e].metrics.at("val_map"), 0.0);
      EXPECT_LE(r.history[e].metrics.at("val_map"), 1.0);
      if (score(r.history[e]) > score(r.history[best])) best = e;
    }
    EXPECT_EQ(r.best_epoch, static_cast<int>(best) + 1);
    EXPECT_EQ(r.metrics.at("val_map"), r.history[best].metrics.at("val_map"));
    EXPECT_EQ(r.metrics.at("val_mrr"), r.history[best].metrics.at("val_mrr"));
  }
  EXPECT_EQ(parse_link_select("map"), LinkSelect::Map);
  EXPECT_EQ(parse_link_select("mrr"), LinkSelect::Mrr);
  EXPECT_THROW(parse_link_select("auc"), LogicError);
}

/// A link run on hub_shard(), and its parameters after it; `stop_at` > 0 requests preemption
/// after that many training snapshots.
struct LinkOutcome {
  TrainResult result;
  std::vector<std::vector<float>> state;
};
LinkOutcome train_link_once(const TrainConfig& config, std::int64_t stop_at = 0) {
  TemporalShard shard = hub_shard();
  nn::TemporalModelConfig mc = config.link.model;
  mc.in_features = shard.num_features;
  LinkModel model{
      nn::TemporalModel<float>(testing::host(), mc, config.seed),
      nn::PairScorer<float>(testing::host(), mc.hidden, config.link.scorer_hidden, config.seed)};
  Trainer trainer(testing::host(), link_prediction(testing::host(), shard, config, model),
                  config.epochs, config.checkpoint);
  std::int64_t steps = 0;
  clear_preemption();
  LinkOutcome o{trainer.run({},
                            [&](std::int64_t) {
                              if (++steps == stop_at) request_preemption();
                            }),
                {}};
  clear_preemption();
  for (auto* p : model.encoder.parameters()) o.state.push_back(p->value.to_vector(testing::host()));
  for (auto* p : model.scorer.parameters()) o.state.push_back(p->value.to_vector(testing::host()));
  return o;
}

// A link-prediction run stopped by a signal between two training snapshots of an epoch, or
// between two epochs, and resumed from its checkpoint ends as the uninterrupted run: the losses,
// the validation and test metrics, the kept epoch and the parameters, bit for bit (Adam's
// moments and step count restored; the negatives keyed by epoch and snapshot). EvolveGCN-O and
// GCRN.
TEST(LinkPredictionTask, ResumeAfterACheckpointEqualsAnUninterruptedRun) {
  for (const auto kind : {nn::TemporalKind::EvolveGcnO, nn::TemporalKind::Gcrn}) {
    TrainConfig config = hub_config(4, 11);
    config.link.model.kind = kind;
    const LinkOutcome whole = train_link_once(config);
    const std::int64_t per_epoch = whole.result.batches_per_epoch;
    ASSERT_GT(per_epoch, 2);
    for (const std::int64_t stop_at : {per_epoch + 2, 2 * per_epoch}) {
      SCOPED_TRACE(nn::to_string(kind) + " stopped after " + std::to_string(stop_at) + " steps");
      halo::testing::TempDir tmp;
      TrainConfig first = config;
      first.checkpoint.dir = tmp.path() / "ck";
      const LinkOutcome cut = train_link_once(first, stop_at);
      ASSERT_TRUE(cut.result.preempted);
      EXPECT_EQ(static_cast<std::int64_t>(cut.result.history.size()), stop_at / per_epoch);
      TrainConfig again = first;
      again.checkpoint.resume = true;
      const LinkOutcome resumed = train_link_once(again);
      EXPECT_FALSE(resumed.result.preempted);
      EXPECT_EQ(resumed.result.resumed_from, cut.result.checkpoint);
      EXPECT_EQ(resumed.result.best_epoch, whole.result.best_epoch);
      EXPECT_EQ(resumed.result.metrics, whole.result.metrics);  // test MRR, MAP, AUC included
      ASSERT_EQ(resumed.result.history.size(), whole.result.history.size());
      for (std::size_t e = 0; e < whole.result.history.size(); ++e) {
        EXPECT_EQ(resumed.result.history[e].train_loss, whole.result.history[e].train_loss) << e;
        EXPECT_EQ(resumed.result.history[e].metrics, whole.result.history[e].metrics) << e;
      }
      EXPECT_EQ(resumed.state, whole.state);
    }
  }
}

// A checkpoint of a link run is not resumed by a run of another window (its identity differs).
TEST(LinkPredictionTask, RefusesTheCheckpointOfAnotherConfiguration) {
  halo::testing::TempDir tmp;
  TrainConfig config = hub_config(1, 2);
  config.checkpoint.dir = tmp.path() / "ck";
  ASSERT_FALSE(train_link_once(config).result.checkpoint.empty());
  config.checkpoint.resume = true;
  config.epochs = 2;
  config.link.window = 2;
  try {
    train_link_once(config);
    ADD_FAILURE() << "a checkpoint of another window was resumed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("link.window"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace halo::runtime
