#pragma once
// Plain structs of the models: the built-in kinds, their configuration, what a model file records.

#include <cstdint>
#include <string>

namespace halo::nn {

enum class ModelKind { Gcn, Sage, Gat };

/// Parses "gcn" / "sage" / "gat"; throws LogicError naming the accepted values otherwise.
ModelKind parse_model_kind(const std::string& name);
std::string to_string(ModelKind kind);

/// The graph a network's aggregations run over, which the runtime prepares once from the
/// training graph S (full graph, a partition's owned rows with their halo, or a sampled block):
///   - Symmetric: D̂^-1/2 (S + I) D̂^-1/2 with d̂ = degree + 1 (GCN), summed
///     (kernels::Aggregate::Sum); a sampled block gets its self-loops and the weights that
///     estimate those rows (sampler::gcn_block_weights);
///   - Mean: S with weight 1 / degree per row (GraphSAGE's mean), averaged
///     (kernels::Aggregate::Mean); a block is used as sampled;
///   - SelfLoops: S + I, unweighted (every value 1), for layers that compute their own edge
///     weights (GAT's attention); summed; a sampled block gets a self-loop per destination.
///     On a partition the layer reads the owned rows over [owned; halo] columns
///     (Propagation::local_graph).
/// A network declares it (NetworkShape::graph); nothing in the runtime derives it from a model's
/// name.
enum class GraphPreparation { Symmetric, Mean, SelfLoops };
std::string to_string(GraphPreparation g);
/// The preparation a built-in kind's convolutions need (GCNConv: Symmetric, SAGEConv: Mean,
/// GATConv: SelfLoops).
GraphPreparation graph_preparation(ModelKind kind);
/// The aggregation a layer runs over a graph so prepared.
inline bool sums(GraphPreparation g) { return g != GraphPreparation::Mean; }

struct ModelConfig {
  ModelKind kind = ModelKind::Gcn;
  int num_layers = 2;        // graph convolutions
  std::int64_t hidden = 16;  // width of every hidden layer (per attention head for GAT)
  float dropout = 0.5f;      // before every convolution, the input's included (and GAT's
                             // attention coefficients)
  int heads = 8;             // GAT: attention heads of the hidden layers (concatenated)
  int out_heads = 1;         // GAT: attention heads of the output layer (averaged)
  std::int64_t in_features = 0;
  std::int64_t num_classes = 0;
};

/// The mask key's layer of a model's input dropout (kernels::DropoutKey::layer); the dropout
/// before convolution l + 1 is keyed l (l >= 1).
inline constexpr std::uint64_t kInputDropoutLayer = 0;

/// What a model file (nn/model_file.hpp, docs/formats.md) says about its model besides the
/// parameters: enough to rebuild it and to feed it data prepared as in training.
struct ModelFileInfo {
  /// The task whose model this is: "node" (node classification: `config` describes it), or
  /// another task ("heterogeneous-node-classification", "link"), whose model, data and
  /// configuration `task_model` describes (one JSON object as text, the task's own reading;
  /// `config` is then unused).
  std::string task = "node";
  std::string task_model;
  /// The architecture: kind, layers, widths, dropout, input features, classes.
  ModelConfig config;
  /// The dataset trained on (its name; informational).
  std::string dataset;
  /// Preprocessing: sparse feature rows divided by their L1 norm (runtime::prepare_features).
  bool normalize_features = true;
  /// Preprocessing: structural features computed from the graph instead of the dataset's own
  /// ("degree", "constant"), empty for the dataset's features.
  std::string structural_features;
  /// The training configuration and result, one JSON object as text (written by the trainer;
  /// "{}" when the model was not trained by it).
  std::string training = "{}";
  /// The Halo version that wrote the file (set on writing; HALO_VERSION).
  std::string halo_version;
};

}  // namespace halo::nn
