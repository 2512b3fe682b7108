// `halo train` on a heterogeneous dataset: flags -> runtime::TrainConfig (hetero), progress,
// summary, --json.
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/sampler/hetero_sampler.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_hetero.hpp>

namespace halo::cli {

namespace {

nlohmann::json stages_json(const runtime::Metrics& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, seconds] : t) j[name] = seconds;
  return j;
}

void print_progress(const runtime::EpochStats& s, bool tty) {
  const bool plain_line = !tty && (s.epoch % 10 == 0 || s.epoch == s.epochs || s.epoch == 1);
  if (!tty && !plain_line) return;
  std::fprintf(stderr,
               "%sepoch %4d/%d  loss %.4f  train %.3f  val %.3f (macro-F1 %.3f)  test %.3f  "
               "%.2f ms/epoch%s",
               tty ? "\r" : "", s.epoch, s.epochs, s.train_loss, s.metrics.at("train_accuracy"),
               s.metrics.at("val_accuracy"), s.metrics.at("val_macro_f1"),
               s.metrics.at("test_accuracy"), s.epoch_time_s * 1e3, tty ? "\033[K" : "\n");
  if (tty && s.epoch == s.epochs) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace

int run_hetero_train(const HeteroTrainOptions& o) {
  const std::unique_ptr<runtime::Comm> world = world_comm(o.partitions, "train");
  prepare_checkpoints(o.checkpoint, world->rank());
  check_output(o.json, "--json");
  check_output_directory(o.checkpoint.dir, "--checkpoint-dir");
  const kernels::Resources res = make_resources(o.device, o.threads, world->size());
  runtime::TrainConfig config;
  config.hetero.kind = nn::parse_hetero_layer_kind(o.model);
  config.hetero.num_layers = o.layers;
  config.hetero.hidden = o.hidden;
  config.hetero.dropout = o.dropout;
  config.hetero.num_bases = o.num_bases;
  config.hetero.heads = o.heads;
  config.hetero.featureless = nn::parse_featureless_input(o.featureless);
  config.model.num_layers = o.layers;
  config.model.hidden = o.hidden;
  config.model.dropout = o.dropout;
  config.epochs = o.epochs;
  config.lr = o.lr;
  config.weight_decay = o.weight_decay;
  config.seed = o.seed;
  config.normalize_features = o.normalize_features;
  config.checkpoint = checkpoint_config(o.checkpoint);
  datasets::LoadOptions load;
  load.offline = o.offline;
  load.synthetic_mag = o.mag;
  runtime::HeteroShard shard = o.partitions.empty()
                                   ? runtime::local_hetero_shard(datasets::load_hetero_dataset(
                                         runtime::host_resources(res), o.dataset, o.split, load))
                                   : runtime::open_hetero_shard(res, *world, o.partitions);
  const datasets::HeteroGraph& g = shard.graph;
  const bool parted = shard.layout.partitioned(), lead = world->rank() == 0;
  const std::int64_t num_train = parted ? shard.layout.num_train : g.train_idx.numel();
  if (num_train == 0)
    throw UsageError("dataset '" + g.name + "' has an empty train split: nothing to train on");
  if (o.mini_batch) {
    config.mini_batch = o.mini_batch;
    std::vector<std::string> relations;
    for (const auto& r : g.relations) relations.push_back(r.name);
    try {
      config.mini_batch->relation_fanouts = sampler::parse_hetero_fanouts(o.fanouts, relations);
    } catch (const LogicError& e) {
      throw UsageError(e.what());
    }
    if (static_cast<int>(config.mini_batch->relation_fanouts.size()) != o.layers)
      throw UsageError("--fanouts " + o.fanouts + ": one fan-out list per layer expected (" +
                       std::to_string(o.layers) + " layers, " +
                       std::to_string(config.mini_batch->relation_fanouts.size()) + " given)");
  }
  const auto& target = g.node_types[static_cast<std::size_t>(g.target_type)];
  if (parted && lead)
    std::fprintf(stderr,
                 "halo train: %s, part 0 of %d (%lld local nodes), %s, %s across %d rank%s, "
                 "%d thread%s each\n",
                 o.partitions.c_str(), world->size(), static_cast<long long>(g.num_nodes()),
                 o.model.c_str(), o.mini_batch ? "mini-batch" : "full-graph", world->size(),
                 world->size() > 1 ? "s" : "", res.cpu_exec().num_threads,
                 res.cpu_exec().num_threads > 1 ? "s" : "");
  else if (!parted)
    std::fprintf(stderr,
                 "halo train: %s (%d node types, %lld nodes, %d relations with reverses, %lld "
                 "edges; target '%s', %d classes, %lld training nodes), %s, %s, %s, %d "
                 "thread%s\n",
                 g.name.c_str(), g.num_types(), static_cast<long long>(g.num_nodes()),
                 static_cast<int>(g.relations.size()), static_cast<long long>(g.num_edges()),
                 target.name.c_str(), g.num_classes, static_cast<long long>(g.train_idx.numel()),
                 o.model.c_str(), o.mini_batch ? "mini-batch" : "full-graph",
                 res.device() == kernels::Device::Cuda ? "cuda" : "cpu", res.cpu_exec().num_threads,
                 res.cpu_exec().num_threads > 1 ? "s" : "");
  const bool tty = isatty(fileno(stderr)) != 0;
  runtime::HeteroTrainRun run =
      runtime::train(res, shard, config, [tty, lead](const runtime::EpochStats& s) {
        if (lead) print_progress(s, tty);
      });
  const runtime::TrainResult& r = run.result;
  if (r.preempted) {  // the requeued run writes the results
    if (lead) report_preemption(r);
    shard.comm->barrier();
    return runtime::kExitPreempted;
  }
  if (!lead) return 0;
  std::printf(
      "best epoch %d: val accuracy %.4f, val macro-F1 %.4f; test accuracy %.4f, macro-F1 "
      "%.4f, micro-F1 %.4f; median epoch %.3f ms; trained in %.2f s\n",
      r.best_epoch, r.metrics.at("val_accuracy"), r.metrics.at("val_macro_f1"),
      r.metrics.at("test_accuracy"), r.metrics.at("test_macro_f1"), r.metrics.at("test_micro_f1"),
      r.epoch_time_median_s * 1e3, r.train_time_s);
  std::printf(
      "stages per epoch (median): feature projection %.3f ms, neighbour aggregation %.3f ms, "
      "semantic aggregation %.3f ms, subgraph build %.3f ms\n",
      r.stage_times.at("feature_projection_s") * 1e3,
      r.stage_times.at("neighbor_aggregation_s") * 1e3,
      r.stage_times.at("semantic_aggregation_s") * 1e3, r.stage_times.at("subgraph_build_s") * 1e3);
  if (!o.json.empty()) {
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
    const std::vector<int> splits =
        parted ? std::vector<int>{} : datasets::hetero_splits(o.dataset);
    nlohmann::json j = {
        {"dataset", g.name},
        {"task", "heterogeneous-node-classification"},
        {"num_nodes", g.num_nodes()},
        {"num_edges", g.num_edges()},
        {"node_types", types},
        {"relations", relations},
        {"target_type", target.name},
        {"num_classes", g.num_classes},
        {"split", o.split.value_or(splits.empty() ? 0 : splits.front())},
        {"model", o.model},
        {"mode", o.mini_batch ? "mini-batch" : "full-graph"},
        {"batch_size", o.mini_batch ? nlohmann::json(o.mini_batch->batch_size) : nlohmann::json()},
        {"fanouts", config.mini_batch ? nlohmann::json(config.mini_batch->relation_fanouts)
                                      : nlohmann::json()},
        {"batches_per_epoch", r.batches_per_epoch},
        {"sampled_edges_per_epoch",
         r.history.empty() ? nlohmann::json() : nlohmann::json(r.history.back().sampled_edges)},
        {"device", res.device() == kernels::Device::Cuda ? "cuda" : "cpu"},
        {"world_size", r.world_size},
        {"threads", res.cpu_exec().num_threads},
        {"epochs", o.epochs},
        {"seed", o.seed},
        {"layers", o.layers},
        {"hidden", o.hidden},
        {"dropout", o.dropout},
        {"num_bases", o.num_bases},
        {"heads", o.heads},
        {"featureless", o.featureless},
        {"lr", o.lr},
        {"weight_decay", o.weight_decay},
        {"test_accuracy", r.metrics.at("test_accuracy")},
        {"test_macro_f1", json_number(r.metrics.at("test_macro_f1"))},
        {"test_micro_f1", json_number(r.metrics.at("test_micro_f1"))},
        {"val_accuracy", json_number(r.metrics.at("val_accuracy"))},
        {"val_macro_f1", json_number(r.metrics.at("val_macro_f1"))},
        {"best_epoch", r.best_epoch},
        {"final_train_loss", r.final_train_loss},
        {"epoch_time_median_s", r.epoch_time_median_s},
        {"stage_times_median_s", stages_json(r.stage_times)},
        {"stage_times_per_epoch_s", epochs},
        {"preprocess_time_s", r.preprocess_time_s},
        {"train_time_s", r.train_time_s},
        {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
    };
    if (!o.checkpoint.dir.empty())
      j.update({{"checkpoint", r.checkpoint},
                {"resumed_from",
                 r.resumed_from.empty() ? nlohmann::json() : nlohmann::json(r.resumed_from)},
                {"preemption_checks", r.preemption_checks},
                {"preemption_check_time_s", r.preemption_check_s}});
    if (o.mini_batch)
      j.update({{"cache_mb", o.mini_batch->cache_mb},
                {"cache_policy", runtime::to_string(o.mini_batch->cache_policy)},
                {"cache_hit_rate", r.cache_hit_rate},
                {"feature_bytes_per_epoch", r.feature_bytes_per_epoch}});
    if (parted) {
      // The rank 0 part's sizes above; the partition's split is the one it was written with.
      j["partitions"] = o.partitions;
      j["num_train"] = num_train;
      j.erase("split");
    }
    kernels::write_file_atomically(o.json, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace halo::cli
