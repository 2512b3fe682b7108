#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/runtime/batches.hpp>
#include <halo/runtime/checkpoint.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>
#include <halo/runtime/detail/task.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/feature_store.hpp>
#include <halo/runtime/halo_exchange.hpp>
#include <halo/runtime/remote_neighbors.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/hetero_sampler.hpp>

namespace halo::runtime {

namespace {
/// The test hook of the stall watchdog's healthy case (docs/distributed.md):
/// HALO_TEST_SLOW_EPOCH=RANK:EPOCH:SECONDS makes rank RANK sleep SECONDS after training epoch
/// EPOCH, a long but healthy step the others wait for. Read here only.
void slow_epoch_hook(int rank, int epoch) {
  const char* v = std::getenv("HALO_TEST_SLOW_EPOCH");
  int r = -1, e = -1;
  double seconds = 0;
  if (v != nullptr && std::sscanf(v, "%d:%d:%lf", &r, &e, &seconds) == 3 && r == rank && e == epoch)
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}
}  // namespace

using kernels::NodeId;
using kernels::Tensor;

namespace {

using detail::Clock;
using detail::median;
using detail::seconds_since;

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

std::string to_string(CachePolicy p) { return p == CachePolicy::Degree ? "degree" : "access"; }

CachePolicy parse_cache_policy(const std::string& s) {
  if (s == "degree") return CachePolicy::Degree;
  if (s == "access") return CachePolicy::Access;
  HALO_FAIL("cache policy '" + s + "': expected degree or access");
}

void check_config(const TrainConfig& c, int ranks) {
  HALO_EXPECTS(c.epochs >= 1, "train: epochs must be >= 1, got " + std::to_string(c.epochs));
  HALO_EXPECTS(finite_positive(c.lr), "train: the learning rate must be a finite number > 0");
  HALO_EXPECTS(std::isfinite(c.weight_decay) && c.weight_decay >= 0,
               "train: the weight decay must be a finite number >= 0");
  HALO_EXPECTS(std::isfinite(c.model.dropout) && c.model.dropout >= 0 && c.model.dropout < 1,
               "train: dropout must be in [0, 1)");
  HALO_EXPECTS(c.model.num_layers >= 1 && c.model.hidden >= 1,
               "train: layers and hidden width must be >= 1");
  HALO_EXPECTS(c.checkpoint.every >= 0 && c.checkpoint.keep >= 1,
               "train: checkpoint every must be >= 0 and keep >= 1");
  if (!c.mini_batch) return;
  const MiniBatchConfig& mb = *c.mini_batch;
  HALO_EXPECTS(mb.batch_size >= 1, "train: the batch size must be >= 1");
  // (The heterogeneous task checks relation_fanouts against its layers.)
  HALO_EXPECTS(
      !mb.relation_fanouts.empty() || static_cast<int>(mb.fanouts.size()) == c.model.num_layers,
      "train: one fan-out per layer expected (" + std::to_string(c.model.num_layers) + " layers, " +
          std::to_string(mb.fanouts.size()) + " fan-outs)");
  for (const int k : mb.fanouts) HALO_EXPECTS(k >= -1, "train: fan-outs must be -1 or >= 0");
  HALO_EXPECTS(mb.max_batches >= 0, "train: max_batches must be >= 0 (0: every batch)");
  HALO_EXPECTS(mb.prefetch == kAutoPrefetch || (mb.prefetch >= 0 && mb.prefetch <= 16),
               "train: prefetch must be in [0, 16] or auto");
  HALO_EXPECTS(std::isfinite(mb.cache_mb) && mb.cache_mb >= 0,
               "train: the cache size must be a finite number >= 0");
  HALO_EXPECTS(mb.cache_mb == 0 || ranks > 1,
               "train: the feature cache holds remote rows: it needs a partition (several ranks)");
  HALO_EXPECTS(c.overlap, "train: overlap applies to full-graph training");
}

kernels::Resources host_resources(const kernels::Resources& res) {
  return kernels::Resources(kernels::Device::Cpu, res.cpu_exec().num_threads);
}

kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize) {
  const kernels::Resources host = host_resources(res);
  auto f = std::visit([&](const auto& m) -> kernels::FeatureMatrix<float> { return m.clone(host); },
                      features);
  if (normalize && std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(f))
    datasets::row_normalize(host, f);
  if (res.device() == kernels::Device::Cpu) return f;
  return std::visit(
      [&](const auto& m) -> kernels::FeatureMatrix<float> { return m.copy_to(res, res.device()); },
      f);
}

nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config) {
  nn::ModelConfig mc = config.model;
  mc.in_features = in_features;
  mc.num_classes = num_classes;
  return nn::Model<float>(res, mc, config.seed);
}

// ---- shards ------------------------------------------------------------------------------------

Shard local_shard(const kernels::Resources& res, datasets::Dataset&& ds) {
  Shard s;
  s.dataset = ds.name;
  if (!ds.graph.values.empty())
    HALO_LOG_WARN("train: '" + ds.name + "' has edge weights; the models train on its structure");
  s.num_features = ds.num_features();
  s.num_edges = ds.graph.num_edges();
  s.part = partition::make_local_part(host_resources(res), std::move(ds));
  // The dataset's identity for checkpoints: its name, structure, labels, splits and width.
  const partition::Part& p = s.part;
  std::uint64_t h = partition::fnv1a64(&s.num_features, sizeof s.num_features);
  const auto mix = [&h](const auto& t) { h = partition::fnv1a64(t.data(), t.bytes(), h); };
  mix(p.graph.indptr), mix(p.graph.indices), mix(p.labels);
  mix(p.train_idx), mix(p.val_idx), mix(p.test_idx);
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(h));
  s.identity = "dataset " + s.dataset + " fnv1a64 " + hex;
  s.own_comm = std::make_unique<SelfComm>();
  s.comm = s.own_comm.get();
  return s;
}

namespace {
/// The checks open_shard and open_hetero_shard share: one part per rank, the same meta.json.
void check_partition_ranks(const partition::PartitionMeta& meta, Comm& comm,
                           const std::filesystem::path& dir) {
  if (meta.book.num_parts() != comm.size())
    throw IoError((dir / "meta.json").string() + ": the partition has " +
                  std::to_string(meta.book.num_parts()) + " parts but " +
                  std::to_string(comm.size()) + " ranks run; start one rank per part (mpiexec -n " +
                  std::to_string(meta.book.num_parts()) + ")");
  // The one collective of the start-up: every rank read the same meta.json.
  const auto mine = static_cast<std::int64_t>(meta.checksum >> 1);
  std::vector<std::int64_t> v = {mine, -mine};
  comm.allreduce(kernels::Span<std::int64_t>(v.data(), 2), ReduceOp::Max);
  if (v[0] != mine || -v[1] != mine)
    throw IoError((dir / "meta.json").string() +
                  ": the ranks opened different partitions (meta.json differs between ranks)");
}
}  // namespace

Shard open_shard(const kernels::Resources& res, Comm& comm, const std::filesystem::path& dir) {
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  if (meta.hetero)
    throw IoError((dir / "meta.json").string() +
                  ": a heterogeneous partition (train it with --model rgcn or hgt)");
  check_partition_ranks(meta, comm, dir);
  Shard s;
  s.dataset = meta.dataset;
  s.part = partition::read_part(host_resources(res), dir, comm.rank(), &meta);
  s.num_features = meta.num_features;
  s.num_edges = meta.num_edges;
  s.comm = &comm;
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(meta.checksum));
  s.identity = std::string("partition meta.json fnv1a64 ") + hex;
  return s;
}

// ---- the trainer -------------------------------------------------------------------------------

using detail::NamedTensor;

namespace {

/// The task's data on res's device: node classification's labels and splits, and the global
/// sizes of the splits.
struct Targets {
  Tensor<std::int32_t> labels;
  Tensor<NodeId> train_idx, val_idx, test_idx;
  std::int64_t num_train = 0;
  Tensor<float> loss_total;     // a device epoch's summed loss (one process on a GPU)
  Tensor<NodeId> dropout_keys;  // the owned nodes' original ids (empty in one process)
};

/// `config` with the model fields the network decides (a custom network has no ModelConfig;
/// its kind stays the config's: the graph is the one its shape declares).
TrainConfig with_shape(TrainConfig config, const nn::NetworkShape& shape) {
  config.model.num_layers = shape.num_layers;
  config.model.in_features = shape.in_features;
  config.model.num_classes = shape.num_classes;
  return config;
}

/// Node classification on a Shard: mean NLL over the batch's seeds, accuracy per split.
class NodeClassification final : public Trainer::Task {
 public:
  NodeClassification(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
                     nn::Network<float>& model);
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const Trainer::StepCallback& on_step,
                   Trainer::Partial& at, const std::function<bool()>& stop) override;
  Trainer::Evaluation evaluate() override;
  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> v;
    for (auto* p : m_params) v.push_back({p->name, &p->value});
    return v;
  }
  std::vector<NamedTensor> optimizer_state() override {
    std::vector<NamedTensor> v;
    for (std::size_t i = 0; i < m_params.size(); ++i) {
      v.push_back({"adam.m/" + m_params[i]->name, &m_optimizer.first_moment(i)});
      v.push_back({"adam.v/" + m_params[i]->name, &m_optimizer.second_moment(i)});
    }
    return v;
  }
  std::int64_t optimizer_steps() const override { return m_optimizer.steps(); }
  void set_optimizer_steps(std::int64_t steps) override { m_optimizer.set_steps(steps); }
  std::int64_t batches_per_epoch() const override { return m_batches->batches_per_epoch(); }
  void finish(TrainResult& result) override {
    if (const auto* sampled = dynamic_cast<const SampledBatches*>(m_batches.get())) {
      result.prefetch = sampled->prefetch();
      result.sampler_envelope_bytes = sampled->envelope_bytes();
      result.sampler_peak_bytes = sampled->peak_bytes();
    }
  }

 private:
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
  nn::Adam<float> m_optimizer;
  Tensor<float> m_dlogits;
  Tensor<float> m_grad_flat;  // the gradient all-reduce's flat buffer
  std::vector<float> m_grad_host;
};

