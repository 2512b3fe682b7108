#pragma once
// Test support: backends as types, seeded random inputs, tolerant comparison, host <-> device
// copies, and the log sink that turns HALO warnings and errors into test failures.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::testing {

using kernels::CsrMatrix;
using kernels::Device;
using kernels::Resources;
using kernels::Tensor;

// Where a test finds the build, the sources, the `halo` program and the datasets: found at run
// time from the test program's own location (the build tree holding it, by its CMakeCache.txt)
// rather than compiled in, so that no test object depends on where the checkout lies and a
// second clone's build reuses them from the compiler cache.

/// The build tree that holds the running test program.
const std::filesystem::path& build_dir();
/// The source tree that build was configured from (CMakeCache.txt's CMAKE_HOME_DIRECTORY).
const std::filesystem::path& source_dir();
/// The directory of the running test program.
const std::filesystem::path& test_program_dir();
/// The `halo` program of that build.
const std::string& halo_binary();
/// The small public datasets of data/*.tar.xz, unpacked by the configuration into <build>/data
/// (the layout of ../shared/datasets: planetoid/cora, heco_acm, collegemsg, karate, ...).
inline std::filesystem::path datasets_dir() { return build_dir() / "data"; }

/// The backends op tests are typed over; `Backend::device` reads like a member of a Resources,
/// hence the lower-case constant.
struct CpuBackend {
  static constexpr Device device = Device::Cpu;  // NOLINT(readability-identifier-naming)
};
struct CudaBackend {
  static constexpr Device device = Device::Cuda;  // NOLINT(readability-identifier-naming)
};
/// The type list of op tests: TYPED_TEST_SUITE(Suite, Backends, BackendNames) names the cases
/// `Suite/Cpu.Name` and `Suite/Cuda.Name`; ctest labels the second kind `cuda`.
using Backends = ::testing::Types<CpuBackend, CudaBackend>;
struct BackendNames {
  template <class Backend>
  static std::string GetName(int /*index*/) {  // NOLINT(readability-identifier-naming): gtest's
    return Backend::device == Device::Cuda ? "Cuda" : "Cpu";
  }
};

/// Skips the current test when `Backend` needs a GPU and none is usable.
#define HALO_SKIP_IF_UNAVAILABLE(Backend)                     \
  do {                                                        \
    if ((Backend::device) == ::halo::kernels::Device::Cuda && \
        ::halo::kernels::cuda_device_count() == 0)            \
      GTEST_SKIP() << "no usable CUDA device";                \
  } while (0)

/// A CPU Resources for building host data (single-threaded; host copies need no threads).
const Resources& host();

/// Resources for running ops on `Backend`. The CPU uses 3 threads so that the OpenMP paths run
/// with a thread count that divides no test size evenly.
template <class Backend>
Resources make_resources() {
  return Resources(Backend::device, /*num_threads=*/3);
}

/// Deep copies onto res's device and back to the host.
template <class T>
Tensor<T> to_device(const Resources& res, const Tensor<T>& t) {
  return t.copy_to(res, res.device());
}
template <class Idx, class T>
CsrMatrix<Idx, T> to_device(const Resources& res, const CsrMatrix<Idx, T>& a) {
  return a.copy_to(res, res.device());
}
template <class T>
Tensor<T> to_host(const Resources& res, const Tensor<T>& t) {
  return t.copy_to(res, Device::Cpu);
}
/// A host tensor holding `values` as a rows x cols matrix (a column vector by default).
template <class T>
Tensor<T> host_tensor(const std::vector<T>& values, std::int64_t rows = -1, std::int64_t cols = 1) {
  if (rows < 0) rows = static_cast<std::int64_t>(values.size());
  return Tensor<T>::from_host(host(), values, rows, cols);
}

/// rows x cols on res's device with every element `value` (NaN to prove an op overwrites).
template <class T>
Tensor<T> filled(const Resources& res, std::int64_t rows, std::int64_t cols, T value) {
  const std::vector<T> values(static_cast<std::size_t>(rows * cols), value);
  return Tensor<T>::from_host(res, values, rows, cols);
}

/// `count` ids in [0, bound) drawn with replacement (repeats likely), a pure function of `seed`.
template <class Idx>
std::vector<Idx> random_ids(std::int64_t count, std::int64_t bound, std::uint64_t seed) {
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamSynthetic, seed, 0x1d5);
  std::vector<Idx> ids(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    ids[i] = static_cast<Idx>(kernels::rng::below(seed, stream, i, bound));
  return ids;
}

