// Tests of the synthetic stochastic-block-model generator.

#include <cmath>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

const kernels::Tensor<float>& dense(const Dataset& ds) {
  return std::get<kernels::Tensor<float>>(ds.features);
}

double measured_homophily(const Dataset& ds) {
  std::int64_t same = 0;
  for (std::int64_t r = 0; r < ds.num_nodes(); ++r) {
    for (std::int64_t e = ds.graph.indptr(r); e < ds.graph.indptr(r + 1); ++e) {
      same += ds.labels(r) == ds.labels(ds.graph.indices(e)) ? 1 : 0;
    }
  }
  return static_cast<double>(same) / static_cast<double>(ds.graph.num_edges());
}

TEST(Synthetic, SizesAsConfigured) {
  const SyntheticConfig config;  // 2000 nodes, 8 classes, degree 10, 64 features
  const Dataset ds = make_synthetic(cpu(), config);
  EXPECT_NO_THROW(validate(ds));
  EXPECT_EQ(ds.num_nodes(), 2000);
  EXPECT_EQ(ds.num_classes, 8);
  EXPECT_EQ(ds.num_features(), 64);
  EXPECT_EQ(dense(ds).rows(), 2000);
  EXPECT_EQ(ds.train_idx.numel(), 200);
  EXPECT_EQ(ds.val_idx.numel(), 400);
  EXPECT_EQ(ds.test_idx.numel(), 800);
  // avg_degree directed edges per node, less the few duplicate draws merged away.
  const double degree = static_cast<double>(ds.graph.num_edges()) / 2000.0;
  EXPECT_GT(degree, 9.5);
  EXPECT_LE(degree, 10.2);
  std::set<std::int32_t> classes(ds.labels.data(), ds.labels.data() + ds.labels.numel());
  EXPECT_EQ(classes.size(), 8u);
}

TEST(Synthetic, SameSeedSameDataset) {
  SyntheticConfig config;
  config.num_nodes = 9000;  // large enough for the OpenMP paths
  config.num_features = 9;
  config.seed = 42;
  const Dataset a = make_synthetic(cpu(), config);
  const Dataset b = make_synthetic(kernels::Resources(Device::Cpu, 1), config);
  EXPECT_EQ(vec(a.graph.indptr), vec(b.graph.indptr));
  EXPECT_EQ(vec(a.graph.indices), vec(b.graph.indices));
  EXPECT_EQ(vec(dense(a)), vec(dense(b)));
  EXPECT_EQ(vec(a.labels), vec(b.labels));
  EXPECT_EQ(vec(a.train_idx), vec(b.train_idx));
  EXPECT_EQ(vec(a.val_idx), vec(b.val_idx));
  EXPECT_EQ(vec(a.test_idx), vec(b.test_idx));
}

TEST(Synthetic, DifferentSeedDifferentDataset) {
  SyntheticConfig config;
  config.num_nodes = 500;
  const Dataset a = make_synthetic(cpu(), config);
  config.seed = 1;
  const Dataset b = make_synthetic(cpu(), config);
  EXPECT_NE(vec(a.labels), vec(b.labels));
  EXPECT_NE(vec(a.graph.indices), vec(b.graph.indices));
  EXPECT_NE(vec(dense(a)), vec(dense(b)));
  EXPECT_NE(vec(a.train_idx), vec(b.train_idx));
}

TEST(Synthetic, GraphIsSymmetricWithoutLoopsOrDuplicates) {
  SyntheticConfig config;
  config.num_nodes = 700;
  config.avg_degree = 31;  // dense enough for repeated draws
  const Dataset ds = make_synthetic(cpu(), config);
  const auto rows = rows_of(ds.graph);
  EXPECT_EQ(rows_of(symmetrize(cpu(), ds.graph)), rows);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t k = 0; k < rows[r].size(); ++k) {
      EXPECT_NE(rows[r][k].first, static_cast<int>(r));
      if (k > 0) {
        EXPECT_LT(rows[r][k - 1].first, rows[r][k].first) << "row " << r;
      }
    }
  }
  EXPECT_TRUE(ds.graph.values.empty());
}

