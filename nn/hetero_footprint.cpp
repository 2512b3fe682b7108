#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/nn/hetero_footprint.hpp>

namespace halo::nn {

namespace {

constexpr std::int64_t kF = sizeof(float);
constexpr std::int64_t kId = sizeof(kernels::NodeId);

std::string key(int layer, const char* what, std::size_t i) {
  return "layer" + std::to_string(layer) + "." + what + "." + std::to_string(i);
}

}  // namespace

HeteroFootprint::HeteroFootprint(const HeteroModelConfig& config, const HeteroSchema& schema)
    : m_config(config), m_schema(schema) {
  const std::size_t nt = schema.num_nodes.size();
  HALO_EXPECTS(nt >= 1 && schema.in_features.size() == nt && schema.target_type >= 0 &&
                   static_cast<std::size_t>(schema.target_type) < nt,
               "hetero footprint: the schema needs node types and a target type");
  const std::int64_t h = config.hidden, c = schema.num_classes;
  // HeteroModel's constructor: a projection per type with features, a table per type without.
  for (std::size_t t = 0; t < nt; ++t) {
    if (schema.in_features[t] > 0)
      m_parameters += schema.in_features[t] * h + h;
    else if (learns_embedding(config.featureless, schema, static_cast<std::int32_t>(t)))
      m_embedding += schema.num_nodes[t] * h;
  }
  std::int64_t into_target = 0;
  for (const auto& r : schema.relations)
    if (r.second == schema.target_type) ++into_target;
  const auto all = static_cast<std::int64_t>(schema.relations.size());
  const auto types = static_cast<std::int64_t>(nt);
  const bool hgt = config.kind == HeteroLayerKind::Hgt;
  for (int l = 0; l < config.num_layers; ++l) {
    const bool last = l + 1 == config.num_layers;
    const std::int64_t rels = last ? into_target : all;
    const std::int64_t out = last && !hgt ? c : h;
    if (!hgt) {
      // RGCNConv: a self weight and bias per type; a weight per relation, or bases and their
      // coefficients plus the composed weights and their gradients.
      m_parameters += types * (h * out + out);
      if (config.num_bases == 0) {
        m_parameters += rels * h * out;
      } else if (rels > 0) {
        m_parameters += config.num_bases * h * out + rels * config.num_bases;
        keep("layer" + std::to_string(l) + ".bases", 2 * kF * rels * h * out);
      }
    } else {
      // HGTConv (every type's input is `hidden` wide: every type gated): K, Q, V and the output
      // projection with biases and the gate per type; per relation W_att and W_msg (heads
      // blocks of d x d) and the priors.
      const std::int64_t heads = out % config.heads == 0 ? config.heads : 1;
      const std::int64_t d = out / heads;
      m_parameters += types * (3 * (h * out + out) + out * out + out + 1);
      m_parameters += rels * (2 * heads * d * d + heads);
    }
  }
  if (hgt) m_parameters += h * c + c;
}

void HeteroFootprint::keep(const std::string& name, std::int64_t bytes) {
  std::int64_t& b = m_buffers[name];
  b = std::max(b, bytes);
}

std::int64_t HeteroFootprint::buffer_bytes() const {
  std::int64_t sum = 0;
  for (const auto& [name, bytes] : m_buffers) sum += bytes;
  return sum;
}

void HeteroFootprint::pass(std::span<const HeteroPassShape> layers, bool backward, bool halo,
                           EmbeddingReads reads) {
  const int num_layers = m_config.num_layers;
  HALO_EXPECTS(static_cast<int>(layers.size()) == num_layers,
               "hetero footprint: one shape per layer");
  const std::size_t nt = m_schema.num_nodes.size(), nr = m_schema.relations.size();
  for (const HeteroPassShape& s : layers)
    HALO_EXPECTS(s.num_src.size() == nt && s.num_dst.size() == nt && s.entries.size() == nr,
                 "hetero footprint: a shape needs every type's rows and every relation's entries");
  const std::int64_t h = m_config.hidden, c = m_schema.num_classes;
  const auto target = static_cast<std::size_t>(m_schema.target_type);
  const bool hgt = m_config.kind == HeteroLayerKind::Hgt;
  const HeteroPassShape& first = layers.front();
  // The input layer's rows of every type (projection, table rows, or zeros); the ids of the
  // rows an embedded type looks up, and what a table records of its gradient.
  for (std::size_t t = 0; t < nt; ++t) {
    keep("input." + std::to_string(t), kF * first.num_src[t] * h);
    const bool embedded =
        learns_embedding(m_config.featureless, m_schema, static_cast<std::int32_t>(t));
    if (!embedded) continue;
    if (reads != EmbeddingReads::Whole)
      keep("input_ids." + std::to_string(t), kId * first.num_src[t]);
    if (backward) {
      keep("embedding_grad." + std::to_string(t), kF * first.num_src[t] * h);
      keep("embedding_rows." + std::to_string(t), kId * first.num_src[t]);
    }
  }
  for (int l = 0; l < num_layers; ++l) {
    const auto ul = static_cast<std::size_t>(l);
    const bool last = l + 1 == num_layers;
    const HeteroPassShape& s = layers[ul];
    // The hidden layers' inputs (ReLU of the layer below; a part's rows with a halo).
    if (l > 0)
      for (std::size_t t = 0; t < nt; ++t)
        keep(key(l, "input", t), kF * (halo ? first.num_src[t] : layers[ul - 1].num_dst[t]) * h);
    // The layer's graph: the last one has the target's destinations and its relations only.
    std::vector<std::int64_t> dst = s.num_dst;
    if (last)
      for (std::size_t t = 0; t < nt; ++t)
        if (t != target) dst[t] = 0;
    std::vector<std::size_t> rels;
    for (std::size_t r = 0; r < nr; ++r)
      if (!last || static_cast<std::size_t>(m_schema.relations[r].second) == target)
        rels.push_back(r);
    const std::int64_t out = last && !hgt ? c : h;
    // The input layer skips a zero type's products and gives it no input gradient.
    const auto zero = [&](std::size_t t) {
      return l == 0 && m_schema.in_features[t] == 0 &&
             !learns_embedding(m_config.featureless, m_schema, static_cast<std::int32_t>(t));
    };
    if (!hgt) {
      for (std::size_t t = 0; t < nt; ++t) {
        keep(key(l, "y", t), kF * dst[t] * out);
        if (backward && !zero(t)) keep(key(l, "dx", t), kF * s.num_src[t] * h);
      }
      for (std::size_t i = 0; i < rels.size(); ++i) {
        const auto [src_t, dst_t] = m_schema.relations[rels[i]];
        const std::int64_t nd = dst[static_cast<std::size_t>(dst_t)];
        if (nd == 0 || zero(static_cast<std::size_t>(src_t))) continue;
        keep(key(l, "agg", i), kF * nd * h);
        keep(key(l, "msg", i), kF * nd * out);
      }
      continue;
    }
    const std::int64_t heads = out % m_config.heads == 0 ? m_config.heads : 1;
    for (std::size_t t = 0; t < nt; ++t) {
      const std::int64_t ns = s.num_src[t], nd = dst[t];
      // keys, values (sources); queries, aggregate, gelu, output projection, output (dests);
      // the softmax's statistics.
      keep(key(l, "kv", t), 2 * kF * ns * out);
      keep(key(l, "dst", t), 5 * kF * nd * out);
      keep(key(l, "softmax", t), 2 * kF * nd * heads);
      if (backward) {
        if (!zero(t)) keep(key(l, "dx", t), kF * ns * h);
        keep(key(l, "d_kv", t), 2 * kF * ns * out);
        keep(key(l, "d_dst", t), 3 * kF * nd * out);
      }
    }
    std::int64_t widest_src = 0;
    for (std::size_t i = 0; i < rels.size(); ++i) {
      const auto [src_t, dst_t] = m_schema.relations[rels[i]];
      const std::int64_t ns = s.num_src[static_cast<std::size_t>(src_t)];
      const std::int64_t e = dst[static_cast<std::size_t>(dst_t)] == 0 ? 0 : s.entries[rels[i]];
      keep(key(l, "blocks", i), 2 * kF * out * out);
      keep(key(l, "rel_rows", i), 2 * kF * ns * out);
      keep(key(l, "alpha", i), kF * e * heads);
      if (backward) keep(key(l, "d_alpha", i), kF * e * heads);
      widest_src = std::max(widest_src, ns);
    }
    if (backward) {
      keep(key(l, "d_rel_rows", 0), 2 * kF * widest_src * out);
      keep(key(l, "d_block", 0), rels.empty() ? 0 : kF * out * out);
    }
  }
  // HGT's classifier output; the gradient the backward hands down, type by type (the widest
  // layer input; the logits' gradient for the target), and a part's owned rows of it.
  const std::int64_t top = layers.back().num_dst[target];
  if (hgt) keep("logits", kF * top * c);
  if (!backward) return;
  for (std::size_t t = 0; t < nt; ++t) {
    // (A zero input type has no gradient at the input layer.)
    const bool zero_input =
        m_schema.in_features[t] == 0 &&
        !learns_embedding(m_config.featureless, m_schema, static_cast<std::int32_t>(t));
    std::int64_t rows = 0;
    for (std::size_t l = zero_input ? 1 : 0; l < layers.size(); ++l)
      rows = std::max(rows, layers[l].num_src[t]);
    std::int64_t bytes = kF * rows * h;
    if (t == target) bytes = std::max(bytes, kF * top * (hgt ? h : c));
    keep("grad." + std::to_string(t), bytes);
    // (The owned rows' copy only where the part has halo rows of the type.)
    if (halo && num_layers > 1 && layers.front().num_src[t] > layers.front().num_dst[t])
      keep("grad_owned." + std::to_string(t), kF * rows * h);
  }
}

std::vector<HeteroPassShape> full_graph_shapes(const HeteroModelConfig& config,
                                               std::vector<std::int64_t> num_src,
                                               std::vector<std::int64_t> num_dst,
                                               std::vector<std::int64_t> entries) {
  return std::vector<HeteroPassShape>(
      static_cast<std::size_t>(config.num_layers),
      HeteroPassShape{std::move(num_src), std::move(num_dst), std::move(entries)});
}

}  // namespace halo::nn
