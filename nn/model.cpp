#include <cstring>

#include <halo/kernels/log.hpp>
#include <halo/nn/gat.hpp>
#include <halo/nn/layers.hpp>
#include <halo/nn/model.hpp>

namespace halo::nn {

using kernels::Tensor;

ModelKind parse_model_kind(const std::string& name) {
  if (name == "gcn") return ModelKind::Gcn;
  if (name == "sage") return ModelKind::Sage;
  if (name == "gat") return ModelKind::Gat;
  throw LogicError("unknown model '" + name + "' (expected gcn, sage or gat)");
}

std::string to_string(ModelKind kind) {
  switch (kind) {
    case ModelKind::Gcn:
      return "gcn";
    case ModelKind::Sage:
      return "sage";
    case ModelKind::Gat:
      return "gat";
  }
  throw LogicError("unknown model kind");
}

std::string to_string(GraphPreparation g) {
  switch (g) {
    case GraphPreparation::Symmetric:
      return "symmetric";
    case GraphPreparation::Mean:
      return "mean";
    case GraphPreparation::SelfLoops:
      return "self_loops";
  }
  throw LogicError("unknown graph preparation");
}

GraphPreparation graph_preparation(ModelKind kind) {
  switch (kind) {  // no default: a new kind must declare its graph here (-Wswitch)
    case ModelKind::Gcn:
      return GraphPreparation::Symmetric;
    case ModelKind::Sage:
      return GraphPreparation::Mean;
    case ModelKind::Gat:
      return GraphPreparation::SelfLoops;
  }
  throw LogicError("unknown model kind");
}

template <class T>
Model<T>::Model(const kernels::Resources& res, const ModelConfig& config, std::uint64_t seed)
    : m_config(config) {
  HALO_EXPECTS(config.num_layers >= 1, "model: at least one layer is needed");
  HALO_EXPECTS(config.hidden >= 1, "model: hidden size must be >= 1");
  HALO_EXPECTS(config.in_features >= 1, "model: input features must be >= 1");
  HALO_EXPECTS(config.num_classes >= 2, "model: at least two classes are needed");
  HALO_EXPECTS(config.dropout >= 0.f && config.dropout < 1.f, "model: dropout must be in [0, 1)");
  if (config.kind == ModelKind::Gat) {
    HALO_EXPECTS(config.heads >= 1 && config.out_heads >= 1,
                 "model: GAT needs at least one head per layer");
    build_gat(res, seed);
    return;
  }
  std::uint64_t param_id = 0;
  // Dropout(0), conv 1, ReLU + Dropout(1) fused, conv 2, ...: the ReLU after a convolution
  // and the next convolution's dropout run as one module (one pass each way, no mask needed
  // backward), which belongs to the next convolution (its graph keys the mask; embed() takes
  // it as its layer's ReLU).
  m_modules.push_back(std::make_unique<Dropout<T>>(config.dropout, kInputDropoutLayer));
  m_layer_of_module.push_back(1);
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const std::int64_t in = layer == 0 ? config.in_features : config.hidden;
    const bool last = layer + 1 == config.num_layers;
    const std::int64_t out = last ? config.num_classes : config.hidden;
    if (config.kind == ModelKind::Gcn) {
      m_modules.push_back(std::make_unique<GCNConv<T>>(res, in, out, seed, param_id));
    } else {
      m_modules.push_back(std::make_unique<SAGEConv<T>>(res, in, out, seed, param_id));
    }
    param_id += 2;
    m_layer_of_module.push_back(layer + 1);
    if (!last) {
      m_modules.push_back(std::make_unique<ReluDropout<T>>(config.dropout, layer + 1));
      m_layer_of_module.push_back(layer + 2);
    }
  }
}

