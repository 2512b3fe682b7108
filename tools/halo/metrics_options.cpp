// `halo train`'s live metrics (docs/scheduler.md, "Live metrics").
#include <algorithm>
#include <filesystem>

#include <halo/cluster/calibrate.hpp>
#include <halo/cluster/plan.hpp>
#include <halo/kernels/log.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/metrics_options.hpp>

namespace halo::cli {

void add_metrics_options(CLI::App* sub, MetricsOptions& o) {
  sub->add_option("--metrics-file", o.file,
                  "Write live metrics (Prometheus text format) to FILE, atomically, every "
                  "--metrics-interval seconds; with several ranks each rank writes "
                  "<stem>-rank<r><ext> beside it (docs/scheduler.md)");
  sub->add_option("--metrics-interval", o.interval, "Seconds between metrics file writes")
      ->check(finite_range(0.0, 86400.0))
      ->capture_default_str();
  sub->add_option("--metrics-port", o.port,
                  "Serve the metrics on http://127.0.0.1:PORT/metrics while training (rank r "
                  "serves PORT + r; 0: a free port, logged)")
      ->check(integer_range(0, 65535));
}

namespace {
cluster::MetricsConfig sink_config(const MetricsOptions& o, int rank, int ranks) {
  cluster::MetricsConfig c;
  if (!o.file.empty()) c.file = cluster::rank_metrics_file(o.file, rank, ranks);
  c.interval_s = o.interval;
  c.serve = o.port >= 0;
  c.port = o.port > 0 ? o.port + rank : 0;
  return c;
}
}  // namespace

TrainMetrics::TrainMetrics(const MetricsOptions& o, const runtime::Comm& comm, int epochs,
                           const kernels::Resources& res, const cluster::Plan* plan)
    : m_res(res), m_sink(sink_config(o, comm.rank(), comm.size())) {
  m_snap.rank = comm.rank();
  m_snap.ranks = comm.size();
  m_snap.epochs = epochs;
  if (m_sink.port() >= 0)
    HALO_LOG_INFO("metrics: serving http://127.0.0.1:" << m_sink.port() << "/metrics");
  if (plan != nullptr) {
    m_snap.predicted_epoch_seconds = plan->epoch_seconds;
    m_snap.predicted_peak_host_bytes = plan->peak_host_bytes_per_rank;
    if (res.device() == kernels::Device::Cuda)
      m_snap.predicted_peak_gpu_bytes = plan->peak_gpu_bytes_per_rank;
  }
  publish(true);
}

void TrainMetrics::publish(bool force) {
  m_snap.host_resident_bytes = runtime::current_host_memory_bytes();
  // Read after the resident size, and never below it (the kernel's high-water mark lags).
  m_snap.host_peak_resident_bytes =
      std::max(runtime::peak_host_memory_bytes(), m_snap.host_resident_bytes);
  if (m_res.device() == kernels::Device::Cuda)
    m_snap.gpu_memory_bytes = static_cast<std::int64_t>(m_res.device_memory().used_bytes);
  m_sink.publish(m_snap, force);
}

void TrainMetrics::on_step() {
  ++m_snap.steps;
  publish(false);
}

void TrainMetrics::on_epoch(const runtime::EpochStats& s) {
  m_snap.epoch = s.epoch;
  m_snap.loss = s.train_loss;
  m_snap.epoch_seconds = s.epoch_time_s;
  m_snap.exchange_bytes += s.exchange_bytes + s.feature_bytes;
  m_snap.exchange_exposed_seconds += s.exchange_exposed_s + s.batch_wait_s;
  publish(false);
}

void TrainMetrics::finish() {
  publish(true);
  m_sink.stop();
}

std::unique_ptr<TrainMetrics> start_metrics(const MetricsOptions& o, const runtime::Shard& shard,
                                            const runtime::TrainConfig& config,
                                            const kernels::Resources& res) {
  if (o.file.empty() && o.port < 0) return nullptr;
  // The plan of this very run, for the predicted-vs-measured gauges.
  const std::filesystem::path cal = cluster::default_calibration_path();
  const cluster::CostModel costs =
      std::filesystem::exists(cal) ? cluster::read_cost_model(cal) : cluster::CostModel{};
  const cluster::Plan plan = cluster::make_plan(
      cluster::shard_plan_input(shard), config, costs,
      res.device() == kernels::Device::Cuda ? "cuda" : "cpu", res.cpu_exec().num_threads);
  return std::make_unique<TrainMetrics>(o, *shard.comm, config.epochs, res, &plan);
}

std::unique_ptr<TrainMetrics> start_metrics(
    const MetricsOptions& o, const runtime::Comm& comm, const runtime::TrainConfig& config,
    const kernels::Resources& res,
    const std::function<cluster::Plan(const cluster::CostModel&)>& make_plan) {
  if (o.file.empty() && o.port < 0) return nullptr;
  if (!make_plan) return std::make_unique<TrainMetrics>(o, comm, config.epochs, res, nullptr);
  const std::filesystem::path cal = cluster::default_calibration_path();
  const cluster::Plan plan = make_plan(std::filesystem::exists(cal) ? cluster::read_cost_model(cal)
                                                                    : cluster::CostModel{});
  return std::make_unique<TrainMetrics>(o, comm, config.epochs, res, &plan);
}

}  // namespace halo::cli
