// `halo train`'s heterogeneous node classification (typed directories and their partitions:
// R-GCN, HGT): its registration, its defaults and its run.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <halo/cluster/hetero_plan.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/sampler/hetero_sampler.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_hetero.hpp>
#include <halo/tools/halo/train_task.hpp>

namespace halo::cli {
namespace {

std::string format(const char* fmt, auto... args) {
  char line[768];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

nlohmann::json stages_json(const runtime::Metrics& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, seconds] : t) j[name] = seconds;
  return j;
}

/// The heterogeneous task's value of a run flag: the command line's, else its default.
template <class T>
T given_or(const TrainOptions& o, const char* flag, T given, T fallback) {
  return was_given(o, flag) ? given : fallback;
}

}  // namespace

datasets::HeteroGraph load_hetero(const kernels::Resources& host, const TrainOptions& o) {
  datasets::LoadOptions load;
  load.offline = o.data.offline;
  load.synthetic_mag = o.data.mag;
  std::optional<int> split;
  if (was_given(o, "--split")) split = o.split;
  return datasets::load_hetero_dataset(host, o.data.dataset, split, load);
}

runtime::TrainConfig hetero_train_config(const TrainOptions& o,
                                         const std::vector<std::string>& relations) {
  runtime::TrainConfig c;
  const int layers = given_or(o, "--layers", o.layers, HeteroDefaults::kLayers);
  const std::int64_t hidden = given_or(o, "--hidden", o.hidden, HeteroDefaults::kHidden);
  const float dropout = given_or(o, "--dropout", o.dropout, HeteroDefaults::kDropout);
  c.hetero.kind = nn::parse_hetero_layer_kind(given_or<std::string>(o, "--model", o.model, "rgcn"));
  c.hetero.num_layers = layers;
  c.hetero.hidden = hidden;
  c.hetero.dropout = dropout;
  c.hetero.num_bases = o.num_bases;
  c.hetero.heads = o.heads;
  c.hetero.featureless = nn::parse_featureless_input(o.featureless);
  c.epochs = given_or(o, "--epochs", o.epochs, HeteroDefaults::kEpochs);
  c.lr = given_or(o, "--lr", o.lr, HeteroDefaults::kLr);
  c.weight_decay = given_or(o, "--weight-decay", o.weight_decay, HeteroDefaults::kWeightDecay);
  c.seed = o.seed;
  // Raw by default: row-normalised bag-of-words rows start every HGT attention score near 0
  // and cost R-GCN 0.03 Macro-F1 on ACM (bench/results/hgnn.md, "Defaults").
  c.normalize_features = o.normalize;
  if (o.mode == "mini-batch") {
    c.mini_batch = o.mb;
    c.mini_batch->cache_policy = runtime::parse_cache_policy(o.cache_policy);
    try {
      c.mini_batch->relation_fanouts = sampler::parse_hetero_fanouts(o.fanouts, relations);
    } catch (const LogicError& e) {
      throw UsageError(e.what());
    }
    if (static_cast<int>(c.mini_batch->relation_fanouts.size()) != layers)
      throw UsageError("--fanouts " + o.fanouts + ": one fan-out list per layer expected (" +
                       std::to_string(layers) + " layers, " +
                       std::to_string(c.mini_batch->relation_fanouts.size()) + " given)");
  }
  return c;
}