template <class T>
void Model<T>::build_gat(const kernels::Resources& res, std::uint64_t seed) {
  // Dropout(0), GAT 1 (heads concatenated), ELU + Dropout(1), GAT 2, ...; the last layer
  // averages its out_heads heads of num_classes. Every layer's attention coefficients go
  // through the same dropout p, keyed by the layer (kAttentionDropoutLayer + l).
  const ModelConfig& c = m_config;
  std::uint64_t param_id = 0;
  m_modules.push_back(std::make_unique<Dropout<T>>(c.dropout, kInputDropoutLayer));
  m_layer_of_module.push_back(1);
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const std::int64_t in = layer == 0 ? c.in_features : c.heads * c.hidden;
    const bool last = layer + 1 == c.num_layers;
    m_modules.push_back(std::make_unique<GATConv<T>>(
        res, in, last ? c.num_classes : c.hidden, last ? c.out_heads : c.heads, /*concat=*/!last,
        c.dropout, static_cast<std::uint64_t>(layer), seed, param_id));
    param_id += 3;
    m_layer_of_module.push_back(layer + 1);
    if (!last) {
      m_modules.push_back(std::make_unique<EluDropout<T>>(c.dropout, layer + 1));
      m_layer_of_module.push_back(layer + 2);
    }
  }
}

template <class T>
const Tensor<T>& Model<T>::forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) {
  return forward(ctx, std::span<const Adjacency<T>>(&graph, 1), x);
}

template <class T>
void Model<T>::backward(const Context& ctx, Adjacency<T> graph, const Tensor<T>& dlogits) {
  backward(ctx, std::span<const Adjacency<T>>(&graph, 1), dlogits);
}

template <class T>
const Adjacency<T>& Model<T>::graph_of(std::span<const Adjacency<T>> graphs, std::size_t i) const {
  HALO_EXPECTS(graphs.size() == 1 || graphs.size() == static_cast<std::size_t>(m_config.num_layers),
               "model: one graph, or one per layer (" + std::to_string(m_config.num_layers) +
                   "), expected; got " + std::to_string(graphs.size()));
  return graphs.size() == 1 ? graphs[0]
                            : graphs[static_cast<std::size_t>(m_layer_of_module[i] - 1)];
}

template <class T>
const Tensor<T>& Model<T>::run(const Context& ctx, std::span<const Adjacency<T>> graphs,
                               const Features<T>& x, std::size_t begin, std::size_t end) {
  // The first module with weights at or after `begin` reads x: the data, or a layer's output.
  std::int64_t width = m_config.in_features;
  for (std::size_t i = 0; i < begin; ++i)
    if (const auto params = m_modules[i]->parameters(); !params.empty())
      width = params.front()->value.cols();
  HALO_EXPECTS(kernels::num_cols(x) == width, "model: input has " +
                                                  std::to_string(kernels::num_cols(x)) +
                                                  " features, the model " + std::to_string(width));
  const Features<T>* h = &x;
  // Module 0 is the input dropout: skipped when the input already has it.
  if (begin == 0 && ctx.training && ctx.input_dropped) begin = 1;
  for (std::size_t i = begin; i < end; ++i)
    h = &m_modules[i]->forward(ctx, graph_of(graphs, i), *h);
  return std::get<Tensor<T>>(*h);
}

template <class T>
const Tensor<T>& Model<T>::forward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                                   const Features<T>& x) {
  return run(ctx, graphs, x, 0, m_modules.size());
}

template <class T>
std::size_t Model<T>::module_end(int layer) const {
  HALO_EXPECTS(layer >= 0 && layer <= m_config.num_layers, "model: layer " + std::to_string(layer) +
                                                               " out of range 1.." +
                                                               std::to_string(m_config.num_layers));
  if (layer == 0) return 0;
  std::size_t end = 0;
  while (end < m_modules.size() && m_layer_of_module[end] <= layer) ++end;
  if (layer < m_config.num_layers) ++end;  // the fused ReLU + next dropout (a ReLU here)
  return end;
}