/// `count` distinct ids from [0, bound) in shuffled order (a Fisher-Yates prefix).
template <class Idx>
std::vector<Idx> random_distinct_ids(std::int64_t count, std::int64_t bound, std::uint64_t seed) {
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamShuffle, seed, 0xd15);
  std::vector<Idx> all(static_cast<std::size_t>(bound));
  for (std::int64_t i = 0; i < bound; ++i) all[i] = static_cast<Idx>(i);
  for (std::int64_t i = 0; i < count; ++i)
    std::swap(all[i], all[i + kernels::rng::below(seed, stream, i, bound - i)]);
  all.resize(static_cast<std::size_t>(count));
  return all;
}

/// rows x cols host matrix with entries uniform in [-1, 1), a pure function of `seed`.
template <class T>
Tensor<T> random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Tensor<T> t(host(), Device::Cpu, rows, cols);
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamSynthetic, seed, 0x7e57);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = static_cast<T>(2.0 * kernels::rng::uniform_double(seed, stream, i) - 1.0);
  return t;
}

namespace detail {
/// The columns random_csr never uses: the last one and about one in eight of the others.
bool is_isolated_column(std::int64_t c, std::int64_t num_cols, std::uint64_t seed);
/// Rows random_csr leaves empty: row 1 and about one in eight of the others.
bool is_empty_row(std::int64_t r, std::uint64_t seed);
}  // namespace detail

/// A random host CSR matrix: sorted, duplicate-free rows of about `avg_degree` entries, with some
/// empty rows (row 1 always, when it exists) and some columns that no row uses (the last one
/// always, when num_cols >= 2). Weighted matrices get values in [0.25, 1.25); unweighted ones
/// have no values. A pure function of the arguments.
template <class Idx, class T = float>
CsrMatrix<Idx, T> random_csr(std::int64_t num_rows, std::int64_t num_cols, double avg_degree,
                             std::uint64_t seed, bool weighted = false) {
  namespace rng = kernels::rng;
  const auto stream = rng::stream_id(rng::kStreamSynthetic, seed, 0xc5c);
  std::vector<std::int64_t> allowed;
  for (std::int64_t c = 0; c < num_cols; ++c)
    if (!detail::is_isolated_column(c, num_cols, seed)) allowed.push_back(c);
  std::vector<std::int64_t> indptr{0};
  std::vector<Idx> indices;
  std::vector<T> values;
  std::uint64_t counter = 0;
  for (std::int64_t r = 0; r < num_rows; ++r) {
    std::vector<std::int64_t> cols;
    if (!allowed.empty() && !detail::is_empty_row(r, seed)) {
      const auto max_degree = static_cast<std::uint64_t>(2 * avg_degree) + 1;
      const std::uint64_t degree = rng::below(seed, stream, counter++, max_degree);
      for (std::uint64_t k = 0; k < degree; ++k)
        cols.push_back(allowed[rng::below(seed, stream, counter++, allowed.size())]);
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    }
    for (const std::int64_t c : cols) {
      indices.push_back(static_cast<Idx>(c));
      if (weighted) values.push_back(static_cast<T>(0.25 + rng::uniform(seed, stream, counter++)));
    }
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  return {Tensor<std::int64_t>::from_host(host(), indptr), Tensor<Idx>::from_host(host(), indices),
          Tensor<T>::from_host(host(), values), num_cols,
          /*symmetric=*/false};
}

/// A random symmetric n x n host CSR matrix (structure and values, `symmetric` set): random_csr
/// entries mirrored, repeated entries summed, and the nodes random_csr leaves empty (node 1
/// always) isolated: no entry in their row or column.
template <class Idx, class T = float>
CsrMatrix<Idx, T> random_symmetric_csr(std::int64_t n, double avg_degree, std::uint64_t seed,
                                       bool weighted = false) {
  const auto a = random_csr<Idx, T>(n, n, avg_degree / 2, seed, weighted);
  const auto indptr = a.indptr.to_vector(host());
  const auto indices = a.indices.to_vector(host());
  const auto values = a.values.to_vector(host());
  std::vector<std::vector<std::pair<std::int64_t, double>>> rows(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      const auto c = static_cast<std::int64_t>(indices[e]);
      if (detail::is_empty_row(c, seed)) continue;  // keeps c isolated
      const double w = weighted ? double(values[e]) : 1.0;
      rows[r].emplace_back(c, w);
      rows[c].emplace_back(r, w);
    }
  }
  std::vector<std::int64_t> out_indptr{0};
  std::vector<Idx> out_indices;
  std::vector<T> out_values;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first) {
        if (weighted) out_values.back() += static_cast<T>(row[k].second);
        continue;
      }
      out_indices.push_back(static_cast<Idx>(row[k].first));
      if (weighted) out_values.push_back(static_cast<T>(row[k].second));
    }
    out_indptr.push_back(static_cast<std::int64_t>(out_indices.size()));
  }
  return {Tensor<std::int64_t>::from_host(host(), out_indptr),
          Tensor<Idx>::from_host(host(), out_indices), Tensor<T>::from_host(host(), out_values), n,
          /*symmetric=*/true};
}

