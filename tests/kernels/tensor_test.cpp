// Core types: Buffer, Tensor, CsrMatrix, Resources, errors and logging.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/csr.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/tensor.hpp>

#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class TensorOnDevice : public ::testing::Test {};
TYPED_TEST_SUITE(TensorOnDevice, testing::Backends, testing::BackendNames);

TYPED_TEST(TensorOnDevice, FromHostRoundTrips) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const std::vector<double> values{1.5, -2, 3, 4.25, 5, 6};
  const auto t = Tensor<double>::from_host(res, values, 2, 3);
  EXPECT_EQ(t.device(), TypeParam::device);
  EXPECT_EQ(t.rows(), 2);
  EXPECT_EQ(t.cols(), 3);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.bytes(), 6 * sizeof(double));
  EXPECT_EQ(t.to_vector(res), values);
  const auto column = Tensor<std::int32_t>::from_host(res, {7, 8, 9});
  EXPECT_EQ(column.rows(), 3);
  EXPECT_EQ(column.cols(), 1);
  EXPECT_EQ(column.to_vector(res), (std::vector<std::int32_t>{7, 8, 9}));
}

TYPED_TEST(TensorOnDevice, EmptyTensorsWork) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  for (const auto& [rows, cols] : {std::pair{0, 0}, std::pair{0, 5}, std::pair{4, 0}}) {
    auto t = Tensor<float>::zeros(res, rows, cols);
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(t.rows(), rows);
    EXPECT_EQ(t.cols(), cols);
    EXPECT_TRUE(t.to_vector(res).empty());
    EXPECT_TRUE(t.clone(res).empty());
  }
  EXPECT_TRUE(Tensor<float>().empty());
  EXPECT_EQ(Tensor<float>().data(), nullptr);
}

TYPED_TEST(TensorOnDevice, ZerosAreZero) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto t = Tensor<double>::zeros(res, 257, 3);
  EXPECT_EQ(t.to_vector(res), std::vector<double>(std::size_t{257} * 3, 0.0));
}

TYPED_TEST(TensorOnDevice, CloneIsDeep) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto a = Tensor<float>::from_host(res, {1, 2, 3, 4}, 2, 2);
  auto b = a.clone(res);
  EXPECT_NE(a.data(), b.data());
  EXPECT_EQ(b.rows(), 2);
  EXPECT_EQ(b.cols(), 2);
  copy(res, a, Tensor<float>::zeros(res, 2, 2));
  EXPECT_EQ(a.to_vector(res), std::vector<float>(4, 0.f));
  EXPECT_EQ(b.to_vector(res), (std::vector<float>{1, 2, 3, 4}));
}

TYPED_TEST(TensorOnDevice, CopyToMovesBetweenDevices) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto h = testing::random_matrix<float>(5, 7, 3);
  const auto d = testing::to_device(res, h);
  EXPECT_EQ(d.device(), TypeParam::device);
  const auto back = testing::to_host(res, d);
  EXPECT_EQ(back.device(), Device::Cpu);
  EXPECT_EQ(back.to_vector(host()), h.to_vector(host()));
}

TYPED_TEST(TensorOnDevice, MoveTransfersOwnership) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto a = Tensor<double>::from_host(res, {1, 2, 3});
  const double* data = a.data();
  auto b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.to_vector(res), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  auto c = Tensor<double>::from_host(res, {9});
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.to_vector(res), (std::vector<double>{1, 2, 3}));
}

TYPED_TEST(TensorOnDevice, EnsureShapeReallocatesOnlyWhenNeeded) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  Tensor<float> t;
  ensure_shape(res, t, 4, 3);
  EXPECT_EQ(t.rows(), 4);
  EXPECT_EQ(t.cols(), 3);
  EXPECT_EQ(t.device(), TypeParam::device);
  const float* data = t.data();
  ensure_shape(res, t, 4, 3);
  EXPECT_EQ(t.data(), data);
  ensure_shape(res, t, 3, 4);  // same size: reshaped in place
  EXPECT_EQ(t.rows(), 3);
  EXPECT_EQ(t.cols(), 4);
  EXPECT_EQ(t.data(), data);
  ensure_shape(res, t, 2, 5);  // smaller (a smaller mini-batch): kept, capacity unchanged
  EXPECT_EQ(t.numel(), 10);
  EXPECT_EQ(t.data(), data);
  EXPECT_EQ(t.capacity_bytes(), 12 * sizeof(float));
  ensure_shape(res, t, 5, 3);  // larger: new storage
  EXPECT_EQ(t.numel(), 15);
  EXPECT_GE(t.capacity_bytes(), 15 * sizeof(float));
  EXPECT_THROW(t.reshape_within(4, 4), LogicError);
}

