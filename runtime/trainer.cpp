#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/runtime/detail/clock.hpp>
#include <halo/runtime/trainer.hpp>

namespace halo::runtime {

using detail::seconds_since;

using kernels::NodeId;
using kernels::Tensor;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Split {
  double loss = 0;
  double accuracy = 0;
};

Split score(const kernels::Resources& res, const Tensor<float>& logits,
            const Tensor<std::int32_t>& labels, const Tensor<NodeId>& rows) {
  // rows.numel() is host metadata: an empty split costs no device round-trip.
  if (rows.numel() == 0) return {};
  const auto n = static_cast<double>(rows.numel());
  return {
      kernels::log_softmax_nll(res, logits.view(), labels.span(), rows.span()),
      static_cast<double>(kernels::count_correct(res, logits.view(), labels.span(), rows.span())) /
          n};
}

}  // namespace

kernels::Resources host_resources(const kernels::Resources& res) {
  return kernels::Resources(kernels::Device::Cpu, res.cpu_exec().num_threads);
}

kernels::FeatureMatrix<float> features_to(const kernels::Resources& res,
                                          const kernels::FeatureMatrix<float>& x) {
  return std::visit(
      [&](const auto& m) -> kernels::FeatureMatrix<float> { return m.copy_to(res, res.device()); },
      x);
}

Targets upload_targets(const kernels::Resources& res, const datasets::Dataset& data) {
  return {data.labels.copy_to(res, res.device()), data.train_idx.copy_to(res, res.device()),
          data.val_idx.copy_to(res, res.device()), data.test_idx.copy_to(res, res.device())};
}

FullGraphInputs prepare_full_graph(const kernels::Resources& res, const datasets::Dataset& data,
                                   nn::ModelKind kind, bool normalize_features) {
  if (res.device() != kernels::Device::Cpu) {
    // datasets:: functions are host code: prepare on the host, then upload once.
    const kernels::Resources host = host_resources(res);
    const FullGraphInputs in = prepare_full_graph(host, data, kind, normalize_features);
    return {in.graph.copy_to(res, res.device()), features_to(res, in.features)};
  }
  datasets::Graph sym = datasets::deduplicate(res, datasets::symmetrize(res, data.graph));
  FullGraphInputs in;
  in.graph = kind == nn::ModelKind::Gcn ? datasets::gcn_normalize<float>(res, sym)
                                        : datasets::remove_self_loops(res, sym);
  in.graph.symmetric = true;  // built from A ∪ A^T; both normalisations keep the symmetry
  in.features = prepare_features(res, data.features, normalize_features);
  return in;
}

kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize) {
  if (res.device() != kernels::Device::Cpu) {
    const kernels::Resources host = host_resources(res);
    return features_to(res, prepare_features(host, features, normalize));
  }
  auto f = std::visit([&](const auto& m) -> kernels::FeatureMatrix<float> { return m.clone(res); },
                      features);
  if (normalize && std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(f))
    datasets::row_normalize(res, f);
  return f;
}

nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config) {
  nn::ModelConfig mc = config.model;
  mc.in_features = in_features;
  mc.num_classes = num_classes;
  return nn::Model<float>(res, mc, config.seed);
}

nn::Model<float> make_model(const kernels::Resources& res, const datasets::Dataset& data,
                            const TrainConfig& config) {
  return make_model(res, data.num_features(), data.num_classes, config);
}

namespace {
FullGraphInputs prepare_timed(const kernels::Resources& res, const datasets::Dataset& data,
                              const TrainConfig& config, nn::ModelKind kind, double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  FullGraphInputs in = prepare_full_graph(res, data, kind, config.normalize_features);
  seconds = seconds_since(start);
  return in;
}

}  // namespace

void check_model(const kernels::Resources& res, nn::Model<float>& model,
                 const datasets::Dataset& data) {
  HALO_EXPECTS(model.config().in_features == data.num_features() &&
                   model.config().num_classes == data.num_classes,
               "train: the model was not built for this dataset");
  for (const auto* p : model.parameters())
    HALO_EXPECTS(p->value.device() == res.device(),
                 "train: the model's parameters live on another device than the Resources");
}

kernels::AdamConfig adam_config(const TrainConfig& config) {
  kernels::AdamConfig c;
  c.lr = config.lr;
  c.weight_decay = config.weight_decay;
  return c;
}

FullGraphTrainer::FullGraphTrainer(const kernels::Resources& res, const datasets::Dataset& data,
                                   const TrainConfig& config, nn::Model<float>& model)
    : m_res(res),
      m_config(config),
      m_model(model),
      m_inputs(prepare_timed(res, data, config, model.config().kind, m_preprocess_time_s)),
      m_targets(upload_targets(res, data)),
      m_optimizer(res, model.parameters(), adam_config(config)) {
  HALO_EXPECTS(data.train_idx.numel() > 0, "train: the dataset has no training nodes");
  check_model(res, model, data);
}

double FullGraphTrainer::train_epoch(std::uint64_t epoch) {
  const nn::Context ctx{&m_res, /*training=*/true, m_config.seed, epoch, 0};
  const auto graph = m_inputs.graph.view();
  const Tensor<float>& logits = m_model.forward(ctx, graph, m_inputs.features);
  kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
  // The loss is the one value read back inside an epoch (log_softmax_nll synchronises).
  const Targets& t = m_targets;
  const double loss =
      kernels::log_softmax_nll(m_res, logits.view(), t.labels.span(), t.train_idx.span());
  kernels::log_softmax_nll_backward(m_res, logits.view(), t.labels.span(), t.train_idx.span(),
                                    m_dlogits.view());
  m_model.backward(ctx, graph, m_dlogits);
  m_optimizer.step(m_res);
  m_res.synchronize();
  return loss;
}

