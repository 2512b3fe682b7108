// `halo train --task link`: the link-prediction task on a temporal dataset.
#include <cstdio>
#include <nlohmann/json.hpp>

#include <halo/datasets/registry.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_link.hpp>

namespace halo::cli {

int run_link_train(const TrainOptions& o, const std::string& json,
                   const CheckpointOptions& checkpoint) {
  check_task(o);
  if (o.snapshots.num_snapshots > 0)
    if (const std::string e =
            runtime::link_split_problem(o.snapshots.num_snapshots, train_config(o).link);
        !e.empty())
      throw UsageError(e);
  // The ranks the launcher started: one per part of the snapshot partition series.
  const std::unique_ptr<runtime::Comm> world = world_comm(o.partitions, "train --task link");
  const int rank = world->rank();
  prepare_checkpoints(checkpoint, rank);
  check_output(json, "--json");
  check_output_directory(checkpoint.dir, "--checkpoint-dir");
  if (!datasets::temporal_events_file(o.data.dataset))
    throw UsageError("--task link: '" + o.data.dataset +
                     "' is not a temporal dataset (a directory holding events.tsv or events.csv)");
  runtime::TrainConfig config = train_config(o);
  config.checkpoint = checkpoint_config(checkpoint);
  const kernels::Resources res = make_resources("cpu", o.threads, world->size());
  const datasets::TemporalGraph g = datasets::load_temporal_dataset(
      o.data.dataset, datasets::parse_temporal_layout(o.data.columns));
  // Training predicts later snapshots' events from earlier ones: a file with fewer than two
  // distinct times has nothing to learn from (said here, naming the file, rather than as
  // "no training step" after the snapshots are cut).
  if (g.num_events() == 0 || g.time.front() == g.time.back())
    throw IoError(datasets::temporal_events_file(o.data.dataset)->string() + ": " +
                  std::to_string(g.num_events()) + " event" + (g.num_events() == 1 ? "" : "s") +
                  (g.num_events() > 1 ? ", all at one time" : "") +
                  "; link prediction needs events at several times (its snapshots predict "
                  "later events from earlier ones)");
  // Each step's own events by default (EvolveGCN's adj_mat_time_window 1), not the cumulative
  // graph.
  datasets::SnapshotConfig snapshots = o.snapshots;
  if (!was_given(o, "--window-snapshots")) snapshots.window_snapshots = 1;
  // One process, or this rank's part of every snapshot under the series' owners.
  runtime::TemporalShard shard =
      o.partitions.empty()
          ? runtime::local_temporal_shard(res, g, snapshots, config.link.train_fraction)
          : runtime::distributed_temporal_shard(
                res, g, snapshots,
                runtime::read_snapshot_owners(o.partitions, g.num_nodes(),
                                              datasets::snapshot_boundaries(g, snapshots),
                                              world->size()),
                *world, config.link.train_fraction);
  if (const std::string e = runtime::link_split_problem(shard.num_steps(), config.link); !e.empty())
    throw UsageError(e);
  const runtime::LinkSplit split = runtime::link_split(shard.num_steps(), config.link);
  if (rank == 0)
    std::fprintf(
        stderr,
        "halo train: %s (%lld nodes, %lld events, %lld snapshots, %lld degree features), "
        "%s, link prediction: %lld / %lld / %lld train / val / test steps, window %d, "
        "%d rank%s, %d thread%s\n",
        shard.dataset.c_str(), static_cast<long long>(shard.num_nodes),
        static_cast<long long>(shard.num_events), static_cast<long long>(shard.num_steps()),
        static_cast<long long>(shard.num_features), nn::to_string(config.link.model.kind).c_str(),
        static_cast<long long>(split.train_end),
        static_cast<long long>(split.val_end - split.train_end),
        static_cast<long long>(split.test_end - split.val_end), config.link.window, world->size(),
        world->size() == 1 ? "" : "s", res.cpu_exec().num_threads,
        res.cpu_exec().num_threads == 1 ? "" : "s");
  // What moving the snapshots to the ranks cost, summed over the ranks: per snapshot the
  // deltas (or rows sent whole) and the migrated rows, against resending it; and the halo's
  // degrees (the GCN normalisation needs them either way).
  const auto steps = static_cast<std::size_t>(shard.num_steps());
  std::vector<std::int64_t> moved(steps, 0), resend(steps, 0), delta(steps, 0), migration(steps, 0),
      degrees(steps, 0);
  if (shard.distributed()) {
    for (std::size_t t = 0; t < steps; ++t) {
      delta[t] = shard.traffic[t].delta_bytes;
      migration[t] = shard.traffic[t].migration_bytes;
      degrees[t] = shard.degree_bytes[t];
      resend[t] = shard.traffic[t].resend_bytes;
    }
    for (auto* v : {&delta, &migration, &degrees, &resend})
      world->allreduce(kernels::Span<std::int64_t>{v->data(), static_cast<std::int64_t>(steps)},
                       runtime::ReduceOp::Sum);
    for (std::size_t t = 0; t < steps; ++t) moved[t] = delta[t] + migration[t];
  }
  const auto total = [](const std::vector<std::int64_t>& v) {
    std::int64_t s = 0;
    for (const std::int64_t x : v) s += x;
    return s;
  };
  if (rank == 0 && shard.distributed())
    std::fprintf(stderr,
                 "halo train: snapshots moved to the ranks in %.1f KB (deltas %.1f, migrations "
                 "%.1f) against %.1f KB resending each snapshot; halo degrees %.1f KB\n",
                 static_cast<double>(total(moved)) / 1e3, static_cast<double>(total(delta)) / 1e3,
                 static_cast<double>(total(migration)) / 1e3,
                 static_cast<double>(total(resend)) / 1e3,
                 static_cast<double>(total(degrees)) / 1e3);
  const runtime::EpochCallback on_epoch = [rank](const runtime::EpochStats& s) {
    if (rank == 0 && (s.epoch % 10 == 0 || s.epoch == s.epochs || s.epoch == 1))
      std::fprintf(stderr, "epoch %4d/%d  loss %.4f  val MRR %.4f  MAP %.4f  %.2f s/epoch\n",
                   s.epoch, s.epochs, s.train_loss, s.metrics.at("val_mrr"),
                   s.metrics.at("val_map"), s.epoch_time_s);
  };
  const runtime::LinkTrainRun run = runtime::train(res, shard, config, on_epoch);
  const runtime::TrainResult& r = run.result;
  if (r.preempted) {  // the requeued run writes the results
    if (rank == 0) report_preemption(r);
    world->barrier();
    return runtime::kExitPreempted;
  }
  if (rank != 0) return 0;
  std::printf(
      "best epoch %d (by val %s): val MRR %.4f, MAP %.4f; test MRR %.4f, MAP %.4f, AUC %.4f; "
      "median epoch %.3f s; trained in %.2f s\n",
      r.best_epoch, runtime::to_string(config.link.select_by).c_str(), r.metrics.at("val_mrr"),
      r.metrics.at("val_map"), r.metrics.at("test_mrr"), r.metrics.at("test_map"),
      r.metrics.at("test_auc"), r.epoch_time_median_s, r.train_time_s);
  if (!json.empty()) {
    const runtime::LinkPredictionConfig& lc = config.link;
    nlohmann::json j = {{"dataset", shard.dataset},
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
                        {"select_by", runtime::to_string(lc.select_by)},
                        {"best_epoch", r.best_epoch},
                        {"val_mrr", json_number(r.metrics.at("val_mrr"))},
                        {"val_map", json_number(r.metrics.at("val_map"))},
                        {"test_mrr", json_number(r.metrics.at("test_mrr"))},
                        {"test_map", json_number(r.metrics.at("test_map"))},
                        {"test_auc", json_number(r.metrics.at("test_auc"))},
                        {"final_train_loss", r.final_train_loss},
                        {"epoch_time_median_s", r.epoch_time_median_s},
                        {"preprocess_time_s", r.preprocess_time_s},
                        {"train_time_s", r.train_time_s},
                        {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
                        {"world_size", r.world_size}};
    if (!checkpoint.dir.empty())
      j.update({{"checkpoint", r.checkpoint},
                {"resumed_from",
                 r.resumed_from.empty() ? nlohmann::json() : nlohmann::json(r.resumed_from)},
                {"preemption_checks", r.preemption_checks},
                {"preemption_check_time_s", r.preemption_check_s}});
    if (shard.distributed()) {
      j["partitions"] = o.partitions;
      j["snapshot_bytes"] = moved;
      j["snapshot_delta_bytes"] = delta;
      j["snapshot_migration_bytes"] = migration;
      j["snapshot_degree_bytes"] = degrees;
      j["snapshot_resend_bytes"] = resend;
      j["snapshot_bytes_total"] = total(moved);
      j["snapshot_resend_bytes_total"] = total(resend);
      j["exchange_bytes_per_epoch"] = r.exchange_bytes_per_epoch;
      j["embedding_bytes_per_epoch"] = r.feature_bytes_per_epoch;
      j["exchange_time_s"] = r.exchange_time_s;
      j["exchange_exposed_s"] = r.exchange_exposed_s;
      j["allreduce_time_s"] = r.allreduce_time_s;
    }
    nlohmann::json history = nlohmann::json::array();
    for (const runtime::EpochStats& s : r.history)
      history.push_back({{"epoch", s.epoch},
                         {"train_loss", s.train_loss},
                         {"val_mrr", json_number(s.metrics.at("val_mrr"))},
                         {"val_map", json_number(s.metrics.at("val_map"))},
                         {"epoch_time_s", s.epoch_time_s}});
    j["history"] = std::move(history);
    kernels::write_file_atomically(json, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace halo::cli