TYPED_TEST(TensorOnDevice, CsrCopiesRoundTrip) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto a = testing::random_csr<std::int32_t, float>(9, 6, 2.0, 5, /*weighted=*/true);
  const auto d = testing::to_device(res, a);
  EXPECT_EQ(d.device(), TypeParam::device);
  EXPECT_EQ(d.num_rows(), 9);
  EXPECT_EQ(d.num_cols, 6);
  EXPECT_EQ(d.num_edges(), a.num_edges());
  const auto c = d.clone(res);
  EXPECT_EQ(c.indptr.to_vector(res), a.indptr.to_vector(host()));
  EXPECT_EQ(c.indices.to_vector(res), a.indices.to_vector(host()));
  EXPECT_EQ(c.values.to_vector(res), a.values.to_vector(host()));
}

TEST(Tensor, FromHostRejectsWrongSize) {
  EXPECT_THROW(Tensor<float>::from_host(host(), {1, 2, 3}, 2, 2), LogicError);
  EXPECT_THROW(Tensor<float>(host(), -1, 2), LogicError);
}

// Resident 4 KiB pages of [p, p + bytes): mincore over the pages the range covers.
std::int64_t resident_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const std::uintptr_t last = reinterpret_cast<std::uintptr_t>(p) + bytes;
  std::vector<unsigned char> in((last - first + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(first), last - first, in.data()) != 0) return -1;
  std::int64_t n = 0;
  for (const unsigned char c : in) n += c & 1;
  return n;
}

// A capacity (reserve: a mini-batch envelope) is filled partly; with huge pages the first row
// written would make 2 MiB resident, which the memory plan does not count. Its pages stay small:
// writing one row makes one page resident, not 512.
TEST(Tensor, ReservedCapacityKeepsSmallPages) {
  {
    // Where a whole-use buffer gets no huge pages either (THP off; a sanitizer's allocator),
    // there is nothing to tell apart.
    Tensor<float> whole(host(), std::int64_t{8} << 20);
    whole(0) = 1.f;
    if (resident_pages(whole.data(), whole.capacity_bytes()) < 512)
      GTEST_SKIP() << "no transparent huge pages for this process's buffers";
  }
  Tensor<float> t;
  reserve(host(), t, std::int64_t{8} << 20);  // 32 MiB
  ensure_shape(host(), t, 1, 16);
  for (std::int64_t c = 0; c < 16; ++c) t(0, c) = 1.f;
  const std::int64_t resident = resident_pages(t.data(), t.capacity_bytes());
  ASSERT_GE(resident, 1);
  EXPECT_LE(resident, 4) << "a partly filled capacity became resident in huge pages";
}

TEST(Tensor, CopyRejectsShapeMismatch) {
  auto dst = Tensor<float>::zeros(host(), 2, 3);
  const auto src = Tensor<float>::zeros(host(), 3, 2);
  EXPECT_THROW(copy(host(), dst, src), LogicError);
}

TEST(Tensor, ViewsMatchLayout) {
  auto t = testing::host_tensor<float>({0, 1, 2, 3, 4, 5}, 2, 3);
  const MatrixView<float> v = t.view();
  EXPECT_EQ(v.size(), 6);
  EXPECT_EQ(v(1, 2), 5.f);
  EXPECT_EQ(v.row(1)[0], 3.f);
  EXPECT_EQ(t(1, 1), 4.f);
  const Span<const float> s = t.span();
  EXPECT_EQ(s.size, 6);
  EXPECT_EQ(s[4], 4.f);
}

TEST(Tensor, CsrViewOfUnweightedMatrixHasUnitValues) {
  const auto a = testing::random_csr<std::int64_t, double>(20, 20, 3.0, 1);
  const auto v = a.view();
  EXPECT_EQ(v.values, nullptr);
  EXPECT_EQ(v.num_edges(), a.num_edges());
  ASSERT_GT(a.num_edges(), 0);
  EXPECT_EQ(v.value(0), 1.0);
  EXPECT_EQ(v.degree(1), 0);  // random_csr promises row 1 is empty
  EXPECT_EQ((CsrMatrix<std::int32_t, float>{}.num_rows()), 0);
}

