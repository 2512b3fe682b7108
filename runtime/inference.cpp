#include <cmath>
#include <cstring>
#include <limits>

#include <halo/runtime/feature_store.hpp>
#include <halo/runtime/halo_exchange.hpp>
#include <halo/runtime/inference.hpp>

namespace halo::runtime {

using kernels::NodeId;

Inference::Inference(const kernels::Resources& res, Shard& shard, nn::ModelKind kind,
                     bool normalize_features)
    : m_res(res), m_shard(shard), m_kind(kind) {
  // As the Trainer builds them: the exchange overlaps (the sums are the same either way).
  m_graph = std::make_unique<HaloExchange>(res, shard.part, kind, /*overlap=*/true, *shard.comm);
  m_features = std::make_unique<FeatureStore>(res, shard.part, normalize_features);
}

Inference::~Inference() = default;

const kernels::Tensor<float>& Inference::run(nn::Model<float>& model, int layer) {
  const nn::ModelConfig& c = model.config();
  HALO_EXPECTS(c.kind == m_kind, "inference: the model is a " + nn::to_string(c.kind) +
                                     ", the graph was prepared for " + nn::to_string(m_kind));
  HALO_EXPECTS(c.in_features == m_features->num_features(),
               "inference: the model reads " + std::to_string(c.in_features) +
                   " features, the data has " + std::to_string(m_features->num_features()));
  const nn::Context ctx{&m_res, /*training=*/false, 0, 0, 0};
  return model.embed(ctx, m_graph->adjacency(), m_features->owned(), layer);
}

GatheredNodes gather_nodes(const kernels::Resources& res, const Shard& shard,
                           const kernels::Tensor<float>& owned) {
  const partition::Part& part = shard.part;
  const std::int64_t n = part.ids.num_owned();
  HALO_EXPECTS(owned.rows() == n, "gather_nodes: one row per owned node expected");
  const std::int64_t cols = owned.cols();
  // One record per owned node: original id, label, split, then the row.
  const std::size_t record = sizeof(NodeId) + 4 + 4 + static_cast<std::size_t>(cols) * 4;
  const std::vector<float> values = owned.to_vector(res);
  const kernels::Resources host = host_resources(res);
  std::vector<std::int32_t> split(static_cast<std::size_t>(n), 0);
  const auto mark = [&](const kernels::Tensor<NodeId>& idx, Split s) {
    const std::vector<NodeId> v = idx.to_vector(host);
    for (const NodeId i : v) split[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(s);
  };
  mark(part.train_idx, Split::Train);
  mark(part.val_idx, Split::Val);
  mark(part.test_idx, Split::Test);
  const std::vector<std::int32_t> labels = part.labels.to_vector(host);
  std::vector<std::byte> mine(record * static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::byte* r = mine.data() + record * static_cast<std::size_t>(i);
    const NodeId id = part.ids.to_original(i);
    const auto u = static_cast<std::size_t>(i);
    std::memcpy(r, &id, sizeof id);
    std::memcpy(r + sizeof id, &labels[u], 4);
    std::memcpy(r + sizeof id + 4, &split[u], 4);
    std::memcpy(r + sizeof id + 8, values.data() + u * static_cast<std::size_t>(cols),
                static_cast<std::size_t>(cols) * 4);
  }
  std::vector<std::size_t> counts;
  const std::vector<std::byte> all = shard.comm->allgatherv(mine.data(), mine.size(), counts);
  GatheredNodes g;
  g.num_nodes = part.book().num_nodes();
  g.cols = cols;
  HALO_EXPECTS(all.size() == record * static_cast<std::size_t>(g.num_nodes),
               "gather_nodes: the ranks' owned nodes do not cover the graph");
  g.rows.resize(static_cast<std::size_t>(g.num_nodes * cols));
  g.labels.assign(static_cast<std::size_t>(g.num_nodes), -1);
  g.split.assign(static_cast<std::size_t>(g.num_nodes), Split::None);
  for (std::int64_t i = 0; i < g.num_nodes; ++i) {
    const std::byte* r = all.data() + record * static_cast<std::size_t>(i);
    NodeId id = 0;
    std::int32_t s = 0;
    std::memcpy(&id, r, sizeof id);
    HALO_EXPECTS(id >= 0 && id < g.num_nodes, "gather_nodes: an original id out of range");
    const auto u = static_cast<std::size_t>(id);
    std::memcpy(&g.labels[u], r + sizeof id, 4);
    std::memcpy(&s, r + sizeof id + 4, 4);
    g.split[u] = static_cast<Split>(s);
    std::memcpy(g.rows.data() + u * static_cast<std::size_t>(cols), r + sizeof id + 8,
                static_cast<std::size_t>(cols) * 4);
  }
  return g;
}

std::vector<std::int32_t> argmax_rows(const std::vector<float>& m, std::int64_t cols) {
  const std::size_t c = static_cast<std::size_t>(cols);
  std::vector<std::int32_t> out(c == 0 ? 0 : m.size() / c);
  for (std::size_t r = 0; r < out.size(); ++r) {
    const float* x = m.data() + r * c;
    std::size_t best = 0;
    for (std::size_t j = 1; j < c; ++j)
      if (x[j] > x[best]) best = j;
    out[r] = static_cast<std::int32_t>(best);
  }
  return out;
}

void softmax_rows(std::vector<float>& m, std::int64_t cols) {
  const std::size_t c = static_cast<std::size_t>(cols);
  for (std::size_t r = 0; c > 0 && r < m.size() / c; ++r) {
    float* x = m.data() + r * c;
    float max = x[0];
    for (std::size_t j = 1; j < c; ++j) max = std::max(max, x[j]);
    double sum = 0;
    for (std::size_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(x[j] - max));
    for (std::size_t j = 0; j < c; ++j)
      x[j] = static_cast<float>(std::exp(static_cast<double>(x[j] - max)) / sum);
  }
}

Scores score(const std::vector<std::int32_t>& predicted, const std::vector<std::int32_t>& labels,
             std::int32_t num_classes) {
  HALO_EXPECTS(predicted.size() == labels.size(), "score: one prediction per label expected");
  const auto k = static_cast<std::size_t>(num_classes);
  std::vector<std::int64_t> tp(k, 0), fp(k, 0), fn(k, 0);
  Scores s;
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::int32_t y = labels[i], p = predicted[i];
    if (y < 0) continue;
    HALO_EXPECTS(y < num_classes && p >= 0 && p < num_classes, "score: a class out of range");
    ++s.labelled;
    if (y == p) {
      ++correct;
      ++tp[static_cast<std::size_t>(y)];
    } else {
      ++fp[static_cast<std::size_t>(p)];
      ++fn[static_cast<std::size_t>(y)];
    }
  }
  if (s.labelled == 0) {
    s.accuracy = s.macro_f1 = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  s.accuracy = static_cast<double>(correct) / static_cast<double>(s.labelled);
  double f1_sum = 0;
  int present = 0;
  for (std::size_t c = 0; c < k; ++c) {
    const std::int64_t denom = 2 * tp[c] + fp[c] + fn[c];
    if (denom == 0) continue;  // neither true nor predicted: not in the mean
    f1_sum += 2.0 * static_cast<double>(tp[c]) / static_cast<double>(denom);
    ++present;
  }
  s.macro_f1 = f1_sum / present;
  return s;
}

}  // namespace halo::runtime
