#pragma once
// Models built from a config: a list of modules run forward in order and backward in reverse.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <halo/nn/model_file.hpp>
#include <halo/nn/model_types.hpp>
#include <halo/nn/module.hpp>
#include <halo/nn/network.hpp>

namespace halo::nn {

/// A GNN: for each of num_layers convolutions, Dropout -> Conv (-> ReLU between convolutions;
/// GAT: ELU, its hidden layers concatenating `heads` heads of `hidden` features, its last layer
/// averaging `out_heads` heads). The last layer outputs num_classes logits per node. Parameters are
/// Glorot-initialised from the counter-based RNG keyed by (seed, parameter id), so every process
/// builds the same model.
template <class T>
class Model final : public Network<T> {
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
                                    const Features<T>& x) override;
  void backward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                const kernels::Tensor<T>& dlogits) override;
  /// The node representations after convolution `layer` (1-based, its ReLU included below the
  /// last layer; the last layer's are the logits): n x width(layer), owned by the model, valid
  /// until the next pass. forward() is embed(..., num_layers).
  const kernels::Tensor<T>& embed(const Context& ctx, Adjacency<T> graph, const Features<T>& x,
                                  int layer);
  /// Convolution `layer` alone (1-based, its ReLU included below the last layer): x holds its
  /// input (the data for layer 1, else width(layer - 1) columns), one row per source of
  /// `graph`; the output has one row per destination. Composing the layers over the same
  /// graph gives embed(): what layer-wise inference evaluates chunk by chunk
  /// (runtime::LayerwiseInference).
  const kernels::Tensor<T>& forward_layer(const Context& ctx, Adjacency<T> graph,
                                          const Features<T>& x, int layer);
  /// Output width of convolution `layer` (1-based): hidden (GAT: heads * hidden) below the
  /// last, num_classes there.
  std::int64_t width(int layer) const;

  /// Sizes every module's buffers for graphs within `bounds` ((sources, destinations) per
  /// convolution, input layer first: a mini-batch envelope's) and inputs of at most
  /// `input_entries` stored entries (sparse; 0: dense), so that later passes within them
  /// allocate nothing.
  void reserve(const kernels::Resources& res,
               std::span<const std::pair<std::int64_t, std::int64_t>> bounds,
               std::int64_t input_entries = 0) override;

  std::vector<Parameter<T>*> parameters() override;
  const ModelConfig& config() const { return m_config; }
  NetworkShape shape() const override {
    return {graph_preparation(m_config.kind), m_config.num_layers, m_config.in_features,
            m_config.num_classes};
  }
  /// The first module's dropout (its mask keyed kInputDropoutLayer); skipped when
  /// ctx.input_dropped.
  float input_dropout() const override { return m_config.dropout; }
  /// Names like "layer1.weight": stable across runs, used by save/load.
  std::vector<std::string> parameter_names();

  /// Writes the model file (nn/model_file.hpp): the architecture, `info`'s dataset,
  /// preprocessing and training record (its config is replaced by this model's), and the
  /// parameters; atomically (never half-written). The parameters may live on any device: they
  /// are copied to the host through `res` (the Resources of their device), which synchronises.
  void save(const kernels::Resources& res, const std::filesystem::path& path,
            const ModelFileInfo& info = {});
  /// The same for a model on the CPU (LogicError for device parameters: use the overload above).
  void save(const std::filesystem::path& path, const ModelFileInfo& info = {});
  /// Loads the parameters of a model file onto res's device. halo::IoError naming the file when
  /// it is damaged (read_model_file) or describes another architecture, element type,
  /// parameter name or shape; the model is left unchanged then.
  void load(const kernels::Resources& res, const std::filesystem::path& path);

 private:
  ModelConfig m_config;
  std::vector<std::unique_ptr<Module<T>>> m_modules;
  void build_gat(const kernels::Resources& res, std::uint64_t seed);
  /// The graph module i runs on.
  const Adjacency<T>& graph_of(std::span<const Adjacency<T>> graphs, std::size_t i) const;
  std::vector<int> m_layer_of_module;  // 1-based convolution index: names, graph per layer
  /// Runs modules [begin, end) forward (begin 0: x is the model's input).
  const kernels::Tensor<T>& run(const Context& ctx, std::span<const Adjacency<T>> graphs,
                                const Features<T>& x, std::size_t begin, std::size_t end);
  /// One past the last module of convolution `layer` (its ReLU included below the last
  /// layer); 0 for layer 0.
  std::size_t module_end(int layer) const;
};

/// The model a file describes, built on res's device with the file's parameters; `info`, when
/// given, receives the file's description. halo::IoError naming the file (read_model_file).
template <class T>
Model<T> load_model(const kernels::Resources& res, const std::filesystem::path& path,
                    ModelFileInfo* info = nullptr);

}  // namespace halo::nn
