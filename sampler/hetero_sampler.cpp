// The heterogeneous neighbour sampler: per relation the homogeneous count/fill bodies, then a
// serial per-type relabelling.
#include <algorithm>
#include <cstdlib>
#include <utility>

#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/hetero_sampler.hpp>
#include <halo/sampler/neighbor_sampler.hpp>
#include <halo/sampler/sample_body.hpp>

namespace halo::sampler {

using kernels::NodeId;
using kernels::Span;

namespace {

/// A problem in the --fanouts text a person typed: the message is for them, so it carries no
/// source location or expression (HALO_EXPECTS's are for programming errors).
void require(bool ok, const std::string& message) {
  if (!ok) throw LogicError(message);
}

int parse_count(const std::string& token, const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(token.c_str(), &end, 10);
  require(!token.empty() && end == token.c_str() + token.size() && v >= -1 && v <= 1 << 20,
          "--fanouts " + text + ": '" + token +
              "' is not a fan-out (an integer >= -1: -1 takes every neighbour)");
  return static_cast<int>(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

}  // namespace

std::vector<std::vector<int>> parse_hetero_fanouts(const std::string& text,
                                                   const std::vector<std::string>& relations) {
  const std::size_t nr = relations.size();
  std::vector<std::vector<int>> out;
  if (text.find(':') == std::string::npos && text.find('=') == std::string::npos) {
    for (const std::string& t : split(text, ',')) out.emplace_back(nr, parse_count(t, text));
    return out;
  }
  for (const std::string& layer : split(text, ':')) {
    std::vector<int> f(nr, -2);
    int rest = -1;
    bool single = false;
    for (const std::string& item : split(layer, ',')) {
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos) {
        require(layer.find('=') == std::string::npos,
                "--fanouts " + text + ": '" + item + "' mixes a plain count with rel=N pairs");
        rest = parse_count(item, text);
        single = true;
        continue;
      }
      const std::string name = item.substr(0, eq);
      const int v = parse_count(item.substr(eq + 1), text);
      if (name == "*") {
        rest = v;
        continue;
      }
      const auto it = std::find(relations.begin(), relations.end(), name);
      std::string known;
      for (const std::string& r : relations) known += (known.empty() ? "" : ", ") + r;
      require(it != relations.end(), "--fanouts " + text + ": unknown relation '" + name +
                                         "' (the relations: " + known + ")");
      auto& slot = f[static_cast<std::size_t>(it - relations.begin())];
      require(slot == -2, "--fanouts " + text + ": relation '" + name + "' named twice");
      slot = v;
    }
    require(!single || layer.find(',') == std::string::npos,
            "--fanouts " + text + ": layer '" + layer + "' has several plain counts");
    for (int& v : f)
      if (v == -2) v = rest;
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

std::vector<std::int64_t> type_sizes(const datasets::HeteroGraph& g) {
  std::vector<std::int64_t> n;
  for (const auto& t : g.node_types) n.push_back(t.num_nodes);
  return n;
}

}  // namespace

std::vector<HeteroLayerEnvelope> plan_hetero_envelope(
    const std::vector<std::pair<std::int32_t, std::int32_t>>& relations,
    const std::vector<DegreeStats>& stats, const std::vector<std::int64_t>& num_nodes,
    std::int32_t target_type, std::int64_t batch_size, const HeteroSamplerConfig& config) {
  HALO_EXPECTS(batch_size >= 1, "hetero sampler: batch_size must be >= 1");
  HALO_EXPECTS(!config.fanouts.empty(), "hetero sampler: no fan-outs (one list per layer)");
  HALO_EXPECTS(stats.size() == relations.size() && target_type >= 0 &&
                   target_type < static_cast<std::int32_t>(num_nodes.size()),
               "hetero sampler: one statistic per relation and a seeds' type among the types");
  const std::size_t nt = num_nodes.size(), nr = relations.size();
  const std::size_t layers = config.fanouts.size();
  std::vector<HeteroLayerEnvelope> env(layers);
  std::vector<std::int64_t> dst(nt, 0);
  const auto target = static_cast<std::size_t>(target_type);
  dst[target] = std::min(batch_size, num_nodes[target]);
  for (std::size_t h = 0; h < layers; ++h) {
    const std::size_t l = layers - 1 - h;
    HALO_EXPECTS(config.fanouts[l].size() == nr,
                 "hetero sampler: layer " + std::to_string(l) + " has " +
                     std::to_string(config.fanouts[l].size()) + " fan-outs for " +
                     std::to_string(nr) + " relations");
    HeteroLayerEnvelope& e = env[l];
    e.num_dst = dst;
    e.num_src = dst;
    e.num_edges.assign(nr, 0);
    for (std::size_t r = 0; r < nr; ++r) {
      const int f = config.fanouts[l][r];
      HALO_EXPECTS(f >= -1, "hetero sampler: fan-out " + std::to_string(f) + " is below -1");
      const auto [src_type, dst_type] = relations[r];
      const std::int64_t maxd = stats[r].max_degree;
      const std::int64_t per = f < 0            ? maxd
                               : config.replace ? (maxd > 0 ? f : 0)
                                                : std::min<std::int64_t>(f, maxd);
      std::int64_t m = dst[static_cast<std::size_t>(dst_type)] * per;
      if (!config.replace || f < 0) m = std::min(m, stats[r].num_edges);
      e.num_edges[r] = m;
      e.num_src[static_cast<std::size_t>(src_type)] += m;
    }
    for (std::size_t t = 0; t < nt; ++t) e.num_src[t] = std::min(e.num_src[t], num_nodes[t]);
    dst = e.num_src;
  }
  return env;
}

namespace {

/// plan_hetero_envelope from the relations' statistics and every type's nodes.
std::vector<HeteroLayerEnvelope> plan_envelope(const datasets::HeteroGraph& g,
                                               const std::vector<DegreeStats>& stats,
                                               const std::vector<std::int64_t>& num_nodes,
                                               std::int64_t batch_size,
                                               const HeteroSamplerConfig& config) {
  std::vector<std::pair<std::int32_t, std::int32_t>> relations;
  for (const auto& r : g.relations) relations.emplace_back(r.src_type, r.dst_type);
  return plan_hetero_envelope(relations, stats, num_nodes, g.target_type, batch_size, config);
}

}  // namespace

std::vector<HeteroLayerEnvelope> plan_hetero_envelope(const datasets::HeteroGraph& g,
                                                      std::int64_t batch_size,
                                                      const HeteroSamplerConfig& config) {
  std::vector<DegreeStats> stats;
  for (const auto& r : g.relations) stats.push_back(degree_stats(r.adj.view()));
  return plan_envelope(g, stats, type_sizes(g), batch_size, config);
}

HeteroNeighborSampler::HeteroNeighborSampler(const kernels::Resources& res,
                                             const datasets::HeteroGraph& g,
                                             std::int64_t batch_size, HeteroSamplerConfig config)
    : HeteroNeighborSampler(res, g, batch_size, std::move(config), {type_sizes(g), {}}) {}

HeteroNeighborSampler::HeteroNeighborSampler(const kernels::Resources& res,
                                             const datasets::HeteroGraph& g,
                                             std::int64_t batch_size, HeteroSamplerConfig config,
                                             HeteroNeighborSources sources)
    : m_graph(&g),
      m_sources(std::move(sources)),
      m_config(std::move(config)),
      m_batch_size(batch_size) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "HeteroNeighborSampler runs on the CPU");
  const std::size_t nt = g.node_types.size(), nr = g.relations.size();
  HALO_EXPECTS(m_sources.num_nodes.size() == nt &&
                   (m_sources.relations.empty() || m_sources.relations.size() == nr),
               "HeteroNeighborSampler: one node count per type and one source per relation");
  std::vector<DegreeStats> stats;
  for (std::size_t r = 0; r < nr; ++r)
    stats.push_back(m_sources.relations.empty() ? degree_stats(g.relations[r].adj.view())
                                                : m_sources.relations[r]->stats());
  m_envelope = plan_envelope(g, stats, m_sources.num_nodes, batch_size, m_config);
  std::int64_t scan = 1;
  m_layers.resize(m_envelope.size());
  for (std::size_t l = 0; l < m_envelope.size(); ++l) {
    const HeteroLayerEnvelope& e = m_envelope[l];
    LayerBuffers& b = m_layers[l];
    for (std::size_t t = 0; t < nt; ++t) {
      b.src_ids.push_back(kernels::Tensor<NodeId>(res, kernels::Device::Cpu, e.num_src[t]));
      m_bytes += sizeof(NodeId) * static_cast<std::size_t>(e.num_src[t]);
    }
    for (std::size_t r = 0; r < nr; ++r) {
      const std::int64_t nd = e.num_dst[static_cast<std::size_t>(g.relations[r].dst_type)];
      b.indptr.push_back(kernels::Tensor<std::int64_t>(res, kernels::Device::Cpu, nd + 1));
      b.indices.push_back(kernels::Tensor<NodeId>(res, kernels::Device::Cpu, e.num_edges[r]));
      m_bytes += sizeof(std::int64_t) * static_cast<std::size_t>(nd + 1) +
                 sizeof(NodeId) * static_cast<std::size_t>(e.num_edges[r]);
      scan = std::max(scan, kernels::scan_blocks(nd, detail::kScanBlock));
    }
  }
  for (std::size_t t = 0; t < nt; ++t) {
    m_map.push_back(kernels::Tensor<NodeId>::zeros(res, m_sources.num_nodes[t]));
    m_bytes += sizeof(NodeId) * static_cast<std::size_t>(m_sources.num_nodes[t]);
  }
  m_scan = kernels::Tensor<std::int64_t>(res, kernels::Device::Cpu, scan);
  m_bytes += sizeof(std::int64_t) * static_cast<std::size_t>(scan);
  m_batch.blocks.resize(m_envelope.size());
  for (HeteroBlock& b : m_batch.blocks) {
    b.num_dst.assign(nt, 0);
    b.num_src.assign(nt, 0);
    b.src_ids.assign(nt, {});
    b.adj.assign(nr, {});
  }
  m_batch.sampled_edges.assign(nr, 0);
}

const HeteroMiniBatch& HeteroNeighborSampler::sample(const kernels::Resources& res,
                                                     Span<const NodeId> seeds, std::uint64_t epoch,
                                                     std::uint64_t batch) {
  const datasets::HeteroGraph& g = *m_graph;
  const auto target = static_cast<std::size_t>(g.target_type);
  HALO_EXPECTS(seeds.size <= m_batch_size,
               "HeteroNeighborSampler::sample: " + std::to_string(seeds.size) +
                   " seeds, more than the batch size " + std::to_string(m_batch_size));
  const std::size_t layers = m_layers.size();
  const std::size_t nt = g.node_types.size();
  // The seeds: the destinations of the last block, checked in range and distinct.
  {
    NodeId* ids = m_layers[layers - 1].src_ids[target].data();
    NodeId* map = m_map[target].data();
    const std::int64_t n = m_sources.num_nodes[target];
    for (std::int64_t i = 0; i < seeds.size; ++i) {
      const NodeId v = seeds[i];
      const bool ok = v >= 0 && v < n && map[v] == 0;
      if (!ok) {
        for (std::int64_t j = 0; j < i; ++j) map[ids[j]] = 0;
        HALO_FAIL("HeteroNeighborSampler::sample: seed " + std::to_string(v) +
                  (v >= 0 && v < n ? " is repeated" : " is outside the target type's ids"));
      }
      map[v] = static_cast<NodeId>(i + 1);
      ids[i] = v;
    }
    HeteroBlock& b = m_batch.blocks[layers - 1];
    std::fill(b.num_dst.begin(), b.num_dst.end(), 0);
    b.num_dst[target] = seeds.size;
  }
  std::fill(m_batch.sampled_edges.begin(), m_batch.sampled_edges.end(), 0);
  for (std::size_t h = 0; h < layers; ++h) {
    const std::size_t l = layers - 1 - h;
    if (h > 0) {
      // This block's destinations: the previous (outer) block's sources, mapped again.
      HeteroBlock& b = m_batch.blocks[l];
      const HeteroBlock& outer = m_batch.blocks[l + 1];
      for (std::size_t t = 0; t < nt; ++t) {
        b.num_dst[t] = outer.num_src[t];
        NodeId* ids = m_layers[l].src_ids[t].data();
        NodeId* map = m_map[t].data();
        for (std::int64_t i = 0; i < b.num_dst[t]; ++i) {
          ids[i] = outer.src_ids[t][i];
          map[ids[i]] = static_cast<NodeId>(i + 1);
        }
      }
    }
    sample_hop(res, l, hop_key(m_config.seed, epoch, batch, h));
  }
  m_batch.seeds = {m_layers[layers - 1].src_ids[target].data(), seeds.size};
  return m_batch;
}

void HeteroNeighborSampler::sample_hop(const kernels::Resources& res, std::size_t l,
                                       std::uint64_t key) {
  const datasets::HeteroGraph& g = *m_graph;
  const std::size_t nt = g.node_types.size(), nr = g.relations.size();
  HeteroBlock& b = m_batch.blocks[l];
  LayerBuffers& buf = m_layers[l];
  const HeteroLayerEnvelope& bound = m_envelope[l];
  b.num_src = b.num_dst;
  for (std::size_t r = 0; r < nr; ++r) {
    const auto& rel = g.relations[r];
    const auto dt = static_cast<std::size_t>(rel.dst_type);
    const auto st = static_cast<std::size_t>(rel.src_type);
    const int fanout = m_config.fanouts[l][r];
    const std::int64_t num_dst = b.num_dst[dt];
    const Span<const NodeId> dst{buf.src_ids[dt].data(), num_dst};
    const kernels::CsrView<NodeId, float> adj = rel.adj.view();
    NeighborSource* source = m_sources.relations.empty() ? nullptr : m_sources.relations[r];
    std::int64_t* indptr = buf.indptr[r].data();
    indptr[0] = 0;
    if (source != nullptr)
      source->count(res, dst, fanout, m_config.replace, indptr + 1);
    else
      kernels::launch(res, num_dst,
                      detail::CountBody{adj, dst, fanout, m_config.replace, indptr + 1});
    kernels::inclusive_scan(res, indptr + 1, num_dst, m_scan.data(), detail::kScanBlock);
    const std::int64_t num_edges = indptr[num_dst];
    HALO_ASSERT(num_edges <= bound.num_edges[r], 1);
    NodeId* sampled = buf.indices[r].data();
    const std::uint64_t rel_key = kernels::rng::key(key, static_cast<std::uint64_t>(r));
    if (source != nullptr)
      source->fill(res, dst, fanout, m_config.replace, rel_key, indptr, sampled);
    else
      kernels::launch(
          res, num_dst,
          detail::FillBody{adj, dst, fanout, m_config.replace, rel_key, indptr, sampled});
    // Relabel: type-local ids of src_type -> local source ids, new sources appended.
    NodeId* map = m_map[st].data();
    NodeId* ids = buf.src_ids[st].data();
    std::int64_t& ns = b.num_src[st];
    for (std::int64_t e = 0; e < num_edges; ++e) {
      const NodeId v = sampled[e];
      if (map[v] == 0) {
        HALO_ASSERT(ns < bound.num_src[st], 1);
        ids[ns] = v;
        map[v] = static_cast<NodeId>(++ns);
      }
      sampled[e] = map[v] - 1;
    }
    m_batch.sampled_edges[r] += num_edges;
  }
  for (std::size_t r = 0; r < nr; ++r) {
    const auto& rel = g.relations[r];
    const std::int64_t nd = b.num_dst[static_cast<std::size_t>(rel.dst_type)];
    const std::int64_t m = buf.indptr[r].data()[nd];
    b.adj[r] = {buf.indptr[r].data(),
                buf.indices[r].data(),
                nullptr,
                nd,
                b.num_src[static_cast<std::size_t>(rel.src_type)],
                false,
                m};
  }
  for (std::size_t t = 0; t < nt; ++t) {
    b.src_ids[t] = {buf.src_ids[t].data(), b.num_src[t]};
    NodeId* map = m_map[t].data();
    for (std::int64_t i = 0; i < b.num_src[t]; ++i) map[buf.src_ids[t].data()[i]] = 0;
  }
}

}  // namespace halo::sampler
