// The kernel profile: calls are counted only inside a ProfileScope and only on its thread, an op
// calling another counts once as the outer kind, and each call's bytes and FLOPs follow its shape.
#include <gtest/gtest.h>
#include <thread>
#include <vector>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::kernels {
namespace {

std::int64_t total_calls(const OpProfile& p) {
  std::int64_t n = 0;
  for (const OpCounters& c : p.ops) n += c.calls;
  return n;
}

TEST(Profile, CountsOnlyInsideTheScopeOfItsThread) {
  const Resources res(Device::Cpu, 1);
  std::vector<float> x(64, -1.f), y(64);
  const Span<const float> in{x.data(), 64};
  const Span<float> out{y.data(), 64};
  OpProfile p;
  relu(res, in, out);  // no scope: not counted
  {
    const ProfileScope scope(&p);
    relu(res, in, out);
    std::thread other([&] { relu(res, in, out); });  // another thread: not counted
    other.join();
    {
      OpProfile inner;
      const ProfileScope nested(&inner);
      relu(res, in, out);
      EXPECT_EQ(inner[Op::Elementwise].calls, 1);
    }
    relu(res, in, out);  // the outer profile again
  }
  relu(res, in, out);
  EXPECT_EQ(p[Op::Elementwise].calls, 2);
  EXPECT_EQ(total_calls(p), 2);
  EXPECT_DOUBLE_EQ(p[Op::Elementwise].bytes, 2 * 64 * 2 * 4.0);  // read and write, 4 bytes
  EXPECT_GE(p[Op::Elementwise].seconds, 0);
}

TEST(Profile, GemmCountsItsShapeAndNestedKernelsOnce) {
  const Resources res(Device::Cpu, 1);
  const std::int64_t m = 3, n = 5, k = 7;
  std::vector<float> a(m * k, 1.f), b(k * n, 1.f), c(m * n, 0.f);
  OpProfile p;
  {
    const ProfileScope scope(&p);
    gemm(res, Trans::No, Trans::No, 1.f, MatrixView<const float>{a.data(), m, k},
         MatrixView<const float>{b.data(), k, n}, 1.f, MatrixView<float>{c.data(), m, n});
    // k = 0 makes gemm fill its output: one gemm call, no element-wise one.
    gemm(res, Trans::No, Trans::No, 1.f, MatrixView<const float>{a.data(), m, 0},
         MatrixView<const float>{b.data(), 0, n}, 0.f, MatrixView<float>{c.data(), m, n});
  }
  EXPECT_EQ(c[0], 0.f);
  EXPECT_EQ(p[Op::Gemm].calls, 2);
  EXPECT_EQ(p[Op::Elementwise].calls, 0);
  EXPECT_DOUBLE_EQ(p[Op::Gemm].flops, 2.0 * m * n * k);
  // A, B and C read and C written (beta = 1), then C written (beta = 0, k = 0).
  EXPECT_DOUBLE_EQ(p[Op::Gemm].bytes, 4.0 * (m * k + k * n + 2 * m * n) + 4.0 * (m * n));
}

TEST(Profile, SpmmReadsOneInputRowPerEntry) {
  const Resources res(Device::Cpu, 1);
  // 2 x 3, entries (0,0) (0,2) (1,1), unweighted; 4 columns.
  std::vector<std::int64_t> indptr = {0, 2, 3};
  std::vector<std::int32_t> indices = {0, 2, 1};
  const CsrView<std::int32_t, float> a{indptr.data(), indices.data(), nullptr, 2, 3, false, 3};
  std::vector<float> x(3 * 4, 1.f), y(2 * 4);
  OpProfile p;
  {
    const ProfileScope scope(&p);
    spmm(res, a, MatrixView<const float>{x.data(), 3, 4}, MatrixView<float>{y.data(), 2, 4});
  }
  EXPECT_EQ(y[0], 2.f);
  EXPECT_EQ(p[Op::Spmm].calls, 1);
  EXPECT_DOUBLE_EQ(p[Op::Spmm].flops, 2.0 * 3 * 4);
  // indptr (3 x 8 bytes) + indices (3 x 4) + 3 input rows of 4 floats + 2 output rows.
  EXPECT_DOUBLE_EQ(p[Op::Spmm].bytes, 3 * 8.0 + 3 * 4.0 + 3 * 16.0 + 2 * 16.0);
}

}  // namespace
}  // namespace halo::kernels
