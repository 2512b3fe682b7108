#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>

namespace halo::datasets {
namespace {

namespace rng = kernels::rng;

// Sub-streams of rng::kStreamSynthetic; distinct from make_synthetic's (1..7).
enum class Draw : std::uint64_t {
  Quadrant = 101,  // index: edge << 5 | level
  Permute = 102,   // index: node
  Feature = 103,   // index: node * num_features + feature
  Label = 104,     // index: node
  Split = 105,     // index: node
};

std::uint64_t key_of(std::uint64_t seed, Draw d) {
  return rng::key(seed, rng::stream_id(rng::kStreamSynthetic, static_cast<std::uint64_t>(d)));
}

bool is_probability(double p) { return std::isfinite(p) && p >= 0.0 && p <= 1.0; }

void check_config(const RmatConfig& c) {
  HALO_EXPECTS(c.scale >= 1 && c.scale <= 30,
               "make_rmat: scale must be in [1, 30], got " + std::to_string(c.scale));
  HALO_EXPECTS(std::isfinite(c.avg_degree) && c.avg_degree >= 0.0 && c.avg_degree <= 1e4,
               "make_rmat: avg_degree must be in [0, 1e4], got " + std::to_string(c.avg_degree));
  HALO_EXPECTS(is_probability(c.a) && is_probability(c.b) && is_probability(c.c) &&
                   c.a + c.b + c.c <= 1.0 + 1e-12,
               "make_rmat: a, b, c must be probabilities with a + b + c <= 1, got " +
                   std::to_string(c.a) + ", " + std::to_string(c.b) + ", " + std::to_string(c.c));
  HALO_EXPECTS(
      c.num_features >= 1 && c.num_features <= (std::int64_t{1} << 20),
      "make_rmat: num_features must be in [1, 2^20], got " + std::to_string(c.num_features));
  HALO_EXPECTS(c.num_classes >= 1,
               "make_rmat: num_classes must be at least 1, got " + std::to_string(c.num_classes));
  HALO_EXPECTS(is_probability(c.train_fraction) && is_probability(c.val_fraction) &&
                   is_probability(c.test_fraction) &&
                   c.train_fraction + c.val_fraction + c.test_fraction <= 1.0 + 1e-9,
               "make_rmat: train/val/test fractions must be in [0, 1] and sum to at most 1");
}

/// The random permutation of the ids (Graph500 scrambles them): perm[generated id] = node id.
std::vector<NodeId> rmat_permutation(const kernels::Resources& res, const RmatConfig& config) {
  const std::int64_t n = std::int64_t{1} << config.scale;
  std::vector<std::pair<std::uint64_t, NodeId>> keyed(static_cast<std::size_t>(n));
  const std::uint64_t permute_key = key_of(config.seed, Draw::Permute);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    keyed[static_cast<std::size_t>(v)] = {
        rng::draw_keyed(permute_key, static_cast<std::uint64_t>(v)), static_cast<NodeId>(v)};
  });
  std::sort(keyed.begin(), keyed.end());
  std::vector<NodeId> perm(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    perm[static_cast<std::size_t>(keyed[static_cast<std::size_t>(i)].second)] =
        static_cast<NodeId>(i);
  return perm;
}

/// The number of undirected edges drawn.
std::int64_t rmat_edge_count(const RmatConfig& config) {
  return static_cast<std::int64_t>(std::llround(std::ldexp(config.avg_degree, config.scale) / 2.0));
}

/// Edges [e0, e1) into out[0, e1 - e0): one quadrant per level, ids permuted.
void rmat_edges(const kernels::Resources& res, const RmatConfig& config,
                const std::vector<NodeId>& perm, std::int64_t e0, std::int64_t e1,
                std::pair<NodeId, NodeId>* out) {
  const auto ta = static_cast<float>(config.a);
  const auto tab = static_cast<float>(config.a + config.b);
  const auto tabc = static_cast<float>(config.a + config.b + config.c);
  const std::uint64_t quadrant_key = key_of(config.seed, Draw::Quadrant);
  const std::int32_t scale = config.scale;
  detail::parallel_for(res, e1 - e0, [&](std::int64_t i) {
    const auto e = static_cast<std::uint64_t>(e0 + i);
    std::uint32_t row = 0, col = 0;
    for (std::int32_t level = 0; level < scale; ++level) {
      const float u = rng::uniform_keyed(quadrant_key, e << 5 | static_cast<std::uint64_t>(level));
      const std::uint32_t r = u >= tab ? 1u : 0u;
      const std::uint32_t c = (u >= ta && u < tab) || u >= tabc ? 1u : 0u;
      row = row << 1 | r;
      col = col << 1 | c;
    }
    out[i] = {perm[row], perm[col]};
  });
}

/// Feature rows [v0, v1) into out (row-major, num_features columns): uniform in [-1, 1).
void rmat_features(const kernels::Resources& res, const RmatConfig& config, std::int64_t v0,
                   std::int64_t v1, float* out) {
  const std::int64_t f = config.num_features;
  const std::uint64_t feature_key = key_of(config.seed, Draw::Feature);
  detail::parallel_for(res, v1 - v0, [&](std::int64_t i) {
    const std::int64_t v = v0 + i;
    for (std::int64_t j = 0; j < f; ++j)
      out[i * f + j] =
          2.0f * rng::uniform_keyed(feature_key, static_cast<std::uint64_t>(v * f + j)) - 1.0f;
  });
}

kernels::Tensor<std::int32_t> rmat_labels(const kernels::Resources& res, const RmatConfig& config) {
  const std::int64_t n = std::int64_t{1} << config.scale;
  auto labels = detail::host_tensor<std::int32_t>(res, n);
  std::int32_t* label = labels.data();
  const std::uint64_t label_key = key_of(config.seed, Draw::Label);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    label[v] = static_cast<std::int32_t>(
        (static_cast<unsigned __int128>(rng::draw_keyed(label_key, static_cast<std::uint64_t>(v))) *
         static_cast<std::uint64_t>(config.num_classes)) >>
        64);
  });
  return labels;
}