NodeClassification::NodeClassification(const kernels::Resources& res, Shard& shard,
                                       const TrainConfig& config, nn::Network<float>& model)
    : m_res(res),
      m_shard(shard),
      m_config(config),
      m_model(model),
      m_params(model.parameters()),
      m_optimizer(res, m_params, [&] {
        kernels::AdamConfig c;
        c.lr = config.lr;
        c.weight_decay = config.weight_decay;
        return c;
      }()) {
  Comm& comm = *shard.comm;
  partition::Part& part = shard.part;
  check_config(m_config, comm.size());
  HALO_EXPECTS(m_config.model.in_features == shard.num_features &&
                   m_config.model.num_classes == part.num_classes,
               "train: the model was not built for this dataset");
  for (const auto* p : m_params)
    HALO_EXPECTS(p->value.device() == res.device(),
                 "train: the model's parameters live on another device than the Resources");
  HALO_EXPECTS(part.all_train.numel() > 0, "train: the dataset has no training nodes");
  const auto start = Clock::now();
  // GPU ranks move halo rows and gradients device to device over NCCL when the build has it.
  m_data_comm = &comm;
  if (res.device() == kernels::Device::Cuda && comm.size() > 1) {
    if (nccl_available()) {
      m_nccl = make_nccl_comm(comm, res);
      m_data_comm = m_nccl.get();
    } else {
      HALO_LOG_WARN("train: built without NCCL: GPU ranks exchange through host memory over MPI");
    }
  }
  const nn::GraphPreparation graph = model.shape().graph;  // what the network declares
  m_graph = std::make_unique<HaloExchange>(res, part, graph, config.overlap, *m_data_comm);
  m_features = std::make_unique<FeatureStore>(res, part, config.normalize_features);
  // One process keys dropout by row (original = local ids); a part by its original ids.
  Tensor<NodeId> keys;
  if (!part.ids.identity())
    keys = Tensor<NodeId>::from_host(
        res, std::vector<NodeId>(part.ids.original_ids().data,
                                 part.ids.original_ids().data + part.num_owned()));
  m_targets = std::make_unique<Targets>(Targets{part.labels.copy_to(res, res.device()),
                                                part.train_idx.copy_to(res, res.device()),
                                                part.val_idx.copy_to(res, res.device()),
                                                part.test_idx.copy_to(res, res.device()),
                                                part.all_train.numel(),
                                                {},
                                                std::move(keys)});
  if (config.mini_batch) {
    m_batches = std::make_unique<SampledBatches>(res, part, comm, *m_features,
                                                 m_targets->labels.span(), *config.mini_batch,
                                                 graph, config.seed, model.input_dropout());
    if (res.device() != kernels::Device::Cpu && comm.size() == 1)
      m_targets->loss_total = Tensor<float>(res, 1);
    // Every buffer of a step sized for the envelope: no batch allocates.
    const auto bounds = static_cast<const SampledBatches&>(*m_batches).layer_bounds();
    model.reserve(res, bounds, m_features->max_input_entries());
    kernels::reserve(res, m_dlogits, bounds.back().second * m_config.model.num_classes);
  } else {
    m_batches = std::make_unique<FullGraphBatches>(
        m_graph->adjacency(dropout_keys()), m_features->owned(), m_targets->labels.span(),
        m_targets->train_idx.span(), m_targets->num_train);
  }
  preprocess_time_s = seconds_since(start);
}

/// Sums every parameter's gradient and `loss` over the ranks of `comm` in one all-reduce
/// through `flat` (device) / `host` (host-memory comm with device gradients), allocated once.
double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           Tensor<float>& flat, std::vector<float>& host) {
  const kernels::Device dev = res.device();
  std::int64_t n = 1;
  for (const auto* p : params) n += p->grad.numel();
  kernels::ensure_shape(res, flat, n, 1);  // allocates on the first call only
  float* f = flat.data();
  std::int64_t at = 0;
  for (const auto* p : params) {
    kernels::copy_bytes_async(res, f + at, dev, p->grad.data(), dev, p->grad.bytes());
    at += p->grad.numel();
  }
  float total = static_cast<float>(loss);
  kernels::copy_bytes(res, f + at, dev, &total, kernels::Device::Cpu, sizeof total);
  if (comm.memory_device() == dev) {
    comm.allreduce(kernels::Span<float>(f, n), ReduceOp::Sum);  // in stream order on a device
  } else {
    host.resize(static_cast<std::size_t>(n));
    kernels::copy_bytes(res, host.data(), kernels::Device::Cpu, f, dev, flat.bytes());
    comm.allreduce(kernels::Span<float>(host.data(), n), ReduceOp::Sum);
    kernels::copy_bytes(res, f, dev, host.data(), kernels::Device::Cpu, flat.bytes());
  }
  at = 0;
  for (auto* p : params) {
    kernels::copy_bytes_async(res, p->grad.data(), dev, f + at, dev, p->grad.bytes());
    at += p->grad.numel();
  }
  kernels::copy_bytes(res, &total, kernels::Device::Cpu, f + at, dev, sizeof total);
  return total;
}

void expect_finite(double loss, std::uint64_t epoch, std::int64_t batch) {
  if (std::isfinite(loss)) return;
  throw Error("train: the loss became " + std::string(std::isnan(loss) ? "nan" : "infinite") +
              " in epoch " + std::to_string(epoch) + ", batch " + std::to_string(batch + 1) +
              ": the run diverged (try a lower --lr)");
}

