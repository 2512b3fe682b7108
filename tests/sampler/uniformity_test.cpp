// Chi-square tests that the draws are uniform: over neighbours, over k-subsets, and per draw
// with replacement.
//
// Setup: `kCentres` nodes share the same row of d neighbours (ids kCentres .. kCentres+d-1).
// Each centre in each batch is one trial: the draws are keyed by (seed, epoch, batch, hop, node),
// so trials differ in node id or batch key. Critical values are the chi-square quantiles at
// p = 0.001 (a fixed seed makes each test deterministic; the level bounds how unlucky a
// correct sampler's seed would have to be to fail).

#include <cstdint>
#include <gtest/gtest.h>
#include <map>
#include <vector>

#include <halo/sampler/neighbor_sampler.hpp>

#include "sampler/sampler_test_util.hpp"

namespace halo::sampler::test {
namespace {

constexpr NodeId kCentres = 100;

/// Chi-square critical values at p = 0.001 by degrees of freedom.
constexpr double kChi2Df5 = 20.515;
constexpr double kChi2Df9 = 27.877;
constexpr double kChi2Df19 = 43.820;

Graph shared_row_graph(NodeId degree) {
  std::vector<std::vector<NodeId>> rows(static_cast<std::size_t>(kCentres + degree));
  for (NodeId v = 0; v < kCentres; ++v)
    for (NodeId j = 0; j < degree; ++j) rows[static_cast<std::size_t>(v)].push_back(kCentres + j);
  return graph_from_rows(rows);
}

/// Calls f(positions drawn by one centre) for every centre of `num_batches` batches.
template <class F>
void for_each_trial(NodeId degree, int fanout, bool replace, std::uint64_t num_batches, F f) {
  const Graph g = shared_row_graph(degree);
  NeighborSampler s(cpu(), g, kCentres, {{fanout}, replace, /*seed=*/2024});
  std::vector<NodeId> seeds(static_cast<std::size_t>(kCentres));
  for (NodeId v = 0; v < kCentres; ++v) seeds[static_cast<std::size_t>(v)] = v;
  std::vector<NodeId> positions;
  for (std::uint64_t batch = 0; batch < num_batches; ++batch) {
    const Block& b = s.sample(cpu(), span(seeds), /*epoch=*/7, batch).blocks[0];
    for (std::int64_t i = 0; i < b.num_dst(); ++i) {
      positions.clear();
      for (std::int64_t e = b.csr.indptr[i]; e < b.csr.indptr[i + 1]; ++e)
        positions.push_back(b.src_ids[b.csr.indices[e]] - kCentres);
      ASSERT_EQ(static_cast<int>(positions.size()), fanout);
      f(positions);
    }
  }
}

double chi_square(const std::vector<double>& observed, double expected) {
  double x = 0;
  for (double o : observed) x += (o - expected) * (o - expected) / expected;
  return x;
}

// Inclusion frequency of each of 10 neighbours under fanout 3: p = 3/10 per trial. The 10
// counts are not multinomial (each trial includes exactly 3 distinct neighbours), and the
// statistic's mean is d (1 - p) = 7 rather than 9: comparing it with chi-square(9) is
// conservative.
TEST(SamplerUniformity, InclusionFrequencyWithoutReplacement) {
  constexpr NodeId kDegree = 10;
  constexpr std::uint64_t kBatches = 100;  // 10,000 trials, 3,000 expected per neighbour
  std::vector<double> counts(kDegree, 0);
  for_each_trial(kDegree, 3, false, kBatches, [&](const std::vector<NodeId>& p) {
    for (NodeId q : p) ++counts[static_cast<std::size_t>(q)];
  });
  const double trials = kBatches * kCentres;
  EXPECT_LT(chi_square(counts, trials * 3 / kDegree), kChi2Df9);
}

// Every 3-subset of 6 neighbours is equally likely: 20 cells, an exact multinomial test.
TEST(SamplerUniformity, SubsetFrequencyWithoutReplacement) {
  constexpr NodeId kDegree = 6;
  constexpr std::uint64_t kBatches = 120;  // 12,000 trials, 600 expected per subset
  std::map<std::uint32_t, double> counts;
  for (std::uint32_t a = 0; a < kDegree; ++a)
    for (std::uint32_t b = a + 1; b < kDegree; ++b)
      for (std::uint32_t c = b + 1; c < kDegree; ++c) counts[1u << a | 1u << b | 1u << c] = 0;
  ASSERT_EQ(counts.size(), 20u);
  for_each_trial(kDegree, 3, false, kBatches, [&](const std::vector<NodeId>& p) {
    std::uint32_t mask = 0;
    for (NodeId q : p) mask |= 1u << q;
    ASSERT_TRUE(counts.count(mask)) << "not a 3-subset: " << mask;
    ++counts[mask];
  });
  std::vector<double> observed;
  for (const auto& [mask, n] : counts) observed.push_back(n);
  EXPECT_LT(chi_square(observed, kBatches * kCentres / 20.0), kChi2Df19);
}

// With replacement each of the 3 draws is uniform over 6 neighbours, independently: the 6 counts
// of all draws are multinomial.
TEST(SamplerUniformity, DrawFrequencyWithReplacement) {
  constexpr NodeId kDegree = 6;
  constexpr std::uint64_t kBatches = 40;  // 12,000 draws, 2,000 expected per neighbour
  std::vector<double> counts(kDegree, 0);
  bool repeats = false;
  for_each_trial(kDegree, 3, true, kBatches, [&](const std::vector<NodeId>& p) {
    for (NodeId q : p) ++counts[static_cast<std::size_t>(q)];
    repeats = repeats || p[0] == p[1] || p[1] == p[2] || p[0] == p[2];
  });
  EXPECT_TRUE(repeats);
  EXPECT_LT(chi_square(counts, kBatches * kCentres * 3.0 / kDegree), kChi2Df5);
}

}  // namespace
}  // namespace halo::sampler::test
