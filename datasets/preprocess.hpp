#pragma once
// Graph and feature preprocessing: symmetrisation, de-duplication, self-loops, GCN and row
// normalisation.

#include <cstdint>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/csr.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

// Every function here takes and returns host (Device::Cpu) matrices, runs in O(nodes + edges)
// (plus a per-row sort when input rows are not sorted) on res's OpenMP threads, and leaves its
// input untouched unless it takes a non-const reference. Inputs on another device, or graphs that
// are not square, are rejected with halo::LogicError. `symmetrize` sets the result's `symmetric`
// flag; the other graph functions carry over the flag of their input (they keep A == Aᵀ).

/// A ∪ Aᵀ: entry (r, c) is present iff (r, c) or (c, r) is in `a`. The result is a plain graph
/// with sorted, distinct columns per row. `a` must be plain (weighted symmetrisation has no single
/// right answer, so it is left to the caller).
Graph symmetrize(const kernels::Resources& res, const Graph& a);

/// `a` with duplicate entries merged: rows come out sorted; the values of duplicates are summed
/// (the usual CSR/COO meaning of repeated entries).
Graph deduplicate(const kernels::Resources& res, const Graph& a);

/// `a` without its diagonal entries; the order of the remaining entries is kept.
Graph remove_self_loops(const kernels::Resources& res, const Graph& a);

/// `a` plus one diagonal entry (value 1 when `a` is weighted) in every row that has none. The new
/// entry is inserted before the first column greater than the row, so sorted rows stay sorted.
Graph add_self_loops(const kernels::Resources& res, const Graph& a);

/// The GCN propagation matrix Â = D^-1/2 (A + I) D^-1/2 (Kipf & Welling 2017). A + I is
/// `add_self_loops(a)`: an existing self-loop keeps its weight and is not doubled. D holds the row
/// sums of A + I (weights when `a` is weighted, else 1 per entry); rows with a non-positive sum
/// get zero weights. Duplicate entries count as many times as they appear. Instantiated for
/// float and double.
template <class T>
kernels::CsrMatrix<NodeId, T> gcn_normalize(const kernels::Resources& res, const Graph& a);

/// Node features computed from the graph alone, for datasets that have none.
enum class StructuralFeatures {
  Constant,  ///< one column of ones (dense num_nodes x 1)
  Degree,    ///< a one-hot encoding of the in-degree (sparse, one entry per node)
};

/// The largest degree `structural_features` gives its own one-hot column; larger degrees share
/// the last one.
constexpr std::int64_t kMaxDegreeBucket = 255;

/// Features of the nodes of `a` (host, square) that depend only on its structure:
/// - Constant: a dense num_nodes x 1 matrix of ones;
/// - Degree: a sparse num_nodes x (min(max degree, kMaxDegreeBucket) + 1) one-hot matrix whose
///   row v holds a single 1 in column min(deg(v), kMaxDegreeBucket), where deg(v) is the row
///   length of `a` as stored (the in-degree: duplicates and self-loops count); isolated nodes
///   get column 0. An empty graph gives 0 x 1. Rows are sorted (one entry each) and `values`
///   holds explicit ones.
/// The result is on the host; O(nodes) on res's threads; `a` is not changed.
kernels::FeatureMatrix<float> structural_features(const kernels::Resources& res, const Graph& a,
                                                  StructuralFeatures kind);

/// Divides each row of `x` (dense or sparse, on the host) by its L1 norm in place; all-zero rows
/// stay zero. A sparse matrix with empty `values` (implicit ones) gets explicit values.
void row_normalize(const kernels::Resources& res, kernels::FeatureMatrix<float>& x);

}  // namespace halo::datasets