TEST(Tensor, FeatureMatrixShapes) {
  FeatureMatrix<float> dense = testing::random_matrix<float>(4, 3, 1);
  FeatureMatrix<float> sparse = testing::random_csr<std::int32_t, float>(5, 7, 2.0, 1, true);
  EXPECT_EQ(num_rows(dense), 4);
  EXPECT_EQ(num_cols(dense), 3);
  EXPECT_EQ(num_rows(sparse), 5);
  EXPECT_EQ(num_cols(sparse), 7);
}

TEST(Buffer, MoveLeavesSourceEmpty) {
  Buffer a(host(), Device::Cpu, 100);
  void* data = a.data();
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(data) % 64, 0u);
  Buffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.bytes(), 100u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.bytes(), 0u);      // NOLINT(bugprone-use-after-move)
  Buffer c(host(), Device::Cpu, 8);
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(Buffer(host(), Device::Cpu, 0).data(), nullptr);
}

TEST(Resources, CpuDefaults) {
  const Resources res;
  EXPECT_EQ(res.device(), Device::Cpu);
  EXPECT_GE(res.cpu_exec().num_threads, 1);
  EXPECT_EQ(Resources(Device::Cpu, 3).cpu_exec().num_threads, 3);
  EXPECT_THROW(res.cuda_exec(), LogicError);
  res.synchronize();  // a no-op on the CPU
  Resources moved(Device::Cpu, 2);
  Resources target(Device::Cpu, 5);
  target = std::move(moved);
  EXPECT_EQ(target.cpu_exec().num_threads, 2);
}

// A pinned staging buffer carries data to the device and back with the asynchronous copies; on
// the CPU it is plain memory and the copies are memcpys.
TYPED_TEST(TensorOnDevice, PinnedStagingRoundTripsAsynchronously) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  constexpr std::size_t kCount = 1000;
  PinnedBuffer staging(res, kCount * sizeof(float));
  ASSERT_NE(staging.data(), nullptr);
  EXPECT_EQ(staging.pinned(), res.device() == Device::Cuda);
  auto* h = static_cast<float*>(staging.data());
  for (std::size_t i = 0; i < kCount; ++i) h[i] = static_cast<float>(i) * 0.5f;
  Tensor<float> t(res, static_cast<std::int64_t>(kCount));
  copy_bytes_async(res, t.data(), t.device(), h, Device::Cpu, t.bytes());
  PinnedBuffer back(res, kCount * sizeof(float));
  copy_bytes_async(res, back.data(), Device::Cpu, t.data(), t.device(), t.bytes());
  res.synchronize();
  const auto* b = static_cast<const float*>(back.data());
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(b[i], h[i]) << i;
  PinnedBuffer moved(std::move(back));
  EXPECT_EQ(moved.data(), b);
  EXPECT_EQ(back.data(), nullptr);  // NOLINT(bugprone-use-after-move)
}

// The pool keeps freed memory: once an allocation of some size has been made and freed, making
// it again reserves nothing new; the workspace grows only when asked for more.
TEST(ResourcesCuda, PoolReusesFreedMemoryAndWorkspaceOnlyGrows) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const Resources res(Device::Cuda);
  { Tensor<float> warm(res, 1 << 20); }
  res.synchronize();
  const DeviceMemoryStats before = res.device_memory();
  EXPECT_GE(before.reserved_bytes, std::size_t{4} << 20);
  for (int i = 0; i < 10; ++i) {
    Tensor<float> t(res, 1 << 20);
    zero_bytes(res, t.data(), t.device(), t.bytes());
  }
  res.synchronize();
  EXPECT_EQ(res.device_memory().reserved_bytes, before.reserved_bytes);
  void* w = res.workspace(1000);
  EXPECT_EQ(res.workspace(10), w);
  EXPECT_EQ(res.workspace(1000), w);
  EXPECT_NE(res.workspace(1 << 20), nullptr);
  EXPECT_NE(res.cublas_handle(), nullptr);
  EXPECT_EQ(res.cublas_handle(), res.cublas_handle());
  EXPECT_NE(res.cusparse_handle(), nullptr);
}

TEST(Resources, CpuHasNoDeviceMemoryOrLibraryHandles) {
  const Resources res(Device::Cpu, 1);
  EXPECT_EQ(res.device_memory().reserved_bytes, 0u);
  EXPECT_EQ(res.device_memory().used_bytes, 0u);
  EXPECT_THROW(res.workspace(16), LogicError);
  EXPECT_THROW(res.cublas_handle(), LogicError);
  EXPECT_THROW(res.cusparse_handle(), LogicError);
}

