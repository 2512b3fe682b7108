#pragma once
// `halo train`'s live metrics: the --metrics-* flags and what a run publishes through them.

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include <halo/cluster/metrics.hpp>
#include <halo/cluster/plan.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/runtime/runtime.hpp>

namespace halo::cli {

struct MetricsOptions {
  std::string file;      // --metrics-file
  double interval = 10;  // --metrics-interval
  int port = -1;         // --metrics-port (-1: not served)
};

/// Registers --metrics-file, --metrics-interval and --metrics-port on `sub`, bound to `o`.
void add_metrics_options(CLI::App* sub, MetricsOptions& o);

/// What one rank of a run publishes: counters kept across epochs, the plan's predictions for
/// this rank (cluster::make_plan on the shard's counts, with the default calibration file when
/// there is one) beside the measured values.
class TrainMetrics {
 public:
  /// Call before training. `plan`: this run's predicted epoch time and peak memory, published
  /// beside the measured values (null: a task halo plan does not model; no predicted gauges).
  TrainMetrics(const MetricsOptions& o, const runtime::Comm& comm, int epochs,
               const kernels::Resources& res, const cluster::Plan* plan);
  void on_step();
  void on_epoch(const runtime::EpochStats& s);
  /// The last write; stops the HTTP server.
  void finish();
  int port() const { return m_sink.port(); }

 private:
  void publish(bool force);
  const kernels::Resources& m_res;
  cluster::MetricsSnapshot m_snap;
  cluster::MetricsSink m_sink;
};

/// A TrainMetrics when --metrics-file or --metrics-port was given, else null: with the plan of
/// this very run on `shard` (node classification: cluster::make_plan on the shard's counts, with
/// the default calibration file when there is one; the plan reads the shard's features, so call
/// it before training).
std::unique_ptr<TrainMetrics> start_metrics(const MetricsOptions& o, const runtime::Shard& shard,
                                            const runtime::TrainConfig& config,
                                            const kernels::Resources& res);
/// The same for another task: `plan` (when it is not null: `make_plan` called with the default
/// calibration's costs, plan_costs) gives the predicted gauges, else measured values only.
/// `make_plan` is called only when metrics were asked for.
std::unique_ptr<TrainMetrics> start_metrics(
    const MetricsOptions& o, const runtime::Comm& comm, const runtime::TrainConfig& config,
    const kernels::Resources& res,
    const std::function<cluster::Plan(const cluster::CostModel&)>& make_plan = {});

}  // namespace halo::cli
