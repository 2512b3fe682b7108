#pragma once
// Helpers local to the nn tests: small graphs built by hand or from the counter-based RNG, dense
// forms and products in double (the references), and the finite-difference gradient checker.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/nn/module.hpp>

#include "support/testing.hpp"

namespace halo::nn_test {

using kernels::CsrMatrix;
using kernels::NodeId;
using kernels::Resources;
using kernels::Tensor;
using nn::Features;

/// The Resources the layers run on: the CPU with 3 threads, so the OpenMP paths run with a team
/// size that divides no test size.
inline const Resources& cpu() {
  static const Resources res(kernels::Device::Cpu, /*num_threads=*/3);
  return res;
}

inline nn::Context train_context(std::uint64_t epoch = 0, std::int64_t row_offset = 0) {
  return {&cpu(), /*training=*/true, /*seed=*/1234, epoch, row_offset};
}
inline nn::Context eval_context() { return {&cpu(), /*training=*/false, 1234, 0, 0}; }

/// One CSR row: (column, weight) pairs.
using Row = std::vector<std::pair<int, double>>;

/// A host CSR matrix from its rows; the weights are dropped when !weighted (a plain graph).
template <class T>
CsrMatrix<NodeId, T> csr_from_rows(std::int64_t num_cols, const std::vector<Row>& rows,
                                   bool weighted) {
  std::vector<std::int64_t> indptr{0};
  std::vector<NodeId> indices;
  std::vector<T> values;
  for (const Row& row : rows) {
    for (const auto& [c, w] : row) {
      indices.push_back(static_cast<NodeId>(c));
      if (weighted) values.push_back(static_cast<T>(w));
    }
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  const Resources& h = testing::host();
  return {Tensor<std::int64_t>::from_host(h, indptr), Tensor<NodeId>::from_host(h, indices),
          Tensor<T>::from_host(h, values), num_cols};
}

/// A random num_rows x num_cols graph: entry (r, c) present with probability `density`, weights
/// in [0.25, 1.25). Row 1 is empty, the last column is never used (an isolated source), and
/// every third row r < num_cols - 1 has a self-loop (r, r).
template <class T>
CsrMatrix<NodeId, T> random_graph(std::int64_t num_rows, std::int64_t num_cols, double density,
                                  std::uint64_t seed, bool weighted) {
  namespace rng = kernels::rng;
  const auto edge_stream = rng::stream_id(rng::kStreamSynthetic, seed, 0x6e6e);
  const auto weight_stream = rng::stream_id(rng::kStreamSynthetic, seed, 0x7777);
  std::vector<Row> rows(static_cast<std::size_t>(num_rows));
  for (std::int64_t r = 0; r < num_rows; ++r) {
    if (r == 1) continue;
    for (std::int64_t c = 0; c + 1 < num_cols; ++c) {
      const auto index = static_cast<std::uint64_t>(r * num_cols + c);
      const bool self_loop = c == r && r % 3 == 0;
      if (self_loop || rng::uniform_double(seed, edge_stream, index) < density)
        rows[r].emplace_back(static_cast<int>(c),
                             0.25 + rng::uniform_double(seed, weight_stream, index));
    }
  }
  return csr_from_rows<T>(num_cols, rows, weighted);
}

/// Random undirected edges {u, v}, u < v, each with probability `density`; nodes in `isolated`
/// get none.
inline std::vector<std::pair<int, int>> random_edges(int n, double density, std::uint64_t seed,
                                                     const std::vector<int>& isolated) {
  namespace rng = kernels::rng;
  const auto stream = rng::stream_id(rng::kStreamSynthetic, seed, 0xed6e);
  const auto is_isolated = [&](int v) {
    return std::find(isolated.begin(), isolated.end(), v) != isolated.end();
  };
  std::vector<std::pair<int, int>> edges;
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      if (!is_isolated(u) && !is_isolated(v) &&
          rng::uniform_double(seed, stream, static_cast<std::uint64_t>(u * n + v)) < density)
        edges.emplace_back(u, v);
  return edges;
}

/// The GCN-normalised adjacency D^-1/2 (A + I) D^-1/2 of the undirected graph on n nodes with
/// `edges` (D the degrees of A + I): isolated nodes keep only their self-loop, of weight 1.
template <class T>
CsrMatrix<NodeId, T> gcn_normalized(int n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::set<int>> adj(static_cast<std::size_t>(n));
  for (int v = 0; v < n; ++v) adj[v].insert(v);
  for (const auto& [u, v] : edges) {
    adj[u].insert(v);
    adj[v].insert(u);
  }
  std::vector<Row> rows(static_cast<std::size_t>(n));
  for (int u = 0; u < n; ++u)
    for (const int v : adj[u])
      rows[u].emplace_back(v, 1.0 / std::sqrt(static_cast<double>(adj[u].size()) *
                                              static_cast<double>(adj[v].size())));
  return csr_from_rows<T>(n, rows, /*weighted=*/true);
}

/// The dense form of `a` in double (num_rows x num_cols, row-major); with `mean`, each row divided
/// by its number of stored entries. Entries without values count as 1.
template <class Idx, class T>
std::vector<double> dense_adjacency(const CsrMatrix<Idx, T>& a, bool mean) {
  std::vector<double> d(static_cast<std::size_t>(a.num_rows() * a.num_cols));
  for (std::int64_t r = 0; r < a.num_rows(); ++r) {
    const std::int64_t degree = a.indptr(r + 1) - a.indptr(r);
    for (std::int64_t e = a.indptr(r); e < a.indptr(r + 1); ++e) {
      const double w = a.values.empty() ? 1.0 : static_cast<double>(a.values(e));
      d[r * a.num_cols + a.indices(e)] += mean ? w / static_cast<double>(degree) : w;
    }
  }
  return d;
}

/// A host tensor's elements in double.
template <class T>
std::vector<double> to_doubles(const Tensor<T>& t) {
  const std::vector<T> v = t.to_vector(testing::host());
  return {v.begin(), v.end()};
}

/// The dense row-major values of a feature matrix in double (sparse ones densified).
template <class T>
std::vector<double> dense_values(const Features<T>& x) {
  if (const auto* t = std::get_if<Tensor<T>>(&x)) return to_doubles(*t);
  return dense_adjacency(std::get<CsrMatrix<std::int32_t, T>>(x), /*mean=*/false);
}

/// a (m x k) times b (k x n), row-major, in double.
inline std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b,
                                  std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + l] * b[l * n + j];
  return c;
}

