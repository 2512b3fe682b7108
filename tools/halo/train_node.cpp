// `halo train`'s node classification (homogeneous datasets: GCN, GraphSAGE): its registration
// and its run.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include <halo/cluster/plan.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/tools/halo/metrics_options.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_task.hpp>

namespace halo::cli {
namespace {

std::string device_name(const kernels::Resources& res) {
  return res.device() == kernels::Device::Cuda ? "cuda:" + std::to_string(res.cuda_exec().device_id)
                                               : std::string("cpu");
}

std::string format(const char* fmt, auto... args) {
  char line[512];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

/// `data` under the run's memory budget (a larger store opens mapped).
DatasetOptions with_budget(DatasetOptions data, std::size_t budget) {
  data.memory_budget = budget;
  return data;
}

class NodeRun final : public TaskRun {
 public:
  NodeRun(const TrainCommandOptions& o, runtime::Comm& world, const kernels::Resources& res)
      : m_o(o),
        m_res(res),
        m_config(train_config(o)),
        m_shard(open_data(res, world, with_budget(o.data, m_config.memory_budget), o.partitions)) {
    if (m_shard.part.all_train.numel() == 0)
      throw UsageError("dataset '" + m_shard.dataset +
                       "' has no training nodes (its train split is empty): nothing to train on");
    if (m_shard.part.features_by_original &&
        (!m_config.mini_batch || m_config.mini_batch->eval_fanouts.empty()))
      throw UsageError(format(
          "--partitions %s: this rank's part (its graph and %lld owned feature rows) is larger "
          "than --memory-budget %zu bytes, so its rows are read from the store's file; a "
          "full-graph pass (%s) needs them in memory: train with --mode mini-batch and "
          "--eval-fanouts, or give a larger --memory-budget",
          m_o.partitions.c_str(), static_cast<long long>(m_shard.part.num_owned()),
          m_config.memory_budget,
          m_config.mini_batch ? "the evaluation without --eval-fanouts" : "--mode full-graph"));
    if (m_config.mini_batch)
      fit_envelope(*m_config.mini_batch);
    else
      fit_full_graph();
  }
  /// Full graph on a store opened mapped (larger than --memory-budget): the pass holds the
  /// whole graph, every node's features and every layer's activations at once, which no
  /// budget below them keeps. Refused with one usage line naming what it needs (halo plan's
  /// peak for this run) where that exceeds the budget; mini-batch training reads the store
  /// from disk instead.
  void fit_full_graph() const {
    const std::size_t budget = m_config.memory_budget;
    if (budget == 0 || !m_shard.part.graph.indices.mapped()) return;
    const cluster::Plan plan = cluster::make_plan(
        cluster::shard_plan_input(m_shard), m_config, cluster::CostModel{},
        m_res.device() == kernels::Device::Cuda ? "cuda" : "cpu", m_res.cpu_exec().num_threads);
    const auto need = static_cast<std::size_t>(plan.peak_host_bytes_per_rank);
    if (need <= budget) return;
    throw UsageError(format(
        "--mode full-graph on the store '%s' needs about %zu bytes (%.1f MiB) in memory, "
        "its graph, features and every node's activations at once (halo plan's peak), more "
        "than --memory-budget %zu bytes; train with --mode mini-batch, which reads the store "
        "from disk, or give a larger --memory-budget",
        m_o.data.dataset.c_str(), need, static_cast<double>(need) / 1048576.0, budget));
  }
  /// The sampler's envelope (and the evaluation's, --eval-fanouts), one per batch slot, within
  /// --memory-budget: prefetch auto prepares nothing ahead where a second slot does not fit; a
  /// budget below one slot, or an explicit --prefetch whose slots do not fit, is a usage error
  /// that says the least budget that works.
  void fit_envelope(runtime::MiniBatchConfig& mb) const {
    const partition::Part& part = m_shard.part;
    const sampler::DegreeStats stats{part.book().num_nodes(), part.training_edges, part.max_degree};
    std::size_t slot = sampler::plan_envelope(stats, mb.batch_size, mb.fanouts, mb.replace).bytes();
    if (!mb.eval_fanouts.empty())
      slot += sampler::plan_envelope(stats, mb.batch_size, mb.eval_fanouts, mb.replace).bytes();
    const std::size_t budget = m_config.memory_budget;
    if (budget == 0) return;
    const std::size_t slots =
        1 + static_cast<std::size_t>(mb.prefetch == runtime::kAutoPrefetch ? 0 : mb.prefetch);
    if (mb.prefetch == runtime::kAutoPrefetch && budget < 2 * slot) mb.prefetch = 0;
    if (budget < slots * slot)
      throw UsageError(
          format("--memory-budget %zu bytes is below the sampler's envelope of this "
                 "run: at least %zu bytes (%.1f MiB) for batch size %lld with %zu "
                 "batch slot%s (--prefetch %d)",
                 budget, slots * slot, static_cast<double>(slots * slot) / 1048576.0,
                 static_cast<long long>(mb.batch_size), slots, slots > 1 ? "s" : "",
                 static_cast<int>(slots) - 1));
  }
  runtime::Comm& comm() override { return *m_shard.comm; }
  runtime::TrainConfig& config() override { return m_config; }
  std::string banner() const override {
    const int ranks = m_shard.comm->size(), threads = m_res.cpu_exec().num_threads;
    return format(
        "halo train: %s (%lld nodes, %lld training edges, %lld features, %d classes), %s, %s, "
        "%s, %d rank%s, %d thread%s\n",
        m_shard.dataset.c_str(), static_cast<long long>(m_shard.part.book().num_nodes()),
        static_cast<long long>(m_shard.part.training_edges),
        static_cast<long long>(m_shard.num_features), m_shard.part.num_classes, m_o.model.c_str(),
        m_o.mode.c_str(), device_name(m_res).c_str(), ranks, ranks > 1 ? "s" : "", threads,
        threads > 1 ? "s" : "");
  }
  std::unique_ptr<TrainMetrics> start_metrics(const MetricsOptions& o,
                                              const kernels::Resources& res) override {
    return cli::start_metrics(o, m_shard, m_config, res);
  }
  runtime::TrainResult train(const runtime::EpochCallback& on_epoch,
                             const runtime::StepCallback& on_step) override {
    m_run = std::make_unique<runtime::TrainRun>(
        runtime::train(m_res, m_shard, m_config, on_epoch, on_step));
    return m_run->result;
  }
  std::vector<std::pair<std::string, std::string>> progress() const override {
    return {{"train", "train_accuracy"}, {"val", "val_accuracy"}, {"test", "test_accuracy"}};
  }
  std::string summary(const runtime::TrainResult& r) const override {
    std::string s = format(
        "best epoch %d: val accuracy %.4f, test accuracy %.4f; median epoch %.3f ms; trained in "
        "%.2f s\n",
        r.best_epoch, r.metrics.at("val_accuracy"), r.metrics.at("test_accuracy"),
        r.epoch_time_median_s * 1e3, r.train_time_s);
    if (m_o.mode == "mini-batch") {
      s += format(
          "sampler: envelope %.1f MB measured (bound %.1f MB), peak batch %.1f MB%s; ",
          static_cast<double>(r.sampler_envelope_bytes) / 1e6,
          static_cast<double>(r.sampler_bound_bytes) / 1e6,
          static_cast<double>(r.sampler_peak_bytes) / 1e6,
          r.sampler_growths > 0
              ? format(", grown %lld times", static_cast<long long>(r.sampler_growths)).c_str()
              : "");
      if (r.world_size > 1)
        s += format(
            "remote rows: %.1f KB fetched per epoch, cache hit rate %.0f%%, %.3f ms not hidden\n",
            static_cast<double>(r.feature_bytes_per_epoch) / 1e3, r.cache_hit_rate * 100,
            r.batch_wait_s * 1e3);
      else if (r.disk_bytes_per_epoch == 0)  // one process: every row in memory
        s += format("batches waited %.3f ms for their inputs per epoch\n", r.batch_wait_s * 1e3);
      if (r.disk_bytes_per_epoch > 0)  // rows read from the store's file
        s += format(
            "rows read from the store's file: %.1f MB per epoch%s, %.1f%% from the row "
            "cache, %.3f s reading, batches waited %.3f s per epoch\n",
            static_cast<double>(r.disk_bytes_per_epoch) / 1e6,
            r.world_size > 1 ? " (all ranks)" : "", r.disk_cache_hit_rate * 100, r.disk_read_s,
            r.batch_wait_s);
      if (!m_config.mini_batch->eval_fanouts.empty())
        s += format("evaluation: sampled, %.1f MB of sampler envelope, %.1f MB read\n",
                    static_cast<double>(r.evaluation_bytes) / 1e6,
                    static_cast<double>(r.evaluation_read_bytes) / 1e6);
      else if (r.evaluation_bytes > 0)
        s += format("evaluation: layer-wise, %.1f MB of buffers%s\n",
                    static_cast<double>(r.evaluation_bytes) / 1e6,
                    r.evaluation_spill_bytes > 0
                        ? format(", hidden layers in a temporary file (%.1f MB written)",
                                 static_cast<double>(r.evaluation_spill_bytes) / 1e6)
                              .c_str()
                        : "");
    } else if (r.world_size > 1) {
      s += format(
          "exchange: %.1f KB per epoch, %.3f ms per rank, %.0f%% hidden; all-reduce %.3f ms\n",
          static_cast<double>(r.exchange_bytes_per_epoch) / 1e3, r.exchange_time_s * 1e3,
          r.exchange_hidden_fraction * 100, r.allreduce_time_s * 1e3);
    }
    return s;
  }
  nlohmann::json json(const runtime::TrainResult& r) const override {
    nlohmann::json j = {{"dataset", m_shard.dataset},
                        {"num_nodes", m_shard.part.book().num_nodes()},
                        {"num_edges", m_shard.num_edges},
                        {"training_edges", m_shard.part.training_edges},
                        {"model", m_o.model},
                        {"mode", m_o.mode},
                        {"epochs", m_o.epochs},
                        {"layers", m_o.layers},
                        {"hidden", m_config.model.hidden},
                        {"heads", m_config.model.heads},
                        {"out_heads", m_config.model.out_heads},
                        {"dropout", m_config.model.dropout},
                        {"lr", m_config.lr},
                        {"weight_decay", m_config.weight_decay}};
    if (m_o.mode == "mini-batch") {
      const runtime::MiniBatchConfig& mb = m_o.mb;
      j.update(
          {{"batch_size", mb.batch_size},
           {"fanouts", mb.fanouts},
           {"replace", mb.replace},
           {"prefetch", r.prefetch},
           {"cache_mb", mb.cache_mb},
           {"cache_policy", m_o.cache_policy},
           {"batches_per_epoch", r.batches_per_epoch},
           {"sampler_envelope_bytes", r.sampler_envelope_bytes},
           {"sampler_peak_bytes", r.sampler_peak_bytes},
           {"sampler_bound_bytes", r.sampler_bound_bytes},
           {"sampler_growths", r.sampler_growths},
           {"eval_fanouts", mb.eval_fanouts},
           {"evaluation_bytes", r.evaluation_bytes},
           {"evaluation_spill_bytes", r.evaluation_spill_bytes},
           {"evaluation_read_bytes", r.evaluation_read_bytes},
           // The last epoch's sampled block entries, over all ranks (mini-batch).
           {"sampled_edges_per_epoch", r.history.empty() || r.history.back().sampled_edges.empty()
                                           ? std::int64_t{0}
                                           : r.history.back().sampled_edges.front()},
           {"host_syncs_per_batch", r.host_syncs_per_batch},
           {"sampling_bytes_per_epoch", r.sampling_bytes_per_epoch},
           {"feature_bytes_per_epoch", r.feature_bytes_per_epoch},
           {"cache_hit_rate", r.cache_hit_rate},
           {"fetch_time_s", r.fetch_time_s},
           {"disk_bytes_per_epoch", r.disk_bytes_per_epoch},
           {"disk_cache_hit_rate", r.disk_cache_hit_rate},
           {"disk_read_s", r.disk_read_s},
           {"batch_wait_s", r.batch_wait_s}});
    } else {
      j.update({{"overlap", !m_o.no_overlap},
                {"exchange_bytes_per_epoch", r.exchange_bytes_per_epoch},
                {"exchange_time_s", r.exchange_time_s},
                {"exchange_exposed_s", r.exchange_exposed_s},
                {"exchange_window_s", r.exchange_window_s},
                {"compute_time_s", r.compute_time_s},
                {"exchange_hidden_fraction", r.exchange_hidden_fraction}});
    }
    return j;
  }
  void save_model(const std::string& path, const runtime::TrainResult& r) override {
    m_run->model.save(m_res, path,
                      runtime::model_file_info(m_config, r, m_shard.dataset,
                                               m_o.partitions.empty() ? m_o.data.features : ""));
  }

 private:
  const TrainCommandOptions& m_o;
  const kernels::Resources& m_res;
  runtime::TrainConfig m_config;
  runtime::Shard m_shard;
  std::unique_ptr<runtime::TrainRun> m_run;
};

}  // namespace

TaskRegistration node_classification_task() {
  return {"node",
          "node classification",
          [](const TrainCommandOptions&) { return true; },  // the rest: homogeneous datasets
          {},
          [](const TrainCommandOptions& o) {
            check_task(o);
            check_homogeneous_run(o);
          },
          [](const TrainCommandOptions& o, runtime::Comm& world, const kernels::Resources& res) {
            return std::unique_ptr<TaskRun>(new NodeRun(o, world, res));
          }};
}

}  // namespace halo::cli
