#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/nn/hgt.hpp>
#include <halo/nn/rgcn.hpp>

namespace halo::nn {

using kernels::Tensor;

HeteroLayerKind parse_hetero_layer_kind(const std::string& name) {
  if (name == "rgcn") return HeteroLayerKind::Rgcn;
  if (name == "hgt") return HeteroLayerKind::Hgt;
  HALO_FAIL("heterogeneous layer '" + name + "': expected rgcn or hgt");
}

std::string to_string(HeteroLayerKind kind) {
  switch (kind) {
    case HeteroLayerKind::Rgcn:
      return "rgcn";
    case HeteroLayerKind::Hgt:
      return "hgt";
  }
  HALO_FAIL("unknown heterogeneous layer kind");
}

FeaturelessInput parse_featureless_input(const std::string& name) {
  if (name == "embedding") return FeaturelessInput::Embedding;
  if (name == "zero") return FeaturelessInput::Zero;
  if (name == "auto") return FeaturelessInput::Auto;
  HALO_FAIL("featureless input '" + name + "': expected embedding, zero or auto");
}

std::string to_string(FeaturelessInput input) {
  switch (input) {
    case FeaturelessInput::Embedding:
      return "embedding";
    case FeaturelessInput::Zero:
      return "zero";
    case FeaturelessInput::Auto:
      return "auto";
  }
  HALO_FAIL("unknown featureless input");
}

bool learns_embedding(FeaturelessInput input, const HeteroSchema& schema, std::int32_t t) {
  const auto ut = static_cast<std::size_t>(t);
  HALO_EXPECTS(t >= 0 && ut < schema.in_features.size(), "learns_embedding: no such node type");
  if (schema.in_features[ut] > 0 || input == FeaturelessInput::Zero) return false;
  if (input == FeaturelessInput::Embedding) return true;
  const std::vector<std::int64_t>& n =
      schema.global_nodes.empty() ? schema.num_nodes : schema.global_nodes;
  return n[ut] < n[static_cast<std::size_t>(schema.target_type)];
}

template <class T>
std::unique_ptr<HeteroModule<T>> make_hetero_layer(
    const kernels::Resources& res, HeteroLayerKind kind, std::vector<std::int64_t> in_width,
    std::int64_t out, std::vector<std::pair<std::int32_t, std::int32_t>> relations,
    const HeteroModelConfig& config, std::uint64_t seed, std::uint64_t param_id) {
  switch (kind) {
    case HeteroLayerKind::Rgcn:
      return std::make_unique<RGCNConv<T>>(res, std::move(in_width), out, std::move(relations),
                                           config.num_bases, seed, param_id);
    case HeteroLayerKind::Hgt: {
      HgtConfig c;
      c.in_widths = std::move(in_width);
      c.relations = std::move(relations);
      c.out_width = out;
      c.heads = out % config.heads == 0 ? config.heads : 1;
      c.dropout = 0.f;  // HeteroModel drops out every layer's input
      c.layer_id = param_id;
      return std::make_unique<HGTConv<T>>(res, std::move(c), seed, param_id);
    }
  }
  HALO_FAIL("unknown heterogeneous layer kind");
}

namespace {

constexpr std::uint64_t kProjectionId = 1 << 20;  // param ids: projections, embeddings, layers
constexpr std::uint64_t kEmbeddingId = 2 << 20;
constexpr std::uint64_t kClassifierId = 3 << 20;
constexpr std::uint64_t kLayerId = 1 << 10;  // per layer

template <class T>
kernels::DropoutKey dropout_key(const Context& ctx, const HeteroGraphView<T>& g, std::size_t t,
                                int layer) {
  kernels::DropoutKey k;
  k.seed = ctx.seed;
  k.epoch = ctx.epoch;
  k.layer = static_cast<std::uint64_t>(layer);
  k.row_offset = g.type_offset.empty() ? 0 : g.type_offset[t];
  if (t < g.source_ids.size()) k.row_ids = g.source_ids[t];
  return k;
}

}  // namespace

template <class T>
HeteroModel<T>::HeteroModel(const kernels::Resources& res, const HeteroModelConfig& config,
                            const HeteroSchema& schema, std::uint64_t seed)
    : m_config(config), m_schema(schema), m_seed(seed) {
  const auto nt = static_cast<std::int32_t>(schema.num_nodes.size());
  HALO_EXPECTS(nt >= 1 && schema.in_features.size() == schema.num_nodes.size() &&
                   schema.target_type >= 0 && schema.target_type < nt && schema.num_classes >= 1,
               "hetero model: the schema needs node types, a target type and classes");
  HALO_EXPECTS(config.num_layers >= 1 && config.hidden >= 1,
               "hetero model: layers and hidden "
               "width must be >= 1");
  HALO_EXPECTS(config.dropout >= 0 && config.dropout < 1, "hetero model: dropout in [0, 1)");
  HALO_EXPECTS(config.heads >= 1, "hetero model: heads must be >= 1");
  HALO_EXPECTS(config.kind != HeteroLayerKind::Hgt || config.hidden % config.heads == 0,
               "hetero model: HGT's heads (" + std::to_string(config.heads) +
                   ") must divide the hidden width (" + std::to_string(config.hidden) + ")");
  const std::int64_t h = config.hidden;
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    const std::string name =
        ut < schema.type_names.size() ? schema.type_names[ut] : std::to_string(t);
    if (schema.in_features[ut] > 0) {
      Parameter<T> w{"projection_" + name, Tensor<T>(res, schema.in_features[ut], h),
                     Tensor<T>::zeros(res, schema.in_features[ut], h)};
      detail::glorot_uniform(res, w.value, seed, kProjectionId + ut);
      m_proj_weight.push_back(std::move(w));
      m_proj_bias.push_back(
          {"projection_bias_" + name, Tensor<T>::zeros(res, h, 1), Tensor<T>::zeros(res, h, 1)});
      m_embedding.push_back(nullptr);
    } else {
      m_proj_weight.push_back({});
      m_proj_bias.push_back({});
      m_embedding.push_back(learns_embedding(config.featureless, schema, t)
                                ? std::make_unique<SparseEmbedding<T>>(res, "embedding_" + name,
                                                                       schema.num_nodes[ut], h,
                                                                       seed, kEmbeddingId + ut)
                                : nullptr);
    }
  }
  std::vector<std::pair<std::int32_t, std::int32_t>> into_target;
  for (const auto& r : schema.relations)
    if (r.second == schema.target_type) into_target.push_back(r);
  const bool classifier = config.kind == HeteroLayerKind::Hgt;
  for (int l = 0; l < config.num_layers; ++l) {
    const bool last = l + 1 == config.num_layers;
    m_layers.push_back(make_hetero_layer<T>(
        res, config.kind, std::vector<std::int64_t>(static_cast<std::size_t>(nt), h),
        last && !classifier ? schema.num_classes : h, last ? into_target : schema.relations, config,
        seed, static_cast<std::uint64_t>(l + 1) * kLayerId));
  }
  // The input layer's zero types: featureless without an embedding.
  std::vector<bool> zero(static_cast<std::size_t>(nt));
  for (std::int32_t t = 0; t < nt; ++t)
    zero[static_cast<std::size_t>(t)] = schema.in_features[static_cast<std::size_t>(t)] == 0 &&
                                        !learns_embedding(config.featureless, schema, t);
  m_layers.front()->set_zero_inputs(zero);
  m_zero_input = std::move(zero);
  if (classifier) {
    m_cls_weight = {"classifier_weight", Tensor<T>(res, h, schema.num_classes),
                    Tensor<T>::zeros(res, h, schema.num_classes)};
    detail::glorot_uniform(res, m_cls_weight.value, seed, kClassifierId);
    m_cls_bias = {"classifier_bias", Tensor<T>::zeros(res, schema.num_classes, 1),
                  Tensor<T>::zeros(res, schema.num_classes, 1)};
  }
  m_h.resize(static_cast<std::size_t>(config.num_layers));
  for (auto& v : m_h) v.resize(static_cast<std::size_t>(nt));
  m_dh.resize(static_cast<std::size_t>(nt));
  m_embed_ids.resize(static_cast<std::size_t>(nt));
  m_embed_sampled.assign(static_cast<std::size_t>(nt), false);
  m_dh_owned.resize(static_cast<std::size_t>(nt));
  m_spread.assign(static_cast<std::size_t>(nt), nullptr);
}