template <class T>
const Tensor<T>& Model<T>::embed(const Context& ctx, Adjacency<T> graph, const Features<T>& x,
                                 int layer) {
  HALO_EXPECTS(layer >= 1, "model: layer " + std::to_string(layer) + " out of range 1.." +
                               std::to_string(m_config.num_layers));
  return run(ctx, std::span<const Adjacency<T>>(&graph, 1), x, 0, module_end(layer));
}

template <class T>
const Tensor<T>& Model<T>::forward_layer(const Context& ctx, Adjacency<T> graph,
                                         const Features<T>& x, int layer) {
  HALO_EXPECTS(layer >= 1, "model: layer " + std::to_string(layer) + " out of range 1.." +
                               std::to_string(m_config.num_layers));
  const std::size_t end = module_end(layer);
  return run(ctx, std::span<const Adjacency<T>>(&graph, 1), x, module_end(layer - 1), end);
}

template <class T>
std::int64_t Model<T>::width(int layer) const {
  HALO_EXPECTS(layer >= 1 && layer <= m_config.num_layers, "model: layer out of range");
  if (layer == m_config.num_layers) return m_config.num_classes;
  return m_config.kind == ModelKind::Gat ? m_config.heads * m_config.hidden : m_config.hidden;
}

template <class T>
void Model<T>::backward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                        const Tensor<T>& dlogits) {
  const Tensor<T>* d = &dlogits;
  for (std::size_t i = m_modules.size(); i-- > 0;) {
    // The input of the first modules is the data itself: its gradient is never needed.
    const bool need_input_grad = i > 1;
    d = &m_modules[i]->backward(ctx, graph_of(graphs, i), *d, need_input_grad);
  }
}

template <class T>
void Model<T>::reserve(const kernels::Resources& res,
                       std::span<const std::pair<std::int64_t, std::int64_t>> bounds,
                       std::int64_t input_entries) {
  HALO_EXPECTS(bounds.size() == static_cast<std::size_t>(m_config.num_layers),
               "model: one bound per layer expected");
  // Module widths: the input's until the first convolution, then each convolution's output.
  // The input is sparse until the first module with weights.
  std::int64_t width = m_config.in_features, entries = input_entries;
  for (std::size_t i = 0; i < m_modules.size(); ++i) {
    const auto& [src, dst] = bounds[static_cast<std::size_t>(m_layer_of_module[i] - 1)];
    m_modules[i]->reserve(res, src, dst, width, entries);
    const auto params = m_modules[i]->parameters();
    if (!params.empty()) {
      width = params.front()->value.cols();
      entries = 0;
    }
  }
}

template <class T>
std::vector<Parameter<T>*> Model<T>::parameters() {
  std::vector<Parameter<T>*> out;
  for (auto& m : m_modules)
    for (auto* p : m->parameters()) out.push_back(p);
  return out;
}

template <class T>
std::vector<std::string> Model<T>::parameter_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < m_modules.size(); ++i)
    for (auto* p : m_modules[i]->parameters())
      names.push_back("layer" + std::to_string(m_layer_of_module[i]) + "." + p->name);
  return names;
}

namespace {
template <class T>
std::string dtype_of() {
  return sizeof(T) == 4 ? "<f4" : "<f8";
}
}  // namespace

template <class T>
void Model<T>::save(const std::filesystem::path& path, const ModelFileInfo& info) {
  const kernels::Resources host;
  for (auto* p : parameters())
    HALO_EXPECTS(p->value.device() == kernels::Device::Cpu,
                 "model: save(path) needs host parameters; pass the device's Resources");
  save(host, path, info);
}

template <class T>
void Model<T>::save(const kernels::Resources& res, const std::filesystem::path& path,
                    const ModelFileInfo& info) {
  ModelFile file{info, dtype_of<T>(), {}};
  file.info.config = m_config;
  const auto params = parameters();
  const auto names = parameter_names();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto values = params[i]->value.to_vector(res);  // device -> host, synchronous
    file.arrays.push_back(
        {names[i], params[i]->value.rows(), params[i]->value.cols(),
         std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T))});
  }
  write_model_file(path, file);
}

