// The plan of heterogeneous classification (docs/scheduler.md, "Heterogeneous classification").
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <halo/cluster/detail/units.hpp>
#include <halo/cluster/hetero_plan.hpp>
#include <halo/kernels/error.hpp>
#include <halo/nn/hetero_footprint.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/tasks/hetero/hetero_classification.hpp>

namespace halo::cluster {

using runtime::TrainConfig;

namespace {

using detail::as_bytes;
using detail::kF;
using detail::kI;

/// The fan-outs of the config's layers, per relation (relation_fanouts, else fanouts[l] for
/// every relation), as the task builds them.
std::vector<std::vector<int>> relation_fanouts(const runtime::MiniBatchConfig& mb,
                                               std::size_t relations) {
  if (!mb.relation_fanouts.empty()) return mb.relation_fanouts;
  std::vector<std::vector<int>> f;
  for (const int k : mb.fanouts) f.emplace_back(relations, k);
  return f;
}

/// A destination's draws under fan-out f: min(f, its in-degree) (with replacement f, if it has
/// neighbours; -1: every neighbour).
std::int64_t draws_of(int f, bool replace, std::int64_t deg) {
  return f < 0 ? deg : replace ? (deg > 0 ? f : 0) : std::min<std::int64_t>(f, deg);
}

/// Expected distinct ids among `draws` draws from `n` ids at random.
double distinct(double n, double draws) { return n <= 0 ? 0 : n * (1 - std::exp(-draws / n)); }

/// Seconds of one forward and backward pass of the model over `layers` and what of them are
/// dense products (costed as measured, outside the step scale).
struct PassCost {
  double compute_s = 0, gemm_s = 0;
};

/// The layers' work as RGCNConv / HGTConv and HeteroModel do it, priced by the cost model's
/// terms: the products by their shape, the sparse products (mean aggregation, SDDMM, weighted
/// sums) by spmm_seconds, the element-wise passes by their bytes. Forward only when !backward
/// (the evaluation's pass).
PassCost pass_cost(const CostModel& m, const nn::HeteroSchema& s, const nn::HeteroModelConfig& mc,
                   const std::vector<nn::HeteroPassShape>& layers,
                   const std::vector<double>& input_nnz, bool backward) {
  PassCost p;
  auto gemm = [&](GemmPass pass, double rows, double in, double out) {
    if (rows <= 0) return;
    const double s = gemm_seconds(m, pass, rows, in, out);
    p.gemm_s += s;
    p.compute_s += s;
  };
  auto dense = [&](double rows, double in, double out) {
    gemm(GemmPass::Forward, rows, in, out);
    if (backward) {
      gemm(GemmPass::WeightGrad, rows, in, out);
      gemm(GemmPass::InputGrad, rows, in, out);
    }
  };
  auto ew = [&](double bytes, double calls = 1) {
    p.compute_s += elementwise_seconds(m, bytes, calls);
  };
  auto sparse = [&](double entries, double cols, double rows) {
    if (entries > 0) p.compute_s += spmm_seconds(m, entries, cols, rows, nullptr);
  };
  const std::size_t nt = s.num_nodes.size(), nr = s.relations.size();
  const double h = static_cast<double>(mc.hidden), classes = s.num_classes;
  const auto target = static_cast<std::size_t>(s.target_type);
  const bool hgt = mc.kind == nn::HeteroLayerKind::Hgt;
  // The input: projections of the featured types (sparse: a CSR x dense product and its
  // transpose for the weight's gradient), the tables' rows.
  const nn::HeteroPassShape& first = layers.front();
  for (std::size_t t = 0; t < nt; ++t) {
    const double rows = static_cast<double>(first.num_src[t]);
    const double f = static_cast<double>(s.in_features[t]);
    if (f > 0 && input_nnz[t] >= 0) {
      const double nnz = input_nnz[t];
      sparse(nnz, h, f);
      if (backward) sparse(nnz, h, rows);
    } else if (f > 0) {
      gemm(GemmPass::Forward, rows, f, h);
      if (backward) gemm(GemmPass::WeightGrad, rows, f, h);
    } else {
      ew(2 * kF * rows * h * (backward ? 2 : 1));
    }
    ew(2 * kF * rows * h);  // bias
  }
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const bool last = l + 1 == layers.size();
    const nn::HeteroPassShape& g = layers[l];
    const double out = last && !hgt ? classes : h;
    std::vector<double> dst(g.num_dst.begin(), g.num_dst.end());
    if (last)
      for (std::size_t t = 0; t < nt; ++t)
        if (t != target) dst[t] = 0;
    // ReLU (hidden layers) and dropout on the layer's input, and their adjoints.
    for (std::size_t t = 0; t < nt; ++t) {
      const double bytes = 2 * kF * static_cast<double>(g.num_src[t]) * h;
      ew(bytes * ((l > 0 ? 1 : 0) + (mc.dropout > 0 ? 1 : 0)) * (backward ? 2 : 1));
    }
    for (std::size_t t = 0; t < nt; ++t) {
      const double ns = static_cast<double>(g.num_src[t]);
      if (!hgt) {
        dense(dst[t], h, out);                           // the self term
        ew(2 * kF * dst[t] * out * (backward ? 2 : 1));  // bias, its gradient
        if (backward) ew(kF * ns * h);                   // dx's zeroing
      } else {
        dense(ns, h, out);        // keys
        dense(ns, h, out);        // values
        dense(dst[t], h, out);    // queries
        dense(dst[t], out, out);  // the output projection
        // gelu, dropout, the gate; their adjoints; the softmax statistics.
        ew(2 * kF * dst[t] * out * 3 * (backward ? 2 : 1));
        if (backward) ew(kF * (2 * ns + dst[t]) * out);  // the gradients' zeroing
      }
    }
    for (std::size_t r = 0; r < nr; ++r) {
      const auto [src_t, dst_t] = s.relations[r];
      const double nd = dst[static_cast<std::size_t>(dst_t)];
      if (nd == 0) continue;
      const double ns = static_cast<double>(g.num_src[static_cast<std::size_t>(src_t)]);
      const double e = static_cast<double>(g.entries[r]);
      if (!hgt) {
        sparse(e, h, ns);  // mean aggregation
        dense(nd, h, out);
        ew(3 * kF * nd * out);  // the sum over relations
        if (backward) {
          sparse(e, h, nd);  // its transpose
          ew(3 * kF * ns * h);
        }
      } else {
        const double heads =
            static_cast<double>(static_cast<std::int64_t>(out) % mc.heads == 0 ? mc.heads : 1);
        dense(ns, out, out);                          // K W_att
        dense(ns, out, out);                          // V W_msg
        sparse(e, out, ns);                           // SDDMM scores
        sparse(e, out, ns);                           // weighted sum of the messages
        ew(3 * kF * e * heads * (backward ? 2 : 1));  // the softmax and its adjoint
        if (backward) {
          sparse(2 * e, out, ns);  // the weighted sum's adjoint (scores and messages)
          sparse(2 * e, out, nd);  // the SDDMM's adjoint (queries and keys)
        }
      }
    }
  }
  if (hgt) dense(static_cast<double>(layers.back().num_dst[target]), h, classes);
  return p;
}

/// A mini-batch run's sampler counts (HeteroCounts::envelope, mean_draws), summed over the
/// destination rows that are added: every row in one process, or the parts' owned rows (a part
/// holds every incoming edge of the rows it owns).
class DrawCounts {
 public:
  DrawCounts(const TrainConfig& config, std::size_t relations)
      : m_config(config), m_stats(relations) {
    m_sc.fanouts = relation_fanouts(*config.mini_batch, relations);
    m_sc.replace = config.mini_batch->replace;
    m_sc.seed = config.seed;
    m_draws.assign(m_sc.fanouts.size(), std::vector<double>(relations, 0));
  }
  /// Adds the first owned[t] destination rows of each type of `g` to every relation's largest
  /// in-degree and, per layer, its destinations' summed draws.
  void add(const datasets::HeteroGraph& g, const std::vector<std::int64_t>& owned) {
    for (std::size_t r = 0; r < g.relations.size(); ++r) {
      const datasets::Relation& rel = g.relations[r];
      const std::int64_t* ptr = rel.adj.indptr.data();
      const std::int64_t rows = owned[static_cast<std::size_t>(rel.dst_type)];
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t deg = ptr[i + 1] - ptr[i];
        m_stats[r].max_degree = std::max(m_stats[r].max_degree, deg);
        for (std::size_t l = 0; l < m_sc.fanouts.size(); ++l)
          m_draws[l][r] += static_cast<double>(draws_of(m_sc.fanouts[l][r], m_sc.replace, deg));
      }
    }
  }
  /// c.envelope and c.mean_draws from what was added, `share` of the destinations (1: every
  /// row; 1 / P: one part's, the others taken to be like it); the relations' edges are
  /// c.entries / share.
  void set(HeteroCounts& c, double share) const {
    std::vector<sampler::DegreeStats> stats = m_stats;
    for (std::size_t r = 0; r < stats.size(); ++r)
      stats[r].num_edges = static_cast<std::int64_t>(static_cast<double>(c.entries[r]) / share);
    const std::vector<std::pair<std::int32_t, std::int32_t>> relations(c.schema.relations.begin(),
                                                                       c.schema.relations.end());
    c.envelope =
        sampler::plan_hetero_envelope(relations, stats, c.schema.num_nodes, c.schema.target_type,
                                      m_config.mini_batch->batch_size, m_sc);
    c.mean_draws = m_draws;
    for (auto& layer : c.mean_draws)
      for (std::size_t r = 0; r < layer.size(); ++r) {
        const double rows =
            share * static_cast<double>(
                        c.schema.num_nodes[static_cast<std::size_t>(c.schema.relations[r].second)]);
        layer[r] = rows > 0 ? layer[r] / rows : 0;
      }
  }