template <class T>
std::unique_ptr<SparseEmbedding<T>> HeteroModel<T>::embedding_part(
    const kernels::Resources& res, std::int32_t type, std::int64_t num_nodes,
    std::span<const kernels::NodeId> rows) const {
  const auto t = static_cast<std::size_t>(type);
  HALO_EXPECTS(type >= 0 && t < m_schema.in_features.size() &&
                   learns_embedding(m_config.featureless, m_schema, type),
               "hetero model: embedding_part takes a type with a learnable embedding");
  const std::string name =
      t < m_schema.type_names.size() ? m_schema.type_names[t] : std::to_string(t);
  auto part = std::make_unique<SparseEmbedding<T>>(res, "embedding_" + name, rows, num_nodes,
                                                   m_config.hidden, m_seed, kEmbeddingId + t);
  const SparseEmbedding<T>* own = m_embedding[t].get();
  if (own != nullptr && own->table().rows() == num_nodes) {
    HALO_EXPECTS(own->table().device() == kernels::Device::Cpu &&
                     part->table().device() == kernels::Device::Cpu,
                 "hetero model: embedding_part copies rows of a host table");
    const T* whole = own->table().data();
    T* out = part->table().data();
    const auto h = static_cast<std::size_t>(m_config.hidden);
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::copy_n(whole + static_cast<std::size_t>(rows[i]) * h, h, out + i * h);
  }
  return part;
}

