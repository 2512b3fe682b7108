#pragma once
// What a HeteroModel<float> keeps in memory, from counts alone: its parameters and embedding
// rows, and the buffers its layers keep across passes (kernels::ensure_shape: a buffer keeps the
// largest size a pass gave it). The memory plan of heterogeneous classification
// (cluster::make_hetero_plan) is built on it; tests hold it to the bytes the model allocates.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <halo/nn/hetero_model.hpp>

namespace halo::nn {

/// The sizes of one layer's graph in a pass: per node type its source and destination rows, per
/// relation (the schema's order) its stored entries.
struct HeteroPassShape {
  std::vector<std::int64_t> num_src, num_dst, entries;
};

/// How a pass reads the featureless types' rows.
enum class EmbeddingReads {
  Whole,   ///< the whole table (a full-graph pass in one process)
  ById,    ///< rows by source id (sampled blocks)
  Spread,  ///< rows fetched from the ranks that own them (a partition)
};

class HeteroFootprint {
 public:
  HeteroFootprint(const HeteroModelConfig& config, const HeteroSchema& schema);

  /// A forward pass over `layers` (one shape per layer, input layer first), and its backward
  /// when `backward`. `halo`: the graph of a partition's part (hidden layers exchange their
  /// halo rows: every layer's inputs are the part's rows).
  void pass(std::span<const HeteroPassShape> layers, bool backward, bool halo,
            EmbeddingReads reads);

  /// Bytes of every buffer the passes so far left, and by buffer name.
  std::int64_t buffer_bytes() const;
  const std::map<std::string, std::int64_t>& buffers() const { return m_buffers; }
  /// Floats of the dense parameters (the projections, the layers, HGT's classifier) and of the
  /// embedding tables of the featureless types (rows x hidden; 0 with FeaturelessInput::Zero).
  std::int64_t parameter_floats() const { return m_parameters; }
  std::int64_t embedding_floats() const { return m_embedding; }

 private:
  void keep(const std::string& name, std::int64_t bytes);

  HeteroModelConfig m_config;
  HeteroSchema m_schema;
  std::int64_t m_parameters = 0;
  std::int64_t m_embedding = 0;
  std::map<std::string, std::int64_t> m_buffers;
};

/// The shape of a full-graph pass over `num_nodes` rows per type (sources and destinations) and
/// `entries` per relation, once per layer.
std::vector<HeteroPassShape> full_graph_shapes(const HeteroModelConfig& config,
                                               std::vector<std::int64_t> num_src,
                                               std::vector<std::int64_t> num_dst,
                                               std::vector<std::int64_t> entries);

}  // namespace halo::nn
