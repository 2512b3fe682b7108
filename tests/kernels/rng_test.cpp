// Counter-based randomness: purity, independence of streams, ranges and uniformity.
#include <array>
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <set>

#include <halo/kernels/rng.hpp>

namespace halo::kernels::rng {
namespace {

constexpr std::uint64_t kDraws = 100000;

/// Pearson's statistic of `counts` against equal expected counts.
template <std::size_t N>
double chi_square(const std::array<std::uint64_t, N>& counts, std::uint64_t total) {
  const double expected = static_cast<double>(total) / N;
  double chi2 = 0;
  for (const std::uint64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
  return chi2;
}
// 9 degrees of freedom: P(chi2 > 27.88) = 0.001. Fixed seeds make this deterministic.
constexpr double kChiSquareBound = 27.88;

TEST(Rng, MixIsSplitMix64) {
  // The first outputs of SplitMix64 seeded with 0 (Steele, Lea, Flood; Vigna's splitmix64.c):
  // mix(z) is one SplitMix64 step from state z.
  EXPECT_EQ(mix(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(mix(0x9E3779B97F4A7C15ull), 0x6E789E6AA1B965F4ull);
}

TEST(Rng, DrawIsPure) {
  for (std::uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(draw(42, 7, i), draw(42, 7, i));
    EXPECT_EQ(uniform(42, 7, i), uniform(42, 7, i));
    EXPECT_EQ(below(42, 7, i, 13), below(42, 7, i, 13));
  }
}

TEST(Rng, StreamsSeedsAndIndicesDiffer) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t seed = 0; seed < 8; ++seed)
    for (std::uint64_t stream = 0; stream < 8; ++stream)
      for (std::uint64_t i = 0; i < 64; ++i) seen.insert(draw(seed, stream, i));
  EXPECT_EQ(seen.size(), 8u * 8u * 64u);
}

TEST(Rng, StreamIdsOfDifferentKeysDiffer) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t kind = kStreamInit; kind <= kStreamShuffle; ++kind)
    for (std::uint64_t a = 0; a < 40; ++a)
      for (std::uint64_t b = 0; b < 40; ++b) seen.insert(stream_id(kind, a, b));
  EXPECT_EQ(seen.size(), 4u * 40u * 40u);
  EXPECT_EQ(stream_id(kStreamDropout, 3), stream_id(kStreamDropout, 3, 0));
}

TEST(Rng, UniformIsInUnitIntervalWith24Bits) {
  double mean = 0;
  for (std::uint64_t i = 0; i < kDraws; ++i) {
    const float u = uniform(1, 2, i);
    ASSERT_GE(u, 0.f);
    ASSERT_LT(u, 1.f);
    ASSERT_EQ(std::floor(u * 16777216.0), u * 16777216.0) << "not a multiple of 2^-24";
    mean += u;
  }
  EXPECT_NEAR(mean / kDraws, 0.5, 0.01);
}

TEST(Rng, UniformDoubleIsInUnitInterval) {
  double mean = 0;
  for (std::uint64_t i = 0; i < kDraws; ++i) {
    const double u = uniform_double(3, 4, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    mean += u;
  }
  EXPECT_NEAR(mean / kDraws, 0.5, 0.01);
}

TEST(Rng, BelowStaysInRange) {
  for (const std::uint64_t n : {1ull, 2ull, 3ull, 7ull, 1000ull, (1ull << 33) + 1, ~0ull}) {
    std::uint64_t largest = 0;
    for (std::uint64_t i = 0; i < 10000; ++i) {
      const std::uint64_t k = below(5, 6, i, n);
      ASSERT_LT(k, n) << "n = " << n;
      largest = k > largest ? k : largest;
    }
    EXPECT_GE(largest, n - n / 8 - 1) << "n = " << n << ": draws do not reach the top";
  }
}

TEST(Rng, UniformPassesChiSquare) {
  std::array<std::uint64_t, 10> counts{};
  for (std::uint64_t i = 0; i < kDraws; ++i) ++counts[static_cast<int>(uniform(11, 12, i) * 10)];
  EXPECT_LT(chi_square(counts, kDraws), kChiSquareBound);
}

TEST(Rng, BelowPassesChiSquare) {
  std::array<std::uint64_t, 10> counts{};
  for (std::uint64_t i = 0; i < kDraws; ++i) ++counts[below(13, 14, i, 10)];
  EXPECT_LT(chi_square(counts, kDraws), kChiSquareBound);
}

TEST(Rng, ChiSquareDetectsBias) {
  // The check above can fail: a generator that favours one bucket by 5% does not pass.
  std::array<std::uint64_t, 10> counts{};
  for (std::uint64_t i = 0; i < kDraws; ++i) {
    const std::uint64_t k = below(13, 14, i, 10);
    ++counts[k == 9 || uniform(15, 16, i) >= 0.05f ? k : 9];
  }
  EXPECT_GT(chi_square(counts, kDraws), kChiSquareBound);
}

}  // namespace
}  // namespace halo::kernels::rng