namespace {
EpochTrainer::Evaluation score_all(const kernels::Resources& res, const Tensor<float>& logits,
                                   const Tensor<std::int32_t>& labels, const Tensor<NodeId>& train,
                                   const Tensor<NodeId>& val, const Tensor<NodeId>& test) {
  const Split v = score(res, logits, labels, val);
  return {score(res, logits, labels, train).accuracy, v.loss, v.accuracy,
          score(res, logits, labels, test).accuracy};
}
}  // namespace

EpochTrainer::Evaluation score_splits(const kernels::Resources& res, const Tensor<float>& logits,
                                      const Targets& targets) {
  return score_all(res, logits, targets.labels, targets.train_idx, targets.val_idx,
                   targets.test_idx);
}

EpochTrainer::Evaluation score_splits(const kernels::Resources& res, const Tensor<float>& logits,
                                      const datasets::Dataset& data) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu && logits.device() == kernels::Device::Cpu,
               "score_splits: the dataset's tensors are host data; use upload_targets for a "
               "device run");
  return score_all(res, logits, data.labels, data.train_idx, data.val_idx, data.test_idx);
}

FullGraphTrainer::Evaluation FullGraphTrainer::evaluate() {
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  return score_splits(m_res, m_model.forward(ctx, m_inputs.graph.view(), m_inputs.features),
                      m_targets);
}

TrainResult run_epochs(const kernels::Resources& res, EpochTrainer& trainer, int epochs,
                       nn::Model<float>& model, const EpochCallback& on_epoch) {
  HALO_EXPECTS(epochs >= 1, "train: epochs must be >= 1");
  TrainResult result;
  const auto params = model.parameters();
  // Parameter values of the best epoch so far, on the parameters' device: snapshots are
  // stream-ordered device copies, never a trip through the host.
  std::vector<Tensor<float>> best;
  for (const auto* p : params) best.push_back(p->value.clone(res));
  double best_val_loss = 0;
  std::vector<double> epoch_times, exchange, exposed, allreduce, compute;
  std::vector<std::int64_t> bytes;
  double exchange_total = 0, exposed_total = 0;

  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    EpochStats s;
    s.epoch = epoch;
    s.epochs = epochs;
    const auto t0 = std::chrono::steady_clock::now();
    s.train_loss = trainer.train_epoch(static_cast<std::uint64_t>(epoch));
    s.epoch_time_s = seconds_since(t0);
    trainer.add_comm_stats(s);
    epoch_times.push_back(s.epoch_time_s);
    exchange.push_back(s.exchange_time_s);
    exposed.push_back(s.exchange_exposed_s);
    allreduce.push_back(s.allreduce_time_s);
    compute.push_back(s.epoch_time_s - s.exchange_exposed_s - s.allreduce_time_s);
    bytes.push_back(s.exchange_bytes);
    exchange_total += s.exchange_time_s;
    exposed_total += s.exchange_exposed_s;
    const auto e = trainer.evaluate();
    s.train_accuracy = e.train_accuracy;
    s.val_loss = e.val_loss;
    s.val_accuracy = e.val_accuracy;
    s.test_accuracy = e.test_accuracy;
    if (result.best_epoch == 0 || e.val_accuracy > result.val_accuracy ||
        (e.val_accuracy == result.val_accuracy && e.val_loss < best_val_loss)) {
      result.best_epoch = epoch;
      result.val_accuracy = e.val_accuracy;
      result.test_accuracy = e.test_accuracy;
      best_val_loss = e.val_loss;
      for (std::size_t i = 0; i < params.size(); ++i)
        kernels::copy_async(res, best[i], params[i]->value);
    }
    result.final_train_loss = s.train_loss;
    result.history.push_back(s);
    if (on_epoch) on_epoch(s);
  }
  result.train_time_s = seconds_since(start);
  result.preprocess_time_s = trainer.preprocess_time_s();
  result.epoch_time_median_s = median(epoch_times);
  result.exchange_time_s = median(exchange);
  result.exchange_exposed_s = median(exposed);
  result.allreduce_time_s = median(allreduce);
  result.compute_time_s = median(compute);
  std::sort(bytes.begin(), bytes.end());
  result.exchange_bytes_per_epoch = bytes[bytes.size() / 2];
  result.exchange_hidden_fraction =
      exchange_total > 0 ? std::max(0.0, 1.0 - exposed_total / exchange_total) : 0.0;
  for (std::size_t i = 0; i < params.size(); ++i)
    kernels::copy_async(res, params[i]->value, best[i]);
  res.synchronize();  // the model is final when run_epochs returns
  return result;
}

TrainResult train_full_graph(const kernels::Resources& res, const datasets::Dataset& data,
                             const TrainConfig& config, nn::Model<float>& model,
                             const EpochCallback& on_epoch) {
  HALO_EXPECTS(config.epochs >= 1, "train: epochs must be >= 1");
  FullGraphTrainer trainer(res, data, config, model);
  return run_epochs(res, trainer, config.epochs, model, on_epoch);
}

std::int64_t peak_host_memory_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace halo::runtime