bool NodeClassification::train_epoch(std::uint64_t epoch, EpochStats& s,
                                     const Trainer::StepCallback& on_step, Trainer::Partial& at,
                                     const std::function<bool()>& stop) {
  Comm& comm = *m_shard.comm;
  const bool distributed = comm.size() > 1;
  const bool device_sum = m_targets->loss_total.numel() > 0;  // one process on a GPU
  m_graph->reset_stats();
  const auto start = Clock::now();
  m_batches->begin_epoch(epoch, at.step);
  double loss_sum = at.loss_sum, allreduce_s = at.allreduce_s;
  std::int64_t loss_rows = at.loss_rows;
  if (device_sum) {
    const auto sum = static_cast<float>(loss_sum);  // a float sum: exact both ways
    kernels::copy_bytes(m_res, m_targets->loss_total.data(), m_res.device(), &sum,
                        kernels::Device::Cpu, sizeof sum);
  }
  const std::int64_t batches = m_batches->batches_per_epoch();
  // Profiling: the phase since `mark` ends at lap(field) (after the device finished it).
  const bool profile = m_config.profile;
  const kernels::ProfileScope scope(profile ? &s.profile.ops : nullptr);
  auto mark = Clock::now();
  const auto lap = [&](double EpochProfile::*field) {
    if (!profile) return;
    m_res.synchronize();
    const auto now = Clock::now();
    s.profile.*field += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  bool stopped = false;
  for (std::int64_t b = at.step; b < batches && !stopped; ++b) {
    if (profile) mark = Clock::now();
    const Batch& batch = m_batches->next();
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
    if (distributed) {
      m_res.synchronize();  // the backward pass belongs to compute, not to the all-reduce
      const auto t = Clock::now();
      loss = allreduce_gradients(m_res, *m_data_comm, m_params, loss, m_grad_flat, m_grad_host);
      allreduce_s += seconds_since(t);
    }
    if (!device_sum) expect_finite(loss, epoch, b);
    if (profile) mark = Clock::now();
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
  if (device_sum) loss_sum = m_targets->loss_total.to_vector(m_res)[0];  // one read an epoch
  if (stopped) at = {epoch, at.step, loss_sum, loss_rows, allreduce_s};
  m_res.synchronize();
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss_sum / static_cast<double>(loss_rows);
  if (device_sum) expect_finite(s.train_loss, epoch, batches - 1);
  const ExchangeStats& x = m_graph->stats();
  s.exchange_bytes = x.bytes_sent;
  s.exchange_time_s = x.exchange_s;
  s.exchange_exposed_s = x.exposed_s;
  s.exchange_window_s = x.overlap_window_s;
  s.allreduce_time_s = allreduce_s;
  if (!distributed) return !stopped;
  // Bytes summed over the ranks, times averaged.
  std::vector<double> v = {static_cast<double>(s.exchange_bytes),
                           s.exchange_time_s,
                           s.exchange_exposed_s,
                           s.allreduce_time_s,
                           static_cast<double>(s.sampling_bytes),
                           static_cast<double>(s.feature_bytes),
                           static_cast<double>(s.remote_rows),
                           static_cast<double>(s.cache_hits),
                           s.fetch_time_s,
                           s.batch_wait_s,
                           s.exchange_window_s};
  comm.allreduce(kernels::Span<double>(v.data(), static_cast<std::int64_t>(v.size())),
                 ReduceOp::Sum);
  const double p = comm.size();
  s.exchange_bytes = static_cast<std::int64_t>(v[0]);
  s.exchange_time_s = v[1] / p;
  s.exchange_exposed_s = v[2] / p;
  s.allreduce_time_s = v[3] / p;
  s.sampling_bytes = static_cast<std::int64_t>(v[4]);
  s.feature_bytes = static_cast<std::int64_t>(v[5]);
  s.remote_rows = static_cast<std::int64_t>(v[6]);
  s.cache_hits = static_cast<std::int64_t>(v[7]);
  s.fetch_time_s = v[8] / p;
  s.batch_wait_s = v[9] / p;
  s.exchange_window_s = v[10] / p;
  return !stopped;
}

Trainer::Evaluation NodeClassification::evaluate() {
  const Targets& t = *m_targets;
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  const nn::Adjacency<float> graph = m_graph->adjacency(dropout_keys());
  const Tensor<float>& logits =
      m_model.forward(ctx, std::span<const nn::Adjacency<float>>(&graph, 1), m_features->owned());
  auto correct = [&](const Tensor<NodeId>& rows) {
    return rows.numel() == 0 ? 0.0
                             : static_cast<double>(kernels::count_correct(
                                   m_res, logits.view(), t.labels.span(), rows.span()));
  };
  // Sums over the ranks: correct counts, the validation loss's sum and the split sizes.
  std::vector<double> v = {correct(t.train_idx),
                           correct(t.val_idx),
                           correct(t.test_idx),
                           t.val_idx.numel() == 0
                               ? 0.0
                               : static_cast<double>(kernels::log_softmax_nll(
                                     m_res, logits.view(), t.labels.span(), t.val_idx.span(), 1)),
                           static_cast<double>(t.val_idx.numel()),
                           static_cast<double>(t.test_idx.numel())};
  m_shard.comm->allreduce(kernels::Span<double>(v.data(), 6), ReduceOp::Sum);
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {ratio(v[0], static_cast<double>(t.num_train)), v[4] > 0 ? v[3] / v[4] : nan,
          v[4] > 0 ? v[1] / v[4] : nan, ratio(v[2], v[5])};
}

/// Heterogeneous node classification on a HeteroShard, full graph, one process.
class HeteroNodeClassification final : public Trainer::Task {
 public:
  HeteroNodeClassification(const kernels::Resources& res, HeteroShard& shard,
                           const TrainConfig& config, nn::HeteroModel<float>& model);
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const Trainer::StepCallback& on_step,
                   Trainer::Partial& at, const std::function<bool()>& stop) override;
  Trainer::Evaluation evaluate() override;
  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> v;
    for (auto* p : m_params) v.push_back({p->name, &p->value});
    for (auto* e : m_model.embeddings()) v.push_back({e->name(), &e->table()});
    return v;
  }
  std::int64_t batches_per_epoch() const override {
    if (!m_sampler) return 1;
    const std::int64_t n = m_num_train, b = m_config.mini_batch->batch_size;
    const std::int64_t limit = m_config.mini_batch->max_batches;
    return limit > 0 ? std::min((n + b - 1) / b, limit) : (n + b - 1) / b;
  }

 private:
  /// Mini-batch: the epoch's batches on sampled typed blocks.
  bool train_minibatch(std::uint64_t epoch, EpochStats& s, const Trainer::StepCallback& on_step);
  /// The views, features and labels of one sampled batch.
  void prepare_batch(const sampler::HeteroMiniBatch& mb, nn::HeteroStageTimes& stages);
  /// Mini-batch on a partition: the owner tables, the relations' remote rows and the feature
  /// stores per type; returns the sampler's sources.
  sampler::HeteroNeighborSources enable_remote_batches();

  const kernels::Resources& m_res;
  HeteroShard& m_shard;
  TrainConfig m_config;
  nn::HeteroModel<float>& m_model;
  std::vector<nn::Parameter<float>*> m_params;
  std::vector<kernels::FeatureMatrix<float>> m_features;  // per type, on res's device
  std::vector<const kernels::FeatureMatrix<float>*> m_inputs;
  std::vector<datasets::Graph> m_adj;  // per relation, on res's device
  nn::HeteroGraphView<float> m_view;
  Tensor<std::int32_t> m_labels;
  Tensor<NodeId> m_train, m_val, m_test;
  std::vector<std::int32_t> m_labels_host;
  std::vector<NodeId> m_val_host, m_test_host;
  nn::Adam<float> m_optimizer;
  nn::SparseAdam<float> m_sparse;
  Tensor<float> m_dlogits;
  // Mini-batch (TrainConfig::mini_batch), CPU: the sampler and per-batch buffers sized once
  // from its envelope.
  std::unique_ptr<sampler::HeteroNeighborSampler> m_sampler;
  std::vector<nn::HeteroGraphView<float>> m_blocks;      // per layer
  std::vector<std::vector<Tensor<NodeId>>> m_block_ids;  // per layer, type: global ids
  std::vector<kernels::FeatureMatrix<float>> m_batch_x;  // per type: block 0's rows
  std::vector<const kernels::FeatureMatrix<float>*> m_batch_inputs;
  Tensor<std::int64_t> m_scan_sums;
  Tensor<std::int32_t> m_batch_labels;
  Tensor<NodeId> m_batch_rows;  // 0 .. batch_size - 1
  std::vector<NodeId> m_train_host, m_seeds;
  // A partition: global ids of the local rows (dropout keys), the exchange, the gradient
  // all-reduce's buffers, the training nodes of all ranks.
  std::vector<Tensor<NodeId>> m_source_ids;
  std::unique_ptr<HeteroHaloExchange> m_halo;
  Tensor<float> m_grad_flat;
  std::vector<float> m_grad_host;
  std::int64_t m_num_train = 0;
  // Mini-batch on a partition (ids: type-local global ids, as one process): per type the rank
  // owning each node of the whole graph and its row there, and the per-type partition ids
  // (m_type_book: P + 1 offsets) the feature stores use; per relation the owned destination
  // rows with global source ids (ascending, as one process stores them) and their
  // RemoteNeighbors; per type with features a FeatureStore of its owned rows and its inputs.
  std::vector<std::vector<std::int32_t>> m_owner;
  std::vector<std::vector<NodeId>> m_row;
  std::vector<std::vector<std::int64_t>> m_type_book;
  std::vector<datasets::Graph> m_owned_rows;
  std::vector<std::unique_ptr<RemoteNeighbors>> m_remote;
  std::vector<std::unique_ptr<partition::Part>> m_type_parts;
  std::vector<std::unique_ptr<FeatureStore>> m_stores;  // null: a featureless type
  std::vector<BatchInputs> m_store_inputs;
  std::vector<NodeId> m_pids;
  FetchStats m_fetch;
  std::int64_t m_syncs = 0;
};

kernels::AdamConfig adam_config(const TrainConfig& c, bool weight_decay) {
  kernels::AdamConfig a;
  a.lr = c.lr;
  a.weight_decay = weight_decay ? c.weight_decay : 0.0;
  return a;
}