std::string rmat_name(const RmatConfig& config) { return "rmat-" + std::to_string(config.scale); }

}  // namespace

Dataset make_rmat(const kernels::Resources& res, const RmatConfig& config) {
  check_config(config);
  const std::int64_t n = std::int64_t{1} << config.scale;
  std::vector<NodeId> perm = rmat_permutation(res, config);
  const std::int64_t m = rmat_edge_count(config);
  std::vector<std::pair<NodeId, NodeId>> edges(static_cast<std::size_t>(m));
  rmat_edges(res, config, perm, 0, m, edges.data());
  perm = {};

  Dataset ds;
  ds.name = rmat_name(config);
  ds.num_classes = config.num_classes;
  ds.graph = remove_self_loops(res, symmetrize(res, graph_from_edges(res, n, edges)));
  edges = {};
  auto x = detail::host_tensor<float>(res, n, config.num_features);
  rmat_features(res, config, 0, n, x.data());
  ds.features = std::move(x);
  ds.labels = rmat_labels(res, config);
  detail::assign_random_splits(res, n, config.train_fraction, config.val_fraction,
                               config.test_fraction, key_of(config.seed, Draw::Split), ds);
  return ds;
}

PrepareReport prepare_rmat(const kernels::Resources& res, const RmatConfig& config,
                           const std::filesystem::path& dir, const PrepareOptions& options) {
  check_config(config);
  const std::int64_t n = std::int64_t{1} << config.scale;
  const std::size_t budget = std::max<std::size_t>(options.memory_budget, 4096);
  StoreWriter w(dir);
  PrepareReport report;
  CsrBuildResult graph;
  {
    // The edges are drawn once into a spill file, which the builder then reads once per pass.
    std::vector<NodeId> perm = rmat_permutation(res, config);
    const std::size_t read_bytes = std::max<std::size_t>(budget / 8, 8);
    EdgeSpill spill(w.scratch_dir() / "edges.spill", read_bytes);
    const std::int64_t m = rmat_edge_count(config);
    const auto chunk = static_cast<std::int64_t>(std::max<std::size_t>(read_bytes / 8, 1));
    std::vector<std::pair<NodeId, NodeId>> edges(
        static_cast<std::size_t>(std::min<std::int64_t>(chunk, std::max<std::int64_t>(m, 1))));
    for (std::int64_t e0 = 0; e0 < m; e0 += chunk) {
      const std::int64_t e1 = std::min(m, e0 + chunk);
      rmat_edges(res, config, perm, e0, e1, edges.data());
      spill.append(EdgeBatch(edges.data(), static_cast<std::size_t>(e1 - e0)));
    }
    spill.finish();
    perm = {};
    edges = {};
    CsrBuildOptions o;
    o.symmetrize = true;
    o.remove_self_loops = true;
    o.memory_budget = budget - read_bytes;
    graph = build_csr(res, spill.source(n), o, &w);
    report.spill_bytes = static_cast<std::uint64_t>(spill.num_edges()) * 8;
    report.row_blocks = graph.blocks;
  }
  w.array("graph.values", kernels::Tensor<float>());
  // Features, row block by row block.
  const std::int64_t f = config.num_features;
  const std::size_t row_bytes = static_cast<std::size_t>(f) * sizeof(float);
  const auto rows_per_block =
      std::max<std::int64_t>(static_cast<std::int64_t>(budget / 2 / row_bytes), 1);
  const FeatureDtype dtype = options.feature_dtype;
  w.begin_features(n, f, dtype);
  std::vector<float> x(static_cast<std::size_t>(std::min(rows_per_block, n) * f));
  for (std::int64_t v0 = 0; v0 < n; v0 += rows_per_block) {
    const std::int64_t v1 = std::min(n, v0 + rows_per_block);
    rmat_features(res, config, v0, v1, x.data());
    w.append_features(x.data(), static_cast<std::size_t>((v1 - v0) * f));
  }
  w.end();
  x = {};
  w.array("labels", rmat_labels(res, config));
  Dataset splits;
  detail::assign_random_splits(res, n, config.train_fraction, config.val_fraction,
                               config.test_fraction, key_of(config.seed, Draw::Split), splits);
  w.array("train_idx", splits.train_idx);
  w.array("val_idx", splits.val_idx);
  w.array("test_idx", splits.test_idx);
  StoreCounts c;
  c.name = rmat_name(config);
  c.num_nodes = n;
  c.num_edges = graph.entries;
  c.symmetric = true;
  c.training_edges = graph.entries;  // symmetric, no self-loops: S is the graph itself
  c.max_degree = graph.max_degree;
  c.degree_histogram = graph.histogram;
  c.num_features = f;
  c.feature_dtype = dtype;
  c.num_classes = config.num_classes;
  c.num_train = splits.train_idx.numel();
  c.num_val = splits.val_idx.numel();
  c.num_test = splits.test_idx.numel();
  w.commit(c, options.source_checksum);
  report.counts = read_store_counts(dir);
  return report;
}

TemporalGraph grow_rmat(const kernels::Resources& res, const RmatConfig& config,
                        std::int64_t steps) {
  HALO_EXPECTS(steps >= 1 && steps <= (std::int64_t{1} << 24),
               "grow_rmat: steps must be in [1, 2^24], got " + std::to_string(steps));
  RmatConfig c = config;
  c.num_features = 1;  // the features are not used
  const Dataset ds = make_rmat(res, c);
  const std::int64_t n = ds.num_nodes();
  auto step = [&](std::int64_t v) {
    return static_cast<std::int64_t>(static_cast<__int128>(v) * steps / n);
  };
  std::vector<RawTemporalEvent> events;
  events.reserve(static_cast<std::size_t>(ds.graph.num_edges() / 2));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t e = ds.graph.indptr.data()[r]; e < ds.graph.indptr.data()[r + 1]; ++e) {
      const std::int64_t u = ds.graph.indices.data()[e];
      if (u < r) events.push_back({u, r, std::max(step(u), step(r)), 0});
    }
  TemporalGraph g = make_temporal_graph(std::move(events), false, ds.name);
  g.name = ds.name;
  return g;
}

}  // namespace halo::datasets
