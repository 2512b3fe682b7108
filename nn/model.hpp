#pragma once
// Models built from a config: a list of modules run forward in order and backward in reverse.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <halo/nn/module.hpp>

namespace halo::nn {

enum class ModelKind { Gcn, Sage };

/// Parses "gcn" / "sage"; throws LogicError naming the accepted values otherwise.
ModelKind parse_model_kind(const std::string& name);
std::string to_string(ModelKind kind);

struct ModelConfig {
  ModelKind kind = ModelKind::Gcn;
  int num_layers = 2;        // graph convolutions
  std::int64_t hidden = 16;  // width of every hidden layer
  float dropout = 0.5f;      // before every convolution, the input's included
  std::int64_t in_features = 0;
  std::int64_t num_classes = 0;
};

/// A GNN: for each of num_layers convolutions, Dropout -> Conv (-> ReLU between convolutions).
/// The last layer outputs num_classes logits per node. Parameters are Glorot-initialised from
/// the counter-based RNG keyed by (seed, parameter id), so every process builds the same model.
template <class T>
class Model {
 public:
  Model(const kernels::Resources& res, const ModelConfig& config, std::uint64_t seed);

  /// Logits for every row of the graph (n x num_classes), owned by the model.
  const kernels::Tensor<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x);
  /// Backward from dL/dlogits; leaves each parameter's gradient in its `grad`.
  void backward(const Context& ctx, Adjacency<T> graph, const kernels::Tensor<T>& dlogits);
  /// The same with one graph per convolution, input layer first: the blocks of a mini-batch
  /// (layer l's destinations are layer l + 1's sources; x has one row per source of the first).
  /// The logits are those of the last block's destinations.
  const kernels::Tensor<T>& forward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                                    const Features<T>& x);
  void backward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                const kernels::Tensor<T>& dlogits);

  /// Sizes every module's buffers for graphs within `bounds` ((sources, destinations) per
  /// convolution, input layer first: a mini-batch envelope's) and inputs of at most
  /// `input_entries` stored entries (sparse; 0: dense), so that later passes within them
  /// allocate nothing.
  void reserve(const kernels::Resources& res,
               std::span<const std::pair<std::int64_t, std::int64_t>> bounds,
               std::int64_t input_entries = 0);

  std::vector<Parameter<T>*> parameters();
  const ModelConfig& config() const { return m_config; }
  /// Names like "layer1.weight": stable across runs, used by save/load.
  std::vector<std::string> parameter_names();

  /// Writes all parameters to `path` (temporary file, then rename: never half-written). The
  /// parameters may live on any device: they are copied to the host through `res` (the
  /// Resources of their device), which synchronises.
  void save(const kernels::Resources& res, const std::filesystem::path& path);
  /// The same for a model on the CPU (LogicError for device parameters: use the overload above).
  void save(const std::filesystem::path& path);
  /// Loads parameters written by `save` onto res's device; throws IoError naming the file and
  /// the parameter when names, shapes or the element type do not match this model.
  void load(const kernels::Resources& res, const std::filesystem::path& path);

 private:
  ModelConfig m_config;
  std::vector<std::unique_ptr<Module<T>>> m_modules;
  /// The graph module i runs on.
  const Adjacency<T>& graph_of(std::span<const Adjacency<T>> graphs, std::size_t i) const;
  std::vector<int> m_layer_of_module;  // 1-based convolution index: names, graph per layer
};

}  // namespace halo::nn
