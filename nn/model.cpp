#include <cstdio>
#include <cstring>
#include <fstream>

#include <halo/kernels/log.hpp>
#include <halo/nn/layers.hpp>
#include <halo/nn/model.hpp>

namespace halo::nn {

using kernels::Tensor;

ModelKind parse_model_kind(const std::string& name) {
  if (name == "gcn") return ModelKind::Gcn;
  if (name == "sage") return ModelKind::Sage;
  throw LogicError("unknown model '" + name + "' (expected gcn or sage)");
}

std::string to_string(ModelKind kind) { return kind == ModelKind::Gcn ? "gcn" : "sage"; }

template <class T>
Model<T>::Model(const kernels::Resources& res, const ModelConfig& config, std::uint64_t seed)
    : m_config(config) {
  HALO_EXPECTS(config.num_layers >= 1, "model: at least one layer is needed");
  HALO_EXPECTS(config.hidden >= 1, "model: hidden size must be >= 1");
  HALO_EXPECTS(config.in_features >= 1, "model: input features must be >= 1");
  HALO_EXPECTS(config.num_classes >= 2, "model: at least two classes are needed");
  HALO_EXPECTS(config.dropout >= 0.f && config.dropout < 1.f, "model: dropout must be in [0, 1)");
  std::uint64_t param_id = 0;
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const std::int64_t in = layer == 0 ? config.in_features : config.hidden;
    const bool last = layer + 1 == config.num_layers;
    const std::int64_t out = last ? config.num_classes : config.hidden;
    m_modules.push_back(std::make_unique<Dropout<T>>(config.dropout, layer));
    m_layer_of_module.push_back(layer + 1);
    if (config.kind == ModelKind::Gcn) {
      m_modules.push_back(std::make_unique<GCNConv<T>>(res, in, out, seed, param_id));
    } else {
      m_modules.push_back(std::make_unique<SAGEConv<T>>(res, in, out, seed, param_id));
    }
    param_id += 2;
    m_layer_of_module.push_back(layer + 1);
    if (!last) {
      m_modules.push_back(std::make_unique<ReLU<T>>());
      m_layer_of_module.push_back(layer + 1);
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
const Tensor<T>& Model<T>::forward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                                   const Features<T>& x) {
  HALO_EXPECTS(kernels::num_cols(x) == m_config.in_features,
               "model: input has " + std::to_string(kernels::num_cols(x)) +
                   " features, the model " + std::to_string(m_config.in_features));
  const Features<T>* h = &x;
  for (std::size_t i = 0; i < m_modules.size(); ++i)
    h = &m_modules[i]->forward(ctx, graph_of(graphs, i), *h);
  return std::get<Tensor<T>>(*h);
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

// File layout (little-endian): magic "HALOPRM1", u32 element size, u32 count, then per
// parameter: u32 name length, name bytes, i64 rows, i64 cols, rows * cols elements.
namespace {
constexpr char kMagic[8] = {'H', 'A', 'L', 'O', 'P', 'R', 'M', '1'};

template <class V>
void put(std::ofstream& out, const V& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof(V));
}
template <class V>
bool get(std::ifstream& in, V& v) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof(V)));
}
}  // namespace

template <class T>
void Model<T>::save(const std::filesystem::path& path) {
  const kernels::Resources host;
  for (auto* p : parameters())
    HALO_EXPECTS(p->value.device() == kernels::Device::Cpu,
                 "model: save(path) needs host parameters; pass the device's Resources");
  save(host, path);
}

template <class T>
void Model<T>::save(const kernels::Resources& res, const std::filesystem::path& path) {
  const auto params = parameters();
  const auto names = parameter_names();
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(tmp.string() + ": cannot open for writing");
    out.write(kMagic, sizeof(kMagic));
    put(out, static_cast<std::uint32_t>(sizeof(T)));
    put(out, static_cast<std::uint32_t>(params.size()));
    for (std::size_t i = 0; i < params.size(); ++i) {
      put(out, static_cast<std::uint32_t>(names[i].size()));
      out.write(names[i].data(), static_cast<std::streamsize>(names[i].size()));
      put(out, params[i]->value.rows());
      put(out, params[i]->value.cols());
      const auto values = params[i]->value.to_vector(res);  // device -> host, synchronous
      out.write(reinterpret_cast<const char*>(values.data()),
                static_cast<std::streamsize>(values.size() * sizeof(T)));
    }
    if (!out.flush()) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw IoError(tmp.string() + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw IoError(path.string() + ": cannot replace it with " + tmp.string() + " (" + ec.message() +
                  ")");
  }
}

template <class T>
void Model<T>::load(const kernels::Resources& res, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string() + ": cannot open parameter file");
  const auto fail = [&](const std::string& what) { throw IoError(path.string() + ": " + what); };
  char magic[8];
  std::uint32_t elem = 0, count = 0;
  if (!in.read(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    fail("not a Halo parameter file (bad magic)");
  if (!get(in, elem) || elem != sizeof(T))
    fail("element size " + std::to_string(elem) + ", this model uses " + std::to_string(sizeof(T)));
  const auto params = parameters();
  const auto names = parameter_names();
  if (!get(in, count) || count != params.size())
    fail("holds " + std::to_string(count) + " parameters, the model has " +
         std::to_string(params.size()));
  // Everything is read and checked before any parameter changes: a bad file leaves the model as
  // it was.
  std::vector<std::vector<T>> loaded(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::uint32_t len = 0;
    if (!get(in, len) || len > 4096) fail("truncated or corrupt at parameter " + std::to_string(i));
    std::string name(len, '\0');
    std::int64_t rows = 0, cols = 0;
    if (!in.read(name.data(), len) || !get(in, rows) || !get(in, cols))
      fail("truncated at parameter " + std::to_string(i));
    auto& value = params[i]->value;
    if (name != names[i] || rows != value.rows() || cols != value.cols())
      fail("parameter " + std::to_string(i) + " is '" + name + "' " + std::to_string(rows) + "x" +
           std::to_string(cols) + ", the model expects '" + names[i] + "' " +
           std::to_string(value.rows()) + "x" + std::to_string(value.cols()));
    std::vector<T>& values = loaded[i];
    values.resize(static_cast<std::size_t>(rows * cols));
    if (!in.read(reinterpret_cast<char*>(values.data()),
                 static_cast<std::streamsize>(values.size() * sizeof(T))))
      fail("truncated in the values of '" + name + "'");
  }
  if (in.peek() != std::ifstream::traits_type::eof())
    fail("trailing bytes after the last parameter");
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto& value = params[i]->value;
    value = Tensor<T>::from_host(res, loaded[i], value.rows(), value.cols());
  }
}

template class Model<float>;
template class Model<double>;

}  // namespace halo::nn