/// The transpose of a row-major m x n matrix.
inline std::vector<double> transpose(const std::vector<double>& a, std::int64_t m, std::int64_t n) {
  std::vector<double> t(a.size());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) t[j * m + i] = a[i * n + j];
  return t;
}

/// a + b element-wise.
inline std::vector<double> add(std::vector<double> a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

/// Every row of an m x n matrix plus `bias` (n entries).
inline std::vector<double> add_rows(std::vector<double> a, const std::vector<double>& bias) {
  const std::size_t n = bias.size();
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += bias[i % n];
  return a;
}

/// Overwrites a CPU tensor with uniform values in [-1, 1) drawn from `seed`.
template <class T>
void randomize(Tensor<T>& t, std::uint64_t seed) {
  const Tensor<T> r = testing::random_matrix<T>(t.rows(), t.cols(), seed);
  kernels::copy(testing::host(), t, r);
}

/// Up to `max_count` element indices of a tensor with `numel` elements: all of them when there
/// are few, else a seeded sample.
std::vector<std::int64_t> sample_indices(std::int64_t numel, int max_count, std::uint64_t seed);

struct GradCheckOptions {
  double eps = 1e-6;
  double rtol = 1e-6;
  double atol = 1e-8;
  int max_samples = 64;  // elements checked per parameter and for the input
  bool check_input = true;
};

/// Checks the backward pass of `module` against central differences of L = sum(y ⊙ R), R a fixed
/// random matrix of the output's shape (so dL/dy = R): every parameter (sampled when large) and,
/// unless disabled, the input (the stored values of a sparse input). Also checks that the
/// parameter gradients do not depend on need_input_grad and that dx has the input's shape.
void check_module_gradients(nn::Module<double>& module, const nn::Context& ctx,
                            nn::Adjacency<double> graph, Features<double>& x, std::uint64_t seed,
                            const GradCheckOptions& options = {});

/// The message of the halo::IoError thrown by f, or a failure when f throws something else or
/// nothing.
template <class F>
::testing::AssertionResult throws_io_error_containing(F&& f,
                                                      const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const IoError& e) {
    const std::string what = e.what();
    for (const auto& part : parts)
      if (what.find(part) == std::string::npos)
        return ::testing::AssertionFailure()
               << "IoError message \"" << what << "\" does not contain \"" << part << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "expected halo::IoError, got: " << e.what();
  }
  return ::testing::AssertionFailure() << "expected halo::IoError, nothing was thrown";
}

}  // namespace halo::nn_test