 private:
  const TrainConfig& m_config;
  sampler::HeteroSamplerConfig m_sc;
  std::vector<sampler::DegreeStats> m_stats;
  std::vector<std::vector<double>> m_draws;
};

}  // namespace

HeteroCounts hetero_counts(const datasets::HeteroGraph& g, const TrainConfig& config) {
  HeteroCounts c;
  c.dataset = g.name;
  c.schema = runtime::hetero_schema(g);
  for (const datasets::Relation& r : g.relations) c.entries.push_back(r.adj.num_edges());
  for (const datasets::NodeType& t : g.node_types) {
    const auto* sparse = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&t.features);
    c.feature_nnz.push_back(sparse && t.has_features() ? sparse->num_edges() : -1);
  }
  c.num_train = g.train_idx.numel();
  c.num_val = g.val_idx.numel();
  c.num_test = g.test_idx.numel();
  if (config.mini_batch) {  // one process owns every row of every relation
    DrawCounts draws(config, c.entries.size());
    draws.add(g, c.schema.num_nodes);
    draws.set(c, 1);
  }
  return c;
}

namespace {

/// The counts of one part (its graph holds the local rows; the layout, what it owns and sends).
HeteroPartCounts part_counts(const datasets::HeteroGraph& g,
                             const partition::HeteroPartLayout& layout) {
  HeteroPartCounts p;
  p.num_owned = layout.num_owned;
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    const datasets::NodeType& type = g.node_types[t];
    p.num_local.push_back(type.num_nodes);
    p.num_send.push_back(layout.send_rows[t].numel());
    const auto* sparse = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&type.features);
    p.feature_nnz.push_back(sparse && type.has_features() ? sparse->num_edges() : -1);
  }
  for (const datasets::Relation& r : g.relations) p.entries.push_back(r.adj.num_edges());
  p.num_train = g.train_idx.numel();
  p.num_val = g.val_idx.numel();
  p.num_test = g.test_idx.numel();
  return p;
}

