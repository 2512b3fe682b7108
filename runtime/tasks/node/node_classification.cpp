// Node classification: the task of the homogeneous datasets (GCN, GraphSAGE and any
// nn::Network), full graph or sampled batches, one process or the ranks of a partition.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/store/store.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>
#include <halo/runtime/data/batches.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/layerwise_inference.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/runtime/engine/detail/task_support.hpp>
#include <halo/runtime/tasks/node/node_classification.hpp>
#include <halo/runtime/tasks/task_model_file.hpp>

namespace halo::runtime {

using detail::allreduce_gradients;
using detail::Clock;
using detail::expect_finite;
using detail::seconds_since;
using kernels::NodeId;
using kernels::Tensor;

namespace {

/// Bytes of a feature matrix's arrays.
std::size_t feature_bytes(const kernels::FeatureMatrix<float>& x) {
  if (const auto* dense = std::get_if<Tensor<float>>(&x)) return dense->bytes();
  const auto& s = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  return s.indptr.bytes() + s.indices.bytes() + s.values.bytes();
}

/// The task's data on res's device: node classification's labels and splits, and the global
/// sizes of the splits.
struct Targets {
  /// The part's labels on the run's device: a device's copy, or on the CPU the part's own
  /// (no second copy of an array as long as the nodes).
  Tensor<std::int32_t> device_labels;
  kernels::Span<const std::int32_t> labels;
  Tensor<NodeId> train_idx, val_idx, test_idx;
  std::int64_t num_train = 0;
  Tensor<float> loss_total;     // a device epoch's summed loss of this rank (mini-batch)
  Tensor<NodeId> dropout_keys;  // the owned nodes' original ids (empty in one process)
};

/// Node classification on a Shard: mean NLL over the batch's seeds, accuracy per split.
class NodeClassification final : public Task {
 public:
  NodeClassification(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
                     nn::Network<float>& model);
  Comm& comm() override { return *m_shard.comm; }
  Selection selection() const override { return {"val_accuracy", "val_loss"}; }
  CheckpointIdentity identity() const override;
  double preprocess_time_s() const override { return m_preprocess_s; }
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step, Partial& at,
                   const std::function<bool()>& stop) override;
  Metrics evaluate() override;
  std::vector<NamedTensor> state() override { return detail::parameter_state(m_params); }
  std::vector<NamedTensor> optimizer_state() override {
    return detail::adam_state(m_optimizer, m_params);
  }
  std::vector<std::pair<std::string, std::int64_t>> counters() const override {
    return {{"adam.steps", m_optimizer.steps()}};
  }
  void set_counter(const std::string& name, std::int64_t value) override {
    if (name != "adam.steps") unknown_counter(name);
    m_optimizer.set_steps(value);
  }
  std::int64_t batches_per_epoch() const override { return m_batches->batches_per_epoch(); }
  void finish(TrainResult& result) override {
    if (const auto* sampled = dynamic_cast<const SampledBatches*>(m_batches.get())) {
      result.prefetch = sampled->prefetch();
      result.sampler_envelope_bytes = sampled->envelope_bytes();
      result.sampler_peak_bytes = sampled->peak_bytes();
      result.sampler_bound_bytes = sampled->bound_bytes();
      result.sampler_growths = sampled->growths();
    }
    if (m_eval_batches) {
      result.evaluation_bytes = m_eval_batches->envelope_bytes();
      result.evaluation_read_bytes = m_eval_read_bytes;
    }
    if (m_layerwise) {
      result.evaluation_bytes = m_layerwise->bytes();
      result.evaluation_spill_bytes = m_layerwise->spill_bytes_written();
      result.evaluation_read_bytes =
          m_layerwise->feature_bytes_read() + m_layerwise->spill_bytes_read();
    }
    // The inventory beside the measured peak: the data, the model with its gradients and
    // Adam's two moments (and the all-reduce's flat copy), the sampler, the evaluation.
    const partition::Part& part = m_shard.part;
    std::size_t params = 0;
    for (const auto* p : m_params) params += p->value.bytes();
    const auto b = [](std::size_t v) { return static_cast<std::int64_t>(v); };
    result.memory = {{"graph", b(part.graph.indptr.bytes() + part.graph.indices.bytes() +
                                 part.graph.values.bytes() + part.degrees.bytes())},
                     {"adjacency", m_graph ? b(m_graph->bytes()) : 0},
                     // Rows read from a file: only the row cache is held.
                     {"features", m_features->from_file()
                                      ? m_features->cached_rows() * m_features->num_features() * 4
                                      : b(feature_bytes(m_features->owned()))},
                     {"model_optimizer", b(4 * params + m_grad_flat.bytes())},
                     {"sampler_envelope", b(result.sampler_envelope_bytes)},
                     {"evaluation", b(result.evaluation_bytes)}};
  }

