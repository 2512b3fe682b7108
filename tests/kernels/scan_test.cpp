// The blocked inclusive scan against std::partial_sum.
#include <gtest/gtest.h>
#include <numeric>

#include <halo/kernels/scan.hpp>

#include "support/testing.hpp"

namespace halo::kernels {
namespace {

template <class Backend>
class Scan : public ::testing::Test {};
TYPED_TEST_SUITE(Scan, testing::Backends, testing::BackendNames);

// Block sizes of one entry, one that divides no length, and one larger than every input; lengths
// from empty to several blocks with a short last one.
TYPED_TEST(Scan, MatchesPartialSum) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  for (const std::int64_t n : {0, 1, 2, 255, 256, 257, 5000}) {
    for (const std::int64_t block : {1, 7, 256, 100000}) {
      SCOPED_TRACE(::testing::Message() << n << " entries, blocks of " << block);
      std::vector<std::int64_t> values(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) values[i] = (i * 7919) % 13 - 3;  // negatives too
      auto a = Tensor<std::int64_t>::from_host(res, values);
      Tensor<std::int64_t> sums(res, std::max<std::int64_t>(1, scan_blocks(n, block)));
      inclusive_scan(res, a.data(), n, sums.data(), block);
      std::vector<std::int64_t> expected(values.size());
      std::partial_sum(values.begin(), values.end(), expected.begin());
      EXPECT_EQ(a.to_vector(res), expected);
    }
  }
}

TEST(Scan, RejectsABadBlockSize) {
  const Resources res(Device::Cpu, 1);
  std::int64_t a[1] = {1}, sums[1] = {0};
  EXPECT_THROW(inclusive_scan(res, a, 1, sums, 0), LogicError);
}

}  // namespace
}  // namespace halo::kernels