TEST(Resources, MissingGpuDeviceThrows) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device exists";
  EXPECT_THROW({ const Resources cuda(Device::Cuda); }, LogicError);
}

TEST(Error, ExpectsThrowsLogicErrorWithLocation) {
  const int line = __LINE__ + 2;
  try {
    HALO_EXPECTS(1 + 1 == 3, "arithmetic is broken");
    FAIL() << "HALO_EXPECTS did not throw";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("arithmetic is broken"), std::string::npos) << what;
    EXPECT_NE(what.find("1 + 1 == 3"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor_test.cpp:" + std::to_string(line)), std::string::npos) << what;
  }
}

TEST(Error, OpErrorsNameTheirSourceLocation) {
  try {
    (void)Tensor<float>::from_host(host(), {1.f}, 2, 2);
    FAIL() << "from_host did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("size does not match shape"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor.hpp:"), std::string::npos) << what;
  }
}

TEST(Error, RankPrefixesMessages) {
  set_error_rank(3);
  const std::string what = detail::format_error("boom", "", "f.cpp", 7);
  set_error_rank(-1);
  EXPECT_EQ(what, "[rank 3] boom (f.cpp:7)");
  EXPECT_EQ(detail::format_error("boom", "x", "f.cpp", 7), "boom (failed: x at f.cpp:7)");
}

TEST(Error, FailThrowsLogicError) {
  EXPECT_THROW(HALO_FAIL("unsupported"), LogicError);
  EXPECT_THROW(HALO_FAIL("unsupported"), Error);
}

TEST(Log, WarningFailsTheTestWithoutExpectLogs) {
  EXPECT_NONFATAL_FAILURE(HALO_LOG_WARN("disk " << 92 << "% full"), "disk 92% full");
  EXPECT_NONFATAL_FAILURE(HALO_LOG_ERROR("lost rank"), "lost rank");
}

TEST(Log, ExpectLogsCapturesWarnings) {
  testing::ExpectLogs logs("slow");
  HALO_LOG_WARN("slow epoch " << 3);
  HALO_LOG_ERROR("other");
  EXPECT_EQ(logs.messages(), (std::vector<std::string>{"slow epoch 3", "other"}));
}

TEST(Log, ExpectLogsFailsWhenNothingMatches) {
  EXPECT_NONFATAL_FAILURE(
      {
        testing::ExpectLogs logs("needle");
        HALO_LOG_WARN("haystack");
      },
      "needle");
  EXPECT_NONFATAL_FAILURE({ testing::ExpectLogs logs; }, "saw 0");
}

TEST(Log, InfoDoesNotFail) {
  HALO_LOG_INFO("an info line from the kernels test");
  HALO_LOG_DEBUG("a debug line");
}

TEST(Log, LevelFiltersMessages) {
  const LogLevel saved = log_level();
  set_log_level(LogLevel::Error);
  EXPECT_EQ(log_level(), LogLevel::Error);
  EXPECT_FALSE(detail::log_enabled(LogLevel::Warn));
  EXPECT_TRUE(detail::log_enabled(LogLevel::Error));
  HALO_LOG_WARN("dropped: below the level");  // would fail the test if it reached the sink
  set_log_level(saved);
  EXPECT_TRUE(detail::log_enabled(LogLevel::Warn));
}

TEST(Log, RanksAboveZeroLogOnlyWarnings) {
  set_log_rank(2);
  const bool info = detail::log_enabled(LogLevel::Info);
  const bool warn = detail::log_enabled(LogLevel::Warn);
  std::vector<std::string> seen;
  {
    testing::ExpectLogs logs("[rank 2] late");
    HALO_LOG_WARN("late");
    seen = logs.messages();
  }
  set_log_rank(-1);
  EXPECT_FALSE(info);
  EXPECT_TRUE(warn);
  EXPECT_EQ(seen, std::vector<std::string>{"[rank 2] late"});
}

TEST(Log, SinkIsReplaceable) {
  std::vector<std::string> lines;
  LogSink previous = set_log_sink([&](LogLevel, std::string_view m) { lines.emplace_back(m); });
  HALO_LOG_ERROR("to the custom sink");
  set_log_sink(previous);
  EXPECT_EQ(lines, std::vector<std::string>{"to the custom sink"});
}

}  // namespace
}  // namespace halo::kernels