namespace {

class HeteroRun final : public TaskRun {
 public:
  HeteroRun(const TrainCommandOptions& o, runtime::Comm& world, const kernels::Resources& res)
      : m_o(o), m_res(res) {
    m_model = given_or<std::string>(o, "--model", o.model, "rgcn");
    m_layers = given_or(o, "--layers", o.layers, HeteroDefaults::kLayers);
    m_hidden = given_or(o, "--hidden", o.hidden, HeteroDefaults::kHidden);
    m_dropout = given_or(o, "--dropout", o.dropout, HeteroDefaults::kDropout);
    m_lr = given_or(o, "--lr", o.lr, HeteroDefaults::kLr);
    m_weight_decay = given_or(o, "--weight-decay", o.weight_decay, HeteroDefaults::kWeightDecay);
    m_epochs = given_or(o, "--epochs", o.epochs, HeteroDefaults::kEpochs);
    if (was_given(o, "--split")) m_split = o.split;
    m_shard = o.partitions.empty()
                  ? runtime::local_hetero_shard(load_hetero(runtime::host_resources(res), o))
                  : runtime::open_hetero_shard(res, world, o.partitions);
    const datasets::HeteroGraph& g = m_shard.graph;
    m_from_partition = !o.partitions.empty();
    m_num_train = m_shard.layout.num_train;
    if (m_num_train == 0)
      throw UsageError("dataset '" + g.name + "' has an empty train split: nothing to train on");
    std::vector<std::string> relations;
    for (const auto& r : g.relations) relations.push_back(r.name);
    m_config = hetero_train_config(o, relations);
  }
  runtime::Comm& comm() override { return *m_shard.comm; }
  runtime::TrainConfig& config() override { return m_config; }
  /// The live metrics with this run's plan (on the CPU).
  std::unique_ptr<TrainMetrics> start_metrics(const MetricsOptions& o,
                                              const kernels::Resources& res) override {
    if (res.device() != kernels::Device::Cpu) return cli::start_metrics(o, comm(), m_config, res);
    return cli::start_metrics(o, comm(), m_config, res, [&](const cluster::CostModel& costs) {
      return cluster::make_hetero_plan(cluster::hetero_shard_counts(m_shard, m_config), m_config,
                                       costs, "cpu", res.cpu_exec().num_threads);
    });
  }
  /// The labelled split trained on (one process): --split, else the dataset's smallest.
  int split() const {
    if (m_split) return *m_split;
    const std::vector<int> splits = datasets::hetero_splits(m_o.data.dataset);
    return splits.empty() ? 0 : splits.front();
  }
  std::string banner() const override {
    const datasets::HeteroGraph& g = m_shard.graph;
    const int ranks = m_shard.comm->size(), threads = m_res.cpu_exec().num_threads;
    const char* mode = m_config.mini_batch ? "mini-batch" : "full-graph";
    if (m_from_partition)
      return format(
          "halo train: %s, part 0 of %d (%lld local nodes), %s, %s across %d rank%s, %d "
          "thread%s each\n",
          m_o.partitions.c_str(), ranks, static_cast<long long>(g.num_nodes()), m_model.c_str(),
          mode, ranks, ranks > 1 ? "s" : "", threads, threads > 1 ? "s" : "");
    const auto& target = g.node_types[static_cast<std::size_t>(g.target_type)];
    return format(
        "halo train: %s (%d node types, %lld nodes, %d relations with reverses, %lld edges; "
        "target '%s', %d classes, %lld training nodes), %s, %s, %s, %d thread%s\n",
        g.name.c_str(), g.num_types(), static_cast<long long>(g.num_nodes()),
        static_cast<int>(g.relations.size()), static_cast<long long>(g.num_edges()),
        target.name.c_str(), g.num_classes, static_cast<long long>(g.train_idx.numel()),
        m_model.c_str(), mode, m_res.device() == kernels::Device::Cuda ? "cuda" : "cpu", threads,
        threads > 1 ? "s" : "");
  }
  runtime::TrainResult train(const runtime::EpochCallback& on_epoch,
                             const runtime::StepCallback& on_step) override {
    m_run = std::make_unique<runtime::HeteroTrainRun>(
        runtime::train(m_res, m_shard, m_config, on_epoch, on_step));
    return m_run->result;
  }
  std::vector<std::pair<std::string, std::string>> progress() const override {
    return {{"train", "train_accuracy"},
            {"val", "val_accuracy"},
            {"val macro-F1", "val_macro_f1"},
            {"test", "test_accuracy"}};
  }
  std::string summary(const runtime::TrainResult& r) const override {
    const runtime::Metrics& m = r.metrics;
    return format(
               "best epoch %d: val accuracy %.4f, val macro-F1 %.4f; test accuracy %.4f, "
               "macro-F1 %.4f, micro-F1 %.4f; median epoch %.3f ms; trained in %.2f s\n",
               r.best_epoch, m.at("val_accuracy"), m.at("val_macro_f1"), m.at("test_accuracy"),
               m.at("test_macro_f1"), m.at("test_micro_f1"), r.epoch_time_median_s * 1e3,
               r.train_time_s) +
           format(
               "stages per epoch (median): feature projection %.3f ms, neighbour aggregation "
               "%.3f ms, semantic aggregation %.3f ms, subgraph build %.3f ms\n",
               r.stage_times.at("feature_projection_s") * 1e3,
               r.stage_times.at("neighbor_aggregation_s") * 1e3,
               r.stage_times.at("semantic_aggregation_s") * 1e3,
               r.stage_times.at("subgraph_build_s") * 1e3);
  }
  nlohmann::json json(const runtime::TrainResult& r) const override {
    const datasets::HeteroGraph& g = m_shard.graph;
    nlohmann::json types = nlohmann::json::array(), relations = nlohmann::json::array();
    for (const auto& t : g.node_types)
      types.push_back({{"name", t.name},
                       {"num_nodes", t.num_nodes},
                       {"features", t.has_features() ? kernels::num_cols(t.features) : 0}});
    for (const auto& rel : g.relations)
      relations.push_back({{"name", rel.name},
                           {"src_type", g.node_types[static_cast<std::size_t>(rel.src_type)].name},
                           {"dst_type", g.node_types[static_cast<std::size_t>(rel.dst_type)].name},
                           {"num_edges", rel.adj.num_edges()}});
    nlohmann::json epochs = nlohmann::json::array();
    for (const auto& s : r.history) epochs.push_back(stages_json(s.stage_times));
    const std::optional<runtime::MiniBatchConfig>& mb = m_config.mini_batch;
    nlohmann::json j = {
        {"dataset", g.name},
        {"num_nodes", g.num_nodes()},
        {"num_edges", g.num_edges()},
        {"node_types", types},
        {"relations", relations},
        {"target_type", g.node_types[static_cast<std::size_t>(g.target_type)].name},
        {"num_classes", g.num_classes},
        {"model", m_model},
        {"mode", mb ? "mini-batch" : "full-graph"},
        {"batch_size", mb ? nlohmann::json(mb->batch_size) : nlohmann::json()},
        {"fanouts", mb ? nlohmann::json(mb->relation_fanouts) : nlohmann::json()},
        {"batches_per_epoch", r.batches_per_epoch},
        {"sampled_edges_per_epoch",
         r.history.empty() ? nlohmann::json() : nlohmann::json(r.history.back().sampled_edges)},
        {"epochs", m_epochs},
        {"layers", m_layers},
        {"hidden", m_hidden},
        {"dropout", m_dropout},
        {"num_bases", m_o.num_bases},
        {"heads", m_o.heads},
        {"featureless", m_o.featureless},
        {"lr", m_lr},
        {"weight_decay", m_weight_decay},
        {"stage_times_median_s", stages_json(r.stage_times)},
        {"stage_times_per_epoch_s", epochs}};
    if (mb)
      j.update({{"cache_mb", mb->cache_mb},
                {"cache_policy", runtime::to_string(mb->cache_policy)},
                {"cache_hit_rate", r.cache_hit_rate},
                {"feature_bytes_per_epoch", r.feature_bytes_per_epoch}});
    if (m_from_partition) {
      // The rank 0 part's sizes above; the partition's split is the one it was written with.
      j["num_train"] = m_num_train;
    } else {
      j["split"] = split();
    }
    return j;
  }
  void save_model(const std::string& path, const runtime::TrainResult& r) override {
    runtime::save_hetero_model(m_res, path, m_run->model, m_config, m_shard, r);
  }

