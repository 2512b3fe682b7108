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
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/runtime/detail/clock.hpp>
#include <halo/runtime/minibatch.hpp>
#include <halo/runtime/minibatch_body.hpp>

namespace halo::runtime {

using detail::seconds_since;

using kernels::NodeId;
using kernels::Tensor;
using SparseFeatures = kernels::CsrMatrix<std::int32_t, float>;

namespace {

/// The graph and features prepared on the host, whatever res's device: the sampler borrows a
/// host graph, and the feature buffers are sized from host rows (the constructor uploads them).
FullGraphInputs prepare_timed(const kernels::Resources& res, const datasets::Dataset& data,
                              const TrainConfig& config, double& seconds) {
  // Both kinds sample the plain symmetric graph; GCN's weights are made per block.
  const auto start = std::chrono::steady_clock::now();
  const kernels::Resources host = host_resources(res);
  FullGraphInputs in = prepare_full_graph(res.device() == kernels::Device::Cpu ? res : host, data,
                                          nn::ModelKind::Sage, config.normalize_features);
  seconds = seconds_since(start);
  return in;
}

/// *p, for p in res's device memory (a synchronising 8-byte copy on a device, counted in
/// `syncs`).
std::int64_t read_back(const kernels::Resources& res, const std::int64_t* p, std::int64_t& syncs) {
  if (res.device() != kernels::Device::Cpu) ++syncs;
  std::int64_t v = 0;
  kernels::copy_bytes(res, &v, kernels::Device::Cpu, p, res.device(), sizeof(v));
  return v;
}

/// Stored entries of `a` (on res's device): the view's host count when it has one, else read
/// back from indptr.
std::int64_t entries_of(const kernels::Resources& res, kernels::CsrView<NodeId, float> a,
                        std::int64_t& syncs) {
  if (a.num_entries >= 0) return a.num_entries;
  return a.num_rows == 0 ? 0 : read_back(res, a.indptr + a.num_rows, syncs);
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
  /// GCN: each block with a self-loop per destination and its weights (GcnBlockNormBody).
  std::vector<kernels::CsrMatrix<NodeId, float>> gcn_blocks;
  Tensor<std::int64_t> scan_sums;  // sparse features: block sums of the gathered indptr's scan
};

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
      m_targets(upload_targets(res, data)),
      m_optimizer(res, model.parameters(), adam_config(config)) {
  HALO_EXPECTS(data.train_idx.numel() > 0, "train: the dataset has no training nodes");
  HALO_EXPECTS(mb.batch_size >= 1, "train: --batch-size must be >= 1");
  HALO_EXPECTS(mb.prefetch >= 0 && mb.prefetch <= 16, "train: --prefetch must be in [0, 16]");
  HALO_EXPECTS(static_cast<int>(mb.fanouts.size()) == model.config().num_layers,
               "train: one fan-out per layer expected (" +
                   std::to_string(model.config().num_layers) + " layers, " +
                   std::to_string(mb.fanouts.size()) + " fan-outs)");
  check_model(res, model, data);
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t batch = std::min(mb.batch_size, data.train_idx.numel());
  const sampler::SamplerConfig sc{mb.fanouts, mb.replace, config.seed};
  const std::int64_t features = data.num_features();
  // On a device batches are prepared in stream order on res: one slot, no producer thread.
  const int slots = on_device() ? 1 : mb.prefetch + 1;
  for (int i = 0; i < slots; ++i) {
    auto slot = std::make_unique<Slot>(Slot{sampler::NeighborSampler(res, m_full.graph, batch, sc),
                                            nullptr,
                                            {},
                                            Tensor<std::int32_t>(res, batch),
                                            {},
                                            {},
                                            {}});
    const std::int64_t inputs = slot->sampler.envelope().layers.front().num_src;
    if (const auto* sparse = std::get_if<SparseFeatures>(&m_full.features)) {
      const std::int64_t entries = max_entries(*sparse, inputs);  // host features, see below
      slot->x =
          SparseFeatures{Tensor<std::int64_t>(res, inputs + 1), Tensor<std::int32_t>(res, entries),
                         Tensor<float>(res, entries), features, false};
      slot->scan_sums = Tensor<std::int64_t>(
          res, std::max<std::int64_t>(1, kernels::scan_blocks(inputs, detail::kScanBlock)));
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
  const kernels::Resources host = host_resources(res);
  const kernels::Resources& host_res = on_device() ? host : res;
  if (model.config().kind == nn::ModelKind::Gcn) {  // evaluation runs on Â
    m_eval_graph = datasets::gcn_normalize<float>(host_res, m_full.graph);
    m_eval_graph.symmetric = true;
  }
  if (on_device()) {
    // Upload once: features, evaluation graph, GCN's degrees. The host graph stays: the
    // sampler borrows it (and keeps its own device copy).
    m_full.features = features_to(res, m_full.features);
    if (model.config().kind == nn::ModelKind::Gcn) {
      m_eval_graph = m_eval_graph.copy_to(res, res.device());
      m_degree_indptr = m_full.graph.indptr.copy_to(res, res.device());
    } else {
      m_eval_graph = m_full.graph.copy_to(res, res.device());
    }
    m_order_d = Tensor<NodeId>(res, data.train_idx.numel());
    m_loss_total = Tensor<float>(res, 1);
  }
  std::vector<NodeId> iota(static_cast<std::size_t>(batch));
  std::iota(iota.begin(), iota.end(), 0);
  m_iota = Tensor<NodeId>::from_host(res, iota);
  m_preprocess_time_s += on_device() ? seconds_since(start) : 0.0;  // the uploads
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
  const kernels::Resources& res = prepare_res();
  const std::int64_t b = m_iota.numel();  // the batch size
  const std::int64_t begin = batch * b;
  const std::int64_t count =
      std::min<std::int64_t>(b, static_cast<std::int64_t>(m_order.size()) - begin);
  const NodeId* order = on_device() ? m_order_d.data() : m_order.data();
  const kernels::Span<const NodeId> seeds{order + begin, count};  // on res's device
  slot.batch =
      &slot.sampler.sample(res, seeds, epoch, static_cast<std::uint64_t>(batch), res.device());
  const auto inputs = slot.batch->input_nodes;

  // The seeds' labels, then the input nodes' features, into the slot's buffers.
  slot.labels.reshape_within(count, 1);
  kernels::launch(
      res, count,
      detail::GatherLabelsBody{m_targets.labels.data(), seeds.data, slot.labels.data()});
  if (auto* x = std::get_if<SparseFeatures>(&slot.x)) {
    const auto& all = std::get<SparseFeatures>(m_full.features);
    x->indptr.reshape_within(inputs.size + 1, 1);
    std::int64_t* indptr = x->indptr.data();
    kernels::launch(res, inputs.size,
                    detail::SparseRowLengthBody{all.indptr.data(), inputs.data, indptr});
    kernels::inclusive_scan(res, indptr + 1, inputs.size, slot.scan_sums.data(),
                            detail::kScanBlock);
    // The entry count shapes the gathered matrix (the sparse dropout checks it): one scalar
    // read back per batch, beside the sampler's own.
    const std::int64_t entries = read_back(res, indptr + inputs.size, m_host_syncs);
    x->indices.reshape_within(entries, 1);
    x->values.reshape_within(entries, 1);
    kernels::launch(
        res, inputs.size,
        detail::SparseRowCopyBody{all.indptr.data(), all.indices.data(), all.values.data(),
                                  inputs.data, indptr, x->indices.data(), x->values.data()});
  } else {
    auto& dense = std::get<Tensor<float>>(slot.x);
    dense.reshape_within(inputs.size, dense.cols());
    kernels::gather_rows<NodeId, float>(res, std::get<Tensor<float>>(m_full.features).view(),
                                        inputs, dense.view());
  }
  const std::int64_t* degrees =
      on_device() ? m_degree_indptr.data() : m_full.graph.indptr.data();  // global degrees
  slot.graphs.clear();  // capacity kept: one entry per layer
  for (std::size_t l = 0; l < slot.batch->blocks.size(); ++l) {
    const sampler::Block& block = slot.batch->blocks[l];
    nn::Adjacency<float> a(block.csr);
    if (!slot.gcn_blocks.empty()) {
      auto& out = slot.gcn_blocks[l];
      // Exact shapes: the view's entry count sizes library calls (cuSPARSE).
      const std::int64_t entries = entries_of(res, block.csr, m_host_syncs) + block.num_dst();
      out.indptr.reshape_within(block.num_dst() + 1, 1);
      out.indices.reshape_within(entries, 1);
      out.values.reshape_within(entries, 1);
      out.num_cols = block.num_src();
      kernels::launch(
          res, block.num_dst(),
          detail::GcnBlockNormBody{block.csr, block.src_ids.data, degrees, out.indptr.data(),
                                   out.indices.data(), out.values.data()});
      a = nn::Adjacency<float>(out.view());
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
  double loss_sum = 0;  // on a device the sum stays there (m_loss_total), read once per epoch
  if (on_device())
    kernels::log_softmax_nll_accumulate(m_res, logits.view(), slot.labels.span(), rows,
                                        m_loss_total.span());
  else
    loss_sum = kernels::log_softmax_nll(m_res, logits.view(), slot.labels.span(), rows) *
               static_cast<double>(n);
  kernels::log_softmax_nll_backward(m_res, logits.view(), slot.labels.span(), rows,
                                    m_dlogits.view());
  m_model.backward(ctx, slot.graphs, m_dlogits);
  m_optimizer.step(m_res);
  return loss_sum;
}

double MiniBatchTrainer::train_epoch(std::uint64_t epoch) {
  m_order =
      shuffled_seeds(m_config.seed, epoch,
                     {m_data.train_idx.data(), m_data.train_idx.data() + m_data.train_idx.numel()});
  const std::int64_t batches = batches_per_epoch();
  double loss_sum = 0;
  if (on_device()) {
    // One upload of the epoch's order, then sampling, gathers and the step in stream order.
    kernels::copy_bytes(m_res, m_order_d.data(), m_order_d.device(), m_order.data(),
                        kernels::Device::Cpu, m_order.size() * sizeof(NodeId));
    kernels::zero_bytes(m_res, m_loss_total.data(), m_loss_total.device(), m_loss_total.bytes());
    m_host_syncs = 0;
    for (std::int64_t b = 0; b < batches; ++b) {
      prepare(*m_slots[0], b, epoch);
      m_host_syncs += m_slots[0]->sampler.host_syncs_last_batch();
      compute(*m_slots[0], b, epoch);
    }
    m_host_syncs_per_batch = static_cast<double>(m_host_syncs) / static_cast<double>(batches);
    loss_sum = m_loss_total.to_vector(m_res)[0];  // the epoch's one read-back of the loss
  } else if (m_mb.prefetch == 0) {
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
  return score_splits(m_res, m_model.forward(ctx, graph, m_full.features), m_targets);
}

}  // namespace halo::runtime
