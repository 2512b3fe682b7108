#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/runtime/minibatch.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;
using SparseFeatures = kernels::CsrMatrix<std::int32_t, float>;

namespace {

FullGraphInputs prepare_timed(const kernels::Resources& res, const datasets::Dataset& data,
                              const TrainConfig& config, double& seconds) {
  // Both kinds sample the plain symmetric graph; GCN's weights are made per block.
  const auto start = std::chrono::steady_clock::now();
  FullGraphInputs in =
      prepare_full_graph(res, data, nn::ModelKind::Sage, config.normalize_features);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return in;
}

// Most stored entries any `rows` rows of `x` can hold.
std::int64_t max_entries(const SparseFeatures& x, std::int64_t rows) {
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(x.num_rows()));
  for (std::int64_t r = 0; r < x.num_rows(); ++r)
    lengths[static_cast<std::size_t>(r)] = x.indptr(r + 1) - x.indptr(r);
  const auto k = static_cast<std::size_t>(std::min<std::int64_t>(rows, x.num_rows()));
  std::partial_sort(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(k),
                    lengths.end(), std::greater<>());
  return std::accumulate(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(k),
                         std::int64_t{0});
}

// A single-producer, single-consumer hand-over of slot indices; -1 means "stop".
class Channel {
 public:
  void push(int v) {
    {
      const std::lock_guard lock(m_mutex);
      m_items.push_back(v);
    }
    m_cv.notify_one();
  }
  int pop() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_items.empty(); });
    const int v = m_items.front();
    m_items.pop_front();
    return v;
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<int> m_items;
};

}  // namespace

/// One batch in preparation or in use: its own sampler (whose buffers hold the blocks) and the
/// gathered inputs, all sized once from the sampler's envelope.
struct MiniBatchTrainer::Slot {
  sampler::NeighborSampler sampler;
  const sampler::MiniBatch* batch = nullptr;
  kernels::FeatureMatrix<float> x;
  Tensor<std::int32_t> labels;
  std::vector<nn::Adjacency<float>> graphs;
  /// GCN: each block with a self-loop per destination and its weights (see normalize_block).
  std::vector<kernels::CsrMatrix<NodeId, float>> gcn_blocks;
};

namespace {
/// GCN's propagation on a sampled block, an unbiased estimate of the full graph's
/// D̂^-1/2 (A + I) D̂^-1/2 row: destination i with d_i neighbours of which s_i were sampled
/// weighs neighbour j by (d_i / s_i) / sqrt(d̂_i d̂_j) and itself by 1 / d̂_i, d̂ = d + 1
/// (global degrees). With every neighbour sampled it is the full-graph row exactly.
void normalize_block(const sampler::Block& block, const std::int64_t* graph_indptr,
                     kernels::CsrMatrix<NodeId, float>& out) {
  const auto& a = block.csr;
  auto degree = [&](NodeId global) {
    return static_cast<double>(graph_indptr[global + 1] - graph_indptr[global]);
  };
  out.indptr.reshape_within(a.num_rows + 1, 1);
  out.indices.reshape_within(a.num_edges() + a.num_rows, 1);
  out.values.reshape_within(a.num_edges() + a.num_rows, 1);
  out.num_cols = a.num_cols;
  std::int64_t at = 0;
  out.indptr.data()[0] = 0;
  for (std::int64_t i = 0; i < a.num_rows; ++i) {
    const double d_i = degree(block.src_ids[i]);
    const double inv_i = 1.0 / std::sqrt(d_i + 1);
    out.indices.data()[at] = static_cast<NodeId>(i);
    out.values.data()[at++] = static_cast<float>(inv_i * inv_i);
    const std::int64_t s_i = a.indptr[i + 1] - a.indptr[i];
    for (std::int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const NodeId j = a.indices[e];
      out.indices.data()[at] = j;
      out.values.data()[at++] = static_cast<float>(d_i / static_cast<double>(s_i) * inv_i /
                                                   std::sqrt(degree(block.src_ids[j]) + 1));
    }
    out.indptr.data()[i + 1] = at;
  }
}
}  // namespace

std::vector<NodeId> shuffled_seeds(std::uint64_t seed, std::uint64_t epoch,
                                   std::vector<NodeId> ids) {
  const std::uint64_t key =
      kernels::rng::key(seed, kernels::rng::stream_id(kernels::rng::kStreamShuffle, epoch, 0x5eed));
  std::sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
    const auto ka = kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(a));
    const auto kb = kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(b));
    return ka != kb ? ka < kb : a < b;
  });
  return ids;
}

