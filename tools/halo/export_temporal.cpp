// `halo datasets export --snapshots N`: the link-prediction task's data (docs/dynamic.md) as one
// .npz for a peer framework (docs/formats.md, "Exported temporal datasets").
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/kernels/error.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>
#include <halo/tools/halo/export_temporal.hpp>
#include <halo/tools/halo/npy_arrays.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {
namespace {

/// What each key holds (meta_json's "keys"; docs/formats.md repeats it).
nlohmann::json key_descriptions() {
  return {
      {"num_nodes", "N: every node of the run (every step covers all of them)"},
      {"num_events", "events in the event list"},
      {"num_steps", "T: snapshots (steps)"},
      {"num_features", "width of the one-hot input: the degree cap + 1"},
      {"window", "W: a step t is predicted from the snapshots t-W .. t-1"},
      {"train_begin", "first training step (= window)"},
      {"train_end", "training steps are [train_begin, train_end)"},
      {"val_end", "validation steps are [train_end, val_end)"},
      {"test_end", "test steps are [val_end, test_end) (test_end = T)"},
      {"boundaries", "int64 [T+1]: step t's events have time in [boundaries[t], boundaries[t+1])"},
      {"feature", "int32 [T, N]: node v's one-hot input column at step t (capped degree)"},
      {"gcn_offsets", "int64 [T+1]: step t's entries are gcn_*[gcn_offsets[t]:gcn_offsets[t+1]]"},
      {"gcn_row", "int32: row (output node) of each entry of D^-1/2 (A+I) D^-1/2"},
      {"gcn_col", "int32: column (input node) of each entry"},
      {"gcn_weight", "float32: the entry's value; self-loops and normalisation included"},
      {"edge_offsets", "int64 [T+1]: step t's pairs are edge_*[edge_offsets[t]:edge_offsets[t+1]]"},
      {"edge_src", "int32: the symmetric binary snapshot A, both directions, no self-loops"},
      {"edge_dst", "int32: (edge_src, edge_dst) sorted by edge_dst, then edge_src"},
      {"active_offsets", "int64 [T+1]: step t's active nodes are active[off[t]:off[t+1]]"},
      {"active", "int32: nodes with a pair (self-loops included) in step t's snapshot"},
      {"target_offsets", "int64 [T+1]: step t's targets are target_*[off[t]:off[t+1]]"},
      {"target_src",
       "int32: step t's positive pairs (its own span's events, u != v, both "
       "directions, distinct), sorted by source then destination"},
      {"target_dst", "int32"},
      {"meta_json", "uint8: this description as UTF-8 JSON"}};
}

}  // namespace

void add_temporal_export_options(CLI::App* exp, TemporalExportOptions& o) {
  add_snapshot_options(exp, o.snapshots);
  o.window_snapshots_flag = exp->get_option("--window-snapshots");
  o.window_flag = exp->add_option("--window", o.window,
                                  "With --snapshots: the link task's window (the snapshots "
                                  "before a predicted step), as halo train's --window")
                      ->check(integer_range(1, 1000))
                      ->capture_default_str();
  o.link_split_flag = exp->add_option("--link-split", o.link_split,
                                      "With --snapshots: TRAIN,VAL shares of the snapshots, as "
                                      "halo train's --link-split (the degree cap is taken over "
                                      "the snapshots training reads)")
                          ->delimiter(',')
                          ->expected(2)
                          ->check(finite_range(0.0, 1.0))
                          ->capture_default_str();
}

bool wants_temporal_export(const TemporalExportOptions& o) {
  if (wants_snapshots(o.snapshots)) return true;
  for (const CLI::Option* f : {o.window_snapshots_flag, o.window_flag, o.link_split_flag})
    if (f != nullptr && f->count() > 0)
      throw UsageError(f->get_name() + ": needs --snapshots or --snapshot-window");
  return false;
}

