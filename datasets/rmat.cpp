#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/rmat.hpp>
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
  const double edges = std::ldexp(c.avg_degree, c.scale);
  HALO_EXPECTS(edges <= 2147483647.0, "make_rmat: num_nodes * avg_degree must be below 2^31");
}

}  // namespace

Dataset make_rmat(const kernels::Resources& res, const RmatConfig& config) {
  check_config(config);
  const std::int32_t scale = config.scale;
  const std::int64_t n = std::int64_t{1} << scale;
  const std::uint64_t seed = config.seed;

  // ---- a random permutation of the ids (Graph500 scrambles them) ----
  std::vector<std::pair<std::uint64_t, NodeId>> keyed(static_cast<std::size_t>(n));
  const std::uint64_t permute_key = key_of(seed, Draw::Permute);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    keyed[static_cast<std::size_t>(v)] = {
        rng::draw_keyed(permute_key, static_cast<std::uint64_t>(v)), static_cast<NodeId>(v)};
  });
  std::sort(keyed.begin(), keyed.end());
  std::vector<NodeId> perm(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    perm[static_cast<std::size_t>(keyed[static_cast<std::size_t>(i)].second)] =
        static_cast<NodeId>(i);
  keyed = {};

  // ---- edges: one quadrant per level ----
  const auto m =
      static_cast<std::int64_t>(std::llround(static_cast<double>(n) * config.avg_degree / 2.0));
  const auto ta = static_cast<float>(config.a);
  const auto tab = static_cast<float>(config.a + config.b);
  const auto tabc = static_cast<float>(config.a + config.b + config.c);
  const std::uint64_t quadrant_key = key_of(seed, Draw::Quadrant);
  std::vector<std::pair<NodeId, NodeId>> edges(static_cast<std::size_t>(m));
  detail::parallel_for(res, m, [&](std::int64_t e) {
    std::uint32_t row = 0, col = 0;
    for (std::int32_t level = 0; level < scale; ++level) {
      const float u = rng::uniform_keyed(
          quadrant_key, static_cast<std::uint64_t>(e) << 5 | static_cast<std::uint64_t>(level));
      const std::uint32_t r = u >= tab ? 1u : 0u;
      const std::uint32_t c = (u >= ta && u < tab) || u >= tabc ? 1u : 0u;
      row = row << 1 | r;
      col = col << 1 | c;
    }
    edges[static_cast<std::size_t>(e)] = {perm[row], perm[col]};
  });
  perm = {};

  Dataset ds;
  ds.name = "rmat-" + std::to_string(scale);
  ds.num_classes = config.num_classes;
  ds.graph = remove_self_loops(res, symmetrize(res, graph_from_edges(res, n, edges)));
  edges = {};

  // ---- features, labels ----
  const std::int64_t f = config.num_features;
  auto x = detail::host_tensor<float>(res, n, f);
  float* xd = x.data();
  const std::uint64_t feature_key = key_of(seed, Draw::Feature);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    for (std::int64_t j = 0; j < f; ++j)
      xd[v * f + j] =
          2.0f * rng::uniform_keyed(feature_key, static_cast<std::uint64_t>(v * f + j)) - 1.0f;
  });
  ds.features = std::move(x);
  ds.labels = detail::host_tensor<std::int32_t>(res, n);
  std::int32_t* label = ds.labels.data();
  const std::uint64_t label_key = key_of(seed, Draw::Label);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    label[v] = static_cast<std::int32_t>(
        (static_cast<unsigned __int128>(rng::draw_keyed(label_key, static_cast<std::uint64_t>(v))) *
         static_cast<std::uint64_t>(config.num_classes)) >>
        64);
  });

  detail::assign_random_splits(res, n, config.train_fraction, config.val_fraction,
                               config.test_fraction, key_of(seed, Draw::Split), ds);
  return ds;
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
