#pragma once
// The datasets the benchmarks run on: Cora (data/, unpacked into the build) and synthetic graphs of
// the shapes of ogbn-arxiv and ogbn-products.

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::bench {

/// Planetoid Cora from <build>/data (aborts the benchmark with a message if missing).
datasets::Dataset cora(const kernels::Resources& res);

/// A synthetic graph of ogbn-arxiv's shape: 169,343 nodes, ~2.3M directed edges after
/// symmetrisation, 128 dense features, 40 classes (1/20 of that in smoke runs).
datasets::Dataset arxiv_shape(const kernels::Resources& res);

/// A synthetic graph of ogbn-products' shape: 2,449,029 nodes, ~123.7M directed edges
/// (61.9M undirected), 100 dense features, 47 classes (1/100 of the nodes in smoke runs).
datasets::Dataset products_shape(const kernels::Resources& res);

}  // namespace halo::bench
