// The ogbn-mag-shaped generator.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/generators/synthetic_mag.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>

namespace halo::datasets {

namespace rng = kernels::rng;

HeteroGraph make_synthetic_mag(const kernels::Resources& res, const SyntheticMagConfig& c) {
  HALO_EXPECTS(std::isfinite(c.scale) && c.scale > 0 && c.scale <= 16,
               "synthetic-mag: the scale must be in (0, 16]");
  HALO_EXPECTS(c.num_features >= 1 && c.num_classes >= 1,
               "synthetic-mag: features and classes must be >= 1");
  const auto scaled = [&](std::int64_t n) {
    return std::max<std::int64_t>(1, std::llround(static_cast<double>(n) * c.scale));
  };
  using M = MagCounts;
  HeteroGraph g;
  g.name = "synthetic-mag";
  const std::vector<std::pair<std::string, std::int64_t>> types = {
      {"author", scaled(M::kAuthors)},
      {"field_of_study", scaled(M::kFields)},
      {"institution", scaled(M::kInstitutions)},
      {"paper", scaled(M::kPapers)}};
  for (const auto& [name, n] : types) {
    NodeType t;
    t.name = name;
    t.num_nodes = n;
    g.node_types.push_back(std::move(t));
  }
  const std::int32_t author = 0, field = 1, institution = 2, paper = 3;
  g.target_type = paper;
  const std::uint64_t key = rng::key(c.seed, rng::kStreamSynthetic);
  const auto n_of = [&](std::int32_t t) {
    return g.node_types[static_cast<std::size_t>(t)].num_nodes;
  };

  struct Spec {
    const char* name;
    std::int32_t src, dst;
    std::int64_t edges;
  };
  const std::vector<Spec> specs = {{"affiliated_with", author, institution, M::kAffiliatedWith},
                                   {"writes", author, paper, M::kWrites},
                                   {"cites", paper, paper, M::kCites},
                                   {"has_topic", paper, field, M::kHasTopic}};
  std::vector<Relation> stored;
  for (std::size_t r = 0; r < specs.size(); ++r) {
    const Spec& s = specs[r];
    const std::int64_t m = scaled(s.edges);
    const std::int64_t ns = n_of(s.src), nd = n_of(s.dst);
    const std::uint64_t rk = rng::key(key, 1 + r);
    std::vector<std::pair<NodeId, NodeId>> dst_src(static_cast<std::size_t>(m));
    for (std::int64_t e = 0; e < m; ++e) {
      const auto i = static_cast<std::uint64_t>(e);
      const double u = rng::uniform_keyed(rk, 2 * i);
      const auto uniform_end = [&](std::int64_t n) {
        return static_cast<NodeId>(
            rng::mul_hi64(rng::draw_keyed(rk, 2 * i + 1), static_cast<std::uint64_t>(n)));
      };
      const auto skewed_end = [&](std::int64_t n) {
        return static_cast<NodeId>(std::min<std::int64_t>(
            n - 1, static_cast<std::int64_t>(static_cast<double>(n) * u * u)));
      };
      // A uniform source, a skewed destination (popular papers, fields, institutions).
      const NodeId src = uniform_end(ns);
      const NodeId dst = skewed_end(nd);
      dst_src[static_cast<std::size_t>(e)] = {dst, src};
    }
    Relation rel;
    rel.name = s.name;
    rel.src_type = s.src;
    rel.dst_type = s.dst;
    rel.adj = relation_csr(res, nd, ns, std::move(dst_src));
    stored.push_back(std::move(rel));
  }
  add_reverse_relations(res, g, std::move(stored));

  // Papers: classes, class-centred dense features, a split by id.
  const std::int64_t np = n_of(paper), f = c.num_features;
  g.num_classes = c.num_classes;
  g.labels = detail::host_tensor<std::int32_t>(res, np);
  const std::uint64_t lk = rng::key(key, 100);
  for (std::int64_t v = 0; v < np; ++v)
    g.labels.data()[v] =
        static_cast<std::int32_t>(rng::mul_hi64(rng::draw_keyed(lk, static_cast<std::uint64_t>(v)),
                                                static_cast<std::uint64_t>(c.num_classes)));
  std::vector<float> centroid(static_cast<std::size_t>(c.num_classes * f));
  const std::uint64_t ck = rng::key(key, 101), xk = rng::key(key, 102);
  for (std::size_t i = 0; i < centroid.size(); ++i) centroid[i] = 2 * rng::uniform_keyed(ck, i) - 1;
  kernels::Tensor<float> x = detail::host_tensor<float>(res, np, f);
  for (std::int64_t v = 0; v < np; ++v) {
    const float* mu = centroid.data() + static_cast<std::int64_t>(g.labels.data()[v]) * f;
    for (std::int64_t j = 0; j < f; ++j)
      x.data()[v * f + j] =
          mu[j] + 2 * rng::uniform_keyed(xk, static_cast<std::uint64_t>(v * f + j)) - 1;
  }
  NodeType& p = g.node_types[static_cast<std::size_t>(paper)];
  p.features = std::move(x);
  p.feature_kind = "dense";
  const double total = static_cast<double>(M::kTrain + M::kValid + M::kTest);
  const auto n_train = static_cast<std::int64_t>(static_cast<double>(np) * M::kTrain / total);
  const auto n_val = static_cast<std::int64_t>(static_cast<double>(np) * M::kValid / total);
  auto range = [&](std::int64_t lo, std::int64_t hi) {
    std::vector<NodeId> ids;
    for (std::int64_t v = lo; v < hi; ++v) ids.push_back(static_cast<NodeId>(v));
    return detail::host_tensor<NodeId>(res, ids);
  };
  g.train_idx = range(0, n_train);
  g.val_idx = range(n_train, n_train + n_val);
  g.test_idx = range(n_train + n_val, np);
  validate(g);
  return g;
}

}  // namespace halo::datasets