MiniBatchTrainer::MiniBatchTrainer(const kernels::Resources& res, const datasets::Dataset& data,
                                   const TrainConfig& config, const MiniBatchConfig& mb,
                                   nn::Model<float>& model)
    : m_res(res),
      m_producer_res(kernels::Device::Cpu, 1),
      m_data(data),
      m_config(config),
      m_mb(mb),
      m_model(model),
      m_full(prepare_timed(res, data, config, m_preprocess_time_s)),
      m_optimizer(res, model.parameters(), adam_config(config)) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "train: mini-batch training runs on the CPU in this build");
  HALO_EXPECTS(data.train_idx.numel() > 0, "train: the dataset has no training nodes");
  HALO_EXPECTS(mb.batch_size >= 1, "train: --batch-size must be >= 1");
  HALO_EXPECTS(mb.prefetch >= 0 && mb.prefetch <= 16, "train: --prefetch must be in [0, 16]");
  HALO_EXPECTS(static_cast<int>(mb.fanouts.size()) == model.config().num_layers,
               "train: one fan-out per layer expected (" +
                   std::to_string(model.config().num_layers) + " layers, " +
                   std::to_string(mb.fanouts.size()) + " fan-outs)");
  HALO_EXPECTS(model.config().in_features == data.num_features() &&
                   model.config().num_classes == data.num_classes,
               "train: the model was not built for this dataset");
  const std::int64_t batch = std::min(mb.batch_size, data.train_idx.numel());
  const sampler::SamplerConfig sc{mb.fanouts, mb.replace, config.seed};
  const std::int64_t features = data.num_features();
  for (int i = 0; i <= mb.prefetch; ++i) {
    auto slot = std::make_unique<Slot>(Slot{sampler::NeighborSampler(res, m_full.graph, batch, sc),
                                            nullptr,
                                            {},
                                            Tensor<std::int32_t>(res, batch),
                                            {},
                                            {}});
    const std::int64_t inputs = slot->sampler.envelope().layers.front().num_src;
    if (const auto* sparse = std::get_if<SparseFeatures>(&m_full.features)) {
      const std::int64_t entries = max_entries(*sparse, inputs);
      slot->x =
          SparseFeatures{Tensor<std::int64_t>(res, inputs + 1), Tensor<std::int32_t>(res, entries),
                         Tensor<float>(res, entries), features, false};
    } else {
      slot->x = Tensor<float>(res, inputs, features);
    }
    if (model.config().kind == nn::ModelKind::Gcn)
      for (const sampler::LayerEnvelope& l : slot->sampler.envelope().layers) {
        const std::int64_t entries = l.num_edges + l.num_dst;
        slot->gcn_blocks.push_back({Tensor<std::int64_t>(res, l.num_dst + 1),
                                    Tensor<NodeId>(res, entries), Tensor<float>(res, entries), 0,
                                    false});
      }
    m_slots.push_back(std::move(slot));
  }
  if (model.config().kind == nn::ModelKind::Gcn) {  // evaluation runs on Â
    m_eval_graph = datasets::gcn_normalize<float>(res, m_full.graph);
    m_eval_graph.symmetric = true;
  }
  std::vector<NodeId> iota(static_cast<std::size_t>(batch));
  std::iota(iota.begin(), iota.end(), 0);
  m_iota = Tensor<NodeId>::from_host(res, iota);
}

MiniBatchTrainer::~MiniBatchTrainer() = default;

std::int64_t MiniBatchTrainer::batches_per_epoch() const {
  const std::int64_t b = m_iota.numel();
  return (m_data.train_idx.numel() + b - 1) / b;
}

std::size_t MiniBatchTrainer::sampler_envelope_bytes() const {
  std::size_t total = 0;
  for (const auto& s : m_slots) total += s->sampler.envelope_bytes();
  return total;
}

std::size_t MiniBatchTrainer::sampler_peak_bytes() const {
  std::size_t peak = 0;
  for (const auto& s : m_slots) peak = std::max(peak, s->sampler.peak_bytes());
  return peak;
}

