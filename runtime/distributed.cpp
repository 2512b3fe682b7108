#include <algorithm>
#include <chrono>

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

}  // namespace

double allreduce_gradients(Comm& comm, const std::vector<nn::Parameter<float>*>& params,
                           double loss, std::vector<float>& scratch) {
  std::size_t n = 1;
  for (const auto* p : params) n += static_cast<std::size_t>(p->grad.numel());
  scratch.resize(n);  // allocates on the first call only
  auto at = scratch.begin();
  for (const auto* p : params) at = std::copy(p->grad.data(), p->grad.data() + p->grad.numel(), at);
  *at = static_cast<float>(loss);
  comm.allreduce(kernels::Span<float>(scratch.data(), static_cast<std::int64_t>(n)), ReduceOp::Sum);
  auto from = scratch.cbegin();
  for (auto* p : params) {
    std::copy(from, from + p->grad.numel(), p->grad.data());
    from += p->grad.numel();
  }
  return *from;
}

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
      m_features(prepare_features(res, part.features, config.normalize_features)),
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

  const auto start = std::chrono::steady_clock::now();
  const double total = allreduce_gradients(m_comm, m_model.parameters(), loss, m_flat);
  m_allreduce_s = seconds_since(start);
  m_optimizer.step(m_res);
  m_res.synchronize();
  return total;
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