HeteroNodeClassification::HeteroNodeClassification(const kernels::Resources& res,
                                                   HeteroShard& shard, const TrainConfig& config,
                                                   nn::HeteroModel<float>& model)
    : m_res(res),
      m_shard(shard),
      m_config(config),
      m_model(model),
      m_params(model.parameters()),
      m_optimizer(res, m_params, adam_config(config, true)),
      m_sparse(res, model.embeddings(), adam_config(config, false)) {
  const datasets::HeteroGraph& g = shard.graph;
  check_config(config, shard.comm->size());
  const partition::HeteroPartLayout& layout = shard.layout;
  const bool parted = layout.partitioned();
  HALO_EXPECTS(parted || shard.comm->size() == 1,
               "train: several ranks train a heterogeneous dataset from its partition "
               "(open_hetero_shard)");
  HALO_EXPECTS(!parted || model.embeddings().empty(),
               "train: a heterogeneous partition trains with --featureless zero (embeddings of "
               "featureless types are not distributed yet)");
  // Its checkpoints would also hold SparseAdam's moments and per-table step counts and the F1
  // scores of the history, which the checkpoint format does not store yet.
  HALO_EXPECTS(config.checkpoint.dir.empty(),
               "train: the heterogeneous task has no checkpoints yet (checkpoint.dir must be "
               "empty; docs/checkpoints.md)");
  const nn::HeteroSchema want = hetero_schema(g);
  const nn::HeteroSchema& have = model.schema();
  HALO_EXPECTS(have.num_nodes == want.num_nodes && have.in_features == want.in_features &&
                   have.relations == want.relations && have.target_type == want.target_type &&
                   have.num_classes == want.num_classes,
               "train: the heterogeneous model was not built for this dataset");
  HALO_EXPECTS((parted ? layout.num_train : g.train_idx.numel()) > 0,
               "train: the dataset has no training nodes");
  const auto start = Clock::now();
  const std::vector<std::int64_t> offsets = g.type_offsets();
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    const datasets::NodeType& type = g.node_types[static_cast<std::size_t>(t)];
    m_features.push_back(type.has_features()
                             ? prepare_features(res, type.features, config.normalize_features)
                             : kernels::FeatureMatrix<float>(Tensor<float>()));
    m_view.num_src.push_back(type.num_nodes);
    m_view.num_dst.push_back(type.num_nodes);
    m_view.type_offset.push_back(offsets[static_cast<std::size_t>(t)]);
  }
  m_num_train = g.train_idx.numel();
  if (parted) {
    // Owned rows are the destinations; every local row is keyed by its global id.
    std::int64_t offset = 0;
    for (std::size_t t = 0; t < layout.num_owned.size(); ++t) {
      m_view.num_dst[t] = layout.num_owned[t];
      m_view.type_offset[t] = offset;
      std::vector<NodeId> ids = layout.original[t].to_vector(res);
      for (NodeId& v : ids) v = static_cast<NodeId>(v + offset);
      m_source_ids.push_back(
          Tensor<NodeId>::from_host(res, ids, static_cast<std::int64_t>(ids.size()), 1));
      offset += layout.global_nodes[t];
    }
    for (const auto& ids : m_source_ids) m_view.source_ids.push_back(ids.span());
    m_halo = std::make_unique<HeteroHaloExchange>(res, layout, *shard.comm);
    m_view.halo = m_halo.get();
    m_num_train = layout.num_train;
  }
  for (const auto& f : m_features) m_inputs.push_back(&f);
  for (const datasets::Relation& r : g.relations) m_adj.push_back(r.adj.copy_to(res, res.device()));
  for (std::size_t r = 0; r < g.relations.size(); ++r) {
    m_view.relations.push_back(
        {g.relations[r].name, g.relations[r].src_type, g.relations[r].dst_type, m_adj[r].view()});
    // A partition stores empty rows for the halo destinations: the layer sees the owned ones.
    m_view.relations.back().adj.num_rows =
        m_view.num_dst[static_cast<std::size_t>(g.relations[r].dst_type)];
  }
  // The logits hold the owned target rows (a part's halo rows are not classified here).
  m_labels_host = g.labels.to_vector(res);
  m_labels_host.resize(
      static_cast<std::size_t>(m_view.num_dst[static_cast<std::size_t>(g.target_type)]));
  m_labels = Tensor<std::int32_t>::from_host(res, m_labels_host,
                                             static_cast<std::int64_t>(m_labels_host.size()), 1)
                 .copy_to(res, res.device());
  m_train = g.train_idx.copy_to(res, res.device());
  m_val = g.val_idx.copy_to(res, res.device());
  m_test = g.test_idx.copy_to(res, res.device());
  m_val_host = g.val_idx.to_vector(res);
  m_test_host = g.test_idx.to_vector(res);
  if (config.mini_batch) {
    const MiniBatchConfig& mbc = *config.mini_batch;
    HALO_EXPECTS(res.device() == kernels::Device::Cpu,
                 "train: heterogeneous mini-batch training runs on the CPU");
    sampler::HeteroSamplerConfig sc;
    sc.fanouts = mbc.relation_fanouts;
    if (sc.fanouts.empty())
      for (const int f : mbc.fanouts) sc.fanouts.emplace_back(g.relations.size(), f);
    HALO_EXPECTS(static_cast<int>(sc.fanouts.size()) == config.hetero.num_layers,
                 "train: " + std::to_string(sc.fanouts.size()) + " fan-outs for " +
                     std::to_string(config.hetero.num_layers) + " layers (one per layer)");
    sc.replace = mbc.replace;
    sc.seed = config.seed;
    m_sampler = parted
                    ? std::make_unique<sampler::HeteroNeighborSampler>(res, g, mbc.batch_size, sc,
                                                                       enable_remote_batches())
                    : std::make_unique<sampler::HeteroNeighborSampler>(res, g, mbc.batch_size, sc);
    const auto& env = m_sampler->envelope();
    const std::size_t nt = g.node_types.size();
    if (parted) {
      // The remote sources' buffers for the envelope; a feature store per type with features
      // over its owned rows (per-type partition ids), remote rows fetched from their owners.
      for (std::size_t r = 0; r < m_remote.size(); ++r) {
        const auto d = static_cast<std::size_t>(g.relations[r].dst_type);
        sampler::SamplerEnvelope e;
        std::vector<int> fanouts;
        for (std::size_t l = 0; l < env.size(); ++l) {
          e.layers.push_back({env[l].num_dst[d], env[l].num_edges[r], 0});
          fanouts.push_back(sc.fanouts[l][r]);
        }
        m_remote[r]->reserve(e, fanouts, sc.replace);
      }
      const kernels::Resources host = host_resources(res);
      const int me = shard.comm->rank();
      std::int64_t rows = 1;
      for (std::size_t t = 0; t < nt; ++t) {
        const datasets::NodeType& type = g.node_types[t];
        rows = std::max(rows, env[0].num_src[t]);
        m_store_inputs.emplace_back();
        m_stores.push_back(nullptr);
        if (!type.has_features()) continue;
        // The type's halo: the remote sources of the owned rows over every relation from it
        // (what the cache may hold), in partition-id order; every node's degree: its edges as
        // a source over those relations, summed over the ranks (the cache's degree policy).
        const std::int64_t owned = layout.num_owned[t];
        std::vector<std::int64_t> degree(static_cast<std::size_t>(layout.global_nodes[t]), 0);
        std::vector<NodeId> halo;  // partition ids
        for (std::size_t r = 0; r < g.relations.size(); ++r) {
          if (static_cast<std::size_t>(g.relations[r].src_type) != t) continue;
          const Tensor<NodeId>& sources = m_owned_rows[r].indices;
          for (std::int64_t e = 0; e < sources.numel(); ++e) {
            const auto u = static_cast<std::size_t>(sources.data()[e]);
            ++degree[u];
            if (m_owner[t][u] != me)
              halo.push_back(static_cast<NodeId>(
                  m_type_book[t][static_cast<std::size_t>(m_owner[t][u])] + m_row[t][u]));
          }
        }
        shard.comm->allreduce(kernels::Span<std::int64_t>(degree.data(), std::ssize(degree)),
                              ReduceOp::Sum);
        std::sort(halo.begin(), halo.end());
        halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
        const NodeId* o = layout.original[t].data();
        std::vector<NodeId> original(o, o + owned);
        std::vector<std::int64_t> degrees;
        for (std::int64_t i = 0; i < owned; ++i)
          degrees.push_back(degree[static_cast<std::size_t>(o[i])]);
        // The halo's global ids: the owner's row back to the node (the owner's owned ids).
        std::vector<NodeId> by_pid(static_cast<std::size_t>(layout.global_nodes[t]));
        for (std::size_t u = 0; u < by_pid.size(); ++u)
          by_pid[static_cast<std::size_t>(m_type_book[t][static_cast<std::size_t>(m_owner[t][u])] +
                                          m_row[t][u])] = static_cast<NodeId>(u);
        for (const NodeId pid : halo) {
          original.push_back(by_pid[static_cast<std::size_t>(pid)]);
          degrees.push_back(degree[static_cast<std::size_t>(original.back())]);
        }
        const auto local = static_cast<std::int64_t>(original.size());
        const auto num_halo = static_cast<std::int64_t>(halo.size());
        auto part = std::make_unique<partition::Part>();
        part->ids =
            partition::IdMap(partition::PartitionBook(m_type_book[t]), me,
                             Tensor<NodeId>::from_host(host, original, local, 1),
                             num_halo > 0 ? Tensor<NodeId>::from_host(host, halo, num_halo, 1)
                                          : Tensor<NodeId>(host, kernels::Device::Cpu, 0));
        part->degrees = Tensor<std::int64_t>::from_host(host, degrees, local, 1);
        part->features = std::visit(
            [&](const auto& x) -> kernels::FeatureMatrix<float> {
              using X = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<X, Tensor<float>>) {
                const std::vector<float> v(x.data(), x.data() + owned * x.cols());
                return Tensor<float>::from_host(host, v, owned, x.cols());
              } else {
                const std::int64_t* ip = x.indptr.data();
                const std::int64_t m = ip[owned];
                return kernels::CsrMatrix<std::int32_t, float>{
                    Tensor<std::int64_t>::from_host(
                        host, std::vector<std::int64_t>(ip, ip + owned + 1), owned + 1, 1),
                    Tensor<std::int32_t>::from_host(
                        host, std::vector<std::int32_t>(x.indices.data(), x.indices.data() + m), m,
                        1),
                    x.values.empty()
                        ? Tensor<float>()
                        : Tensor<float>::from_host(
                              host, std::vector<float>(x.values.data(), x.values.data() + m), m, 1),
                    x.num_cols, false};
              }
            },
            type.features);
        m_stores.back() = std::make_unique<FeatureStore>(res, *part, config.normalize_features);
        m_stores.back()->enable_batches(*shard.comm, std::max<std::int64_t>(1, env[0].num_src[t]),
                                        static_cast<std::int64_t>(mbc.cache_mb * 1024 * 1024),
                                        mbc.cache_policy);
        m_store_inputs.back() = m_stores.back()->make_inputs(res);
        m_type_parts.push_back(std::move(part));
      }
      m_pids.resize(static_cast<std::size_t>(rows));
    }
    m_blocks.assign(env.size(), {});
    m_block_ids.resize(env.size());
    for (std::size_t l = 0; l < env.size(); ++l) {
      nn::HeteroGraphView<float>& v = m_blocks[l];
      v.type_offset = m_view.type_offset;
      v.source_ids.assign(nt, {});
      for (std::size_t t = 0; t < nt; ++t)
        m_block_ids[l].push_back(Tensor<NodeId>(res, std::max<std::int64_t>(1, env[l].num_src[t])));
      for (const auto& r : m_view.relations)
        v.relations.push_back({r.name, r.src_type, r.dst_type, {}});
    }
    std::int64_t scan = 1;
    for (std::size_t t = 0; t < nt; ++t) {
      const std::int64_t rows = std::max<std::int64_t>(1, env[0].num_src[t]);
      const auto& x = m_features[t];
      if (const auto* sp = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&x)) {
        const std::int64_t entries = sampler::max_entries(*sp, rows);
        m_batch_x.emplace_back(kernels::CsrMatrix<std::int32_t, float>{
            Tensor<std::int64_t>(res, rows + 1), Tensor<std::int32_t>(res, entries),
            Tensor<float>(res, entries), sp->num_cols, false});
        scan = std::max(scan, sampler::gather_scan_sums_size(rows));
      } else if (kernels::num_cols(x) > 0) {
        m_batch_x.emplace_back(Tensor<float>(res, rows, kernels::num_cols(x)));
      } else {
        m_batch_x.emplace_back(Tensor<float>());
      }
    }
    for (std::size_t t = 0; t < nt; ++t)
      m_batch_inputs.push_back(parted && m_stores[t] ? &m_store_inputs[t].x : &m_batch_x[t]);
    if (parted) {
      // Every training node of the whole graph, by its global id: the ranks cut the same
      // batches and each keeps the seeds it owns.
      const auto tt = static_cast<std::size_t>(g.target_type);
      std::vector<NodeId> mine;
      for (std::int64_t i = 0; i < g.train_idx.numel(); ++i)
        mine.push_back(layout.original[tt].data()[g.train_idx.data()[i]]);
      std::vector<std::size_t> counts;
      const std::vector<std::byte> all =
          shard.comm->allgatherv(mine.data(), mine.size() * sizeof(NodeId), counts);
      m_train_host.resize(all.size() / sizeof(NodeId));
      std::memcpy(m_train_host.data(), all.data(), all.size());
    }
    m_scan_sums = Tensor<std::int64_t>(res, scan);
    m_batch_labels = Tensor<std::int32_t>(res, mbc.batch_size);
    m_batch_rows = Tensor<NodeId>(res, mbc.batch_size);
    for (std::int64_t i = 0; i < mbc.batch_size; ++i)
      m_batch_rows.data()[i] = static_cast<NodeId>(i);
    if (!parted) m_train_host = g.train_idx.to_vector(res);
    m_seeds.reserve(static_cast<std::size_t>(mbc.batch_size));
  }
  preprocess_time_s = seconds_since(start);
}