template <class T>
void HeteroModel<T>::set_embedding(std::int32_t type, std::unique_ptr<SparseEmbedding<T>> table) {
  const auto t = static_cast<std::size_t>(type);
  HALO_EXPECTS(type >= 0 && t < m_spread.size() &&
                   learns_embedding(m_config.featureless, m_schema, type) && table &&
                   table->dim() == m_config.hidden,
               "hetero model: set_embedding takes a table of a type with a learnable embedding");
  m_embedding[t] = std::move(table);
  m_spread[t] = nullptr;
}

template <class T>
void HeteroModel<T>::spread_embedding(std::int32_t type, EmbeddingRows<T>* rows) {
  const auto t = static_cast<std::size_t>(type);
  HALO_EXPECTS(type >= 0 && t < m_embedding.size() && m_embedding[t] && rows != nullptr,
               "hetero model: spread_embedding takes a type with a learnable embedding");
  m_embedding[t].reset();
  m_spread[t] = rows;
}

template <class T>
std::vector<Parameter<T>*> HeteroModel<T>::parameters() {
  std::vector<Parameter<T>*> p;
  for (std::size_t t = 0; t < m_embedding.size(); ++t) {
    if (m_schema.in_features[t] == 0) continue;
    p.push_back(&m_proj_weight[t]);
    p.push_back(&m_proj_bias[t]);
  }
  for (auto& layer : m_layers)
    for (auto* q : layer->parameters()) p.push_back(q);
  if (!m_cls_weight.value.empty()) {
    p.push_back(&m_cls_weight);
    p.push_back(&m_cls_bias);
  }
  return p;
}

template <class T>
std::vector<SparseEmbedding<T>*> HeteroModel<T>::embeddings() {
  std::vector<SparseEmbedding<T>*> e;
  for (auto& t : m_embedding)
    if (t) e.push_back(t.get());
  return e;
}

template <class T>
const Tensor<T>& HeteroModel<T>::forward(const Context& ctx, const HeteroGraphView<T>& graph,
                                         std::span<const Features<T>* const> x) {
  return forward(ctx, std::span<const HeteroGraphView<T>>(&graph, 1), x);
}

template <class T>
void HeteroModel<T>::backward(const Context& ctx, const HeteroGraphView<T>& graph,
                              const Tensor<T>& dlogits) {
  backward(ctx, std::span<const HeteroGraphView<T>>(&graph, 1), dlogits);
}

