#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/sampler/envelope.hpp>

namespace halo::sampler {

std::size_t SamplerEnvelope::bytes() const {
  std::size_t total = static_cast<std::size_t>(batch_size) * sizeof(kernels::NodeId);
  for (const LayerEnvelope& l : layers)
    total += static_cast<std::size_t>(l.num_dst + 1) * sizeof(std::int64_t) +
             static_cast<std::size_t>(l.num_edges + l.num_src) * sizeof(kernels::NodeId);
  return total + static_cast<std::size_t>(table_slots + scratch + scan_blocks) * 8;
}

DegreeStats degree_stats(kernels::CsrView<kernels::NodeId, float> graph) {
  DegreeStats s{graph.num_rows, graph.num_edges(), 0};
  for (std::int64_t v = 0; v < graph.num_rows; ++v)
    s.max_degree = std::max(s.max_degree, graph.degree(v));
  return s;
}

SamplerEnvelope plan_envelope(const DegreeStats& stats, std::int64_t batch_size,
                              const std::vector<int>& fanouts, bool replace) {
  HALO_EXPECTS(batch_size >= 1,
               "plan_envelope: batch_size must be at least 1, got " + std::to_string(batch_size));
  HALO_EXPECTS(!fanouts.empty(), "plan_envelope: no fan-outs");
  HALO_EXPECTS(stats.num_nodes >= 0 && stats.num_edges >= 0 && stats.max_degree >= 0 &&
                   stats.max_degree <= stats.num_edges,
               "plan_envelope: inconsistent degree statistics");
  SamplerEnvelope e;
  e.batch_size = batch_size;
  e.layers.resize(fanouts.size());
  std::int64_t num_dst = std::min(batch_size, stats.num_nodes);
  for (std::size_t h = 0; h < fanouts.size(); ++h) {
    const std::size_t l = fanouts.size() - 1 - h;
    const std::int64_t k = fanouts[l];
    HALO_EXPECTS(k >= -1, "plan_envelope: fan-outs must be -1 or >= 0, got " + std::to_string(k));
    const std::int64_t per_dst = k < 0     ? stats.max_degree
                                 : replace ? (stats.max_degree > 0 ? k : 0)
                                           : std::min(k, stats.max_degree);
    std::int64_t num_edges = num_dst * per_dst;
    if (k < 0 || !replace) num_edges = std::min(num_edges, stats.num_edges);
    const std::int64_t num_src = std::min(stats.num_nodes, num_dst + num_edges);
    e.layers[l] = {num_dst, num_edges, num_src};
    num_dst = num_src;
  }
  std::int64_t max_src = 0;
  for (const LayerEnvelope& l : e.layers) max_src = std::max(max_src, l.num_src);
  e.table_slots = detail::table_slots_for(max_src);
  detail::size_scratch(e);
  return e;
}

SamplerEnvelope provision_envelope(const SamplerEnvelope& largest, const SamplerEnvelope& bound,
                                   double margin) {
  HALO_EXPECTS(largest.layers.size() == bound.layers.size(),
               "provision_envelope: the envelopes have different layers");
  HALO_EXPECTS(margin >= 0, "provision_envelope: negative margin");
  const auto widen = [margin](std::int64_t measured, std::int64_t limit) {
    const auto wide =
        static_cast<std::int64_t>(std::ceil(static_cast<double>(measured) * (1 + margin)));
    return std::min(limit, std::max(measured, wide));
  };
  SamplerEnvelope e;
  e.batch_size = bound.batch_size;
  e.layers.resize(bound.layers.size());
  std::int64_t keys = 0;
  for (std::size_t l = 0; l < bound.layers.size(); ++l) {
    const LayerEnvelope& m = largest.layers[l];
    const LayerEnvelope& b = bound.layers[l];
    e.layers[l] = {widen(m.num_dst, b.num_dst), widen(m.num_edges, b.num_edges),
                   widen(m.num_src, b.num_src)};
    keys = std::max(keys, e.layers[l].num_dst + e.layers[l].num_edges);
  }
  e.table_slots =
      std::min(bound.table_slots, std::max(largest.table_slots, detail::table_slots_for(keys)));
  detail::size_scratch(e);
  return e;
}

void raise_envelope(SamplerEnvelope& into, const SamplerEnvelope& e) {
  HALO_EXPECTS(into.layers.size() == e.layers.size(),
               "raise_envelope: the envelopes have different layers");
  for (std::size_t l = 0; l < e.layers.size(); ++l) {
    LayerEnvelope& x = into.layers[l];
    const LayerEnvelope& y = e.layers[l];
    x = {std::max(x.num_dst, y.num_dst), std::max(x.num_edges, y.num_edges),
         std::max(x.num_src, y.num_src)};
  }
  into.batch_size = std::max(into.batch_size, e.batch_size);
  into.table_slots = std::max(into.table_slots, e.table_slots);
  into.scratch = std::max(into.scratch, e.scratch);
  into.scan_blocks = std::max(into.scan_blocks, e.scan_blocks);
}

std::vector<std::int64_t> envelope_words(const SamplerEnvelope& e) {
  std::vector<std::int64_t> w{e.batch_size};
  for (const LayerEnvelope& l : e.layers) w.insert(w.end(), {l.num_dst, l.num_edges, l.num_src});
  w.insert(w.end(), {e.table_slots, e.scratch, e.scan_blocks});
  return w;
}

SamplerEnvelope envelope_from_words(const std::vector<std::int64_t>& w) {
  HALO_EXPECTS(w.size() >= 4 && (w.size() - 4) % 3 == 0, "envelope_from_words: not an envelope");
  SamplerEnvelope e;
  e.batch_size = w[0];
  const std::size_t layers = (w.size() - 4) / 3;
  for (std::size_t l = 0; l < layers; ++l)
    e.layers.push_back({w[1 + 3 * l], w[2 + 3 * l], w[3 + 3 * l]});
  e.table_slots = w[w.size() - 3];
  e.scratch = w[w.size() - 2];
  e.scan_blocks = w[w.size() - 1];
  return e;
}

std::int64_t detail::table_slots_for(std::int64_t max_keys) {
  return static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(2 * max_keys + 2)));
}

void detail::size_scratch(SamplerEnvelope& e) {
  std::int64_t scratch = 0, scan = 0;
  for (const LayerEnvelope& l : e.layers) {
    scratch = std::max({scratch, l.num_edges + 1, l.num_src});
    scan = std::max({scan, l.num_dst, l.num_edges});
  }
  e.scratch = scratch;
  e.scan_blocks = kernels::scan_blocks(scan, kScanBlock);
}

}  // namespace halo::sampler
