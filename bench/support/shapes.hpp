#pragma once
// The datasets the benchmarks run on: Cora (shared datasets) and a synthetic ogbn-arxiv shape.

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::bench {

/// Planetoid Cora from ../shared/datasets (aborts the benchmark with a message if missing).
datasets::Dataset cora(const kernels::Resources& res);

/// A synthetic graph of ogbn-arxiv's shape: 169,343 nodes, ~2.3M directed edges after
/// symmetrisation, 128 dense features, 40 classes (1/20 of that in smoke runs).
datasets::Dataset arxiv_shape(const kernels::Resources& res);

}  // namespace halo::bench