template <class T>
const Tensor<T>& HeteroModel<T>::forward(const Context& ctx,
                                         std::span<const HeteroGraphView<T>> graphs,
                                         std::span<const Features<T>* const> x) {
  HALO_EXPECTS(graphs.size() == 1 || graphs.size() == static_cast<std::size_t>(m_config.num_layers),
               "hetero model: one graph, or one per layer");
  auto layer_graph = [&](int l) -> const HeteroGraphView<T>& {
    return graphs.size() == 1 ? graphs[0] : graphs[static_cast<std::size_t>(l)];
  };
  const HeteroGraphView<T>& graph = graphs[0];
  const auto& res = *ctx.res;
  const std::size_t nt = m_embedding.size();
  HALO_EXPECTS(graph.num_src.size() == nt && graph.num_dst.size() == nt && x.size() == nt,
               "hetero model: the graph has other node types than the model");
  const float p = ctx.training ? m_config.dropout : 0.f;
  m_inputs.assign(x.begin(), x.end());
  // The input stage: feature projections and embedding lookups (feature projection).
  auto& h0 = m_h[0];
  {
    HeteroStageTimes none;
    HeteroStageTimes& times = graph.times ? *graph.times : none;
    const auto start = std::chrono::steady_clock::now();
    if (graph.times) res.synchronize();
    for (std::size_t t = 0; t < nt; ++t) {
      if (m_spread[t]) {
        // Rows spread over processes: looked up by their type-local ids (a collective call).
        HALO_EXPECTS(res.device() == kernels::Device::Cpu && t < graph.source_ids.size() &&
                         graph.source_ids[t].size == graph.num_src[t],
                     "hetero model: a spread embedding needs its rows' source ids (CPU)");
        const kernels::Span<const kernels::NodeId> ids = graph.source_ids[t];
        kernels::ensure_shape(res, m_embed_ids[t], ids.size, 1);
        const auto offset = static_cast<kernels::NodeId>(graph.type_offset[t]);
        for (std::int64_t i = 0; i < ids.size; ++i) m_embed_ids[t].data()[i] = ids[i] - offset;
        m_spread[t]->lookup(res, std::as_const(m_embed_ids[t]).span(), h0[t]);
      } else if (m_schema.in_features[t] == 0 && !m_embedding[t]) {
        kernels::ensure_shape(res, h0[t], graph.num_src[t], m_config.hidden);
        kernels::fill(res, h0[t].span(), T(0));
      } else if (m_embedding[t] && t < graph.source_ids.size() &&
                 (graph.source_ids[t].size > 0 || graph.num_src[t] == 0)) {
        // Sampled rows (a block): their type-local ids; none when the block has no such rows.
        HALO_EXPECTS(res.device() == kernels::Device::Cpu,
                     "hetero model: sampled embedding rows are looked up on the CPU");
        const kernels::Span<const kernels::NodeId> ids = graph.source_ids[t];
        HALO_EXPECTS(ids.size == graph.num_src[t], "hetero model: one source id per input row");
        m_embed_sampled[t] = true;
        kernels::ensure_shape(res, m_embed_ids[t], ids.size, 1);
        const auto offset = static_cast<kernels::NodeId>(graph.type_offset[t]);
        for (std::int64_t i = 0; i < ids.size; ++i) m_embed_ids[t].data()[i] = ids[i] - offset;
        if (ids.size > 0)
          m_embedding[t]->lookup(res, std::as_const(m_embed_ids[t]).span(), h0[t]);
        else
          kernels::ensure_shape(res, h0[t], 0, m_config.hidden);
      } else if (m_embedding[t]) {
        HALO_EXPECTS(graph.num_src[t] == m_embedding[t]->num_rows(),
                     "hetero model: an embedded type needs all its rows as sources");
        m_embed_sampled[t] = false;
        m_embedding[t]->lookup(res, {}, h0[t]);
      } else {
        HALO_EXPECTS(x[t] != nullptr && kernels::num_rows(*x[t]) == graph.num_src[t],
                     "hetero model: type " + std::to_string(t) + " needs num_src feature rows");
        kernels::ensure_shape(res, h0[t], graph.num_src[t], m_config.hidden);
        detail::multiply(res, *x[t], m_proj_weight[t].value, h0[t]);
        kernels::add_bias(res, h0[t].view(), kernels::ConstSpan<T>(m_proj_bias[t].value.span()));
      }
    }
    if (graph.times) {
      res.synchronize();
      times.feature_projection_s +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  // The last layer computes the target type only.
  const HeteroGraphView<T>& top = layer_graph(m_config.num_layers - 1);
  m_last = top;
  m_last.relations.clear();
  for (const auto& r : top.relations)
    if (r.dst_type == m_schema.target_type) m_last.relations.push_back(r);
  for (std::size_t t = 0; t < nt; ++t)
    if (static_cast<std::int32_t>(t) != m_schema.target_type) m_last.num_dst[t] = 0;
  const int layers = m_config.num_layers;
  const std::vector<Tensor<T>>* out = nullptr;
  for (int l = 0; l < layers; ++l) {
    auto& in = m_h[static_cast<std::size_t>(l)];
    if (l > 0 && graph.halo) {
      // A partition: the owned rows from this process's layer, the halo rows from their owners.
      for (std::size_t t = 0; t < nt; ++t) {
        kernels::ensure_shape(res, in[t], graph.num_src[t], m_config.hidden);
        HALO_EXPECTS((*out)[t].rows() == graph.num_dst[t] &&
                         (*out)[t].numel() == graph.num_dst[t] * m_config.hidden,
                     "hetero model: a hidden layer's output must hold the owned rows");
        kernels::relu(res, kernels::ConstSpan<T>((*out)[t].span()),
                      kernels::Span<T>{in[t].data(), (*out)[t].numel()});
      }
      graph.halo->gather(res, std::span<Tensor<T>>(in.data(), in.size()));
    } else if (l > 0) {
      for (std::size_t t = 0; t < nt; ++t) {
        kernels::ensure_shape(res, in[t], (*out)[t].rows(), (*out)[t].cols());
        kernels::relu(res, kernels::ConstSpan<T>((*out)[t].span()), in[t].span());
      }
    }
    if (p > 0)
      for (std::size_t t = 0; t < nt; ++t)
        if (in[t].numel() > 0 && !(l == 0 && m_zero_input[t]))  // dropped zeros are zeros
          kernels::dropout(res, dropout_key(ctx, layer_graph(l), t, l), p,
                           kernels::ConstMatrixView<T>(in[t].view()), in[t].view());
    const bool last = l + 1 == layers;
    out = &m_layers[static_cast<std::size_t>(l)]->forward(
        ctx, last ? m_last : layer_graph(l), std::span<const Tensor<T>>(in.data(), in.size()));
  }
  const Tensor<T>& target_out = (*out)[static_cast<std::size_t>(m_schema.target_type)];
  if (m_cls_weight.value.empty()) return target_out;
  m_top = &target_out;
  kernels::ensure_shape(res, m_logits, target_out.rows(), m_cls_weight.value.cols());
  kernels::gemm(res, kernels::Trans::No, kernels::Trans::No, T(1), target_out.view(),
                m_cls_weight.value.view(), T(0), m_logits.view());
  kernels::add_bias(res, m_logits.view(), kernels::ConstSpan<T>(m_cls_bias.value.span()));
  return m_logits;
}

template <class T>
const Tensor<T>& HeteroModel<T>::hidden(int layer, std::int32_t type) const {
  HALO_EXPECTS(layer >= 1 && layer < m_config.num_layers,
               "hetero model: hidden layer " + std::to_string(layer) + " of " +
                   std::to_string(m_config.num_layers) + " (1 .. layers - 1)");
  HALO_EXPECTS(type >= 0 && type < static_cast<std::int32_t>(m_h[0].size()),
               "hetero model: node type " + std::to_string(type) + " out of range");
  return m_h[static_cast<std::size_t>(layer)][static_cast<std::size_t>(type)];
}

template <class T>
void HeteroModel<T>::backward(const Context& ctx, std::span<const HeteroGraphView<T>> graphs,
                              const Tensor<T>& dlogits) {
  auto layer_graph = [&](int l) -> const HeteroGraphView<T>& {
    return graphs.size() == 1 ? graphs[0] : graphs[static_cast<std::size_t>(l)];
  };
  const HeteroGraphView<T>& graph = graphs[0];
  const auto& res = *ctx.res;
  const std::size_t nt = m_embedding.size();
  const float p = ctx.training ? m_config.dropout : 0.f;
  for (std::size_t t = 0; t < nt; ++t) {
    if (static_cast<std::int32_t>(t) == m_schema.target_type && !m_cls_weight.value.empty()) {
      // The classifier: dW_c = z^T dlogits, db_c = column sums, dz = dlogits W_c^T.
      HALO_EXPECTS(m_top != nullptr && m_top->rows() == dlogits.rows(),
                   "hetero model: backward needs the forward's logits' gradient");
      kernels::gemm(res, kernels::Trans::Yes, kernels::Trans::No, T(1), m_top->view(),
                    dlogits.view(), T(0), m_cls_weight.grad.view());
      kernels::column_sum(res, dlogits.view(), m_cls_bias.grad.span());
      kernels::ensure_shape(res, m_dh[t], dlogits.rows(), m_config.hidden);
      kernels::gemm(res, kernels::Trans::No, kernels::Trans::Yes, T(1), dlogits.view(),
                    m_cls_weight.value.view(), T(0), m_dh[t].view());
    } else if (static_cast<std::int32_t>(t) == m_schema.target_type) {
      kernels::ensure_shape(res, m_dh[t], dlogits.rows(), dlogits.cols());
      kernels::copy_async(res, m_dh[t], dlogits);
    } else {
      m_dh[t] = Tensor<T>();
    }
  }
  for (int l = m_config.num_layers - 1; l >= 0; --l) {
    const bool last = l + 1 == m_config.num_layers;
    const std::vector<Tensor<T>>& dx = m_layers[static_cast<std::size_t>(l)]->backward(
        ctx, last ? m_last : layer_graph(l), std::span<const Tensor<T>>(m_dh.data(), m_dh.size()),
        /*need_input_grad=*/true);
    for (std::size_t t = 0; t < nt; ++t) {
      if (l > 0 && graph.halo && dx[t].numel() == 0) {
        // Every process exchanges every type: a type without input gradient sends zeros.
        kernels::ensure_shape(res, m_dh[t], graph.num_src[t], m_config.hidden);
        kernels::fill(res, m_dh[t].span(), T(0));
        continue;
      }
      // A zero input type has no gradient (and keeps its buffer for the layers above).
      if (l == 0 && m_zero_input[t]) continue;
      kernels::ensure_shape(res, m_dh[t], dx[t].rows(), dx[t].cols());
      if (dx[t].numel() == 0) continue;
      // The dropout's adjoint reads the layer's gradient straight into m_dh (no copy first).
      if (p > 0)
        kernels::dropout(res, dropout_key(ctx, layer_graph(l), t, l), p,
                         kernels::ConstMatrixView<T>(dx[t].view()), m_dh[t].view());
      else
        kernels::copy_async(res, m_dh[t], dx[t]);
      // ReLU's adjoint from its (dropped-out) output: dropped entries already carry zero.
      if (l > 0)
        kernels::relu_backward(res,
                               kernels::ConstSpan<T>(m_h[static_cast<std::size_t>(l)][t].span()),
                               kernels::ConstSpan<T>(m_dh[t].span()), m_dh[t].span());
    }
    if (l > 0 && graph.halo) {
      // The halo rows' gradients go to their owners; the layer below sees its owned rows.
      graph.halo->scatter_add(res, std::span<Tensor<T>>(m_dh.data(), m_dh.size()));
      for (std::size_t t = 0; t < nt; ++t) {
        if (graph.num_src[t] == graph.num_dst[t]) continue;  // no halo rows: all owned already
        kernels::ensure_shape(res, m_dh_owned[t], graph.num_dst[t], m_config.hidden);
        kernels::copy_bytes_async(res, m_dh_owned[t].data(), res.device(), m_dh[t].data(),
                                  res.device(), m_dh_owned[t].bytes());
        std::swap(m_dh[t], m_dh_owned[t]);
      }
    }
  }
  HeteroStageTimes none;
  HeteroStageTimes& times = graph.times ? *graph.times : none;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t t = 0; t < nt; ++t) {
    if (m_spread[t]) {
      m_spread[t]->set_gradient(res, std::as_const(m_embed_ids[t]).span(), m_dh[t]);
    } else if (m_embedding[t]) {
      if (!m_embed_sampled[t])
        m_embedding[t]->set_gradient(res, {}, m_dh[t]);
      else if (m_embed_ids[t].numel() > 0)
        m_embedding[t]->set_gradient(res, std::as_const(m_embed_ids[t]).span(), m_dh[t]);
    } else if (m_schema.in_features[t] > 0) {
      detail::multiply_transposed(res, *m_inputs[t], m_dh[t], m_proj_weight[t].grad);
      kernels::column_sum(res, kernels::ConstMatrixView<T>(m_dh[t].view()),
                          m_proj_bias[t].grad.span());
    }
  }
  if (graph.times) {
    res.synchronize();
    times.feature_projection_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

template class HeteroModel<float>;
template class HeteroModel<double>;
template std::unique_ptr<HeteroModule<float>> make_hetero_layer<float>(
    const kernels::Resources&, HeteroLayerKind, std::vector<std::int64_t>, std::int64_t,
    std::vector<std::pair<std::int32_t, std::int32_t>>, const HeteroModelConfig&, std::uint64_t,
    std::uint64_t);
template std::unique_ptr<HeteroModule<double>> make_hetero_layer<double>(
    const kernels::Resources&, HeteroLayerKind, std::vector<std::int64_t>, std::int64_t,
    std::vector<std::pair<std::int32_t, std::int32_t>>, const HeteroModelConfig&, std::uint64_t,
    std::uint64_t);

}  // namespace halo::nn
