#pragma once
// Building a store's CSR from an edge stream in bounded memory: count, then scatter row block by
// row block, each row sorted and de-duplicated.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// A fraction (1/4) of the machine's physical memory: the default --memory-budget.
std::size_t default_memory_budget();

/// One batch of (src, dst) edges.
using EdgeBatch = std::span<const std::pair<NodeId, NodeId>>;
/// A replayable edge stream: `replay(sink)` calls `sink` with the edges in batches, the same
/// edges in the same order every time (a builder reads it once per pass).
struct EdgeSource {
  std::int64_t num_nodes = 0;
  std::function<void(const std::function<void(EdgeBatch)>& sink)> replay;
};

/// Edges spilled to a file of little-endian int32 pairs (a scratch file of a StoreWriter), so a
/// generator or a parser runs once however many passes the builder makes. Removes the file when
/// destroyed. halo::IoError naming the file on write or read errors (a full disk included).
class EdgeSpill {
 public:
  /// `read_bytes`: the size of the batches replay reads back (>= 8).
  EdgeSpill(std::filesystem::path path, std::size_t read_bytes);
  ~EdgeSpill();
  EdgeSpill(const EdgeSpill&) = delete;
  EdgeSpill& operator=(const EdgeSpill&) = delete;
  void append(EdgeBatch edges);
  /// Ends writing; the spill can then be replayed.
  void finish();
  std::int64_t num_edges() const { return m_edges; }
  /// The stream of what was appended, for `num_nodes` nodes.
  EdgeSource source(std::int64_t num_nodes) const;

 private:
  std::filesystem::path m_path;
  std::size_t m_read_bytes;
  std::FILE* m_file = nullptr;
  std::int64_t m_edges = 0;
};

/// What build_csr makes of the stream.
struct CsrBuildOptions {
  /// Also add entry (dst, src) for every edge: the graph A ∪ Aᵀ.
  bool symmetrize = false;
  /// Drop diagonal entries.
  bool remove_self_loops = false;
  /// Bytes of the O(edges) working memory: the scatter buffer of one row block (4 bytes an
  /// entry). O(nodes) arrays (two int64 per node) come on top. A row longer than the budget is a
  /// block of its own, over the budget.
  std::size_t memory_budget = std::size_t{256} << 20;
};

/// What build_csr wrote.
struct CsrBuildResult {
  std::int64_t entries = 0;  ///< after de-duplication
  std::int64_t max_degree = 0;
  DegreeHistogram histogram;  ///< of the rows built
  std::int64_t blocks = 0;    ///< row blocks (passes over the stream after the count)
};

/// Builds the plain graph of `source` (edge (src, dst) is column src of row dst, as
/// graph_from_edges), with sorted, distinct columns per row, into `w` as the arrays
/// `prefix`.indptr (i64) and `prefix`.indices (i32): one pass counts each row's entries (an
/// upper bound, before de-duplication), then rows are cut into consecutive blocks whose
/// entries fit the budget, and one pass per block scatters the block's entries, sorts and
/// de-duplicates its rows and appends them. The result does not depend on the budget or the
/// thread count (bit for bit). `w` nullptr: nothing is written, the result's counts are the
/// graph's (the training graph's statistics of a directed input). Ids outside [0, num_nodes)
/// are a halo::IoError.
CsrBuildResult build_csr(const kernels::Resources& res, const EdgeSource& source,
                         const CsrBuildOptions& options, StoreWriter* w,
                         const std::string& prefix = "graph");

/// A directed input's two builds: the graph as stored (duplicates merged, self-loops kept, as the
/// in-memory readers give it; written to `w` as "graph") and the training graph S = A ∪ Aᵀ
/// without self-loops (counted only, for the header's statistics).
struct DirectedBuild {
  CsrBuildResult graph;
  CsrBuildResult training;
  /// The header's graph counts (num_edges, training_edges, max_degree, degree_histogram).
  void record(StoreCounts& c) const;
};
DirectedBuild build_directed_csr(const kernels::Resources& res, const EdgeSource& source,
                                 std::size_t memory_budget, StoreWriter& w);

}  // namespace halo::datasets