sampler::HeteroNeighborSources HeteroNodeClassification::enable_remote_batches() {
  const datasets::HeteroGraph& g = m_shard.graph;
  const partition::HeteroPartLayout& layout = m_shard.layout;
  Comm& comm = *m_shard.comm;
  const kernels::Resources host = host_resources(m_res);
  const int p = comm.size();
  const std::size_t nt = g.node_types.size(), nr = g.relations.size();
  sampler::HeteroNeighborSources sources{layout.global_nodes, {}};
  // Who owns every node: the owned ids of every rank, gathered once.
  for (std::size_t t = 0; t < nt; ++t) {
    std::vector<std::size_t> counts;
    const std::vector<std::byte> all =
        comm.allgatherv(layout.original[t].data(),
                        static_cast<std::size_t>(layout.num_owned[t]) * sizeof(NodeId), counts);
    std::vector<NodeId> ids(all.size() / sizeof(NodeId));
    std::memcpy(ids.data(), all.data(), all.size());
    const auto n = static_cast<std::size_t>(layout.global_nodes[t]);
    m_owner.emplace_back(n, -1);
    m_row.emplace_back(n, 0);
    std::vector<std::int64_t> book(1, 0);
    std::size_t at = 0;
    for (int k = 0; k < p; ++k) {
      const std::size_t owned = counts[static_cast<std::size_t>(k)] / sizeof(NodeId);
      for (std::size_t i = 0; i < owned; ++i) {
        m_owner[t][static_cast<std::size_t>(ids[at + i])] = k;
        m_row[t][static_cast<std::size_t>(ids[at + i])] = static_cast<NodeId>(i);
      }
      at += owned;
      book.push_back(book.back() + static_cast<std::int64_t>(owned));
    }
    m_type_book.push_back(std::move(book));
  }
  // Per relation: the owned rows with global source ids in ascending order (one process's
  // order, so the owner draws what one process draws), served to every rank.
  m_owned_rows.reserve(nr);
  for (std::size_t r = 0; r < nr; ++r) {
    const datasets::Relation& rel = g.relations[r];
    const auto d = static_cast<std::size_t>(rel.dst_type),
               s = static_cast<std::size_t>(rel.src_type);
    const std::int64_t owned = layout.num_owned[d];
    const NodeId* src = layout.original[s].data();
    std::vector<std::int64_t> indptr(static_cast<std::size_t>(owned) + 1, 0);
    std::vector<NodeId> indices;
    std::int64_t stats[2] = {0, 0};  // entries, largest row
    for (std::int64_t i = 0; i < owned; ++i) {
      const auto first = static_cast<std::ptrdiff_t>(indices.size());
      for (std::int64_t e = rel.adj.indptr.data()[i]; e < rel.adj.indptr.data()[i + 1]; ++e)
        indices.push_back(src[rel.adj.indices.data()[e]]);
      std::sort(indices.begin() + first, indices.end());
      indptr[static_cast<std::size_t>(i) + 1] = std::ssize(indices);
      stats[1] = std::max<std::int64_t>(stats[1], std::ssize(indices) - first);
    }
    stats[0] = std::ssize(indices);
    comm.allreduce(kernels::Span<std::int64_t>(stats, 1), ReduceOp::Sum);
    comm.allreduce(kernels::Span<std::int64_t>(stats + 1, 1), ReduceOp::Max);
    const auto rows = static_cast<std::int64_t>(indices.size());
    m_owned_rows.push_back(
        datasets::Graph{Tensor<std::int64_t>::from_host(host, indptr, owned + 1, 1),
                        rows > 0 ? Tensor<NodeId>::from_host(host, indices, rows, 1)
                                 : Tensor<NodeId>(host, kernels::Device::Cpu, 0),
                        {},
                        layout.global_nodes[s],
                        false});
    m_remote.push_back(std::make_unique<RemoteNeighbors>(
        sampler::LocalNeighbors(m_owned_rows.back().view(), layout.original[d].data()),
        std::span<const std::int32_t>(m_owner[d]), std::span<const NodeId>(m_row[d]),
        sampler::DegreeStats{layout.global_nodes[d], stats[0], stats[1]}, comm));
    sources.relations.push_back(m_remote.back().get());
  }
  return sources;
}

void HeteroNodeClassification::prepare_batch(const sampler::HeteroMiniBatch& mb,
                                             nn::HeteroStageTimes& stages) {
  const std::size_t nt = m_shard.graph.node_types.size();
  for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
    const sampler::HeteroBlock& b = mb.blocks[l];
    nn::HeteroGraphView<float>& v = m_blocks[l];
    v.num_src = b.num_src;
    v.num_dst = b.num_dst;
    for (std::size_t r = 0; r < v.relations.size(); ++r) v.relations[r].adj = b.adj[r];
    for (std::size_t t = 0; t < nt; ++t) {
      NodeId* ids = m_block_ids[l][t].data();
      const auto offset = static_cast<NodeId>(v.type_offset[t]);
      for (std::int64_t i = 0; i < b.num_src[t]; ++i) ids[i] = offset + b.src_ids[t][i];
      v.source_ids[t] = {ids, b.num_src[t]};
    }
    v.times = &stages;
  }
  std::int64_t syncs = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    const kernels::Span<const NodeId> ids = mb.blocks[0].src_ids[t];
    if (!m_stores.empty()) {  // a partition: every rank gathers its inputs of each type
      if (!m_stores[t]) continue;
      for (std::int64_t i = 0; i < ids.size; ++i) {
        const auto v = static_cast<std::size_t>(ids[i]);
        m_pids[static_cast<std::size_t>(i)] = static_cast<NodeId>(
            m_type_book[t][static_cast<std::size_t>(m_owner[t][v])] + m_row[t][v]);
      }
      m_stores[t]->gather(m_res, *m_shard.comm, {m_pids.data(), ids.size}, m_store_inputs[t],
                          m_fetch, m_syncs);
    } else if (kernels::num_cols(m_features[t]) > 0) {
      sampler::gather_feature_rows(m_res, m_features[t], ids, m_batch_x[t], m_scan_sums, syncs);
    }
  }
  const auto tt = static_cast<std::size_t>(m_shard.graph.target_type);
  for (std::int64_t i = 0; i < mb.seeds.size; ++i) {
    const auto v = static_cast<std::size_t>(mb.seeds[i]);
    m_batch_labels.data()[i] =
        m_labels_host[m_row.empty() ? v : static_cast<std::size_t>(m_row[tt][v])];
  }
}