/// Element-wise |a - b| <= atol + rtol * |b| (b is the expected value); NaN never matches.
/// On failure names the first mismatching index and how many mismatch.
template <class T, class U>
::testing::AssertionResult all_close(const std::vector<T>& a, const std::vector<U>& b, double rtol,
                                     double atol) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure()
           << "sizes differ: got " << a.size() << ", expected " << b.size();
  std::size_t first = a.size();
  std::size_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]);
    const double y = static_cast<double>(b[i]);
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) {
      if (count++ == 0) first = i;
    }
  }
  if (count == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(10);
  os << count << " of " << a.size() << " elements differ; first at index " << first << ": got "
     << static_cast<double>(a[first]) << ", expected " << static_cast<double>(b[first]) << " (rtol "
     << rtol << ", atol " << atol << ")";
  return ::testing::AssertionFailure() << os.str();
}

/// The same for a host tensor against expected host values (compared as flat arrays).
template <class T, class U>
::testing::AssertionResult all_close(const Tensor<T>& a, const std::vector<U>& b, double rtol,
                                     double atol) {
  if (a.device() != Device::Cpu)
    return ::testing::AssertionFailure() << "tensor is not on the host";
  return all_close(a.to_vector(host()), b, rtol, atol);
}

/// Tolerances for comparing an op in T with a reference computed in double.
template <class T>
constexpr double rtol() {
  return sizeof(T) == sizeof(float) ? 1e-4 : 1e-10;
}
template <class T>
constexpr double atol() {
  return sizeof(T) == sizeof(float) ? 1e-5 : 1e-12;
}

/// The name of an element type, for SCOPED_TRACE.
template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  return "?";
}

/// Calls f(T{}) for T in {float, double}, with a trace naming the type.
template <class F>
void for_each_value_type(F&& f) {
  {
    SCOPED_TRACE("T = float");
    f(float{});
  }
  {
    SCOPED_TRACE("T = double");
    f(double{});
  }
}

/// Calls f(Idx{}, T{}) for Idx in {int32, int64} and T in {float, double}.
template <class F>
void for_each_index_and_value_type(F&& f) {
  for_each_value_type([&](auto value) {
    {
      SCOPED_TRACE("Idx = int32");
      f(std::int32_t{}, value);
    }
    {
      SCOPED_TRACE("Idx = int64");
      f(std::int64_t{}, value);
    }
  });
}

/// Allows HALO WARN / ERROR log lines while alive and requires at least one of them to contain
/// `expected` (any message when empty); they are recorded instead of failing the test. Nests.
class ExpectLogs {
 public:
  explicit ExpectLogs(std::string expected = {});
  ~ExpectLogs();
  ExpectLogs(const ExpectLogs&) = delete;
  ExpectLogs& operator=(const ExpectLogs&) = delete;

  /// The WARN / ERROR messages seen so far.
  std::vector<std::string> messages() const;

 private:
  friend void record_log(LogLevel level, std::string_view message);
  std::string m_expected;
  std::vector<std::string> m_messages;
  ExpectLogs* m_outer;
};

/// The test sink: WARN / ERROR lines go to the innermost live ExpectLogs, or else fail the
/// running test; lower levels are written to stderr. Installed by the test main().
void install_log_sink();
void record_log(LogLevel level, std::string_view message);

/// What a command run by `run_command` did: its exit code (-1 if it did not exit normally) and
/// everything it wrote to stdout and stderr.
struct CommandOutcome {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `command` through the shell with stdin from /dev/null, capturing stdout and stderr in
/// files under `scratch` (an existing directory).
CommandOutcome run_command(const std::string& command, const std::filesystem::path& scratch);

/// The whole content of a file, or an empty string when it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// A fresh directory under the system temp directory (named after the test and the process),
/// removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace halo::testing

// The names the tests use for those paths.
#define HALO_TEST_SOURCE_DIR (::halo::testing::source_dir().string())
#define HALO_TEST_BINARY (::halo::testing::halo_binary())
#define HALO_TEST_BINARY_DIR (::halo::testing::test_program_dir().string())
