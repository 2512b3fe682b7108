#pragma once
// Where a neighbour sampler finds the rows of a hop's destinations: a local CSR, or (in the
// runtime) rows held by other ranks.

#include <cstdint>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>
#include <halo/sampler/sampler_types.hpp>

namespace halo::sampler {

/// The two steps of a hop that read the graph, as NeighborSampler's CPU pipeline runs them:
/// count -> (the sampler's scan) -> fill. Contract:
///   - ids are in [0, stats().num_nodes); a destination's draws are keyed by (hop_key, its
///     key id) and pick positions in its row, so every source that stores a node's row in the
///     same order with the same key id draws the same neighbours;
///   - count(dst) writes counts[i] = sample_count(degree(dst[i]), fanout, replace);
///   - fill(dst, offsets) follows count on the same dst and writes dst[i]'s draws to
///     out[offsets[i] .. offsets[i + 1]);
///   - both take host memory, run on the calling thread (and res's OpenMP team), and allocate
///     nothing after construction. Sources that communicate are collective: every rank calls
///     them in the same order.
class NeighborSource {
 public:
  virtual ~NeighborSource() = default;
  /// Of the whole graph the ids refer to: what the sampler's envelope is planned from.
  virtual DegreeStats stats() const = 0;
  virtual void count(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                     int fanout, bool replace, std::int64_t* counts) = 0;
  virtual void fill(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                    int fanout, bool replace, std::uint64_t hop_key, const std::int64_t* offsets,
                    kernels::NodeId* out) = 0;
};

/// The rows of a host CSR (row v lists the nodes messages to v come from). `row_keys`, when
/// given, holds the key id of every row (a rank's owned rows keyed by their original ids);
/// else row v is keyed by v. The draws are column ids of `graph`. Borrows both: they must
/// outlive the source. Thread-safe (read-only).
class LocalNeighbors final : public NeighborSource {
 public:
  explicit LocalNeighbors(kernels::CsrView<kernels::NodeId, float> graph,
                          const kernels::NodeId* row_keys = nullptr);
  DegreeStats stats() const override { return m_stats; }
  void count(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst, int fanout,
             bool replace, std::int64_t* counts) override;
  void fill(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst, int fanout,
            bool replace, std::uint64_t hop_key, const std::int64_t* offsets,
            kernels::NodeId* out) override;
  kernels::CsrView<kernels::NodeId, float> graph() const { return m_graph; }

 private:
  kernels::CsrView<kernels::NodeId, float> m_graph;
  const kernels::NodeId* m_row_keys;
  DegreeStats m_stats;
};

/// The rows of a host CSR whose column ids are a file mapping (a store opened mapped,
/// Tensor::mapped): degrees from indptr, neighbours read from the file with pread
/// (Buffer::read_file), never through the mapping, so a row read takes page cache rather than
/// this process's memory (a page touched through a mapping maps the whole page-cache folio
/// around it). The draws are LocalNeighbors's, position for position: a row of at most
/// kWholeRowBytes is read whole, a longer one at its drawn positions only. kReadDepth
/// destinations are read at once (a disk serves random reads faster at depth). Borrows
/// `graph`. Thread-safe (read-only); halo::IoError naming the file when a read fails.
class FileNeighbors final : public NeighborSource {
 public:
  static constexpr std::int64_t kWholeRowBytes = 64 << 10;
  static constexpr int kReadDepth = 16;
  explicit FileNeighbors(const datasets::Graph& graph);
  DegreeStats stats() const override { return m_stats; }
  void count(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst, int fanout,
             bool replace, std::int64_t* counts) override;
  void fill(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst, int fanout,
            bool replace, std::uint64_t hop_key, const std::int64_t* offsets,
            kernels::NodeId* out) override;

 private:
  kernels::CsrView<kernels::NodeId, float> m_graph;  // indices: not read through the mapping
  const kernels::Buffer& m_indices;
  DegreeStats m_stats;
};

}  // namespace halo::sampler