/// The whole graph's schema, as a part knows it (its types' global node counts).
nn::HeteroSchema global_schema(const datasets::HeteroGraph& g,
                               const partition::HeteroPartLayout& layout) {
  nn::HeteroSchema s = runtime::hetero_schema(g);
  s.num_nodes = layout.global_nodes;
  return s;
}

}  // namespace

HeteroCounts hetero_partition_counts(const std::filesystem::path& dir, const TrainConfig& config) {
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  HALO_EXPECTS(meta.hetero.has_value(),
               "plan: " + dir.string() + " is not a heterogeneous partition");
  const kernels::Resources host(kernels::Device::Cpu);
  HeteroCounts c;
  c.dataset = meta.dataset;
  for (const auto& r : meta.hetero->relations) c.entries.push_back(r.num_edges);
  // Mini-batch: the whole relations' statistics and draws, summed over the parts' owned rows.
  std::optional<DrawCounts> draws;
  if (config.mini_batch) draws.emplace(config, c.entries.size());
  for (std::int32_t k = 0; k < static_cast<std::int32_t>(meta.parts.size()); ++k) {
    const partition::HeteroPart part = partition::read_hetero_part(host, dir, k, &meta);
    HeteroPartCounts p = part_counts(part.graph, part.layout);
    if (k == 0) {
      c.schema = global_schema(part.graph, part.layout);
      c.feature_nnz.assign(p.feature_nnz.size(), -1);
      c.num_train = part.layout.num_train;
    }
    for (std::size_t t = 0; t < p.feature_nnz.size(); ++t)
      if (p.feature_nnz[t] >= 0)
        c.feature_nnz[t] = std::max<std::int64_t>(c.feature_nnz[t], 0) + p.feature_nnz[t];
    c.num_val += p.num_val;
    c.num_test += p.num_test;
    if (draws) draws->add(part.graph, part.layout.num_owned);
    c.parts.push_back(std::move(p));
  }
  if (draws) draws->set(c, 1);
  return c;
}

