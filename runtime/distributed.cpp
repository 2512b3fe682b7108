#include <algorithm>
#include <chrono>
#include <utility>
#include <variant>

#include <halo/kernels/loss.hpp>
#include <halo/runtime/detail/clock.hpp>
#include <halo/runtime/distributed.hpp>

namespace halo::runtime {

using detail::seconds_since;

using kernels::Tensor;

namespace {

HaloExchange build_exchange(const kernels::Resources& res, Comm& comm, const partition::Part& part,
                            nn::ModelKind kind, bool overlap, Comm* data_comm, double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  HaloExchange exchange(res, comm, part, kind, overlap, data_comm);
  seconds = seconds_since(start);
  return exchange;
}

// A part's host tensor on res's device.
template <class T>
Tensor<T> on_device(const kernels::Resources& res, const Tensor<T>& t) {
  return t.copy_to(res, res.device());
}

}  // namespace

double allreduce_gradients(Comm& comm, const std::vector<nn::Parameter<float>*>& params,
                           double loss, std::vector<float>& scratch) {
  HALO_EXPECTS(comm.memory_device() == kernels::Device::Cpu,
               "allreduce_gradients: host scratch needs a host-memory comm");
  for (const auto* p : params)
    HALO_EXPECTS(p->grad.device() == kernels::Device::Cpu,
                 "allreduce_gradients: device gradients need the Resources overload");
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

double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           GradientScratch& scratch) {
  if (res.device() == kernels::Device::Cpu)
    return allreduce_gradients(comm, params, loss, scratch.host);
  const kernels::Device dev = res.device();
  std::int64_t n = 1;
  for (const auto* p : params) {
    HALO_EXPECTS(p->grad.device() == dev, "allreduce_gradients: gradients not on res's device");
    n += p->grad.numel();
  }
  kernels::ensure_shape(res, scratch.device, n, 1);  // allocates on the first call only
  float* flat = scratch.device.data();
  std::int64_t at = 0;
  for (const auto* p : params) {
    kernels::copy_bytes_async(res, flat + at, dev, p->grad.data(), dev, p->grad.bytes());
    at += p->grad.numel();
  }
  float total = static_cast<float>(loss);
  kernels::copy_bytes(res, flat + at, dev, &total, kernels::Device::Cpu, sizeof total);
  if (comm.memory_device() == dev) {
    comm.allreduce(kernels::Span<float>(flat, n), ReduceOp::Sum);  // in stream order
  } else {
    scratch.host.resize(static_cast<std::size_t>(n));
    kernels::copy_bytes(res, scratch.host.data(), kernels::Device::Cpu, flat, dev,
                        scratch.device.bytes());
    comm.allreduce(kernels::Span<float>(scratch.host.data(), n), ReduceOp::Sum);
    kernels::copy_bytes(res, flat, dev, scratch.host.data(), kernels::Device::Cpu,
                        scratch.device.bytes());
  }
  at = 0;
  for (auto* p : params) {
    kernels::copy_bytes_async(res, p->grad.data(), dev, flat + at, dev, p->grad.bytes());
    at += p->grad.numel();
  }
  kernels::copy_bytes(res, &total, kernels::Device::Cpu, flat + at, dev, sizeof total);
  return total;
}

DistributedTrainer::DistributedTrainer(const kernels::Resources& res, Comm& comm,
                                       const partition::Part& part, const TrainConfig& config,
                                       nn::Model<float>& model, bool overlap, Comm* data_comm)
    : m_res(res),
      m_comm(comm),
      m_data_comm(data_comm != nullptr ? *data_comm : comm),
      m_config(config),
      m_model(model),
      m_exchange(build_exchange(res, comm, part, model.config().kind, overlap, data_comm,
                                m_preprocess_time_s)),
      m_features(prepare_features(res, part.features, config.normalize_features)),
      m_original_ids(on_device(res, part.original_ids)),
      m_train_idx(on_device(res, part.train_idx)),
      m_val_idx(on_device(res, part.val_idx)),
      m_test_idx(on_device(res, part.test_idx)),
      m_labels(on_device(res, part.labels)),
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
  return m_exchange.adjacency(
      std::as_const(m_original_ids).span());  // masks follow the original ids
}

double DistributedTrainer::train_epoch(std::uint64_t epoch) {
  m_exchange.reset_stats();
  const nn::Context ctx = context(/*training=*/true, epoch);
  const nn::Adjacency<float> a = graph();
  const Tensor<float>& logits = m_model.forward(ctx, a, m_features);
  kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
  const double loss = kernels::log_softmax_nll(m_res, logits.view(), std::as_const(m_labels).span(),
                                               std::as_const(m_train_idx).span(), m_num_train);
  kernels::log_softmax_nll_backward(m_res, logits.view(), std::as_const(m_labels).span(),
                                    std::as_const(m_train_idx).span(), m_dlogits.view(),
                                    m_num_train);
  m_model.backward(ctx, a, m_dlogits);

  m_res.synchronize();  // the backward pass belongs to compute, not to the all-reduce's time
  const auto start = std::chrono::steady_clock::now();
  const double total = allreduce_gradients(m_res, m_data_comm, m_model.parameters(), loss, m_flat);
  m_allreduce_s = seconds_since(start);
  m_optimizer.step(m_res);
  m_res.synchronize();
  return total;
}

DistributedTrainer::Evaluation DistributedTrainer::evaluate() {
  const Tensor<float>& logits =
      m_model.forward(context(/*training=*/false, 0), graph(), m_features);
  auto correct = [&](const Tensor<kernels::NodeId>& rows) {
    return rows.numel() == 0
               ? 0.0
               : static_cast<double>(kernels::count_correct(
                     m_res, logits.view(), std::as_const(m_labels).span(), rows.span()));
  };
  std::vector<double> v = {correct(m_train_idx), correct(m_val_idx), correct(m_test_idx),
                           m_val_idx.numel() == 0
                               ? 0.0
                               : static_cast<double>(kernels::log_softmax_nll(
                                     m_res, logits.view(), std::as_const(m_labels).span(),
                                     std::as_const(m_val_idx).span(), m_num_val))};
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