int run_export_temporal(const DatasetOptions& data, const TemporalExportOptions& o,
                        const std::string& out) {
  if (!datasets::temporal_events_file(data.dataset))
    throw IoError("--snapshots: '" + data.dataset +
                  "' is not a temporal dataset (a directory holding events.tsv or events.csv)");
  if (!(o.link_split[0] > 0 && o.link_split[0] + o.link_split[1] < 1))
    throw UsageError("--link-split: expected TRAIN,VAL with TRAIN > 0 and TRAIN + VAL < 1");
  const kernels::Resources res(kernels::Device::Cpu, 0);
  const datasets::TemporalGraph g =
      datasets::load_temporal_dataset(data.dataset, datasets::parse_temporal_layout(data.columns));
  // As halo train --task link (cli::link_snapshots): each step's own events unless
  // --window-snapshots is given.
  datasets::SnapshotConfig snapshots = o.snapshots;
  if (o.window_snapshots_flag == nullptr || o.window_snapshots_flag->count() == 0)
    snapshots.window_snapshots = 1;
  runtime::LinkPredictionConfig lc;
  lc.window = o.window;
  lc.train_fraction = o.link_split[0];
  lc.val_fraction = o.link_split[1];
  // The one process of the training run: its snapshots, GCN matrices, capped degree buckets,
  // active nodes and targets, built by the same code.
  const runtime::TemporalShard shard =
      runtime::local_temporal_shard(res, g, snapshots, lc.train_fraction);
  const std::int64_t steps = shard.num_steps(), n = shard.num_nodes;
  if (const std::string e = runtime::link_split_problem(steps, lc); !e.empty()) throw UsageError(e);
  const runtime::LinkSplit split = runtime::link_split(steps, lc);

  std::vector<std::int32_t> feature;
  std::vector<std::int64_t> gcn_offsets{0}, edge_offsets{0}, active_offsets{0}, target_offsets{0};
  std::vector<std::int32_t> gcn_row, gcn_col, edge_src, edge_dst, active, target_src, target_dst;
  std::vector<float> gcn_weight;
  feature.reserve(static_cast<std::size_t>(steps * n));
  for (std::int64_t t = 0; t < steps; ++t) {
    const auto i = static_cast<std::size_t>(t);
    const runtime::HaloExchange& x = *shard.exchange[i];
    // One part: every node owned, local id = node id, nothing in the halo.
    HALO_EXPECTS(x.num_owned() == n && x.num_halo() == 0 &&
                     static_cast<std::int64_t>(shard.degree_bucket[i].size()) == n,
                 "export: the one-process shard should own every node of every step");
    const kernels::CsrView<kernels::NodeId, float> a = x.owned_block();
    for (std::int64_t r = 0; r < a.num_rows; ++r)
      for (std::int64_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e) {
        const auto c = static_cast<std::int32_t>(a.indices[e]);
        gcn_row.push_back(static_cast<std::int32_t>(r));
        gcn_col.push_back(c);
        gcn_weight.push_back(a.value(e));
        // The matrix's structure off the diagonal: the symmetric snapshot's neighbour pairs.
        if (c != r) edge_src.push_back(c), edge_dst.push_back(static_cast<std::int32_t>(r));
      }
    gcn_offsets.push_back(static_cast<std::int64_t>(gcn_row.size()));
    edge_offsets.push_back(static_cast<std::int64_t>(edge_src.size()));
    feature.insert(feature.end(), shard.degree_bucket[i].begin(), shard.degree_bucket[i].end());
    for (const kernels::NodeId v : shard.active[i]) active.push_back(static_cast<std::int32_t>(v));
    active_offsets.push_back(static_cast<std::int64_t>(active.size()));
    for (const datasets::TemporalEdge& p : shard.targets[i])
      target_src.push_back(static_cast<std::int32_t>(p.src)),
          target_dst.push_back(static_cast<std::int32_t>(p.dst));
    target_offsets.push_back(static_cast<std::int64_t>(target_src.size()));
  }

  nlohmann::json meta = {{"format", "halo-temporal-link"},
                         {"version", 1},
                         {"dataset", shard.dataset},
                         {"num_nodes", n},
                         {"num_events", shard.num_events},
                         {"num_steps", steps},
                         {"num_features", shard.num_features},
                         {"snapshots",
                          {{"num_snapshots", snapshots.num_snapshots},
                           {"window_seconds", snapshots.window_seconds},
                           {"window_snapshots", snapshots.window_snapshots}}},
                         {"columns", data.columns},
                         {"window", lc.window},
                         {"train_fraction", lc.train_fraction},
                         {"val_fraction", lc.val_fraction},
                         {"split",
                          {{"train_begin", split.train_begin},
                           {"train_end", split.train_end},
                           {"val_end", split.val_end},
                           {"test_end", split.test_end}}},
                         {"gcn",
                          "D^-1/2 (A + I) D^-1/2 of the snapshot made symmetric, binary A without "
                          "self-loops, D the degrees of A + I; what the encoder multiplies by"},
                         {"keys", key_descriptions()}};
  std::map<std::string, datasets::NpyArray> arrays;
  const std::string text = meta.dump();
  arrays["meta_json"] = npy_text(text);
  arrays["num_nodes"] = npy_scalar(n);
  arrays["num_events"] = npy_scalar(shard.num_events);
  arrays["num_steps"] = npy_scalar(steps);
  arrays["num_features"] = npy_scalar(shard.num_features);
  arrays["window"] = npy_scalar(lc.window);
  arrays["train_begin"] = npy_scalar(split.train_begin);
  arrays["train_end"] = npy_scalar(split.train_end);
  arrays["val_end"] = npy_scalar(split.val_end);
  arrays["test_end"] = npy_scalar(split.test_end);
  arrays["boundaries"] = npy_vector("<i8", datasets::snapshot_boundaries(g, snapshots));
  arrays["feature"] = npy_array("<i4", {steps, n}, feature.data(), steps * n);
  arrays["gcn_offsets"] = npy_vector("<i8", gcn_offsets);
  arrays["gcn_row"] = npy_vector("<i4", gcn_row);
  arrays["gcn_col"] = npy_vector("<i4", gcn_col);
  arrays["gcn_weight"] = npy_vector("<f4", gcn_weight);
  arrays["edge_offsets"] = npy_vector("<i8", edge_offsets);
  arrays["edge_src"] = npy_vector("<i4", edge_src);
  arrays["edge_dst"] = npy_vector("<i4", edge_dst);
  arrays["active_offsets"] = npy_vector("<i8", active_offsets);
  arrays["active"] = npy_vector("<i4", active);
  arrays["target_offsets"] = npy_vector("<i8", target_offsets);
  arrays["target_src"] = npy_vector("<i4", target_src);
  arrays["target_dst"] = npy_vector("<i4", target_dst);
  datasets::write_npz(out, arrays);
  std::printf(
      "%s: %lld nodes, %lld events, %lld snapshots (%lld / %lld / %lld train / val / test steps, "
      "window %d), %lld degree features, %lld target pairs written to %s\n",
      shard.dataset.c_str(), static_cast<long long>(n), static_cast<long long>(shard.num_events),
      static_cast<long long>(steps), static_cast<long long>(split.train_end),
      static_cast<long long>(split.val_end - split.train_end),
      static_cast<long long>(split.test_end - split.val_end), lc.window,
      static_cast<long long>(shard.num_features), static_cast<long long>(target_src.size()),
      out.c_str());
  return 0;
}

}  // namespace halo::cli