TEST(Synthetic, HomophilyNearConfigured) {
  for (const double h : {0.0, 0.3, 0.8, 1.0}) {
    SyntheticConfig config;
    config.num_nodes = 3000;
    config.num_classes = 5;
    config.homophily = h;
    const Dataset ds = make_synthetic(cpu(), config);
    EXPECT_NEAR(measured_homophily(ds), h, 0.03) << "configured " << h;
  }
}

TEST(Synthetic, SplitsAreDisjointAscendingAndSized) {
  SyntheticConfig config;
  config.num_nodes = 1001;
  config.train_fraction = 0.3;
  config.val_fraction = 0.3;
  config.test_fraction = 0.4;
  const Dataset ds = make_synthetic(cpu(), config);
  EXPECT_EQ(ds.train_idx.numel(), 300);
  EXPECT_EQ(ds.val_idx.numel(), 300);
  EXPECT_EQ(ds.test_idx.numel(), 400);
  std::set<NodeId> all;
  for (const auto* split : {&ds.train_idx, &ds.val_idx, &ds.test_idx}) {
    const auto ids = vec(*split);
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), 1000u);  // disjoint
  EXPECT_NO_THROW(validate(ds));
}

TEST(Synthetic, FeatureClassMeansAreSeparated) {
  SyntheticConfig config;
  config.num_nodes = 4000;
  config.num_classes = 4;
  config.num_features = 33;  // odd: the last Box–Muller pair is half used
  config.feature_signal = 0.5;
  config.feature_noise = 2.0;
  const Dataset ds = make_synthetic(cpu(), config);
  const auto& x = dense(ds);
  const std::int64_t f = x.cols();
  std::vector<std::vector<double>> mean(4, std::vector<double>(static_cast<std::size_t>(f), 0.0));
  std::vector<double> count(4, 0.0);
  for (std::int64_t v = 0; v < ds.num_nodes(); ++v) {
    const auto c = static_cast<std::size_t>(ds.labels(v));
    count[c] += 1.0;
    for (std::int64_t j = 0; j < f; ++j) mean[c][static_cast<std::size_t>(j)] += x(v, j);
  }
  for (std::size_t c = 0; c < 4; ++c) {
    for (double& m : mean[c]) m /= count[c];
    // Every coordinate of a class mean is ±signal up to the standard error 2 / sqrt(1000).
    for (const double m : mean[c]) EXPECT_NEAR(std::fabs(m), 0.5, 0.25);
  }
  for (std::size_t a = 0; a < 4; ++a) {
    for (std::size_t b = a + 1; b < 4; ++b) {
      double d2 = 0.0;
      for (std::size_t j = 0; j < mean[a].size(); ++j) d2 += std::pow(mean[a][j] - mean[b][j], 2);
      EXPECT_GT(std::sqrt(d2), 1.0) << "classes " << a << " and " << b;  // ~ sqrt(33 / 2)
    }
  }
  // The noise has the configured standard deviation.
  double ss = 0.0;
  for (std::int64_t v = 0; v < ds.num_nodes(); ++v) {
    const auto c = static_cast<std::size_t>(ds.labels(v));
    for (std::int64_t j = 0; j < f; ++j)
      ss += std::pow(x(v, j) - mean[c][static_cast<std::size_t>(j)], 2);
  }
  EXPECT_NEAR(std::sqrt(ss / static_cast<double>(x.numel())), 2.0, 0.05);
}