bool HeteroNodeClassification::train_minibatch(std::uint64_t epoch, EpochStats& s,
                                               const Trainer::StepCallback& on_step) {
  const auto start = Clock::now();
  nn::HeteroStageTimes stages;
  // The epoch's order of the training nodes: by a key drawn per (seed, epoch, id), ties by id.
  const std::uint64_t key = kernels::rng::key(kernels::rng::key(m_config.seed, 0x4e7e), epoch);
  std::vector<std::pair<std::uint64_t, NodeId>> order;
  order.reserve(m_train_host.size());
  for (const NodeId v : m_train_host)
    order.emplace_back(kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(v)), v);
  std::sort(order.begin(), order.end());
  const std::int64_t batches = batches_per_epoch();
  const std::int64_t bs = m_config.mini_batch->batch_size;
  double loss_sum = 0, seeds = 0;
  s.sampled_edges.clear();
  m_fetch = {};
  for (std::int64_t b = 0; b < batches; ++b) {
    const auto build = Clock::now();
    m_seeds.clear();
    const std::int64_t end = std::min<std::int64_t>((b + 1) * bs, std::ssize(order));
    const auto tt = static_cast<std::size_t>(m_shard.graph.target_type);
    const int me = m_shard.comm->rank();
    for (std::int64_t i = b * bs; i < end; ++i) {
      const NodeId v = order[static_cast<std::size_t>(i)].second;
      if (m_owner.empty() || m_owner[tt][static_cast<std::size_t>(v)] == me) m_seeds.push_back(v);
    }
    const std::int64_t global = end - b * bs;  // the batch's seeds over all ranks
    const sampler::HeteroMiniBatch& mb = m_sampler->sample(
        m_res, {m_seeds.data(), std::ssize(m_seeds)}, epoch, static_cast<std::uint64_t>(b));
    prepare_batch(mb, stages);
    stages.subgraph_build_s += seconds_since(build);
    s.sampled_edges.resize(mb.sampled_edges.size(), 0);
    for (std::size_t r = 0; r < mb.sampled_edges.size(); ++r)
      s.sampled_edges[r] += mb.sampled_edges[r];
    const auto n = std::ssize(m_seeds);
    // Dropout keyed by epoch * batches + b: one batch an epoch draws the full graph's masks.
    const nn::Context ctx{
        &m_res, /*training=*/true, m_config.seed,
        epoch * static_cast<std::uint64_t>(batches) + static_cast<std::uint64_t>(b), 0};
    const std::span<const nn::HeteroGraphView<float>> graphs(m_blocks);
    const Tensor<float>& logits = m_model.forward(ctx, graphs, m_batch_inputs);
    kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
    const kernels::Span<const std::int32_t> labels{m_batch_labels.data(), n};
    const kernels::Span<const NodeId> rows{m_batch_rows.data(), n};
    // Divided by the batch's seeds over all ranks: the ranks' losses and gradients add up.
    double loss = kernels::log_softmax_nll(m_res, logits.view(), labels, rows, global);
    kernels::log_softmax_nll_backward(m_res, logits.view(), labels, rows, m_dlogits.view(), global);
    m_model.backward(ctx, graphs, m_dlogits);
    if (m_halo) {
      const auto t = Clock::now();
      loss = allreduce_gradients(m_res, *m_shard.comm, m_params, loss, m_grad_flat, m_grad_host);
      s.allreduce_time_s += seconds_since(t);
    }
    expect_finite(loss, epoch, b);
    m_optimizer.step(m_res);
    m_sparse.step(m_res);
    loss_sum += loss * static_cast<double>(global);
    seeds += static_cast<double>(global);
    if (on_step) on_step(b);
  }
  for (auto& v : m_blocks) v.times = nullptr;
  for (const auto& store : m_stores)
    if (store) store->end_epoch(*m_shard.comm, epoch);  // the access policy fills its cache
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss_sum / seeds;
  s.stages = stages;
  s.remote_rows = m_fetch.remote_rows;
  s.cache_hits = m_fetch.cache_hits;
  s.feature_bytes = m_fetch.bytes;
  s.fetch_time_s = m_fetch.seconds;
  if (m_halo) {
    // A partition: the edges every rank sampled, summed; each stage the slowest rank's.
    m_shard.comm->allreduce(
        kernels::Span<std::int64_t>(s.sampled_edges.data(), std::ssize(s.sampled_edges)),
        ReduceOp::Sum);
    std::int64_t rows[3] = {s.remote_rows, s.cache_hits, s.feature_bytes};
    m_shard.comm->allreduce(kernels::Span<std::int64_t>(rows, 3), ReduceOp::Sum);
    s.remote_rows = rows[0], s.cache_hits = rows[1], s.feature_bytes = rows[2];
    nn::HeteroStageTimes& t = s.stages;
    double v[4] = {t.subgraph_build_s, t.feature_projection_s, t.neighbor_aggregation_s,
                   t.semantic_aggregation_s};
    m_shard.comm->allreduce(kernels::Span<double>(v, 4), ReduceOp::Max);
    t = {v[0], v[1], v[2], v[3]};
  }
  return true;
}

// Full graph: one step an epoch, so there is no step boundary to stop at inside it.
bool HeteroNodeClassification::train_epoch(std::uint64_t epoch, EpochStats& s,
                                           const Trainer::StepCallback& on_step,
                                           Trainer::Partial& at,
                                           const std::function<bool()>& stop) {
  (void)at, (void)stop;
  if (m_sampler) return train_minibatch(epoch, s, on_step);
  const auto start = Clock::now();
  nn::HeteroStageTimes stages;  // full graph: the subgraph is built once, before training
  m_view.times = &stages;
  const nn::Context ctx{&m_res, /*training=*/true, m_config.seed, epoch, 0};
  const Tensor<float>& logits = m_model.forward(ctx, m_view, m_inputs);
  kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
  // Divided by the training nodes of every rank: the ranks' losses and gradients add up.
  double loss = kernels::log_softmax_nll(m_res, logits.view(), std::as_const(m_labels).span(),
                                         std::as_const(m_train).span(), m_num_train);
  kernels::log_softmax_nll_backward(m_res, logits.view(), std::as_const(m_labels).span(),
                                    std::as_const(m_train).span(), m_dlogits.view(), m_num_train);
  m_model.backward(ctx, m_view, m_dlogits);
  m_view.times = nullptr;
  if (m_halo) {
    const auto t = Clock::now();
    loss = allreduce_gradients(m_res, *m_shard.comm, m_params, loss, m_grad_flat, m_grad_host);
    s.allreduce_time_s = seconds_since(t);
  }
  expect_finite(loss, epoch, 0);
  m_optimizer.step(m_res);
  m_sparse.step(m_res);
  if (on_step) on_step(0);
  m_res.synchronize();
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss;
  s.stages = stages;
  return true;
}

Trainer::Evaluation HeteroNodeClassification::evaluate() {
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  const Tensor<float>& logits = m_model.forward(ctx, m_view, m_inputs);
  auto correct = [&](const Tensor<NodeId>& rows) {
    return rows.numel() == 0
               ? 0.0
               : static_cast<double>(kernels::count_correct(
                     m_res, logits.view(), std::as_const(m_labels).span(), rows.span()));
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto ratio = [&](double a, double b) { return b > 0 ? a / b : nan; };
  // Counts and sums of this rank, added over the ranks (one all-reduce; a no-op in one process).
  std::vector<double> v = {correct(m_train),
                           correct(m_val),
                           correct(m_test),
                           m_val.numel() == 0
                               ? 0.0
                               : static_cast<double>(kernels::log_softmax_nll(
                                     m_res, logits.view(), std::as_const(m_labels).span(),
                                     std::as_const(m_val).span(), 1)),
                           static_cast<double>(m_train.numel()),
                           static_cast<double>(m_val.numel()),
                           static_cast<double>(m_test.numel())};
  // The predictions on the host, for the F1 scores.
  const std::vector<float> host = logits.to_vector(m_res);
  const std::int64_t c = logits.cols();
  std::vector<std::int32_t> pred(static_cast<std::size_t>(logits.rows()));
  for (std::int64_t r = 0; r < logits.rows(); ++r) {
    const float* row = host.data() + r * c;
    pred[static_cast<std::size_t>(r)] =
        static_cast<std::int32_t>(std::max_element(row, row + c) - row);
  }
  const std::int32_t k = m_shard.graph.num_classes;
  for (const auto* rows : {&m_val_host, &m_test_host})
    for (const double c : class_counts(pred, m_labels_host, *rows, k)) v.push_back(c);
  m_shard.comm->allreduce(kernels::Span<double>(v.data(), static_cast<std::int64_t>(v.size())),
                          ReduceOp::Sum);
  Trainer::Evaluation e;
  e.train_accuracy = ratio(v[0], v[4]);
  e.val_accuracy = ratio(v[1], v[5]);
  e.test_accuracy = v[6] > 0 ? v[2] / v[6] : 0;
  e.val_loss = ratio(v[3], v[5]);
  const auto kc = static_cast<std::size_t>(3 * k);
  const F1Scores val = f1_scores(std::span<const double>(v.data() + 7, kc));
  const F1Scores test = f1_scores(std::span<const double>(v.data() + 7 + kc, kc));
  e.val_macro_f1 = val.macro;
  e.test_macro_f1 = test.macro;
  e.test_micro_f1 = test.micro;
  return e;
}

}  // namespace

