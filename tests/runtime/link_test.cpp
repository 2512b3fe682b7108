// Link prediction: the ranking metrics against plain definitions (ties included), the split,
// the prepared temporal data, and the task training on a tiny generated temporal graph.
#include <cmath>
#include <gtest/gtest.h>
#include <vector>

#include <halo/kernels/rng.hpp>
#include <halo/runtime/link_prediction.hpp>
#include <halo/runtime/trainer.hpp>

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
  const TemporalShard s = local_temporal_shard(testing::host(), g, sc);
  ASSERT_EQ(s.num_steps(), 4);
  EXPECT_EQ(s.num_nodes, 8);
  for (std::int64_t t = 0; t < 4; ++t) {
    EXPECT_EQ(s.adjacency[t].num_rows(), 8);
    // Every step has the 6 leaf -> hub pairs (the noise pair may add one) and no self pair.
    for (const auto& e : s.targets[t]) EXPECT_NE(e.src, e.dst);
    EXPECT_GE(s.targets[t].size(), 6u);
    EXPECT_LE(s.targets[t].size(), 7u);
  }
  // The first event is leaf 10 -> hub 1: ids 0 and 1. Hub 1 has the 3 even leaves as
  // neighbours (the noise pairs join leaves only).
  EXPECT_GE(s.degree_bucket[0][1], 3);
  EXPECT_EQ(s.num_features,
            1 + *std::max_element(s.degree_bucket.back().begin(), s.degree_bucket.back().end()));
}

TEST(LinkPredictionTask, TrainsOnATinyTemporalGraphAndReplaysFromItsSeed) {
  const datasets::TemporalGraph g = hub_graph(8, 14);
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 14;
  sc.window_snapshots = 1;
  TemporalShard shard = local_temporal_shard(testing::host(), g, sc);
  TrainConfig config;
  config.epochs = 25;
  config.lr = 0.02;
  config.weight_decay = 0;
  config.seed = 3;
  config.link.window = 3;
  config.link.negatives = 4;
  config.link.model.hidden = 6;
  config.link.scorer_hidden = 8;
  config.link.train_fraction = 0.6;
  config.link.val_fraction = 0.2;
  for (const auto kind : {nn::TemporalKind::EvolveGcnO, nn::TemporalKind::Gcrn}) {
    SCOPED_TRACE(nn::to_string(kind));
    config.link.model.kind = kind;
    const LinkTrainRun a = train(testing::host(), shard, config);
    const TrainResult& r = a.result;
    ASSERT_EQ(r.history.size(), 25u);
    EXPECT_LT(r.history.back().train_loss, 0.8 * r.history.front().train_loss);
    // The leaf -> hub pairs outrank the others (a leaf's two hub candidates look alike).
    EXPECT_GT(r.test_auc, 0.8);
    EXPECT_GT(r.test_mrr, 0.3);
    EXPECT_GT(r.test_map, 0.3);
    config.epochs = 2;
    const LinkTrainRun b = train(testing::host(), shard, config);
    const LinkTrainRun c = train(testing::host(), shard, config);
    EXPECT_EQ(b.result.final_train_loss, c.result.final_train_loss);
    EXPECT_EQ(b.result.test_mrr, c.result.test_mrr);
    config.epochs = 25;
  }
}

}  // namespace
}  // namespace halo::runtime
