#pragma once
// Helpers shared by the datasets tests: hand-built graphs, plain reference views, temp dirs.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/rng.hpp>

#include "support/testing.hpp"

namespace halo::datasets::test {

namespace fs = std::filesystem;
using kernels::Device;
using kernels::Resources;
using kernels::Tensor;

/// 3 threads: a count that divides no test size evenly.
inline const Resources& cpu() {
  static const Resources res(Device::Cpu, 3);
  return res;
}

template <class T>
Tensor<T> tensor(const std::vector<T>& values, std::int64_t rows = -1, std::int64_t cols = 1) {
  if (rows < 0) rows = static_cast<std::int64_t>(values.size());
  Tensor<T> t(cpu(), Device::Cpu, rows, cols);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

template <class T>
std::vector<T> vec(const Tensor<T>& t) {
  return std::vector<T>(t.data(), t.data() + t.numel());
}

/// A num_rows x num_cols CSR holding `entries` (row, col) in the given order within each row,
/// built directly (not through the code under test). `values` empty means unweighted.
inline Graph make_csr(std::int64_t num_rows, std::int64_t num_cols,
                      const std::vector<std::pair<int, int>>& entries,
                      const std::vector<float>& values = {}) {
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(num_rows) + 1, 0);
  for (const auto& [r, c] : entries) ++indptr[static_cast<std::size_t>(r) + 1];
  for (std::size_t r = 0; r < static_cast<std::size_t>(num_rows); ++r) indptr[r + 1] += indptr[r];
  std::vector<NodeId> indices(entries.size());
  std::vector<float> vals(values.empty() ? 0 : entries.size());
  std::vector<std::int64_t> next(indptr.begin(), indptr.end() - 1);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const auto pos = static_cast<std::size_t>(next[static_cast<std::size_t>(entries[e].first)]++);
    indices[pos] = entries[e].second;
    if (!values.empty()) vals[pos] = values[e];
  }
  return {tensor(indptr), tensor(indices), tensor(vals), num_cols};
}

inline Graph make_graph(std::int64_t n, const std::vector<std::pair<int, int>>& entries,
                        const std::vector<float>& values = {}) {
  return make_csr(n, n, entries, values);
}

/// Row r as a list of (column, value) in stored order.
using Row = std::vector<std::pair<int, double>>;
template <class T>
std::vector<Row> rows_of(const kernels::CsrMatrix<NodeId, T>& a) {
  std::vector<Row> rows(static_cast<std::size_t>(a.num_rows()));
  for (std::int64_t r = 0; r < a.num_rows(); ++r) {
    for (std::int64_t e = a.indptr.data()[r]; e < a.indptr.data()[r + 1]; ++e) {
      const double v = a.values.empty() ? 1.0 : static_cast<double>(a.values.data()[e]);
      rows[static_cast<std::size_t>(r)].emplace_back(a.indices.data()[e], v);
    }
  }
  return rows;
}

/// A random graph with duplicates, self-loops and isolated nodes, rows in random order.
inline std::vector<std::pair<int, int>> random_entries(int n, int m, std::uint64_t seed) {
  std::vector<std::pair<int, int>> entries;
  if (n == 0) return entries;
  const int active = std::max(1, n - n / 5);  // the last fifth of the nodes stays isolated
  for (int e = 0; e < m; ++e) {
    const auto index = 2 * static_cast<std::uint64_t>(e);
    const auto r = static_cast<int>(kernels::rng::below(seed, 11, index, active));
    auto c = static_cast<int>(kernels::rng::below(seed, 11, index + 1, active));
    if (e % 7 == 0) c = r;  // self-loops
    entries.emplace_back(r, c);
    if (e % 5 == 0) entries.emplace_back(r, c);  // duplicates
  }
  return entries;
}

using halo::testing::TempDir;

inline void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

/// Root of the Halo source tree (found at run time, tests/support/testing.hpp).
inline fs::path source_dir() { return halo::testing::source_dir(); }

/// A small valid dataset: 5 nodes (node 4 isolated), 2 classes, dense 5 x 3 features.
inline Dataset tiny_dataset() {
  Dataset ds;
  ds.name = "tiny";
  ds.graph = make_graph(5, {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {3, 2}, {3, 3}});
  ds.features = tensor<float>({1, 0, 0, 0, 2, 0, 0.5f, 0.25f, -1, 0, 0, 0, 1e-3f, 3e7f, 7}, 5, 3);
  ds.labels = tensor<std::int32_t>({0, 1, 0, 1, 1});
  ds.train_idx = tensor<NodeId>({0, 3});
  ds.val_idx = tensor<NodeId>({1});
  ds.test_idx = tensor<NodeId>({2, 4});
  ds.num_classes = 2;
  return ds;
}

inline fs::path cora_dir() { return halo::testing::datasets_dir() / "planetoid" / "cora"; }

}  // namespace halo::datasets::test