 private:
  /// Every owned node's logits in evaluation mode: layer-wise (LayerwiseInference) or the
  /// full-graph pass.
  const Tensor<float>& evaluation_logits();
  /// The split sums of evaluate() (correct train, val, test; the validation loss's sum; train,
  /// val and test rows scored) over sampled neighbourhoods (MiniBatchConfig::eval_fanouts).
  std::vector<double> evaluate_sampled();
  /// Sizes the model's buffers (and the loss gradient's) for the largest blocks the batch
  /// sources hold (training and, with --eval-fanouts, evaluation), and notes their growths:
  /// called again when a batch grew a source's buffers (past the measured envelope).
  void reserve_model();
  /// Whether a batch source grew since reserve_model.
  bool sources_grew() const { return sampled_growths() != m_reserved_growths; }
  std::int64_t sampled_growths() const {
    const auto* sampled = dynamic_cast<const SampledBatches*>(m_batches.get());
    return (sampled ? sampled->growths() : 0) + (m_eval_batches ? m_eval_batches->growths() : 0);
  }
  /// Original ids of the owned nodes on res's device (dropout keys), empty in one process.
  kernels::Span<const NodeId> dropout_keys() const { return m_targets->dropout_keys.span(); }

  const kernels::Resources& m_res;
  Shard& m_shard;
  TrainConfig m_config;
  nn::Network<float>& m_model;
  std::vector<nn::Parameter<float>*> m_params;
  std::unique_ptr<Comm> m_nccl;  // GPU ranks: gradients and halo rows device to device
  Comm* m_data_comm = nullptr;
  std::unique_ptr<HaloExchange> m_graph;
  std::unique_ptr<FeatureStore> m_features;
  std::unique_ptr<BatchSource> m_batches;
  std::unique_ptr<Targets> m_targets;
  /// Mini-batch runs of one process on the CPU evaluate layer by layer (built at the first
  /// evaluation); m_graph is then null.
  bool m_layerwise_eval = false;
  /// A graph that is a file mapping (a store opened mapped): the pages the sampler touches are
  /// dropped from the process every 50 ms (they stay in the page cache).
  std::unique_ptr<datasets::MappedPageTrimmer> m_trim;
  std::unique_ptr<LayerwiseInference> m_layerwise;
  /// --eval-fanouts: the training, validation and test nodes in sampled batches, and the split
  /// of every owned node (0 none, 1 train, 2 val, 3 test); the bytes their rows read from a
  /// file, summed over the evaluations.
  std::unique_ptr<SampledBatches> m_eval_batches;
  std::vector<std::int8_t> m_split_of;
  std::int64_t m_eval_read_bytes = 0;
  std::vector<float> m_eval_logits;  // a device's batch logits on the host (evaluate_sampled)
  nn::Adam<float> m_optimizer;
  Tensor<float> m_dlogits;
  Tensor<float> m_grad_flat;  // the gradient all-reduce's flat buffer
  std::vector<float> m_grad_host;
  double m_preprocess_s = 0;
  std::int64_t m_reserved_growths = 0;  // sampled_growths() at the last reserve_model
};

NodeClassification::NodeClassification(const kernels::Resources& res, Shard& shard,
                                       const TrainConfig& config, nn::Network<float>& model)
    : m_res(res),
      m_shard(shard),
      m_config(config),
      m_model(model),
      m_params(model.parameters()),
      m_optimizer(res, m_params, detail::adam_config(config.lr, config.weight_decay)) {
  Comm& comm = *shard.comm;
  partition::Part& part = shard.part;
  check_config(m_config);
  const int layers = model.shape().num_layers;
  HALO_EXPECTS(!config.mini_batch || std::ssize(config.mini_batch->fanouts) == layers,
               "train: one fan-out per layer expected (" + std::to_string(layers) + " layers, " +
                   std::to_string(config.mini_batch ? config.mini_batch->fanouts.size() : 0) +
                   " fan-outs)");
  HALO_EXPECTS(m_config.model.in_features == shard.num_features &&
                   m_config.model.num_classes == part.num_classes,
               "train: the model was not built for this dataset");
  for (const auto* p : m_params)
    HALO_EXPECTS(p->value.device() == res.device(),
                 "train: the model's parameters live on another device than the Resources");
  HALO_EXPECTS(part.all_train.numel() > 0, "train: the dataset has no training nodes");
  const auto start = Clock::now();
  // GPU ranks move halo rows and gradients device to device over NCCL when the build has it.
  m_data_comm = &device_data_comm(res, comm, m_nccl);
  const nn::GraphPreparation graph = model.shape().graph;  // what the network declares
  // A mini-batch run of one process on the CPU evaluates layer by layer on the sampler's
  // graph: it never builds the full graph's prepared adjacency (for SAGE, S and its transpose).
  // An evaluation on sampled neighbourhoods needs neither.
  const bool sampled_eval = config.mini_batch && !config.mini_batch->eval_fanouts.empty();
  HALO_EXPECTS(
      !sampled_eval || std::ssize(config.mini_batch->eval_fanouts) == layers,
      "train: one evaluation fan-out per layer expected (" + std::to_string(layers) + " layers, " +
          std::to_string(sampled_eval ? config.mini_batch->eval_fanouts.size() : 0) + " given)");
  HALO_EXPECTS(!part.features_by_original || sampled_eval,
               "train: a part whose feature rows stay in the store's file trains mini-batch "
               "with a sampled evaluation (eval_fanouts): a full-graph pass reads every row");
  m_layerwise_eval = config.mini_batch && !sampled_eval && part.ids.identity() &&
                     res.device() == kernels::Device::Cpu &&
                     dynamic_cast<nn::Model<float>*>(&model) != nullptr;
  if (!m_layerwise_eval && !sampled_eval)
    m_graph = std::make_unique<HaloExchange>(res, part, graph, config.overlap, *m_data_comm);
  if (auto ranges = datasets::mapped_ranges(part.graph); !ranges.empty())
    m_trim = std::make_unique<datasets::MappedPageTrimmer>(std::move(ranges),
                                                           std::chrono::milliseconds(50));
  m_features = std::make_unique<FeatureStore>(res, part, config.normalize_features);
  // Rows read from a store's file: the highest-degree ones kept in a quarter of the budget.
  if (m_features->from_file())
    m_features->cache_file_rows(static_cast<std::int64_t>(config.memory_budget / 4));
  // One process keys dropout by row (original = local ids); a part by its original ids.
  Tensor<NodeId> keys;
  if (!part.ids.identity())
    keys = Tensor<NodeId>::from_host(
        res, std::vector<NodeId>(part.ids.original_ids().data,
                                 part.ids.original_ids().data + part.num_owned()));
  const bool cpu = res.device() == kernels::Device::Cpu;
  m_targets = std::make_unique<Targets>(
      Targets{cpu ? Tensor<std::int32_t>() : part.labels.copy_to(res, res.device()),
              {},
              part.train_idx.copy_to(res, res.device()),
              part.val_idx.copy_to(res, res.device()),
              part.test_idx.copy_to(res, res.device()),
              part.all_train.numel(),
              {},
              std::move(keys)});
  m_targets->labels =
      cpu ? std::as_const(part.labels).span() : std::as_const(m_targets->device_labels).span();
  if (config.mini_batch) {
    m_batches = std::make_unique<SampledBatches>(res, part, comm, *m_features, m_targets->labels,
                                                 *config.mini_batch, graph, config.seed,
                                                 model.input_dropout());
    if (res.device() != kernels::Device::Cpu) m_targets->loss_total = Tensor<float>(res, 1);
    // Every buffer of a step sized for the envelope (reserve_model): no batch allocates.
    if (sampled_eval) {
      // The training, validation and test nodes of every rank in ascending original id (as
      // partition ids): the same batches whatever the ranks, so the same draws as one process.
      std::vector<NodeId> mine;  // (original id, partition id) pairs
      m_split_of.assign(static_cast<std::size_t>(part.num_owned()), 0);
      const NodeId* original = part.ids.original_ids().data;
      std::int8_t code = 1;
      for (const Tensor<NodeId>* idx : {&part.train_idx, &part.val_idx, &part.test_idx}) {
        const std::vector<NodeId> rows = idx->to_vector(res);
        for (const NodeId r : rows) {
          m_split_of[static_cast<std::size_t>(r)] = code;
          mine.insert(mine.end(), {original[r], part.ids.first_owned() + r});
        }
        ++code;
      }
      std::vector<std::size_t> counts;
      const std::vector<std::byte> all =
          comm.allgatherv(mine.data(), mine.size() * sizeof(NodeId), counts);
      std::vector<NodeId> flat(all.size() / sizeof(NodeId));
      std::memcpy(flat.data(), all.data(), all.size());
      std::vector<std::pair<NodeId, NodeId>> pairs(flat.size() / 2);
      for (std::size_t i = 0; i < pairs.size(); ++i) pairs[i] = {flat[2 * i], flat[2 * i + 1]};
      std::sort(pairs.begin(), pairs.end());
      std::vector<NodeId> seeds(pairs.size());
      for (std::size_t i = 0; i < pairs.size(); ++i) seeds[i] = pairs[i].second;
      // (With max_batches, the evaluation too scores a sample: its first batches.)
      MiniBatchConfig eval = *config.mini_batch;
      eval.fanouts = eval.eval_fanouts;
      m_eval_batches = std::make_unique<SampledBatches>(res, part, comm, *m_features,
                                                        m_targets->labels, eval, graph, config.seed,
                                                        /*input_dropout=*/0.f, std::move(seeds));
    }
    reserve_model();
  } else {
    m_batches = std::make_unique<FullGraphBatches>(
        m_graph->adjacency(dropout_keys()), m_features->owned(), m_targets->labels,
        m_targets->train_idx.span(), m_targets->num_train);
  }
  m_preprocess_s = seconds_since(start);
}

void NodeClassification::reserve_model() {
  auto bounds = static_cast<const SampledBatches&>(*m_batches).layer_bounds();
  if (m_eval_batches) {
    const auto eval_bounds = m_eval_batches->layer_bounds();
    for (std::size_t l = 0; l < bounds.size(); ++l)
      bounds[l] = {std::max(bounds[l].first, eval_bounds[l].first),
                   std::max(bounds[l].second, eval_bounds[l].second)};
  }
  m_model.reserve(m_res, bounds, m_features->max_input_entries());
  kernels::reserve(m_res, m_dlogits, bounds.back().second * m_config.model.num_classes);
  m_reserved_growths = sampled_growths();
}

CheckpointIdentity NodeClassification::identity() const {
  const nn::ModelConfig& m = m_config.model;
  // The parameters and optimizer state are every rank's, the step and the batch order global:
  // a checkpoint resumes on any number of ranks of the same partition.
  return config_identity(m_config, m_shard.identity, /*ranks=*/0,
                         {{"model.kind", nn::to_string(m.kind)},
                          {"model.layers", std::to_string(m.num_layers)},
                          {"model.hidden", std::to_string(m.hidden)},
                          {"model.in_features", std::to_string(m.in_features)},
                          {"model.num_classes", std::to_string(m.num_classes)},
                          {"model.dropout", exact_number(m.dropout)},
                          {"model.heads", std::to_string(m.heads)},
                          {"model.out_heads", std::to_string(m.out_heads)}});
}

bool NodeClassification::train_epoch(std::uint64_t epoch, EpochStats& s,
                                     const StepCallback& on_step, Partial& at,
                                     const std::function<bool()>& stop) {
  Comm& comm = *m_shard.comm;
  // A device's mini-batches sum the rank's losses where they are computed: no step waits to
  // read its loss; the sum is read and added over the ranks once, when the epoch ends or stops.
  const bool device_sum = m_targets->loss_total.numel() > 0;
  if (m_graph) m_graph->reset_stats();
  const auto start = Clock::now();
  m_batches->begin_epoch(epoch, at.step);
  double loss_sum = at.loss_sum, allreduce_s = at.allreduce_s;
  std::int64_t loss_rows = at.loss_rows;
  if (device_sum) {
    const float zero = 0;
    kernels::copy_bytes(m_res, m_targets->loss_total.data(), m_res.device(), &zero,
                        kernels::Device::Cpu, sizeof zero);
  }
  const std::int64_t batches = m_batches->batches_per_epoch();
  detail::PhaseClock clock(m_res, m_config.profile, s.profile);
  const auto lap = [&](double EpochProfile::*field) { clock.lap(field); };
  bool stopped = false;
  for (std::int64_t b = at.step; b < batches && !stopped; ++b) {
    clock.mark();
    const Batch& batch = m_batches->next();
    if (sources_grew()) reserve_model();
    lap(&EpochProfile::wait_s);
    const nn::Context ctx{&m_res, /*training=*/true,  m_config.seed, batch.dropout_key,
                          0,      batch.input_dropped};
    const Tensor<float>& logits = m_model.forward(ctx, batch.graphs, *batch.x);
    lap(&EpochProfile::forward_s);
    kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
    double loss = 0;  // this rank's share of the step's mean loss
    if (device_sum)
      kernels::log_softmax_nll_accumulate(m_res, logits.view(), batch.labels, batch.rows,
                                          m_targets->loss_total.span());
    else
      loss =
          kernels::log_softmax_nll(m_res, logits.view(), batch.labels, batch.rows, batch.loss_rows);
    kernels::log_softmax_nll_backward(m_res, logits.view(), batch.labels, batch.rows,
                                      m_dlogits.view(), batch.loss_rows);
    lap(&EpochProfile::loss_s);
    m_model.backward(ctx, batch.graphs, m_dlogits);
    lap(&EpochProfile::backward_s);
    loss = allreduce_gradients(m_res, *m_data_comm, m_params, loss, m_grad_flat, m_grad_host,
                               allreduce_s);
    if (!device_sum) expect_finite(loss, epoch, b);
    clock.mark();
    m_optimizer.step(m_res);
    lap(&EpochProfile::optimizer_s);
    loss_sum += loss * static_cast<double>(batch.loss_rows);
    loss_rows += batch.loss_rows;
    if (on_step) on_step(b);
    // After the epoch's last step run() asks, after the evaluation.
    if (b + 1 < batches && stop()) {
      stopped = true;
      at.step = b + 1;
    }
  }
  m_batches->end_epoch(s);
  if (device_sum) {  // one read an epoch (or stop) and one sum over the ranks
    double mine = m_targets->loss_total.to_vector(m_res)[0];
    comm.allreduce(kernels::Span<double>(&mine, 1), ReduceOp::Sum);
    loss_sum += mine;
  }
  if (stopped) at = {epoch, at.step, loss_sum, loss_rows, allreduce_s};
  m_res.synchronize();
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss_sum / static_cast<double>(loss_rows);
  if (device_sum) expect_finite(s.train_loss, epoch, batches - 1);
  const ExchangeStats x = m_graph ? m_graph->stats() : ExchangeStats{};
  s.exchange_bytes = x.bytes_sent;
  s.exchange_time_s = x.exchange_s;
  s.exchange_exposed_s = x.exposed_s;
  s.exchange_window_s = x.overlap_window_s;
  s.allreduce_time_s = allreduce_s;
  detail::reduce_epoch_counters(comm, s);
  return !stopped;
}

const Tensor<float>& NodeClassification::evaluation_logits() {
  // A mini-batch run whose buffers follow its batches evaluates layer by layer: the full-graph
  // pass would hold every layer's buffers for every node. One part on the CPU, a built-in model
  // (m_layerwise_eval).
  if (m_layerwise_eval) {
    auto& model = dynamic_cast<nn::Model<float>&>(m_model);
    if (!m_layerwise) {
      // The representations stay in memory when the data and they fit under the budget and
      // they are not more than half the data (LayerwiseInference::keeps_in_memory).
      const partition::Part& part = m_shard.part;
      const std::size_t data = feature_bytes(m_features->owned()) + part.graph.indptr.bytes() +
                               part.graph.indices.bytes();
      const std::size_t reps =
          LayerwiseInference::representation_bytes(model.config(), part.num_owned());
      std::filesystem::path spill;
      if (!LayerwiseInference::keeps_in_memory(data, reps, m_config.memory_budget))
        spill = m_config.spill_dir.empty() ? std::filesystem::temp_directory_path()
                                           : std::filesystem::path(m_config.spill_dir);
      m_layerwise = std::make_unique<LayerwiseInference>(m_res, part, *m_features,
                                                         model.shape().graph, spill);
    }
    return m_layerwise->run(model);
  }
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  const nn::Adjacency<float> graph = m_graph->adjacency(dropout_keys());
  return m_model.forward(ctx, std::span<const nn::Adjacency<float>>(&graph, 1),
                         m_features->owned());
}

std::vector<double> NodeClassification::evaluate_sampled() {
  SampledBatches& batches = *m_eval_batches;
  const partition::Part& part = m_shard.part;
  const std::int32_t* labels = part.labels.data();  // host
  const std::int64_t cols = m_config.model.num_classes;
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  std::vector<double> v(7, 0.0);
  // The same draw at every evaluation (epoch 0 of the seeds' order).
  batches.begin_epoch(0, 0);
  for (std::int64_t b = 0; b < batches.batches_per_epoch(); ++b) {
    const Batch& batch = batches.next();
    if (sources_grew()) reserve_model();
    const kernels::Span<const NodeId> mine = batches.seeds_of(b);
    const Tensor<float>& out = m_model.forward(ctx, batch.graphs, *batch.x);
    // Read in place on the CPU; a device's logits go through one host buffer (grown to the
    // largest batch, not allocated per batch).
    const float* logits = out.data();
    if (out.device() != kernels::Device::Cpu) {
      if (m_eval_logits.size() < static_cast<std::size_t>(out.numel()))
        m_eval_logits.resize(static_cast<std::size_t>(out.numel()));
      kernels::copy_bytes(m_res, m_eval_logits.data(), kernels::Device::Cpu, out.data(),
                          out.device(), out.bytes());
      logits = m_eval_logits.data();
    }
    for (std::int64_t i = 0; i < mine.size; ++i) {
      const auto local = static_cast<std::size_t>(mine.data[i] - part.ids.first_owned());
      const float* row = logits + i * cols;
      const std::int32_t label = labels[local];
      // The first of equal maxima, as kernels::count_correct.
      const std::int64_t best = std::max_element(row, row + cols) - row;
      const int split = m_split_of[local];
      v[static_cast<std::size_t>(split - 1)] += best == label ? 1.0 : 0.0;
      v[static_cast<std::size_t>(split + 3)] += 1;
      if (split == 2) {  // the validation loss: log-sum-exp minus the label's logit
        double sum = 0;
        for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(double{row[c]} - row[best]);
        v[3] += double{row[best]} + std::log(sum) - row[label];
      }
    }
  }
  EpochStats read;
  batches.end_epoch(read);
  m_eval_read_bytes = read.feature_bytes + read.disk_bytes;
  return v;
}

Metrics NodeClassification::evaluate() {
  const Targets& t = *m_targets;
  // Sums over the ranks: correct counts, the validation loss's sum and the split sizes.
  std::vector<double> v;
  if (m_eval_batches) {
    v = evaluate_sampled();
  } else {
    const Tensor<float>& logits = evaluation_logits();
    auto correct = [&](const Tensor<NodeId>& rows) {
      return rows.numel() == 0 ? 0.0
                               : static_cast<double>(kernels::count_correct(m_res, logits.view(),
                                                                            t.labels, rows.span()));
    };
    v = {correct(t.train_idx),
         correct(t.val_idx),
         correct(t.test_idx),
         t.val_idx.numel() == 0 ? 0.0
                                : static_cast<double>(kernels::log_softmax_nll(
                                      m_res, logits.view(), t.labels, t.val_idx.span(), 1)),
         static_cast<double>(t.train_idx.numel()),
         static_cast<double>(t.val_idx.numel()),
         static_cast<double>(t.test_idx.numel())};
  }
  m_shard.comm->allreduce(kernels::Span<double>(v.data(), 7), ReduceOp::Sum);
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {{"train_accuracy", ratio(v[0], v[4])},
          {"val_loss", v[5] > 0 ? v[3] / v[5] : nan},
          {"val_accuracy", v[5] > 0 ? v[1] / v[5] : nan},
          {"test_accuracy", ratio(v[2], v[6])}};
}

/// `config` with the model fields the network decides (a custom network has no ModelConfig;
/// its kind stays the config's: the graph is the one its shape declares).
TrainConfig with_shape(TrainConfig config, const nn::NetworkShape& shape) {
  config.model.num_layers = shape.num_layers;
  config.model.in_features = shape.in_features;
  config.model.num_classes = shape.num_classes;
  return config;
}

}  // namespace

std::unique_ptr<Task> node_classification(const kernels::Resources& res, Shard& shard,
                                          const TrainConfig& config, nn::Network<float>& model) {
  return std::make_unique<NodeClassification>(res, shard, with_shape(config, model.shape()), model);
}

nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config) {
  nn::ModelConfig mc = config.model;
  mc.in_features = in_features;
  mc.num_classes = num_classes;
  return nn::Model<float>(res, mc, config.seed);
}

TrainRun train(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
               const EpochCallback& on_epoch, const StepCallback& on_step) {
  check_config(config);
  TrainRun run{make_model(res, shard.num_features, shard.part.num_classes, config), {}};
  Trainer trainer(res, node_classification(res, shard, config, run.model), config.epochs,
                  config.checkpoint);
  run.result = trainer.run(on_epoch, on_step);
  return run;
}

nn::ModelFileInfo model_file_info(const TrainConfig& config, const TrainResult& result,
                                  const std::string& dataset,
                                  const std::string& structural_features) {
  nn::ModelFileInfo info;
  info.config = config.model;
  info.dataset = dataset;
  info.normalize_features = config.normalize_features;
  info.structural_features = structural_features;
  info.training = training_record(config, result);
  return info;
}

}  // namespace halo::runtime