HeteroShard open_hetero_shard(const kernels::Resources& res, Comm& comm,
                              const std::filesystem::path& dir) {
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  if (!meta.hetero)
    throw IoError((dir / "meta.json").string() +
                  ": a homogeneous partition (--model rgcn and hgt need one of a typed directory)");
  check_partition_ranks(meta, comm, dir);
  partition::HeteroPart part =
      partition::read_hetero_part(host_resources(res), dir, comm.rank(), &meta);
  HeteroShard s;
  s.dataset = meta.dataset;
  s.graph = std::move(part.graph);
  s.layout = std::move(part.layout);
  s.comm = &comm;
  return s;
}

HeteroShard local_hetero_shard(datasets::HeteroGraph&& g) {
  HeteroShard s;
  s.dataset = g.name;
  s.graph = std::move(g);
  s.own_comm = std::make_unique<SelfComm>();
  s.comm = s.own_comm.get();
  return s;
}

nn::HeteroSchema hetero_schema(const datasets::HeteroGraph& g) {
  nn::HeteroSchema s;
  for (const datasets::NodeType& t : g.node_types) {
    s.type_names.push_back(t.name);
    s.num_nodes.push_back(t.num_nodes);
    s.in_features.push_back(t.has_features() ? kernels::num_cols(t.features) : 0);
  }
  for (const datasets::Relation& r : g.relations) {
    s.relation_names.push_back(r.name);
    s.relations.emplace_back(r.src_type, r.dst_type);
  }
  s.target_type = g.target_type;
  s.num_classes = g.num_classes;
  return s;
}

std::vector<double> class_counts(std::span<const std::int32_t> pred,
                                 std::span<const std::int32_t> labels, std::span<const NodeId> rows,
                                 std::int32_t num_classes) {
  std::vector<double> counts(static_cast<std::size_t>(3 * num_classes), 0.0);
  for (const NodeId r : rows) {
    const auto p = static_cast<std::size_t>(pred[static_cast<std::size_t>(r)]);
    const auto y = static_cast<std::size_t>(labels[static_cast<std::size_t>(r)]);
    HALO_EXPECTS(
        p < static_cast<std::size_t>(num_classes) && y < static_cast<std::size_t>(num_classes),
        "class_counts: a class outside [0, num_classes)");
    if (p == y) {
      counts[3 * y] += 1;
    } else {
      counts[3 * p + 1] += 1;
      counts[3 * y + 2] += 1;
    }
  }
  return counts;
}

F1Scores f1_scores(std::span<const double> counts) {
  double sum = 0, tp = 0, fp_fn = 0;
  int present = 0;
  for (std::size_t c = 0; c + 2 < counts.size(); c += 3) {
    const double denom = 2 * counts[c] + counts[c + 1] + counts[c + 2];
    tp += counts[c];
    fp_fn += counts[c + 1] + counts[c + 2];
    if (denom == 0) continue;  // neither labelled nor predicted: not averaged (scikit-learn)
    sum += 2 * counts[c] / denom;
    ++present;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (present == 0) return {nan, nan};
  return {sum / present, 2 * tp / (2 * tp + fp_fn)};
}

Trainer::Trainer(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
                 nn::Network<float>& model)
    : m_res(res), m_comm(shard.comm), m_epochs(config.epochs), m_checkpoint(config.checkpoint) {
  const TrainConfig shaped = with_shape(config, model.shape());
  m_task = std::make_unique<NodeClassification>(res, shard, shaped, model);
  if (!m_checkpoint.dir.empty()) m_identity = checkpoint_identity(shaped, shard);
}

Trainer::Trainer(const kernels::Resources& res, HeteroShard& shard, const TrainConfig& config,
                 nn::HeteroModel<float>& model)
    : m_res(res), m_comm(shard.comm), m_epochs(config.epochs), m_checkpoint(config.checkpoint) {
  m_task = std::make_unique<HeteroNodeClassification>(res, shard, config, model);
}

Trainer::~Trainer() = default;

std::int64_t Trainer::batches_per_epoch() const { return m_task->batches_per_epoch(); }
double Trainer::preprocess_time_s() const { return m_task->preprocess_time_s; }

bool Trainer::stop_agreed() {
  if (m_checkpoint.dir.empty()) return false;
  const auto t = Clock::now();
  const bool stop = m_comm->sum<std::int64_t>(preemption_requested() ? 1 : 0) > 0;
  m_stop_check_s += seconds_since(t);
  ++m_stop_checks;
  return stop;
}

bool Trainer::train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step) {
  // A stopped epoch continues at its next step with its running sums.
  Partial at = m_partial.epoch == epoch ? m_partial : Partial{epoch};
  m_partial = {};
  if (m_task->train_epoch(epoch, s, on_step, at, [this] { return stop_agreed(); })) return true;
  m_partial = at;
  return false;
}

Trainer::Evaluation Trainer::evaluate() { return m_task->evaluate(); }

namespace {

/// What a checkpoint holds of `task`, in the order it stores them: the state as "param/NAME",
/// the optimizer's state, and the best epoch's copies of the state (`best`) as "best/NAME".
std::vector<NamedTensor> checkpoint_arrays(Trainer::Task& task, std::vector<Tensor<float>>& best) {
  const std::vector<NamedTensor> state = task.state();
  std::vector<NamedTensor> v;
  for (const NamedTensor& t : state) v.push_back({"param/" + t.name, t.tensor});
  for (NamedTensor& t : task.optimizer_state()) v.push_back(std::move(t));
  for (std::size_t i = 0; i < state.size(); ++i) v.push_back({"best/" + state[i].name, &best[i]});
  return v;
}

}  // namespace

TrainState Trainer::capture(const TrainResult& result, std::vector<Tensor<float>>& best,
                            double best_val_loss, int epochs_done) {
  TrainState st;
  st.epoch = epochs_done;
  if (m_partial.step > 0) {
    st.step = m_partial.step;
    st.loss_sum = m_partial.loss_sum;
    st.loss_rows = m_partial.loss_rows;
    st.allreduce_s = m_partial.allreduce_s;
  }
  st.optimizer_steps = m_task->optimizer_steps();
  st.best_val_loss = best_val_loss;
  st.result.best_epoch = result.best_epoch;
  st.result.val_accuracy = result.val_accuracy;
  st.result.test_accuracy = result.test_accuracy;
  st.result.final_train_loss = result.final_train_loss;
  st.result.history = result.history;
  for (const NamedTensor& a : checkpoint_arrays(*m_task, best)) {
    const Tensor<float>& t = *a.tensor;
    st.arrays.push_back({a.name, t.rows(), t.cols(), t.to_vector(m_res)});
  }
  return st;
}

void Trainer::restore(const TrainState& st, TrainResult& result, std::vector<Tensor<float>>& best,
                      double& best_val_loss) {
  const std::vector<NamedTensor> arrays = checkpoint_arrays(*m_task, best);
  HALO_EXPECTS(st.arrays.size() == arrays.size(),
               "checkpoint: it holds " + std::to_string(st.arrays.size()) +
                   " arrays, this model needs " + std::to_string(arrays.size()));
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const TrainState::Array& a = st.arrays[i];
    const std::string& name = arrays[i].name;
    Tensor<float>& t = *arrays[i].tensor;
    if (a.name != name || a.rows != t.rows() || a.cols != t.cols())
      throw IoError("checkpoint: array " + a.name + " (" + std::to_string(a.rows) + " x " +
                    std::to_string(a.cols) + ") where the model has " + name + " (" +
                    std::to_string(t.rows()) + " x " + std::to_string(t.cols()) + ")");
    kernels::copy_bytes(m_res, t.data(), t.device(), a.values.data(), kernels::Device::Cpu,
                        t.bytes());
  }
  m_task->set_optimizer_steps(st.optimizer_steps);
  best_val_loss = st.best_val_loss;
  result.best_epoch = st.result.best_epoch;
  result.val_accuracy = st.result.val_accuracy;
  result.test_accuracy = st.result.test_accuracy;
  result.final_train_loss = st.result.final_train_loss;
  result.history = st.result.history;
  for (EpochStats& s : result.history) s.epochs = m_epochs;
  m_partial = {};
  if (st.step > 0)
    m_partial = {static_cast<std::uint64_t>(st.epoch) + 1, st.step, st.loss_sum, st.loss_rows,
                 st.allreduce_s};
}