 private:
  const TrainCommandOptions& m_o;
  const kernels::Resources& m_res;
  runtime::TrainConfig m_config;
  std::string m_model;
  int m_layers = 0, m_epochs = 0;
  std::int64_t m_hidden = 0;
  float m_dropout = 0;
  double m_lr = 0, m_weight_decay = 0;
  std::optional<int> m_split;
  runtime::HeteroShard m_shard;
  bool m_from_partition = false;  // --partitions: a partition directory, not a dataset
  std::int64_t m_num_train = 0;
  std::unique_ptr<runtime::HeteroTrainRun> m_run;
};

bool given(const TrainCommandOptions& o, const char* flag) { return was_given(o, flag); }

}  // namespace

TaskRegistration hetero_classification_task() {
  return {
      "heterogeneous-node-classification",
      "heterogeneous datasets",
      [](const TrainCommandOptions& o) { return is_hetero_run(o); },
      {{"--features", [](const TrainCommandOptions& o) { return given(o, "--features"); },
        "each node type brings its own features"},

       {"--prefetch",
        [](const TrainCommandOptions& o) { return o.mode == "mini-batch" && o.mb.prefetch > 0; },
        "heterogeneous mini-batches are prepared on the training thread"}},
      [](const TrainCommandOptions& o) {
        check_task(o);
        if (given(o, "--model") && o.model != "rgcn" && o.model != "hgt")
          throw UsageError("--model " + o.model + ": '" + o.data.dataset +
                           "' is heterogeneous (a typed directory); use --model rgcn or hgt");
        if (!o.partitions.empty() && given(o, "--split"))
          throw UsageError(
              "--split: a partition holds the split it was written with (halo partition "
              "--split)");
      },
      [](const TrainCommandOptions& o, runtime::Comm& world, const kernels::Resources& res) {
        return std::unique_ptr<TaskRun>(new HeteroRun(o, world, res));
      }};
}

}  // namespace halo::cli
