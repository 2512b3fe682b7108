// `halo train --task link`: the link-prediction task on a temporal dataset (EvolveGCN-O, GCRN),
// its registration and its run.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <halo/cluster/link_plan.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_link.hpp>
#include <halo/tools/halo/train_task.hpp>

namespace halo::cli {
namespace {

std::string format(const char* fmt, auto... args) {
  char line[768];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

std::int64_t total(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (const std::int64_t x : v) s += x;
  return s;
}

}  // namespace

datasets::TemporalGraph load_link_events(const TrainOptions& o) {
  datasets::TemporalGraph g = datasets::load_temporal_dataset(
      o.data.dataset, datasets::parse_temporal_layout(o.data.columns));
  // Training predicts later snapshots' events from earlier ones: a file with fewer than two
  // distinct times has nothing to learn from (said here, naming the file, rather than as "no
  // training step" after the snapshots are cut).
  if (g.num_events() == 0 || g.time.front() == g.time.back())
    throw IoError(datasets::temporal_events_file(o.data.dataset)->string() + ": " +
                  std::to_string(g.num_events()) + " event" + (g.num_events() == 1 ? "" : "s") +
                  (g.num_events() > 1 ? ", all at one time" : "") +
                  "; link prediction needs events at several times (its snapshots predict "
                  "later events from earlier ones)");
  return g;
}

datasets::SnapshotConfig link_snapshots(const TrainOptions& o) {
  // Each step's own events by default (EvolveGCN's adj_mat_time_window 1), not the cumulative
  // graph.
  datasets::SnapshotConfig s = o.snapshots;
  if (!was_given(o, "--window-snapshots")) s.window_snapshots = 1;
  return s;
}

runtime::TemporalShard link_shard(const kernels::Resources& res, runtime::Comm& world,
                                  const datasets::TemporalGraph& g,
                                  const datasets::SnapshotConfig& snapshots,
                                  const std::string& partitions, double train_fraction) {
  if (partitions.empty()) return runtime::local_temporal_shard(res, g, snapshots, train_fraction);
  return runtime::distributed_temporal_shard(
      res, g, snapshots,
      runtime::read_snapshot_owners(partitions, g.num_nodes(),
                                    datasets::snapshot_boundaries(g, snapshots), world.size()),
      world, train_fraction);
}

namespace {

class LinkRun final : public TaskRun {
 public:
  LinkRun(const TrainCommandOptions& o, runtime::Comm& world, const kernels::Resources& res)
      : m_o(o), m_res(res), m_config(train_config(o)) {
    const datasets::TemporalGraph g = load_link_events(o);
    m_snapshots = link_snapshots(o);
    // One process, or this rank's part of every snapshot under the series' owners.
    m_shard = link_shard(res, world, g, m_snapshots, o.partitions, m_config.link.train_fraction);
    if (const std::string e = runtime::link_split_problem(m_shard.num_steps(), m_config.link);
        !e.empty())
      throw UsageError(e);
    m_split = runtime::link_split(m_shard.num_steps(), m_config.link);
    // What moving the snapshots to the ranks cost, summed over the ranks: per snapshot the
    // deltas (or rows sent whole) and the migrated rows, against resending it; and the halo's
    // degrees (the GCN normalisation needs them either way).
    const auto steps = static_cast<std::size_t>(m_shard.num_steps());
    m_moved.assign(steps, 0), m_resend.assign(steps, 0), m_delta.assign(steps, 0);
    m_migration.assign(steps, 0), m_degrees.assign(steps, 0);
    if (m_shard.comm->size() > 1) {
      for (std::size_t t = 0; t < steps; ++t) {
        m_delta[t] = m_shard.traffic[t].delta_bytes;
        m_migration[t] = m_shard.traffic[t].migration_bytes;
        m_degrees[t] = m_shard.degree_bytes[t];
        m_resend[t] = m_shard.traffic[t].resend_bytes;
      }
      for (auto* v : {&m_delta, &m_migration, &m_degrees, &m_resend})
        world.allreduce(kernels::Span<std::int64_t>{v->data(), static_cast<std::int64_t>(steps)},
                        runtime::ReduceOp::Sum);
      for (std::size_t t = 0; t < steps; ++t) m_moved[t] = m_delta[t] + m_migration[t];
    }
  }
  runtime::Comm& comm() override { return *m_shard.comm; }
  runtime::TrainConfig& config() override { return m_config; }
  /// The live metrics with this run's plan: in one process its snapshots' counts; across ranks
  /// this rank's rows of every snapshot, every other rank's taken to be like them.
  std::unique_ptr<TrainMetrics> start_metrics(const MetricsOptions& o,
                                              const kernels::Resources& res) override {
    return cli::start_metrics(o, comm(), m_config, res, [&](const cluster::CostModel& costs) {
      return cluster::make_link_plan(counts(), m_config, costs, "cpu", res.cpu_exec().num_threads);
    });
  }
  std::string banner() const override {
    const int ranks = m_shard.comm->size(), threads = m_res.cpu_exec().num_threads;
    std::string s = format(
        "halo train: %s (%lld nodes, %lld events, %lld snapshots, %lld degree features), %s, "
        "link prediction: %lld / %lld / %lld train / val / test steps, window %d, %d rank%s, "
        "%d thread%s\n",
        m_shard.dataset.c_str(), static_cast<long long>(m_shard.num_nodes),
        static_cast<long long>(m_shard.num_events), static_cast<long long>(m_shard.num_steps()),
        static_cast<long long>(m_shard.num_features),
        nn::to_string(m_config.link.model.kind).c_str(), static_cast<long long>(m_split.train_end),
        static_cast<long long>(m_split.val_end - m_split.train_end),
        static_cast<long long>(m_split.test_end - m_split.val_end), m_config.link.window, ranks,
        ranks == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
    if (ranks > 1)
      s += format(
          "halo train: snapshots moved to the ranks in %.1f KB (deltas %.1f, migrations %.1f) "
          "against %.1f KB resending each snapshot; halo degrees %.1f KB\n",
          static_cast<double>(total(m_moved)) / 1e3, static_cast<double>(total(m_delta)) / 1e3,
          static_cast<double>(total(m_migration)) / 1e3, static_cast<double>(total(m_resend)) / 1e3,
          static_cast<double>(total(m_degrees)) / 1e3);
    return s;
  }
  runtime::TrainResult train(const runtime::EpochCallback& on_epoch,
                             const runtime::StepCallback& on_step) override {
    m_run = std::make_unique<runtime::LinkTrainRun>(
        runtime::train(m_res, m_shard, m_config, on_epoch, on_step));
    return m_run->result;
  }
  std::vector<std::pair<std::string, std::string>> progress() const override {
    return {{"val MRR", "val_mrr"}, {"val MAP", "val_map"}};
  }
  std::string summary(const runtime::TrainResult& r) const override {
    const runtime::Metrics& m = r.metrics;
    return format(
        "best epoch %d (by val %s): val MRR %.4f, MAP %.4f; test MRR %.4f, MAP %.4f, AUC %.4f; "
        "median epoch %.3f s; trained in %.2f s\n",
        r.best_epoch, runtime::to_string(m_config.link.select_by).c_str(), m.at("val_mrr"),
        m.at("val_map"), m.at("test_mrr"), m.at("test_map"), m.at("test_auc"),
        r.epoch_time_median_s, r.train_time_s);
  }
  nlohmann::json json(const runtime::TrainResult& r) const override {
    const runtime::LinkPredictionConfig& lc = m_config.link;
    nlohmann::json j = {{"dataset", m_shard.dataset},
                        {"model", nn::to_string(lc.model.kind)},
                        {"num_nodes", m_shard.num_nodes},
                        {"num_events", m_shard.num_events},
                        {"snapshots", m_shard.num_steps()},
                        {"window_snapshots", m_snapshots.window_snapshots},
                        {"input_features", m_shard.num_features},
                        {"train_steps", m_split.train_end},
                        {"val_steps", m_split.val_end - m_split.train_end},
                        {"test_steps", m_split.test_end - m_split.val_end},
                        {"window", lc.window},
                        {"negatives", lc.negatives},
                        {"positive_weight", lc.positive_weight},
                        {"negative_weight", lc.negative_weight},
                        {"hidden", lc.model.hidden},
                        {"scorer_hidden", lc.scorer_hidden},
                        {"epochs", m_config.epochs},
                        {"lr", m_config.lr},
                        {"weight_decay", m_config.weight_decay},
                        {"select_by", runtime::to_string(lc.select_by)}};
    if (m_shard.comm->size() > 1) {
      j["snapshot_bytes"] = m_moved;
      j["snapshot_delta_bytes"] = m_delta;
      j["snapshot_migration_bytes"] = m_migration;
      j["snapshot_degree_bytes"] = m_degrees;
      j["snapshot_resend_bytes"] = m_resend;
      j["snapshot_bytes_total"] = total(m_moved);
      j["snapshot_resend_bytes_total"] = total(m_resend);
      j["exchange_bytes_per_epoch"] = r.exchange_bytes_per_epoch;
      j["embedding_bytes_per_epoch"] = r.feature_bytes_per_epoch;
      j["exchange_time_s"] = r.exchange_time_s;
      j["exchange_exposed_s"] = r.exchange_exposed_s;
    }
    nlohmann::json history = nlohmann::json::array();
    for (const runtime::EpochStats& s : r.history)
      history.push_back({{"epoch", s.epoch},
                         {"train_loss", s.train_loss},
                         {"val_mrr", json_number(s.metrics.at("val_mrr"))},
                         {"val_map", json_number(s.metrics.at("val_map"))},
                         {"epoch_time_s", s.epoch_time_s}});
    j["history"] = std::move(history);
    return j;
  }
  /// This run's counts for its plan (cluster::link_counts in one process).
  cluster::LinkCounts counts() const {
    if (m_shard.comm->size() == 1) return cluster::link_counts(m_shard);
    cluster::LinkCounts c;
    c.dataset = m_shard.dataset;
    c.num_nodes = m_shard.num_nodes;
    c.num_events = m_shard.num_events;
    c.num_features = m_shard.num_features;
    cluster::LinkPartCounts mine;
    const std::int64_t ranks = m_shard.comm->size();
    for (std::int64_t t = 0; t < m_shard.num_steps(); ++t) {
      const auto i = static_cast<std::size_t>(t);
      const runtime::HaloExchange& x = *m_shard.exchange[i];
      mine.owned.push_back(x.num_owned());
      mine.entries.push_back(x.num_entries());
      mine.halo.push_back(x.num_halo());
      c.entries.push_back(ranks * x.num_entries());
      c.targets.push_back(static_cast<std::int64_t>(m_shard.targets[i].size()));
      c.active.push_back(static_cast<std::int64_t>(m_shard.active[i].size()));
    }
    c.parts.assign(static_cast<std::size_t>(ranks), mine);
    return c;
  }
  void save_model(const std::string& path, const runtime::TrainResult& r) override {
    runtime::save_link_model(m_res, path, m_run->model, m_config, m_shard, m_o.data.columns, r);
  }

 private:
  const TrainCommandOptions& m_o;
  const kernels::Resources& m_res;
  runtime::TrainConfig m_config;
  datasets::SnapshotConfig m_snapshots;
  runtime::TemporalShard m_shard;
  runtime::LinkSplit m_split;
  std::vector<std::int64_t> m_moved, m_resend, m_delta, m_migration, m_degrees;
  std::unique_ptr<runtime::LinkTrainRun> m_run;
};

}  // namespace

TaskRegistration link_prediction_task() {
  return {"link",
          "--task link",
          [](const TrainCommandOptions& o) { return o.task == "link"; },
          {},
          [](const TrainCommandOptions& o) {
            check_task(o);
            if (o.snapshots.num_snapshots > 0)
              if (const std::string e =
                      runtime::link_split_problem(o.snapshots.num_snapshots, train_config(o).link);
                  !e.empty())
                throw UsageError(e);
            if (!datasets::temporal_events_file(o.data.dataset))
              throw UsageError("--task link: '" + o.data.dataset +
                               "' is not a temporal dataset (a directory holding events.tsv or "
                               "events.csv)");
          },
          [](const TrainCommandOptions& o, runtime::Comm& world, const kernels::Resources& res) {
            return std::unique_ptr<TaskRun>(new LinkRun(o, world, res));
          }};
}

}  // namespace halo::cli
