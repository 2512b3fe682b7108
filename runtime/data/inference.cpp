#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

#include <halo/runtime/data/batches.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/inference.hpp>

namespace halo::runtime {

using kernels::NodeId;

Inference::Inference(const kernels::Resources& res, Shard& shard, nn::ModelKind kind,
                     bool normalize_features)
    : m_res(res), m_shard(shard), m_kind(kind) {
  // As the Trainer builds them: the exchange overlaps (the sums are the same either way).
  m_graph = std::make_unique<HaloExchange>(res, shard.part, nn::graph_preparation(kind),
                                           /*overlap=*/true, *shard.comm);
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

namespace {

/// Split of every owned node (local id).
std::vector<std::int32_t> owned_splits(const kernels::Resources& host,
                                       const partition::Part& part) {
  std::vector<std::int32_t> split(static_cast<std::size_t>(part.ids.num_owned()), 0);
  const auto mark = [&](const kernels::Tensor<NodeId>& idx, Split s) {
    for (const NodeId i : idx.to_vector(host))
      split[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(s);
  };
  mark(part.train_idx, Split::Train);
  mark(part.val_idx, Split::Val);
  mark(part.test_idx, Split::Test);
  return split;
}

}  // namespace

GatheredNodes gather_nodes(const Shard& shard, const std::vector<std::int64_t>& local,
                           const std::vector<float>& rows, std::int64_t cols) {
  const partition::Part& part = shard.part;
  const kernels::Resources host(kernels::Device::Cpu, 1);
  HALO_EXPECTS(rows.size() == local.size() * static_cast<std::size_t>(cols),
               "gather_nodes: one row per node expected");
  // One record per node: original id, label, split, then the row.
  const auto c = static_cast<std::size_t>(cols);
  const std::size_t record = sizeof(NodeId) + 4 + 4 + c * 4;
  const std::vector<std::int32_t> split = owned_splits(host, part);
  const std::vector<std::int32_t> labels = part.labels.to_vector(host);
  std::vector<std::byte> mine(record * local.size());
  for (std::size_t i = 0; i < local.size(); ++i) {
    HALO_EXPECTS(local[i] >= 0 && local[i] < part.ids.num_owned(),
                 "gather_nodes: not an owned node");
    std::byte* r = mine.data() + record * i;
    const NodeId id = part.ids.to_original(local[i]);
    const auto u = static_cast<std::size_t>(local[i]);
    std::memcpy(r, &id, sizeof id);
    std::memcpy(r + sizeof id, &labels[u], 4);
    std::memcpy(r + sizeof id + 4, &split[u], 4);
    std::memcpy(r + sizeof id + 8, rows.data() + i * c, c * 4);
  }
  std::vector<std::size_t> counts;
  const std::vector<std::byte> all = shard.comm->allgatherv(mine.data(), mine.size(), counts);
  const std::size_t n = all.size() / record;
  GatheredNodes g;
  g.num_nodes = part.book().num_nodes();
  g.cols = cols;
  std::vector<std::pair<NodeId, std::size_t>> order(n);  // (original id, record)
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(&order[i].first, all.data() + record * i, sizeof(NodeId));
    HALO_EXPECTS(order[i].first >= 0 && order[i].first < g.num_nodes,
                 "gather_nodes: an original id out of range");
    order[i].second = i;
  }
  std::sort(order.begin(), order.end());
  g.ids.resize(n);
  g.rows.resize(n * c);
  g.labels.resize(n);
  g.split.resize(n);
  g.position.assign(static_cast<std::size_t>(g.num_nodes), -1);
  for (std::size_t i = 0; i < n; ++i) {
    const std::byte* r = all.data() + record * order[i].second;
    std::int32_t s = 0;
    g.ids[i] = order[i].first;
    std::memcpy(&g.labels[i], r + sizeof(NodeId), 4);
    std::memcpy(&s, r + sizeof(NodeId) + 4, 4);
    g.split[i] = static_cast<Split>(s);
    std::memcpy(g.rows.data() + i * c, r + sizeof(NodeId) + 8, c * 4);
    g.position[static_cast<std::size_t>(g.ids[i])] = static_cast<std::int64_t>(i);
  }
  return g;
}

GatheredNodes gather_nodes(const kernels::Resources& res, const Shard& shard,
                           const kernels::Tensor<float>& owned) {
  HALO_EXPECTS(owned.rows() == shard.part.ids.num_owned(),
               "gather_nodes: one row per owned node expected");
  std::vector<std::int64_t> local(static_cast<std::size_t>(owned.rows()));
  std::iota(local.begin(), local.end(), std::int64_t{0});
  return gather_nodes(shard, local, owned.to_vector(res), owned.cols());
}

Inference::SampledRows Inference::run_sampled(nn::Model<float>& model, std::vector<NodeId> seeds,
                                              const MiniBatchConfig& mb, std::uint64_t seed) {
  const nn::ModelConfig& c = model.config();
  HALO_EXPECTS(c.kind == m_kind && c.in_features == m_features->num_features(),
               "inference: the model does not fit the prepared data");
  HALO_EXPECTS(static_cast<int>(mb.fanouts.size()) == c.num_layers,
               "inference: one fan-out per layer expected (" + std::to_string(c.num_layers) +
                   " layers, " + std::to_string(mb.fanouts.size()) + " fan-outs)");
  MiniBatchConfig config = mb;
  config.prefetch = 0;  // batches are prepared on this thread
  config.cache_mb = 0;
  const partition::Part& part = m_shard.part;
  const kernels::Tensor<std::int32_t> labels = part.labels.copy_to(m_res, m_res.device());
  SampledBatches batches(m_res, part, *m_shard.comm, *m_features, labels.span(), config,
                         nn::graph_preparation(m_kind), seed, /*input_dropout=*/0.f,
                         std::move(seeds));
  SampledRows out;
  out.cols = c.num_classes;
  const nn::Context ctx{&m_res, /*training=*/false, seed, 0, 0};
  batches.begin_epoch(0, 0);
  for (std::int64_t b = 0; b < batches.batches_per_epoch(); ++b) {
    const Batch& batch = batches.next();
    const kernels::Span<const NodeId> mine = batches.seeds_of(b);
    const kernels::Tensor<float>& logits = model.forward(ctx, batch.graphs, *batch.x);
    HALO_ASSERT(logits.rows() == mine.size, 1);
    const std::vector<float> rows = logits.to_vector(m_res);
    out.rows.insert(out.rows.end(), rows.begin(), rows.end());
    for (std::int64_t i = 0; i < mine.size; ++i)
      out.local.push_back(mine.data[i] - part.ids.first_owned());
  }
  EpochStats ignored;
  batches.end_epoch(ignored);
  return out;
}

std::vector<NodeId> Inference::split_nodes(Split split) const {
  const partition::Part& part = m_shard.part;
  std::vector<NodeId> mine;
  if (split == Split::None) {
    for (std::int64_t i = 0; i < part.ids.num_owned(); ++i)
      mine.push_back(part.ids.first_owned() + i);
  } else {
    const kernels::Resources host(kernels::Device::Cpu, 1);
    const std::vector<std::int32_t> s = owned_splits(host, part);
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] == static_cast<std::int32_t>(split))
        mine.push_back(part.ids.first_owned() + static_cast<NodeId>(i));
  }
  std::vector<std::size_t> counts;
  const std::vector<std::byte> all =
      m_shard.comm->allgatherv(mine.data(), mine.size() * sizeof(NodeId), counts);
  std::vector<NodeId> nodes(all.size() / sizeof(NodeId));
  std::memcpy(nodes.data(), all.data(), all.size());
  std::sort(nodes.begin(), nodes.end());  // the parts' ranges come in rank order already
  return nodes;
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