TrainResult Trainer::run(const EpochCallback& on_epoch, const StepCallback& on_step) {
  TrainResult result;
  // Parameter values of the best epoch so far, on the parameters' device: snapshots are
  // stream-ordered device copies, never a trip through the host.
  const std::vector<NamedTensor> state = m_task->state();
  std::vector<Tensor<float>> best;
  for (const NamedTensor& t : state) best.push_back(t.tensor->clone(m_res));
  double best_val_loss = 0;
  double best_val_score = 0;  // link prediction (which has no checkpoints yet)
  const int epochs = m_epochs;
  Comm& comm = *m_comm;
  const CheckpointConfig& ck = m_checkpoint;
  const bool checkpoints = !ck.dir.empty();
  int done = 0;  // epochs completed
  if (checkpoints && ck.resume) {
    if (auto found = read_newest_checkpoint(comm, ck.dir, m_identity)) {
      const TrainState& st = found->state;
      if (st.epoch + (st.step > 0 ? 1 : 0) > epochs)
        throw IoError(found->dir.string() + ": the checkpoint is at epoch " +
                      std::to_string(st.epoch) + ", step " + std::to_string(st.step) +
                      ", past the " + std::to_string(epochs) + " epochs of this run (--epochs)");
      restore(found->state, result, best, best_val_loss);
      done = found->state.epoch;
      result.resumed_from = found->dir.string();
      HALO_LOG_INFO(
          "train: resuming from " + result.resumed_from + " (" + std::to_string(done) + " epochs" +
          (m_partial.step > 0 ? " and " + std::to_string(m_partial.step) + " steps" : "") +
          " completed)");
    } else {
      HALO_LOG_INFO("train: no complete checkpoint in " + ck.dir.string() + ": starting fresh");
    }
  } else if (checkpoints) {
    // A fresh run never shares its directory with another run's checkpoints (rank 0 decides).
    std::string problem = comm.rank() == 0 ? fresh_start_problem(ck.dir) : std::string();
    std::int64_t refused = problem.empty() ? 0 : 1;
    comm.broadcast(&refused, sizeof refused, 0);
    if (refused != 0)
      throw IoError(comm.rank() == 0 ? problem
                                     : ck.dir.string() +
                                           ": holds another run's checkpoints "
                                           "(see rank 0's message)");
  }
  const auto save = [&](int epochs_done) {
    result.checkpoint =
        write_checkpoint(comm, ck, m_identity, capture(result, best, best_val_loss, epochs_done))
            .string();
  };
  const auto start = Clock::now();
  for (int epoch = done + 1; epoch <= epochs; ++epoch) {
    EpochStats s;
    s.epoch = epoch;
    s.epochs = epochs;
    if (!train_epoch(static_cast<std::uint64_t>(epoch), s, on_step)) {
      save(epoch - 1);  // mid-epoch: the next step and the epoch's running sums
      result.preempted = true;
      break;
    }
    slow_epoch_hook(comm.rank(), epoch);
    const Evaluation e = evaluate();
    s.train_accuracy = e.train_accuracy;
    s.val_loss = e.val_loss;
    s.val_accuracy = e.val_accuracy;
    s.test_accuracy = e.test_accuracy;
    s.val_macro_f1 = e.val_macro_f1;
    s.test_macro_f1 = e.test_macro_f1;
    s.test_micro_f1 = e.test_micro_f1;
    s.val_mrr = e.val_mrr;
    s.val_map = e.val_map;
    // Without validation nodes there is nothing to select by: the last epoch is kept. Link
    // prediction selects by its validation score (MAP or MRR).
    const bool link = !std::isnan(e.val_score);
    const bool no_val = !link && std::isnan(e.val_accuracy);
    if (result.best_epoch == 0 || no_val || (link && e.val_score > best_val_score) ||
        (!link && e.val_accuracy > result.val_accuracy) ||
        (!link && e.val_accuracy == result.val_accuracy && e.val_loss < best_val_loss)) {
      result.best_epoch = epoch;
      result.val_accuracy = e.val_accuracy;
      result.test_accuracy = e.test_accuracy;
      result.val_macro_f1 = e.val_macro_f1;
      result.test_macro_f1 = e.test_macro_f1;
      result.test_micro_f1 = e.test_micro_f1;
      result.val_mrr = e.val_mrr;
      result.val_map = e.val_map;
      best_val_score = e.val_score;
      best_val_loss = e.val_loss;
      for (std::size_t i = 0; i < state.size(); ++i)
        kernels::copy_async(m_res, best[i], *state[i].tensor);
    }
    result.final_train_loss = s.train_loss;
    result.history.push_back(s);
    if (on_epoch) on_epoch(s);
    const bool stop = stop_agreed();
    if (checkpoints && (stop || epoch == epochs || (ck.every > 0 && epoch % ck.every == 0)))
      save(epoch);
    if (stop) {
      result.preempted = true;
      break;
    }
  }
  result.train_time_s = seconds_since(start);
  result.preprocess_time_s = m_task->preprocess_time_s;
  result.world_size = comm.size();
  result.preemption_checks = m_stop_checks;
  result.preemption_check_s = m_stop_check_s;
  // The medians and totals over the epochs completed (those before a resume included).
  std::vector<double> times, exchange, exposed, window, allreduce, compute, fetch, wait;
  std::vector<std::int64_t> bytes, sampling, features;
  double exchange_total = 0, exposed_total = 0;
  std::int64_t remote = 0, hits = 0, syncs = 0;
  std::vector<double> projection, aggregation, semantic, subgraph;
  for (const EpochStats& s : result.history) {
    times.push_back(s.epoch_time_s);
    exchange.push_back(s.exchange_time_s);
    exposed.push_back(s.exchange_exposed_s);
    window.push_back(s.exchange_window_s);
    allreduce.push_back(s.allreduce_time_s);
    compute.push_back(s.epoch_time_s - s.exchange_exposed_s - s.allreduce_time_s);
    fetch.push_back(s.fetch_time_s);
    wait.push_back(s.batch_wait_s);
    bytes.push_back(s.exchange_bytes);
    sampling.push_back(s.sampling_bytes);
    features.push_back(s.feature_bytes);
    exchange_total += s.exchange_time_s;
    exposed_total += s.exchange_exposed_s;
    remote += s.remote_rows;
    hits += s.cache_hits;
    syncs += s.host_syncs;
    subgraph.push_back(s.stages.subgraph_build_s);
    projection.push_back(s.stages.feature_projection_s);
    aggregation.push_back(s.stages.neighbor_aggregation_s);
    semantic.push_back(s.stages.semantic_aggregation_s);
  }
  result.epoch_time_median_s = median(times);
  result.exchange_time_s = median(exchange);
  result.exchange_exposed_s = median(exposed);
  result.exchange_window_s = median(window);
  result.allreduce_time_s = median(allreduce);
  result.compute_time_s = median(compute);
  result.fetch_time_s = median(fetch);
  result.batch_wait_s = median(wait);
  result.stages = {median(subgraph), median(projection), median(aggregation), median(semantic)};
  std::vector<EpochProfile> profiles;  // the epochs this run trained (a checkpoint holds none)
  for (std::size_t e = std::min(static_cast<std::size_t>(done), result.history.size());
       e < result.history.size(); ++e)
    profiles.push_back(result.history[e].profile);
  result.profile = median_profile(profiles);
  auto median_int = [](std::vector<std::int64_t> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? std::int64_t{0} : v[v.size() / 2];
  };
  result.exchange_bytes_per_epoch = median_int(bytes);
  result.sampling_bytes_per_epoch = median_int(sampling);
  result.feature_bytes_per_epoch = median_int(features);
  result.exchange_hidden_fraction =
      exchange_total > 0 ? std::max(0.0, 1.0 - exposed_total / exchange_total) : 0.0;
  result.cache_hit_rate = remote > 0 ? static_cast<double>(hits) / static_cast<double>(remote) : 0;
  result.batches_per_epoch = m_task->batches_per_epoch();
  const auto epochs_run = static_cast<double>(std::max<std::size_t>(1, result.history.size()));
  result.host_syncs_per_batch =
      static_cast<double>(syncs) / (epochs_run * static_cast<double>(result.batches_per_epoch));
  for (std::size_t i = 0; i < state.size(); ++i)
    kernels::copy_async(m_res, *state[i].tensor, best[i]);
  m_res.synchronize();     // the model is final when run returns
  m_task->finish(result);  // with the kept parameters
  return result;
}

TrainRun train(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
               const EpochCallback& on_epoch, const Trainer::StepCallback& on_step) {
  check_config(config, shard.comm->size());
  TrainRun run{make_model(res, shard.num_features, shard.part.num_classes, config), {}};
  Trainer trainer(res, shard, config, run.model);
  run.result = trainer.run(on_epoch, on_step);
  return run;
}

HeteroTrainRun train(const kernels::Resources& res, HeteroShard& shard, const TrainConfig& config,
                     const EpochCallback& on_epoch, const Trainer::StepCallback& on_step) {
  check_config(config, shard.comm->size());
  HeteroTrainRun run{
      nn::HeteroModel<float>(res, config.hetero, hetero_schema(shard.graph), config.seed), {}};
  Trainer trainer(res, shard, config, run.model);
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
  const auto number = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json t = {{"mode", config.mini_batch ? "mini-batch" : "full-graph"},
                      {"epochs", config.epochs},
                      {"lr", config.lr},
                      {"weight_decay", config.weight_decay},
                      {"seed", config.seed},
                      {"optimizer", "adam"},
                      {"world_size", result.world_size},
                      {"best_epoch", result.best_epoch},
                      {"val_accuracy", number(result.val_accuracy)},
                      {"test_accuracy", number(result.test_accuracy)},
                      {"final_train_loss", number(result.final_train_loss)}};
  if (config.mini_batch)
    t.update({{"batch_size", config.mini_batch->batch_size},
              {"fanouts", config.mini_batch->fanouts},
              {"replace", config.mini_batch->replace}});
  info.training = t.dump();
  return info;
}

std::int64_t current_host_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  std::int64_t pages_total = 0, pages_resident = 0;
  in >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

std::int64_t peak_host_memory_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // The kernel's high-water mark is sampled from per-thread counters that it syncs now and
  // then, so it can lag the resident size /proc/self/statm reports: a peak is never below it.
  return std::max(static_cast<std::int64_t>(usage.ru_maxrss) * 1024,  // Linux reports KiB
                  current_host_memory_bytes());
}

}  // namespace halo::runtime