namespace {

/// Model::load's work on a file already read and checked (read_model_file), so that load_model
/// reads and checksums the file once.
template <class T>
void load_parameters(Model<T>& model, const kernels::Resources& res,
                     const std::filesystem::path& path, const ModelFile& file) {
  const ModelConfig& want = model.config();
  const auto fail = [&](const std::string& what) { throw IoError(path.string() + ": " + what); };
  if (file.dtype != dtype_of<T>())
    fail("holds " + file.dtype + " parameters, this model uses " + dtype_of<T>());
  const ModelConfig& c = file.info.config;
  const auto describe = [](const ModelConfig& m) {
    std::string heads;
    if (m.kind == ModelKind::Gat)
      heads = ", " + std::to_string(m.heads) + " heads, " + std::to_string(m.out_heads) +
              " output heads";
    return to_string(m.kind) + ", " + std::to_string(m.num_layers) + " layers, " +
           std::to_string(m.in_features) + " -> " + std::to_string(m.hidden) + " -> " +
           std::to_string(m.num_classes) + heads;
  };
  const bool gat = want.kind == ModelKind::Gat;
  if (c.kind != want.kind || c.num_layers != want.num_layers || c.hidden != want.hidden ||
      c.in_features != want.in_features || c.num_classes != want.num_classes ||
      (gat && (c.heads != want.heads || c.out_heads != want.out_heads)))
    fail("describes a model (" + describe(c) + ") other than this one (" + describe(want) + ")");
  const auto params = model.parameters();
  const auto names = model.parameter_names();
  if (file.arrays.size() != params.size())
    fail("holds " + std::to_string(file.arrays.size()) + " parameters, the model has " +
         std::to_string(params.size()));
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ModelFileArray& a = file.arrays[i];
    const auto& value = params[i]->value;
    if (a.name != names[i] || a.rows != value.rows() || a.cols != value.cols())
      fail("parameter " + std::to_string(i) + " is '" + a.name + "' " + std::to_string(a.rows) +
           "x" + std::to_string(a.cols) + ", the model expects '" + names[i] + "' " +
           std::to_string(value.rows()) + "x" + std::to_string(value.cols()));
  }
  // Everything was checked before any parameter changes: a bad file leaves the model as it was.
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ModelFileArray& a = file.arrays[i];
    std::vector<T> values(static_cast<std::size_t>(a.rows * a.cols));
    std::memcpy(values.data(), a.bytes.data(), a.bytes.size());
    auto& value = params[i]->value;
    value = Tensor<T>::from_host(res, values, a.rows, a.cols);
  }
}

}  // namespace

template <class T>
void Model<T>::load(const kernels::Resources& res, const std::filesystem::path& path) {
  load_parameters(*this, res, path, read_model_file(path));
}

template <class T>
Model<T> load_model(const kernels::Resources& res, const std::filesystem::path& path,
                    ModelFileInfo* info) {
  const ModelFile file = read_model_file(path);
  if (file.info.task != "node")
    throw IoError(path.string() + ": a model of the " + file.info.task +
                  " task, not a node classifier (halo predict reads it; halo embed does not)");
  ModelConfig c = file.info.config;
  try {
    Model<T> model(res, c, /*seed=*/0);
    load_parameters(model, res, path, file);
    if (info != nullptr) *info = file.info;
    return model;
  } catch (const LogicError& e) {  // an architecture the constructor refuses
    throw IoError(path.string() + ": " + e.what());
  }
}

template Model<float> load_model(const kernels::Resources&, const std::filesystem::path&,
                                 ModelFileInfo*);
template Model<double> load_model(const kernels::Resources&, const std::filesystem::path&,
                                  ModelFileInfo*);

template class Model<float>;
template class Model<double>;

}  // namespace halo::nn
