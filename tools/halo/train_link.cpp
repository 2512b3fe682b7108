// `halo train --task link`: the link-prediction task on a temporal dataset.
#include <cstdio>
#include <nlohmann/json.hpp>

#include <halo/datasets/registry.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_link.hpp>

namespace halo::cli {

int run_link_train(const TrainOptions& o, const std::string& json) {
  check_task(o);
  check_output(json, "--json");
  if (!datasets::temporal_events_file(o.data.dataset))
    throw UsageError("--task link: '" + o.data.dataset +
                     "' is not a temporal dataset (a directory holding events.tsv or events.csv)");
  const runtime::TrainConfig config = train_config(o);
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const datasets::TemporalGraph g = datasets::load_temporal_dataset(o.data.dataset);
  // Each step's own events by default (EvolveGCN's adj_mat_time_window 1), not the cumulative
  // graph.
  datasets::SnapshotConfig snapshots = o.snapshots;
  if (!was_given(o, "--window-snapshots")) snapshots.window_snapshots = 1;
  runtime::TemporalShard shard =
      runtime::local_temporal_shard(res, g, snapshots, config.link.train_fraction);
  const runtime::LinkSplit split = runtime::link_split(shard.num_steps(), config.link);
  std::fprintf(stderr,
               "halo train: %s (%lld nodes, %lld events, %lld snapshots, %lld degree features), "
               "%s, link prediction: %lld / %lld / %lld train / val / test steps, window %d, "
               "%d threads\n",
               shard.dataset.c_str(), static_cast<long long>(shard.num_nodes),
               static_cast<long long>(shard.num_events), static_cast<long long>(shard.num_steps()),
               static_cast<long long>(shard.num_features),
               nn::to_string(config.link.model.kind).c_str(),
               static_cast<long long>(split.train_end),
               static_cast<long long>(split.val_end - split.train_end),
               static_cast<long long>(split.test_end - split.val_end), config.link.window,
               res.cpu_exec().num_threads);
  const runtime::EpochCallback on_epoch = [](const runtime::EpochStats& s) {
    if (s.epoch % 10 == 0 || s.epoch == s.epochs || s.epoch == 1)
      std::fprintf(stderr, "epoch %4d/%d  loss %.4f  val MRR %.4f  %.2f s/epoch\n", s.epoch,
                   s.epochs, s.train_loss, s.val_mrr, s.epoch_time_s);
  };
  const runtime::LinkTrainRun run = runtime::train(res, shard, config, on_epoch);
  const runtime::TrainResult& r = run.result;
  std::printf(
      "best epoch %d: val MRR %.4f; test MRR %.4f, MAP %.4f, AUC %.4f; median epoch %.3f s; "
      "trained in %.2f s\n",
      r.best_epoch, r.val_mrr, r.test_mrr, r.test_map, r.test_auc, r.epoch_time_median_s,
      r.train_time_s);
  if (!json.empty()) {
    const runtime::LinkPredictionConfig& lc = config.link;
    const nlohmann::json j = {{"dataset", shard.dataset},
                              {"task", "link"},
                              {"model", nn::to_string(lc.model.kind)},
                              {"num_nodes", shard.num_nodes},
                              {"num_events", shard.num_events},
                              {"snapshots", shard.num_steps()},
                              {"window_snapshots", snapshots.window_snapshots},
                              {"input_features", shard.num_features},
                              {"train_steps", split.train_end},
                              {"val_steps", split.val_end - split.train_end},
                              {"test_steps", split.test_end - split.val_end},
                              {"window", lc.window},
                              {"negatives", lc.negatives},
                              {"positive_weight", lc.positive_weight},
                              {"negative_weight", lc.negative_weight},
                              {"hidden", lc.model.hidden},
                              {"scorer_hidden", lc.scorer_hidden},
                              {"epochs", config.epochs},
                              {"lr", config.lr},
                              {"weight_decay", config.weight_decay},
                              {"seed", config.seed},
                              {"threads", res.cpu_exec().num_threads},
                              {"best_epoch", r.best_epoch},
                              {"val_mrr", json_number(r.val_mrr)},
                              {"test_mrr", json_number(r.test_mrr)},
                              {"test_map", json_number(r.test_map)},
                              {"test_auc", json_number(r.test_auc)},
                              {"final_train_loss", r.final_train_loss},
                              {"epoch_time_median_s", r.epoch_time_median_s},
                              {"preprocess_time_s", r.preprocess_time_s},
                              {"train_time_s", r.train_time_s},
                              {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()}};
    kernels::write_file_atomically(json, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace halo::cli
