#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>

namespace halo::datasets {
namespace {

namespace rng = kernels::rng;

// Sub-streams of rng::kStreamSynthetic, one per kind of draw.
enum class Draw : std::uint64_t {
  Class = 1,      // index: node
  Degree = 2,     // index: node
  SameClass = 3,  // index: node << 32 | draw
  Endpoint = 4,   // index: node << 32 | draw
  Centroid = 5,   // index: class * num_features + feature
  Noise = 6,      // index: node * ceil(num_features / 2) + pair
  Split = 7,      // index: node
};

std::uint64_t sub_stream(Draw d) {
  return rng::stream_id(rng::kStreamSynthetic, static_cast<std::uint64_t>(d));
}

bool is_fraction(double f) { return f >= 0.0 && f <= 1.0; }

void check_config(const SyntheticConfig& c) {
  HALO_EXPECTS(
      c.num_nodes >= 1 && c.num_nodes <= std::numeric_limits<NodeId>::max(),
      "make_synthetic: num_nodes must be in [1, 2^31 - 1], got " + std::to_string(c.num_nodes));
  HALO_EXPECTS(c.num_classes >= 2, "make_synthetic: num_classes must be at least 2, got " +
                                       std::to_string(c.num_classes));
  HALO_EXPECTS(
      std::isfinite(c.avg_degree) && c.avg_degree >= 0.0 && c.avg_degree <= 1e6,
      "make_synthetic: avg_degree must be in [0, 1e6], got " + std::to_string(c.avg_degree));
  HALO_EXPECTS(is_fraction(c.homophily),
               "make_synthetic: homophily must be in [0, 1], got " + std::to_string(c.homophily));
  HALO_EXPECTS(c.num_features >= 1 && c.num_features <= std::numeric_limits<std::int32_t>::max(),
               "make_synthetic: num_features must be in [1, 2^31 - 1], got " +
                   std::to_string(c.num_features));
  HALO_EXPECTS(std::isfinite(c.feature_signal) && c.feature_signal >= 0.0,
               "make_synthetic: feature_signal must be finite and >= 0, got " +
                   std::to_string(c.feature_signal));
  HALO_EXPECTS(std::isfinite(c.feature_noise) && c.feature_noise >= 0.0,
               "make_synthetic: feature_noise must be finite and >= 0, got " +
                   std::to_string(c.feature_noise));
  HALO_EXPECTS(
      is_fraction(c.train_fraction) && is_fraction(c.val_fraction) && is_fraction(c.test_fraction),
      "make_synthetic: train/val/test fractions must each be in [0, 1], got " +
          std::to_string(c.train_fraction) + ", " + std::to_string(c.val_fraction) + ", " +
          std::to_string(c.test_fraction));
  HALO_EXPECTS(c.train_fraction + c.val_fraction + c.test_fraction <= 1.0 + 1e-9,
               "make_synthetic: train/val/test fractions must sum to at most 1, got " +
                   std::to_string(c.train_fraction + c.val_fraction + c.test_fraction));
}

}  // namespace

Dataset make_synthetic(const kernels::Resources& res, const SyntheticConfig& config) {
  check_config(config);
  const std::int64_t n = config.num_nodes;
  const std::int32_t num_classes = config.num_classes;
  const std::uint64_t seed = config.seed;

  Dataset ds;
  ds.name = "synthetic";
  ds.num_classes = num_classes;

  // ---- classes, and the nodes grouped by class (counting sort) ----
  ds.labels = detail::host_tensor<std::int32_t>(res, n);
  std::int32_t* label = ds.labels.data();
  const std::uint64_t class_stream = sub_stream(Draw::Class);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    label[v] = static_cast<std::int32_t>(
        rng::below(seed, class_stream, static_cast<std::uint64_t>(v), num_classes));
  });
  std::vector<std::int64_t> class_start(static_cast<std::size_t>(num_classes) + 1, 0);
  for (std::int64_t v = 0; v < n; ++v) ++class_start[static_cast<std::size_t>(label[v])];
  detail::counts_to_offsets(class_start.data(), num_classes);
  std::vector<NodeId> by_class(static_cast<std::size_t>(n));
  std::vector<std::int64_t> pos_in_class(static_cast<std::size_t>(n));
  {
    std::vector<std::int64_t> next(class_start.begin(), class_start.end() - 1);
    for (std::int64_t v = 0; v < n; ++v) {
      const auto c = static_cast<std::size_t>(label[v]);
      pos_in_class[static_cast<std::size_t>(v)] = next[c] - class_start[c];
      by_class[static_cast<std::size_t>(next[c]++)] = static_cast<NodeId>(v);
    }
  }

  // ---- edges: node v draws draws[v] endpoints ----
  const double half_degree = config.avg_degree / 2.0;
  const auto base_draws = static_cast<std::int64_t>(std::floor(half_degree));
  const double extra_draw = half_degree - static_cast<double>(base_draws);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(n) + 1, 0);
  const std::uint64_t degree_stream = sub_stream(Draw::Degree);
  if (n >= 2) {  // a single node has no one to connect to
    detail::parallel_for(res, n, [&](std::int64_t v) {
      const bool extra =
          rng::uniform_double(seed, degree_stream, static_cast<std::uint64_t>(v)) < extra_draw;
      offsets[static_cast<std::size_t>(v)] = base_draws + (extra ? 1 : 0);
    });
  }
  detail::counts_to_offsets(offsets.data(), n);
  std::vector<std::pair<NodeId, NodeId>> edges(static_cast<std::size_t>(offsets.back()));
  const std::uint64_t same_stream = sub_stream(Draw::SameClass);
  const std::uint64_t endpoint_stream = sub_stream(Draw::Endpoint);
  const double homophily = config.homophily;
  detail::parallel_for(res, n, [&](std::int64_t v) {
    const auto vi = static_cast<std::size_t>(v);
    const auto c = static_cast<std::size_t>(label[v]);
    const std::int64_t start = class_start[c];
    const std::int64_t size = class_start[c + 1] - start;
    const std::int64_t others = n - size;
    for (std::int64_t e = offsets[vi]; e < offsets[vi + 1]; ++e) {
      const std::uint64_t index =
          static_cast<std::uint64_t>(v) << 32 | static_cast<std::uint64_t>(e - offsets[vi]);
      bool same = rng::uniform_double(seed, same_stream, index) < homophily;
      // Fall back to the other kind when one side has no candidate (n >= 2 leaves one).
      if (same && size < 2) same = false;
      if (!same && others == 0) same = true;
      std::int64_t k = 0;
      if (same) {  // a uniform member of v's class other than v
        k = static_cast<std::int64_t>(
            rng::below(seed, endpoint_stream, index, static_cast<std::uint64_t>(size - 1)));
        if (k >= pos_in_class[vi]) ++k;
        k += start;
      } else {  // a uniform node outside v's class: skip the class's block of by_class
        k = static_cast<std::int64_t>(
            rng::below(seed, endpoint_stream, index, static_cast<std::uint64_t>(others)));
        if (k >= start) k += size;
      }
      edges[static_cast<std::size_t>(e)] = {static_cast<NodeId>(v),
                                            by_class[static_cast<std::size_t>(k)]};
    }
  });
  ds.graph = symmetrize(res, graph_from_edges(res, n, edges));
  edges = {};

  // ---- features: class centroid + Gaussian noise ----
  const std::int64_t f = config.num_features;
  std::vector<float> centroid(static_cast<std::size_t>(num_classes * f));
  const std::uint64_t centroid_stream = sub_stream(Draw::Centroid);
  for (std::size_t i = 0; i < centroid.size(); ++i) {
    const bool positive = (rng::draw(seed, centroid_stream, i) >> 63) != 0;
    centroid[i] = static_cast<float>(positive ? config.feature_signal : -config.feature_signal);
  }
  auto x = detail::host_tensor<float>(res, n, f);
  float* xd = x.data();
  const std::int64_t pairs = (f + 1) / 2;
  const std::uint64_t noise_stream = sub_stream(Draw::Noise);
  const auto noise = static_cast<float>(config.feature_noise);
  detail::parallel_for(res, n, [&](std::int64_t v) {
    float* row = xd + v * f;
    const float* mean = centroid.data() + static_cast<std::int64_t>(label[v]) * f;
    for (std::int64_t p = 0; p < pairs; ++p) {
      // Box–Muller on the two 24-bit halves of one draw: u1 in (0, 1], u2 in [0, 1).
      const std::uint64_t d =
          rng::draw(seed, noise_stream, static_cast<std::uint64_t>(v * pairs + p));
      const float u1 = static_cast<float>((d >> 40) + 1) * (1.0f / 16777216.0f);
      const float u2 = static_cast<float>((d >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
      const float r = std::sqrt(-2.0f * std::log(u1)) * noise;
      const float theta = 6.2831853071795864769f * u2;
      const std::int64_t j = 2 * p;
      row[j] = mean[j] + r * std::cos(theta);
      if (j + 1 < f) row[j + 1] = mean[j + 1] + r * std::sin(theta);
    }
  });
  ds.features = std::move(x);

  detail::assign_random_splits(res, n, config.train_fraction, config.val_fraction,
                               config.test_fraction, rng::key(seed, sub_stream(Draw::Split)), ds);
  return ds;
}

}  // namespace halo::datasets
