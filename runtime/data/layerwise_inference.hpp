#pragma once
// Layer-wise inference: a trained network's full-graph outputs computed one convolution at a
// time, over chunks of destination rows, so that no layer's intermediate buffers span the graph.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/nn/model.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/data/feature_store.hpp>

namespace halo::sampler {
class NeighborSampler;
}

namespace halo::runtime {

/// The full-graph pass of a Model in evaluation mode (no dropout), as DGL's and PyG's
/// layer-wise inference runs it: layer l reads every node's layer l - 1 representation (the
/// features for l = 1) and writes every node's layer l representation, chunk by chunk. A
/// chunk is a run of consecutive destination rows holding at most max(chunk_entries, the
/// largest row) entries of the training graph; its block takes every neighbour (the sampler
/// with fan-out -1), its sources' rows are gathered from the previous layer, and the layer
/// runs on the block (Model::forward_layer; GCN's block weights equal the full graph's
/// normalised rows, GAT's blocks get their self-loops). Memory: the two representations
/// (num_nodes x the widest layer each) and one chunk's buffers, instead of every layer's
/// full-graph buffers. The logits equal the full-graph pass's up to the order of the float
/// sums in a row (GCN's self-loop comes first in a block).
///
/// With `spill_dir` the hidden representations live in a file there instead of memory (an
/// unlinked temporary file, gone when the object or the process ends): written a chunk at a
/// time, their rows read back with pread, so they take page cache rather than the process's
/// memory; the results are bit for bit those of the pass in memory. Only the logits stay in
/// memory.
///
/// One part (every node owned), on the CPU. Keeps references to `res`, `part` and `features`
/// (the part's feature store: its prepared rows, read from their file when it has one,
/// FeatureStore::from_file). Not thread-safe.
class LayerwiseInference {
 public:
  /// Entries of the training graph one chunk holds at most, unless a single row has more.
  static constexpr std::int64_t kChunkEntries = std::int64_t{1} << 16;
  /// Destination rows of one chunk at most.
  static constexpr std::int64_t kChunkRows = std::int64_t{1} << 14;

  /// Plans the chunks and allocates the chunk buffers. halo::LogicError for a part of a
  /// partition, a CUDA `res` or a feature matrix of another height than the part;
  /// halo::IoError when the spill file cannot be created in `spill_dir`.
  LayerwiseInference(const kernels::Resources& res, const partition::Part& part,
                     const FeatureStore& features, nn::GraphPreparation graph,
                     const std::filesystem::path& spill_dir = {},
                     std::int64_t chunk_entries = kChunkEntries,
                     std::int64_t chunk_rows = kChunkRows);

  /// Bytes of the two hidden representations of `model`'s pass over `num_nodes` nodes in
  /// memory: what `spill_dir` saves.
  static std::size_t representation_bytes(const nn::ModelConfig& model, std::int64_t num_nodes);
  /// Whether a run whose data (features and graph) take `data` bytes keeps representations of
  /// `reps` bytes in memory under `budget` (0: no limit, always): when both fit under it and
  /// the representations are at most half the data or 512 MiB, so that the evaluation's
  /// memory follows the data's. Otherwise they go to a file.
  static bool keeps_in_memory(std::size_t data, std::size_t reps, std::size_t budget) {
    return budget == 0 ||
           (data + reps <= budget && reps <= std::max(data / 2, std::size_t{512} << 20));
  }
  ~LayerwiseInference();
  LayerwiseInference(const LayerwiseInference&) = delete;
  LayerwiseInference& operator=(const LayerwiseInference&) = delete;

  /// Every node's logits (num_nodes x num_classes) on res's device, owned by this object and
  /// valid until the next call. The model must read the part's features (width) and be built
  /// for the graph preparation given to the constructor.
  const kernels::Tensor<float>& run(nn::Model<float>& model);

  /// Chunks of a pass (each layer runs all of them).
  std::int64_t num_chunks() const { return static_cast<std::int64_t>(m_bounds.size()) - 1; }
  /// Bytes of the buffers the last run held at its peak: the representations in memory (or
  /// the logits, when spilled) and the chunk's gathered rows, block and sampler envelope (not
  /// the model's own buffers).
  std::size_t bytes() const { return m_bytes; }
  /// Bytes written to and read from the spill file by the last run (0 in memory).
  std::int64_t spill_bytes_written() const { return m_written; }
  std::int64_t spill_bytes_read() const { return m_read; }
  /// Bytes of feature rows the last run read from the features' file (FeatureStore::from_file).
  std::int64_t feature_bytes_read() const { return m_fetch.file_bytes; }

 private:
  const kernels::Resources& m_res;
  const partition::Part& m_part;
  const FeatureStore& m_store;
  const kernels::FeatureMatrix<float>& m_features;  // m_store.owned()
  nn::GraphPreparation m_graph;
  std::vector<std::int64_t> m_bounds;  // chunk c: rows m_bounds[c] .. m_bounds[c + 1]
  std::int64_t m_max_src = 0;          // sources of a chunk's block at most
  class Chunks;                        // the sampler over a chunk-sized envelope
  std::unique_ptr<Chunks> m_chunks;
  std::vector<kernels::NodeId> m_seeds;
  kernels::FeatureMatrix<float> m_x;        // a chunk's gathered rows (layer 1: the data's kind)
  kernels::FeatureMatrix<float> m_hx;       // a chunk's gathered rows (later layers): dense
  kernels::Tensor<std::int64_t> m_scan;     // a sparse gather's scan sums
  kernels::Tensor<std::int64_t> m_degrees;  // of the chunk's sources (GCN)
  kernels::CsrMatrix<kernels::NodeId, float> m_block;  // with self-loops (GCN, GAT)
  kernels::Tensor<float> m_h[2];                       // the representations, ping-pong
  class Spill;                                         // the hidden representations on disk
  std::unique_ptr<Spill> m_spill;
  std::size_t m_bytes = 0;
  std::int64_t m_written = 0, m_read = 0;
  FetchStats m_fetch;
};

}  // namespace halo::runtime
