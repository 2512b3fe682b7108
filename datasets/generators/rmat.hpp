#pragma once
// Synthetic power-law graphs: the R-MAT recursive matrix generator (Graph500 style).

#include <cstdint>
#include <filesystem>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// Parameters of `make_rmat`. The defaults are Graph500's quadrant probabilities.
struct RmatConfig {
  /// num_nodes = 2^scale, scale in [1, 30]. Any edge count (64-bit): a graph of 2^31 entries or
  /// more is built with prepare_rmat.
  std::int32_t scale = 16;
  /// Edges drawn per node: num_nodes * avg_degree / 2 undirected edges are drawn, so the
  /// symmetrised graph has at most num_nodes * avg_degree directed entries (fewer after
  /// duplicates and self-loops are removed).
  double avg_degree = 8;
  /// Probabilities of the top-left, top-right and bottom-left quadrants at each level; the
  /// bottom-right one gets 1 - a - b - c.
  double a = 0.57;
  double b = 0.19;
  double c = 0.19;
  std::int64_t num_features = 16;
  std::int32_t num_classes = 8;
  double train_fraction = 0.1;
  double val_fraction = 0.2;
  double test_fraction = 0.4;
  std::uint64_t seed = 0;
};

/// A dataset on an R-MAT graph (Chakrabarti, Zhan, Faloutsos 2004) as Graph500 draws it:
/// - each of num_nodes * avg_degree / 2 edges picks, at each of `scale` levels, one quadrant of
///   the adjacency matrix with probabilities a, b, c, d = 1 - a - b - c;
/// - node ids are then scrambled by a random permutation (so degree does not follow the id);
/// - the graph is symmetrised, de-duplicated and has no self-loops (so some nodes are isolated);
/// - dense features uniform in [-1, 1); labels uniform in [0, num_classes) (no signal: this
///   generator is for systems work, not accuracy);
/// - splits: disjoint uniform random subsets of floor(fraction * num_nodes) nodes, ascending.
/// Deterministic from `seed` and independent of the thread count: all randomness comes from
/// kernels::rng under rng::kStreamSynthetic. halo::LogicError on an invalid config. Host only;
/// runs on res's OpenMP threads. Scale 20, degree 8 (1M nodes, ~8M entries) takes a few seconds.
Dataset make_rmat(const kernels::Resources& res, const RmatConfig& config);

/// make_rmat's dataset written as a store in `dir` in bounded memory, without the whole graph
/// in memory: the edges are drawn once into a temporary file, the CSR is built from it row
/// block by row block (build_csr: symmetrised, de-duplicated, no self-loops), the features are
/// drawn and written `memory_budget / 2` bytes at a time (in `feature_dtype`). Memory: the
/// budget plus O(nodes) arrays (the id permutation, two int64 per node, the labels and
/// splits). open_store of the result equals make_rmat(config) bit for bit (features up to the
/// dtype's rounding), whatever the budget. Disk: 8 bytes per drawn edge of temporary space,
/// then the store. halo::IoError naming the file on write errors; nothing is left behind.
PrepareReport prepare_rmat(const kernels::Resources& res, const RmatConfig& config,
                           const std::filesystem::path& dir, const PrepareOptions& options);

/// make_rmat's graph grown in `steps` steps, as events: node v of the generated graph (whose
/// ids are already scrambled) arrives at step floor(v * steps / n), and each undirected edge
/// {u, v}, u < v, is one event u -> v at time max(step(u), step(v)), the step of its later end.
/// Isolated nodes never appear. `--snapshots steps` then gives one snapshot per step (cumulative
/// by default). Named "rmat-<scale>"; ids in the result follow TemporalGraph's rules, original
/// ids are make_rmat's. Deterministic from config.seed. steps in [1, 2^24] (halo::LogicError).
TemporalGraph grow_rmat(const kernels::Resources& res, const RmatConfig& config,
                        std::int64_t steps);

}  // namespace halo::datasets
