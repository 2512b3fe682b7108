// Tests of the R-MAT power-law generator.

#include <algorithm>
#include <gtest/gtest.h>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

RmatConfig small_config() {
  RmatConfig c;
  c.scale = 13;  // 8192 nodes: large enough for the OpenMP paths
  c.avg_degree = 8;
  c.num_features = 5;
  c.num_classes = 4;
  c.seed = 7;
  return c;
}

TEST(Rmat, SymmetricSimpleGraphOfTheConfiguredSize) {
  const Dataset ds = make_rmat(cpu(), small_config());
  EXPECT_NO_THROW(validate(ds));
  ASSERT_EQ(ds.num_nodes(), 8192);
  EXPECT_EQ(ds.num_features(), 5);
  EXPECT_EQ(ds.num_classes, 4);
  EXPECT_TRUE(ds.graph.symmetric);
  EXPECT_EQ(ds.train_idx.numel(), 819);
  EXPECT_EQ(ds.val_idx.numel(), 1638);
  EXPECT_EQ(ds.test_idx.numel(), 3276);
  // Plain check of the structure: no self-loops, no duplicates, (r, c) present iff (c, r).
  std::set<std::pair<int, int>> entries;
  for (std::int64_t r = 0; r < ds.num_nodes(); ++r) {
    for (std::int64_t e = ds.graph.indptr(r); e < ds.graph.indptr(r + 1); ++e) {
      const int c = ds.graph.indices(e);
      EXPECT_NE(c, r) << "self-loop";
      EXPECT_TRUE(entries.emplace(static_cast<int>(r), c).second) << "duplicate " << r << "," << c;
    }
  }
  for (const auto& [r, c] : entries) EXPECT_TRUE(entries.count({c, r})) << r << "," << c;
  // At most avg_degree entries per node; duplicates of the skewed draws remove a good share.
  const double degree = static_cast<double>(ds.graph.num_edges()) / 8192.0;
  EXPECT_LE(degree, 8.0);
  EXPECT_GT(degree, 4.0);
}

TEST(Rmat, DegreesFollowAHeavyTail) {
  const Dataset ds = make_rmat(cpu(), small_config());
  std::vector<std::int64_t> degree(static_cast<std::size_t>(ds.num_nodes()));
  std::int64_t isolated = 0;
  for (std::int64_t r = 0; r < ds.num_nodes(); ++r) {
    degree[static_cast<std::size_t>(r)] = ds.graph.indptr(r + 1) - ds.graph.indptr(r);
    isolated += degree[static_cast<std::size_t>(r)] == 0 ? 1 : 0;
  }
  const double mean = static_cast<double>(ds.graph.num_edges()) / 8192.0;
  const auto max = *std::max_element(degree.begin(), degree.end());
  EXPECT_GT(static_cast<double>(max), 20.0 * mean) << "R-MAT hubs";
  EXPECT_GT(isolated, 0) << "R-MAT leaves some nodes without edges";
  // Scrambled ids: the hub is not node 0 and the degree does not decrease with the id.
  std::int64_t first_half = 0;
  for (std::int64_t r = 0; r < 4096; ++r) first_half += degree[static_cast<std::size_t>(r)];
  EXPECT_GT(first_half, ds.graph.num_edges() / 4);
  EXPECT_LT(first_half, 3 * ds.graph.num_edges() / 4);
}

TEST(Rmat, SameSeedSameDatasetOnAnyThreadCount) {
  const RmatConfig config = small_config();
  const Dataset a = make_rmat(cpu(), config);
  const Dataset b = make_rmat(kernels::Resources(Device::Cpu, 1), config);
  EXPECT_EQ(vec(a.graph.indptr), vec(b.graph.indptr));
  EXPECT_EQ(vec(a.graph.indices), vec(b.graph.indices));
  EXPECT_EQ(vec(std::get<kernels::Tensor<float>>(a.features)),
            vec(std::get<kernels::Tensor<float>>(b.features)));
  EXPECT_EQ(vec(a.labels), vec(b.labels));
  EXPECT_EQ(vec(a.train_idx), vec(b.train_idx));
  EXPECT_EQ(vec(a.test_idx), vec(b.test_idx));
  RmatConfig other = config;
  other.seed = 8;
  const Dataset c = make_rmat(cpu(), other);
  EXPECT_NE(vec(a.graph.indices), vec(c.graph.indices));
}

TEST(Rmat, UniformQuadrantsGiveAnErdosRenyiLikeGraph) {
  RmatConfig config = small_config();
  config.a = config.b = config.c = 0.25;
  const Dataset ds = make_rmat(cpu(), config);
  std::int64_t max = 0;
  for (std::int64_t r = 0; r < ds.num_nodes(); ++r)
    max = std::max(max, ds.graph.indptr(r + 1) - ds.graph.indptr(r));
  EXPECT_LT(max, 30) << "no hubs without skew";
  EXPECT_GT(static_cast<double>(ds.graph.num_edges()) / 8192.0, 7.9);
}

TEST(Rmat, RejectsInvalidConfigs) {
  RmatConfig c = small_config();
  c.scale = 0;
  EXPECT_THROW(make_rmat(cpu(), c), LogicError);
  c = small_config();
  c.a = 0.9;
  c.b = 0.2;
  EXPECT_THROW(make_rmat(cpu(), c), LogicError);
  c = small_config();
  c.avg_degree = -1;
  EXPECT_THROW(make_rmat(cpu(), c), LogicError);
  c = small_config();
  c.train_fraction = 0.9;
  c.val_fraction = 0.2;
  EXPECT_THROW(make_rmat(cpu(), c), LogicError);
}

}  // namespace
}  // namespace halo::datasets::test
