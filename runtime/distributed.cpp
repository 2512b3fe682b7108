#include <chrono>
#include <variant>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/runtime/distributed.hpp>

namespace halo::runtime {

using kernels::Tensor;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

HaloExchange build_exchange(const kernels::Resources& res, Comm& comm, const partition::Part& part,
                            nn::ModelKind kind, bool overlap, double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  HaloExchange exchange(res, comm, part, kind, overlap);
  seconds = seconds_since(start);
  return exchange;
}

kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const partition::Part& part, bool normalize) {
  auto f = std::visit([&](const auto& m) -> kernels::FeatureMatrix<float> { return m.clone(res); },
                      part.features);
  if (normalize && std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(f))
    datasets::row_normalize(res, f);
  return f;
}

kernels::AdamConfig adam_config(const TrainConfig& config) {
  kernels::AdamConfig c;
  c.lr = config.lr;
  c.weight_decay = config.weight_decay;
  return c;
}

}  // namespace

DistributedTrainer::DistributedTrainer(const kernels::Resources& res, Comm& comm,
                                       const partition::Part& part, const TrainConfig& config,
                                       nn::Model<float>& model, bool overlap)
    : m_res(res),
      m_comm(comm),
      m_part(part),
      m_config(config),
      m_model(model),
      m_exchange(
          build_exchange(res, comm, part, model.config().kind, overlap, m_preprocess_time_s)),
      m_features(prepare_features(res, part, config.normalize_features)),
      m_optimizer(res, model.parameters(), adam_config(config)) {
  HALO_EXPECTS(model.config().in_features == kernels::num_cols(m_features) &&
                   model.config().num_classes == part.num_classes,
               "train: the model was not built for this partition");
  std::vector<std::int64_t> counts = {part.train_idx.numel(), part.val_idx.numel(),
                                      part.test_idx.numel()};
  comm.allreduce(kernels::Span<std::int64_t>(counts.data(), 3), ReduceOp::Sum);
  m_num_train = counts[0];
  m_num_val = counts[1];
  m_num_test = counts[2];
  HALO_EXPECTS(m_num_train > 0, "train: the partition has no training nodes");
  std::int64_t params = 0;
  for (const auto* p : model.parameters()) params += p->grad.numel();
  m_flat.resize(static_cast<std::size_t>(params) + 1);
}

nn::Context DistributedTrainer::context(bool training, std::uint64_t epoch) const {
  return {&m_res, training, m_config.seed, epoch, 0};
}

nn::Adjacency<float> DistributedTrainer::graph() {
  return m_exchange.adjacency(m_part.original_ids.span());  // masks follow the original ids
}

double DistributedTrainer::train_epoch(std::uint64_t epoch) {
  m_exchange.reset_stats();
  const nn::Context ctx = context(/*training=*/true, epoch);
  const nn::Adjacency<float> a = graph();
  const Tensor<float>& logits = m_model.forward(ctx, a, m_features);
  kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
  const double loss = kernels::log_softmax_nll(m_res, logits.view(), m_part.labels.span(),
                                               m_part.train_idx.span(), m_num_train);
  kernels::log_softmax_nll_backward(m_res, logits.view(), m_part.labels.span(),
                                    m_part.train_idx.span(), m_dlogits.view(), m_num_train);
  m_model.backward(ctx, a, m_dlogits);

  // One all-reduce for every gradient and the loss.
  const auto start = std::chrono::steady_clock::now();
  const auto params = m_model.parameters();
  std::size_t at = 0;
  for (const auto* p : params) {
    std::copy(p->grad.data(), p->grad.data() + p->grad.numel(),
              m_flat.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<std::size_t>(p->grad.numel());
  }
  m_flat[at] = static_cast<float>(loss);
  m_comm.allreduce(kernels::Span<float>(m_flat.data(), static_cast<std::int64_t>(m_flat.size())),
                   ReduceOp::Sum);
  at = 0;
  for (auto* p : params) {
    std::copy(m_flat.begin() + static_cast<std::ptrdiff_t>(at),
              m_flat.begin() +
                  static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(p->grad.numel())),
              p->grad.data());
    at += static_cast<std::size_t>(p->grad.numel());
  }
  m_allreduce_s = seconds_since(start);
  m_optimizer.step(m_res);
  m_res.synchronize();
  return m_flat[at];
}

DistributedTrainer::Evaluation DistributedTrainer::evaluate() {
  const Tensor<float>& logits =
      m_model.forward(context(/*training=*/false, 0), graph(), m_features);
  auto correct = [&](const Tensor<kernels::NodeId>& rows) {
    return rows.numel() == 0 ? 0.0
                             : static_cast<double>(kernels::count_correct(
                                   m_res, logits.view(), m_part.labels.span(), rows.span()));
  };
  std::vector<double> v = {
      correct(m_part.train_idx), correct(m_part.val_idx), correct(m_part.test_idx),
      m_part.val_idx.numel() == 0
          ? 0.0
          : static_cast<double>(kernels::log_softmax_nll(m_res, logits.view(), m_part.labels.span(),
                                                         m_part.val_idx.span(), m_num_val))};
  m_comm.allreduce(kernels::Span<double>(v.data(), 4), ReduceOp::Sum);
  auto ratio = [](double a, std::int64_t b) { return b > 0 ? a / static_cast<double>(b) : 0.0; };
  return {ratio(v[0], m_num_train), v[3], ratio(v[1], m_num_val), ratio(v[2], m_num_test)};
}

void DistributedTrainer::add_comm_stats(EpochStats& s) {
  const ExchangeStats& x = m_exchange.stats();
  std::vector<double> v = {static_cast<double>(x.bytes_sent), x.exchange_s, x.exposed_s,
                           m_allreduce_s};
  m_comm.allreduce(kernels::Span<double>(v.data(), 4), ReduceOp::Sum);
  const double ranks = m_comm.size();
  s.exchange_bytes = static_cast<std::int64_t>(v[0]);
  s.exchange_time_s = v[1] / ranks;
  s.exchange_exposed_s = v[2] / ranks;
  s.allreduce_time_s = v[3] / ranks;
}

}  // namespace halo::runtime