HeteroCounts hetero_shard_counts(const runtime::HeteroShard& shard, const TrainConfig& config) {
  HeteroCounts c;
  c.dataset = shard.dataset;
  c.schema = global_schema(shard.graph, shard.layout);
  const HeteroPartCounts p = part_counts(shard.graph, shard.layout);
  c.entries = p.entries;  // the part's own: the plan of a partition reads the parts' entries
  c.feature_nnz = p.feature_nnz;
  c.num_train = shard.layout.num_train;
  c.parts.assign(static_cast<std::size_t>(shard.layout.num_parts), p);
  if (config.mini_batch) {
    DrawCounts draws(config, c.entries.size());
    draws.add(shard.graph, shard.layout.num_owned);
    draws.set(c, 1.0 / shard.layout.num_parts);
  }
  return c;
}

Plan make_hetero_plan(const HeteroCounts& c, const TrainConfig& config, const CostModel& m,
                      const std::string& device, int threads) {
  HALO_EXPECTS(device == "cpu",
               "plan: heterogeneous classification runs on the CPU (--device " + device + ")");
  const nn::HeteroSchema& s = c.schema;
  const std::size_t nt = s.num_nodes.size(), nr = s.relations.size();
  HALO_EXPECTS(nt >= 1 && c.entries.size() == nr && c.feature_nnz.size() == nt &&
                   s.in_features.size() == nt && s.num_classes >= 1,
               "plan: the heterogeneous counts need every type's and relation's sizes");
  const bool mini = config.mini_batch.has_value();
  HALO_EXPECTS(!mini || (c.envelope.size() == static_cast<std::size_t>(config.hetero.num_layers) &&
                         c.mean_draws.size() == c.envelope.size()),
               "plan: mini-batch counts need the sampler's envelope of every layer");
  const nn::HeteroModelConfig& mc = config.hetero;
  const auto target = static_cast<std::size_t>(s.target_type);
  const double h = static_cast<double>(mc.hidden);

  Plan plan;
  plan.dataset = c.dataset;
  plan.mode = mini ? "mini-batch" : "full-graph";
  plan.model = nn::to_string(mc.kind);
  plan.device = device;
  plan.threads = threads;
  plan.epochs = config.epochs;
  plan.calibrated = m.calibrated;
  plan.link_calibrated = m.link_calibrated;

  // One process is one part holding every node (the same data path as a rank's part).
  std::vector<HeteroPartCounts> parts = c.parts;
  if (parts.empty()) {
    HeteroPartCounts p;
    p.num_owned = p.num_local = s.num_nodes;
    p.entries = c.entries;
    p.feature_nnz = c.feature_nnz;
    p.num_send.assign(nt, 0);
    p.num_train = c.num_train;
    p.num_val = c.num_val;
    p.num_test = c.num_test;
    parts.push_back(std::move(p));
  }
  const int ranks = static_cast<int>(parts.size());
  plan.ranks = ranks;
  // Several ranks: the embedded types' rows spread over them, the gradients summed, messages.
  const bool spread = ranks > 1;
  std::vector<bool> embeds(nt);
  for (std::size_t t = 0; t < nt; ++t)
    embeds[t] = nn::learns_embedding(mc.featureless, s, static_cast<std::int32_t>(t));
  const bool embedded = std::find(embeds.begin(), embeds.end(), true) != embeds.end();
  // The expected blocks of a batch of `seeds` seeds, from the seeds outwards: a destination
  // draws its mean draws per relation; the sources are the destinations and the distinct draws.
  const auto expected_blocks = [&](double seeds) {
    std::vector<nn::HeteroPassShape> expected(c.envelope.size());
    std::vector<double> dst(nt, 0);
    dst[target] = seeds;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const std::size_t l = expected.size() - 1 - k;
      std::vector<double> drawn(nt, 0);
      nn::HeteroPassShape& e = expected[l];
      e.entries.assign(nr, 0);
      for (std::size_t r = 0; r < nr; ++r) {
        const auto [src_t, dst_t] = s.relations[r];
        const double edges = dst[static_cast<std::size_t>(dst_t)] * c.mean_draws[l][r];
        e.entries[r] = as_bytes(edges);
        drawn[static_cast<std::size_t>(src_t)] += edges;
      }
      e.num_dst.resize(nt);
      e.num_src.resize(nt);
      for (std::size_t t = 0; t < nt; ++t) {
        const double n = static_cast<double>(s.num_nodes[t]);
        e.num_dst[t] = as_bytes(dst[t]);
        const double src =
            std::min(n, dst[t] + distinct(n, drawn[t]) * (1 - dst[t] / std::max(1.0, n)));
        e.num_src[t] = as_bytes(src);
        dst[t] = src;
      }
    }
    return expected;
  };
  // A full batch's seeds (over all ranks).
  const double batch_seeds =
      mini ? std::min<double>(static_cast<double>(config.mini_batch->batch_size),
                              static_cast<double>(c.num_train))
           : 0;
  std::vector<nn::HeteroPassShape> expected;
  if (mini) {
    expected = expected_blocks(batch_seeds);
    plan.batches_per_epoch =
        std::max<std::int64_t>(1, runtime::epoch_batches(*config.mini_batch, c.num_train));
    for (std::size_t l = 0; l < c.envelope.size(); ++l) {
      const sampler::HeteroLayerEnvelope& e = c.envelope[l];
      for (std::size_t t = 0; t < nt; ++t)
        plan.sampler_envelope_bytes += as_bytes(kF * e.num_src[t]);
      for (std::size_t r = 0; r < nr; ++r)
        plan.sampler_envelope_bytes +=
            as_bytes(kI * (e.num_dst[static_cast<std::size_t>(s.relations[r].second)] + 1) +
                     kF * e.num_edges[r]);
    }
    for (std::size_t t = 0; t < nt; ++t)
      plan.sampler_envelope_bytes += as_bytes(kF * s.num_nodes[t]);
  }
  // A batch's input rows, per featured type: the sparse entries of `rows` of its rows (-1:
  // dense features); the workspace that holds them at the sampler's bound (rows gathered per
  // type); the expected batch's rows, entries and gathered bytes; the expected sampled edges.
  const auto input_nnz = [&](std::size_t t, double rows) {
    const double n = static_cast<double>(s.num_nodes[t]);
    return c.feature_nnz[t] < 0 ? -1.0
           : n > 0              ? static_cast<double>(c.feature_nnz[t]) * rows / n
                                : 0.0;
  };
  double workspace = 0;
  if (mini)
    for (std::size_t t = 0; t < nt; ++t) {
      const double f = static_cast<double>(s.in_features[t]);
      const double bound = static_cast<double>(c.envelope.front().num_src[t]);
      if (f == 0 || s.num_nodes[t] == 0) continue;
      workspace += c.feature_nnz[t] >= 0 ? kI * (bound + 1) + (kF + kF) * input_nnz(t, bound)
                                         : kF * bound * f;
    }
  struct BatchStats {
    double rows = 0, gathered = 0, edges = 0;
    std::vector<double> nnz;
  };
  const auto batch_stats = [&](const std::vector<nn::HeteroPassShape>& blocks) {
    BatchStats b;
    b.nnz.assign(nt, -1);
    for (std::size_t t = 0; t < nt; ++t) {
      const double f = static_cast<double>(s.in_features[t]);
      const double rows = static_cast<double>(blocks.front().num_src[t]);
      b.nnz[t] = input_nnz(t, rows);
      if (f == 0 || s.num_nodes[t] == 0) continue;
      b.rows += rows;
      b.gathered += b.nnz[t] >= 0 ? 8 * b.nnz[t] : kF * rows * f;
    }
    for (const nn::HeteroPassShape& e : blocks)
      for (const std::int64_t x : e.entries) b.edges += static_cast<double>(x);
    return b;
  };
  // The latency of a message inside a step (fitted on distributed runs), else the link's.
  const CollectiveCosts collective = m.collective_at(ranks);
  const double msg_alpha =
      collective.full_graph_message_s > 0 ? collective.full_graph_message_s : m.link_alpha_s;
  double eval_s = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const HeteroPartCounts& part = parts[static_cast<std::size_t>(rank)];
    // The model: its parameters and the buffers of the passes an epoch makes. Every epoch ends
    // with a full-graph forward pass (the evaluation); a mini-batch step's backward buffers are
    // a full batch's expected blocks' (the sampler's bounds, which no batch reaches, would ask
    // for up to twice the buffers). A part's layers compute its owned rows from its local ones.
    // Over a partition each rank trains on the seeds it owns of every global batch.
    nn::HeteroFootprint fp(mc, s);
    const std::vector<nn::HeteroPassShape> full =
        nn::full_graph_shapes(mc, part.num_local, part.num_owned, part.entries);
    const nn::EmbeddingReads whole =
        spread && embedded ? nn::EmbeddingReads::Spread : nn::EmbeddingReads::Whole;
    const std::vector<nn::HeteroPassShape> blocks =
        mini ? expected_blocks(batch_seeds * static_cast<double>(part.num_train) /
                               std::max(1.0, static_cast<double>(c.num_train)))
             : expected;
    const BatchStats batch = mini ? batch_stats(blocks) : BatchStats{};
    if (mini) {
      fp.pass(full, /*backward=*/false, /*halo=*/true, whole);
      fp.pass(blocks, /*backward=*/true, false, nn::EmbeddingReads::ById);
    } else {
      fp.pass(full, /*backward=*/true, /*halo=*/true, whole);
    }
    plan.parameters = fp.parameter_floats() + fp.embedding_floats();

    RankPlan rp;
    rp.rank = rank;
    auto& host = rp.host;
    host.push_back({"process", m.process_base_bytes + (spread ? m.mpi_rank_extra_bytes : 0)});
    // The data as read (features and relation rows of the local nodes, labels, splits) and the
    // copies the task trains from (the prepared features, the relations it reads).
    double features = 0, relations = 0, ids = 0;
    for (std::size_t t = 0; t < nt; ++t) {
      const double n = static_cast<double>(part.num_local[t]),
                   f = static_cast<double>(s.in_features[t]);
      ids += 3 * kF * n + kF * static_cast<double>(part.num_send[t]);
      if (f == 0) continue;
      features += part.feature_nnz[t] >= 0
                      ? kI * (n + 1) + (kF + kF) * static_cast<double>(part.feature_nnz[t])
                      : kF * n * f;
    }
    for (std::size_t r = 0; r < nr; ++r)
      relations += kI * (static_cast<double>(
                             part.num_local[static_cast<std::size_t>(s.relations[r].second)]) +
                         1) +
                   kF * static_cast<double>(part.entries[r]);
    const double labels =
        kF * (static_cast<double>(part.num_local[target]) +
              2.0 * static_cast<double>(part.num_train + part.num_val + part.num_test));
    const double data = features + relations + labels + ids;
    host.push_back({"dataset", as_bytes(data)});
    host.push_back({"prepared", as_bytes(features + relations + labels)});
    // Dense parameters: values, gradients, Adam's moments, the kept epoch's copy (and, with
    // ranks, the gradient all-reduce's flat buffer).
    host.push_back({"model_optimizer",
                    as_bytes((spread ? 6 : 5) * kF * static_cast<double>(fp.parameter_floats()))});
    // The tables: rows, SparseAdam's moments, the kept epoch's copy. On a partition a rank
    // keeps those of its owned rows, fetches the local rows a pass reads (and returns their
    // gradients), knows every node's owner and row, and holds the whole table when the model is
    // built and when the run ends (the rows gathered from their owners).
    double tables = 4 * kF * static_cast<double>(fp.embedding_floats());
    if (spread && embedded) {
      tables = kF * static_cast<double>(fp.embedding_floats());
      for (std::size_t t = 0; t < nt; ++t)
        if (embeds[t])
          tables += 4 * kF * static_cast<double>(part.num_owned[t]) * h +
                    2 * kF * static_cast<double>(part.num_local[t]) * h +
                    2 * kF * static_cast<double>(s.num_nodes[t]);
    }
    host.push_back({"embeddings", as_bytes(tables)});
    host.push_back({"activations", fp.buffer_bytes()});
    // The halo exchange's send and receive rows per type, at the widest layer.
    double halo = 0;
    for (std::size_t t = 0; t < nt; ++t)
      halo +=
          kF * static_cast<double>(part.num_send[t] + part.num_local[t] - part.num_owned[t]) * h;
    host.push_back({"halo", as_bytes(halo)});
    host.push_back({"sampler_envelope", plan.sampler_envelope_bytes});
    host.push_back({"workspace", as_bytes(workspace)});
    // Mini-batches (on a part; one process: the one part): every node's owner and row, every
    // training node; per relation the owned destinations' rows by global id and the remote
    // sampling's buffers (a full batch's destinations and draws each way); per featured type a
    // feature store of the owned rows (its ids and degrees, the exchange's buffers and the rows it
    // fetches, dense, at a full batch's input rows, the cache).
    double fetched_rows = 0, fetched_bytes = 0;
    if (mini) {
      double remote = kF * static_cast<double>(c.num_train);
      for (std::size_t t = 0; t < nt; ++t) remote += 2 * kF * static_cast<double>(s.num_nodes[t]);
      for (std::size_t r = 0; r < nr; ++r) {
        const auto d = static_cast<std::size_t>(s.relations[r].second);
        double ask = 0, edges = 0;
        for (const nn::HeteroPassShape& e : blocks) {
          ask = std::max(ask, static_cast<double>(e.num_dst[d]));
          edges = std::max(edges, static_cast<double>(e.entries[r]));
        }
        // (The one part of one process draws from its relations as stored.)
        if (spread)
          remote += kI * (static_cast<double>(part.num_owned[d]) + 1) +
                    kF * static_cast<double>(part.entries[r]) + 2 * (3 * kI * ask + kF * edges);
      }
      for (std::size_t t = 0; t < nt; ++t) {
        const double f = static_cast<double>(s.in_features[t]);
        if (f == 0 || s.num_nodes[t] == 0) continue;
        const double owned = static_cast<double>(part.num_owned[t]),
                     local = static_cast<double>(part.num_local[t]);
        const double rows = static_cast<double>(blocks.front().num_src[t]);
        // The rows a batch reads that another rank owns.
        const double away = rows * (1 - owned / static_cast<double>(s.num_nodes[t]));
        const double row_bytes = kF * (2 + f);
        remote += part.feature_nnz[t] >= 0
                      ? kI * (owned + 1) + (kF + kF) * static_cast<double>(part.feature_nnz[t]) *
                                               owned / std::max(1.0, local)
                      : kF * owned * f;
        remote += (kF + kF + kI) * local + rows * (kF + kI + kF + kI + kF * f) +
                  2 * away * row_bytes +
                  std::min(static_cast<double>(config.mini_batch->cache_mb) * 1048576.0,
                           (local - owned) * kF * f);
        fetched_rows += away;
        fetched_bytes += away * row_bytes;
      }
      host.push_back({"typed_batches", as_bytes(remote)});
    }
    for (const MemoryItem& i : host) rp.peak_host_bytes += i.bytes;
    for (const MemoryItem& i : host)
      if (i.name != "process") rp.working_set_bytes += i.bytes;
    rp.dataset_bytes = as_bytes(data);

    // Time: the steps of an epoch, their compute (the dense products and Adam as measured, the
    // rest at the working set's step scale), the sampler's and the input rows' gathering; with
    // ranks the halo exchanges, the embeddings' fetches and the gradients' all-reduce.
    const double steps = static_cast<double>(plan.batches_per_epoch);
    PassCost step;
    double loss_rows = static_cast<double>(part.num_train), embedding_rows = 0;
    // The stored entries of the sparse features the part's rows hold (-1: dense).
    const std::vector<double> part_nnz(part.feature_nnz.begin(), part.feature_nnz.end());
    if (mini) {
      const nn::HeteroPassShape& in = blocks.front();
      step = pass_cost(m, s, mc, blocks, batch.nnz, true);
      loss_rows = static_cast<double>(blocks.back().num_dst[target]);
      for (std::size_t t = 0; t < nt; ++t)
        if (embeds[t]) embedding_rows += static_cast<double>(in.num_src[t]);
    } else {
      step = pass_cost(m, s, mc, full, part_nnz, true);
      for (std::size_t t = 0; t < nt; ++t)
        if (embeds[t]) embedding_rows += static_cast<double>(part.num_local[t]);
    }
    const double param_bytes = kF * static_cast<double>(fp.parameter_floats());
    const double adam = m.elementwise_alpha_s * 2 * static_cast<double>(mc.num_layers * (nt + nr)) +
                        elementwise_s_per_byte(m, 4 * param_bytes) * 7 * param_bytes +
                        m.elementwise_s_per_byte * 7 * kF * embedding_rows * h;
    const double loss =
        m.loss_s_per_cell * loss_rows * s.num_classes + m.elementwise_alpha_s +
        m.elementwise_s_per_byte * kF * static_cast<double>(part.num_owned[target]) * s.num_classes;
    const double host_working_set =
        static_cast<double>(rp.working_set_bytes) * (m.host_cores > 0 ? ranks : 1);
    const double scale = step_scale(m, mini, host_working_set, 0);
    const double share = core_share(m, ranks, threads);
    rp.step_scale = scale;
    rp.dense_s = share * steps * (step.gemm_s + adam);
    rp.compute_s = share * steps * scale * (step.compute_s - step.gemm_s + loss) + rp.dense_s;
    if (mini) {
      rp.compute_s += steps * m.batch_alpha_s + m.epoch_alpha_s;
      rp.sampling_s =
          steps *
          (m.sampler_alpha_s * static_cast<double>(nr) + m.sampler_s_per_edge * batch.edges +
           m.gather_s_per_row * batch.rows + m.gather_s_per_byte * batch.gathered);
      rp.sampling_s *= producer_scale(m, static_cast<double>(rp.working_set_bytes));
      // The typed sampler runs on the training thread (no producer): nothing hides it.
      rp.exposed_sampling_s = rp.sampling_s;
    }
    if (mini && spread) {
      // Per step and layer each relation's remote draws (their counts, then the draws: two
      // all-to-alls), per featured type the fetch of the input rows other ranks own (one
      // all-to-all each way), the gradients' all-reduce; the evaluation's forward exchanges
      // its halo rows once per hidden layer and type.
      const double peers = ranks - 1;
      const double fetch_alpha =
          collective.mini_batch_message_s > 0 ? collective.mini_batch_message_s : m.link_alpha_s;
      double messages = 2 * static_cast<double>(mc.num_layers * nr) * peers, draw_bytes = 0;
      for (std::size_t r = 0; r < nr; ++r)
        for (const nn::HeteroPassShape& e : blocks) {
          const auto d = static_cast<std::size_t>(s.relations[r].second);
          const double away = 1 - static_cast<double>(part.num_owned[d]) /
                                      std::max(1.0, static_cast<double>(s.num_nodes[d]));
          draw_bytes += away * (2 * kF * static_cast<double>(e.num_dst[d]) +
                                kF * static_cast<double>(e.entries[r]));
        }
      for (std::size_t t = 0; t < nt; ++t)
        if (s.in_features[t] > 0) messages += 2 * peers;
      rp.feature_fetch_bytes = as_bytes(steps * (fetched_bytes + draw_bytes));
      rp.exchange_s =
          steps * (messages * fetch_alpha + collective.mini_batch_fetch_row_s * fetched_rows) +
          fetched_byte_s(m, ranks, threads) * static_cast<double>(rp.feature_fetch_bytes);
      rp.exposed_exchange_s = rp.exchange_s;
      rp.allreduce_bytes = as_bytes(steps * 2.0 * (ranks - 1) / ranks * (param_bytes + 8));
      rp.allreduce_s = steps * allreduce_s(m, msg_alpha, param_bytes + 8, ranks);
    } else if (spread) {
      // Every hidden layer's input gathers its halo rows forward and returns their gradients
      // backward (one all-to-all each way per layer and type); the embedded types' rows are
      // fetched from their owners and their gradients sent back; the gradients are summed.
      const double peers = ranks - 1;
      double bytes = 0, messages = 0;
      for (std::size_t t = 0; t < nt; ++t) {
        const double rows =
            static_cast<double>(part.num_send[t] + part.num_local[t] - part.num_owned[t]);
        bytes += 2 * (mc.num_layers - 1) * kF * rows * h;
        messages += 2 * (mc.num_layers - 1) * peers;
        if (embeds[t]) {
          bytes += 2 * kF * static_cast<double>(part.num_local[t] - part.num_owned[t]) * h;
          messages += 4 * peers;
        }
      }
      rp.halo_exchange_bytes = as_bytes(steps * bytes);
      rp.exchange_s =
          steps * (messages * msg_alpha) +
          fetched_byte_s(m, ranks, threads) * static_cast<double>(rp.halo_exchange_bytes);
      rp.exposed_exchange_s = rp.exchange_s;
      rp.allreduce_bytes = as_bytes(steps * 2.0 * (ranks - 1) / ranks * (param_bytes + 8));
      rp.allreduce_s = steps * allreduce_s(m, msg_alpha, param_bytes + 8, ranks);
    }
    rp.epoch_s = rp.compute_s + rp.exposed_sampling_s + rp.exposed_exchange_s + rp.allreduce_s;
    // The evaluation after every epoch: a full-graph forward pass.
    const PassCost eval = pass_cost(m, s, mc, full, part_nnz, false);
    eval_s = std::max(eval_s, share * (scale * (eval.compute_s - eval.gemm_s) + eval.gemm_s));
    plan.peak_host_bytes_per_rank = std::max(plan.peak_host_bytes_per_rank, rp.peak_host_bytes);
    plan.comm_bytes_per_epoch +=
        rp.halo_exchange_bytes + rp.feature_fetch_bytes + rp.allreduce_bytes;
    plan.epoch_seconds = std::max(plan.epoch_seconds, rp.epoch_s);
    plan.per_rank.push_back(std::move(rp));
  }
  plan.checkpoint_bytes = checkpoint_bytes(plan.parameters);
  plan.checkpoint_seconds = m.disk_s_per_byte * static_cast<double>(plan.checkpoint_bytes);
  plan.train_seconds = config.epochs * (plan.epoch_seconds + eval_s);
  return plan;
}

}  // namespace halo::cluster