void MiniBatchTrainer::prepare(Slot& slot, std::int64_t batch, std::uint64_t epoch) {
  const kernels::Resources& res = m_producer_res;
  const std::int64_t b = m_iota.numel();  // the batch size
  const std::int64_t begin = batch * b;
  const std::int64_t count =
      std::min<std::int64_t>(b, static_cast<std::int64_t>(m_order.size()) - begin);
  const kernels::Span<const NodeId> seeds{m_order.data() + begin, count};
  slot.batch = &slot.sampler.sample(res, seeds, epoch, static_cast<std::uint64_t>(batch));
  const auto inputs = slot.batch->input_nodes;

  // The seeds' labels, then the input nodes' features, into the slot's buffers.
  slot.labels.reshape_within(count, 1);
  for (std::int64_t i = 0; i < count; ++i) slot.labels.data()[i] = m_data.labels.data()[seeds[i]];
  if (auto* x = std::get_if<SparseFeatures>(&slot.x)) {
    const auto& all = std::get<SparseFeatures>(m_full.features);
    std::int64_t at = 0;
    x->indptr.reshape_within(inputs.size + 1, 1);
    x->indptr.data()[0] = 0;
    for (std::int64_t i = 0; i < inputs.size; ++i) {
      const std::int64_t e0 = all.indptr(inputs[i]), e1 = all.indptr(inputs[i] + 1);
      std::copy(all.indices.data() + e0, all.indices.data() + e1, x->indices.data() + at);
      std::copy(all.values.data() + e0, all.values.data() + e1, x->values.data() + at);
      at += e1 - e0;
      x->indptr.data()[i + 1] = at;
    }
    x->indices.reshape_within(at, 1);
    x->values.reshape_within(at, 1);
  } else {
    auto& dense = std::get<Tensor<float>>(slot.x);
    dense.reshape_within(inputs.size, dense.cols());
    kernels::gather_rows<NodeId, float>(res, std::get<Tensor<float>>(m_full.features).view(),
                                        inputs, dense.view());
  }
  slot.graphs.clear();  // capacity kept: one entry per layer
  for (std::size_t l = 0; l < slot.batch->blocks.size(); ++l) {
    const sampler::Block& block = slot.batch->blocks[l];
    nn::Adjacency<float> a(block.csr);
    if (!slot.gcn_blocks.empty()) {
      normalize_block(block, m_full.graph.indptr.data(), slot.gcn_blocks[l]);
      a = nn::Adjacency<float>(slot.gcn_blocks[l].view());
    }
    a.source_ids = block.src_ids;
    slot.graphs.push_back(a);
  }
}

double MiniBatchTrainer::compute(Slot& slot, std::int64_t batch, std::uint64_t epoch) {
  // Dropout masks differ per batch: the epoch key carries the batch in its low 32 bits.
  const nn::Context ctx{&m_res, /*training=*/true, m_config.seed,
                        epoch << 32 | static_cast<std::uint64_t>(batch), 0};
  const Tensor<float>& logits = m_model.forward(ctx, slot.graphs, slot.x);
  const std::int64_t n = slot.labels.numel();
  const kernels::Span<const NodeId> rows{m_iota.data(), n};
  kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
  const double loss = kernels::log_softmax_nll(m_res, logits.view(), slot.labels.span(), rows);
  kernels::log_softmax_nll_backward(m_res, logits.view(), slot.labels.span(), rows,
                                    m_dlogits.view());
  m_model.backward(ctx, slot.graphs, m_dlogits);
  m_optimizer.step(m_res);
  return loss * static_cast<double>(n);
}

double MiniBatchTrainer::train_epoch(std::uint64_t epoch) {
  m_order =
      shuffled_seeds(m_config.seed, epoch,
                     {m_data.train_idx.data(), m_data.train_idx.data() + m_data.train_idx.numel()});
  const std::int64_t batches = batches_per_epoch();
  double loss_sum = 0;
  if (m_mb.prefetch == 0) {
    for (std::int64_t b = 0; b < batches; ++b) {
      prepare(*m_slots[0], b, epoch);
      loss_sum += compute(*m_slots[0], b, epoch);
    }
  } else {
    Channel free, ready;
    for (int i = 0; i < static_cast<int>(m_slots.size()); ++i) free.push(i);
    std::exception_ptr producer_error;
    std::thread producer([&] {
      try {
        for (std::int64_t b = 0; b < batches; ++b) {
          const int s = free.pop();
          if (s < 0) return;  // the consumer stopped
          prepare(*m_slots[static_cast<std::size_t>(s)], b, epoch);
          ready.push(s);
        }
      } catch (...) {
        producer_error = std::current_exception();
        ready.push(-1);
      }
    });
    try {
      for (std::int64_t b = 0; b < batches; ++b) {
        const int s = ready.pop();
        if (s < 0) break;
        loss_sum += compute(*m_slots[static_cast<std::size_t>(s)], b, epoch);
        free.push(s);
      }
    } catch (...) {
      free.push(-1);
      producer.join();
      throw;
    }
    producer.join();
    if (producer_error) std::rethrow_exception(producer_error);
  }
  m_res.synchronize();
  return loss_sum / static_cast<double>(m_order.size());
}

MiniBatchTrainer::Evaluation MiniBatchTrainer::evaluate() {
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  const auto graph = m_eval_graph.num_rows() > 0 ? m_eval_graph.view() : m_full.graph.view();
  return score_splits(m_res, m_model.forward(ctx, graph, m_full.features), m_data);
}

}  // namespace halo::runtime