TEST(Synthetic, NoiseFreeFeaturesAreCentroids) {
  SyntheticConfig config;
  config.num_nodes = 200;
  config.feature_noise = 0.0;
  config.feature_signal = 3.0;
  const Dataset ds = make_synthetic(cpu(), config);
  const auto& x = dense(ds);
  std::vector<std::int64_t> first_of_class(8, -1);
  for (std::int64_t v = 0; v < ds.num_nodes(); ++v) {
    auto& first = first_of_class[static_cast<std::size_t>(ds.labels(v))];
    if (first < 0) first = v;
    for (std::int64_t j = 0; j < x.cols(); ++j) {
      ASSERT_EQ(std::fabs(x(v, j)), 3.0f);
      ASSERT_EQ(x(v, j), x(first, j));
    }
  }
}

TEST(Synthetic, TinyConfigurations) {
  SyntheticConfig config;
  config.num_nodes = 1;
  Dataset ds = make_synthetic(cpu(), config);
  EXPECT_EQ(ds.num_nodes(), 1);
  EXPECT_EQ(ds.graph.num_edges(), 0);
  EXPECT_NO_THROW(validate(ds));

  config.num_nodes = 2;
  config.num_classes = 2;
  config.homophily = 1.0;
  ds = make_synthetic(cpu(), config);
  EXPECT_NO_THROW(validate(ds));
  EXPECT_EQ(ds.graph.num_edges(), 2);  // the only possible edge, both directions

  config.num_nodes = 50;
  config.avg_degree = 0;
  config.num_features = 1;
  config.train_fraction = config.val_fraction = config.test_fraction = 0.0;
  ds = make_synthetic(cpu(), config);
  EXPECT_EQ(ds.graph.num_edges(), 0);
  EXPECT_EQ(ds.num_features(), 1);
  EXPECT_EQ(ds.train_idx.numel() + ds.val_idx.numel() + ds.test_idx.numel(), 0);
  EXPECT_NO_THROW(validate(ds));
}

TEST(Synthetic, RejectsInvalidConfigs) {
  const auto expect_rejected = [](auto change, const std::string& fragment) {
    SyntheticConfig config;
    change(config);
    try {
      make_synthetic(cpu(), config);
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_rejected([](SyntheticConfig& c) { c.num_nodes = 0; }, "num_nodes must be in [1,");
  expect_rejected([](SyntheticConfig& c) { c.num_classes = 1; }, "num_classes must be at least 2");
  expect_rejected([](SyntheticConfig& c) { c.avg_degree = -1; }, "avg_degree must be in");
  expect_rejected([](SyntheticConfig& c) { c.avg_degree = std::nan(""); }, "avg_degree must be in");
  expect_rejected([](SyntheticConfig& c) { c.homophily = 1.5; }, "homophily must be in [0, 1]");
  expect_rejected([](SyntheticConfig& c) { c.num_features = 0; }, "num_features must be in");
  expect_rejected([](SyntheticConfig& c) { c.feature_noise = -1; }, "feature_noise must be");
  expect_rejected([](SyntheticConfig& c) { c.feature_signal = INFINITY; }, "feature_signal must");
  expect_rejected([](SyntheticConfig& c) { c.val_fraction = -0.1; }, "fractions must each be in");
  expect_rejected([](SyntheticConfig& c) { c.train_fraction = 0.7; }, "must sum to at most 1");
}

TEST(Synthetic, ScalesToArxivShape) {
  SyntheticConfig config;  // ogbn-arxiv: 169,343 nodes, ~2.3M directed edges, 128 features
  config.num_nodes = 169343;
  config.num_classes = 40;
  config.avg_degree = 13.7;
  config.num_features = 128;
  const Dataset ds = make_synthetic(cpu(), config);
  EXPECT_GT(ds.graph.num_edges(), 2250000);
  EXPECT_LT(ds.graph.num_edges(), 2330000);
  EXPECT_EQ(dense(ds).numel(), 169343LL * 128);
  const auto a_hat = gcn_normalize<float>(cpu(), ds.graph);
  EXPECT_EQ(a_hat.num_edges(), ds.graph.num_edges() + 169343);
}

}  // namespace
}  // namespace halo::datasets::test
