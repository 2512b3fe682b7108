#pragma once
// Private helpers of the datasets component: host allocation, parallel loops, CSR utilities.

#include <cstdint>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::datasets::detail {

/// An uninitialised host tensor, whatever res's device (datasets always live on the host).
template <class T>
kernels::Tensor<T> host_tensor(const kernels::Resources& res, std::int64_t rows,
                               std::int64_t cols = 1) {
  return kernels::Tensor<T>(res, kernels::Device::Cpu, rows, cols);
}

/// A host column vector holding `values`.
template <class T>
kernels::Tensor<T> host_tensor(const kernels::Resources& res, const std::vector<T>& values) {
  auto t = host_tensor<T>(res, static_cast<std::int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) t.data()[i] = values[i];
  return t;
}

/// Below this many iterations loops run serially: a parallel region costs microseconds, and
/// far more on an oversubscribed machine, than a few thousand rows of these loops take.
constexpr std::int64_t kMinParallelIterations = 4096;

/// Runs f(i) for i in [0, n) on res's OpenMP threads (serially for small n or inside a parallel
/// region).
template <class F>
void parallel_for(const kernels::Resources& res, std::int64_t n, const F& f) {
  if (n < kMinParallelIterations) {
    for (std::int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  kernels::for_each_index(res.cpu_exec(), n, f);
}

/// Turns per-row counts in indptr[0..n) into offsets in indptr[0..n] (indptr has n + 1 slots).
void counts_to_offsets(std::int64_t* indptr, std::int64_t n);

/// Throws halo::LogicError unless `a` is on the host and well formed enough to walk (indptr of
/// num_rows + 1 entries; values empty or one per entry). `op` names the caller.
void expect_host_csr(const Graph& a, const char* op);

/// Whether the columns of every row of `a` are non-decreasing.
bool rows_sorted(const kernels::Resources& res, const Graph& a);

/// A copy of `a` whose rows are sorted by column (values follow their columns; stable).
Graph sort_rows(const kernels::Resources& res, const Graph& a);

/// Aᵀ with the values of `a` (if any): num_cols x num_rows, rows sorted. Counting sort.
Graph transpose(const kernels::Resources& res, const Graph& a);

/// The largest class count a reader infers from the labels alone (largest class id + 1, when the
/// file gives no num_classes) for a dataset of `num_nodes` nodes: max(1024, num_nodes), at most
/// 2^20. A larger id is taken for a corrupt or mistyped file: a model with that many outputs
/// would not fit in memory (docs/formats.md).
std::int64_t max_inferred_classes(std::int64_t num_nodes);

/// "class id <label> would make <label + 1> classes ..., more than <limit> ...": the message of
/// the error a reader throws (prefixed with its file and line) when `label` + 1 exceeds
/// max_inferred_classes(num_nodes). `fix` says how to state the count explicitly.
std::string inferred_classes_error(std::int64_t label, std::int64_t num_nodes,
                                   const std::string& fix);

/// Gives `ds` disjoint random train / val / test splits of floor(fraction * n) nodes each
/// (ascending ids): all n nodes ordered by rng::draw_keyed(rng_key, node) and cut in that order.
/// Fractions are in [0, 1] and sum to at most 1 (checked by the generators' configs).
void assign_random_splits(const kernels::Resources& res, std::int64_t n, double train_fraction,
                          double val_fraction, double test_fraction, std::uint64_t rng_key,
                          Dataset& ds);

}  // namespace halo::datasets::detail
