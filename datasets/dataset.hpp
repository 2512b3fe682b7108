#pragma once
// Dataset: a graph with node features, labels and train/val/test splits, held on the host.

#include <cstdint>
#include <string>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/types.hpp>

namespace halo::datasets {

using kernels::NodeId;

/// num_nodes x num_nodes adjacency. Row r lists the in-neighbours (sources) of node r, so
/// neighbourhood aggregation is out = A x. `values` is empty for plain (unweighted) graphs.
using Graph = kernels::CsrMatrix<NodeId, float>;

/// A node-classification dataset. Every tensor lives on the host (Device::Cpu). Move-only.
struct Dataset {
  std::string name;
  Graph graph;
  /// num_nodes x num_features, dense (Tensor) or sparse (CsrMatrix<int32, float>).
  kernels::FeatureMatrix<float> features;
  /// One class per node, in [0, num_classes).
  kernels::Tensor<std::int32_t> labels;
  /// Node ids of each split: distinct, ascending, pairwise disjoint.
  kernels::Tensor<NodeId> train_idx;
  kernels::Tensor<NodeId> val_idx;
  kernels::Tensor<NodeId> test_idx;
  std::int32_t num_classes = 0;

  /// The number of nodes (rows of `graph`).
  std::int64_t num_nodes() const { return graph.num_rows(); }
  /// The number of feature columns.
  std::int64_t num_features() const { return kernels::num_cols(features); }
  /// A deep copy (host tensors): for consumers that take a dataset by value
  /// (runtime::local_shard) while the caller keeps its own.
  Dataset clone(const kernels::Resources& res) const;
};

/// Checks that `ds` is consistent: every tensor on the host; `graph` square with a well-formed
/// indptr, column ids in range, `values` empty or one per edge, and equal to its transpose when
/// flagged `symmetric`; features with num_nodes rows
/// (and, if sparse, a well-formed CSR with column ids in range); one label per node, each in
/// [0, num_classes) with num_classes >= 1; split ids in range, strictly ascending and not shared
/// between splits. Throws halo::IoError naming the first problem found. O(nodes + edges + nnz)
/// (plus a row sort for a graph flagged symmetric), read-only, thread-safe.
void validate(const Dataset& ds);

/// A dataset holding only `graph` (its values dropped): zero feature columns (sparse, empty),
/// every node in class 0 of 1, empty splits. What graph-only readers (edge lists, Matrix
/// Market, temporal events, snapshots) give; `--features degree|constant` then computes
/// features. Host.
Dataset graph_only_dataset(const kernels::Resources& res, Graph graph);

}  // namespace halo::datasets
