// `halo predict`: a saved model applied to a dataset or partition; class probabilities or labels
// of the chosen nodes as .npy, accuracy and macro-F1 when they have labels.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/model_file.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/model_data.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {
namespace {

struct PredictOptions {
  ModelDataOptions in;
  std::string nodes;
  std::string split = "test";
  bool labels = false;
  std::string out;
  std::string json;
  runtime::MiniBatchConfig mb{.batch_size = 1024, .fanouts = {}};  // fan-outs set: sampled
  std::uint64_t seed = 0;
};

/// Node ids (original ids, whitespace-separated integers) from `path`; IoError naming the file
/// and the line of a bad entry.
std::vector<std::int64_t> read_nodes(const std::string& path, std::int64_t num_nodes) {
  std::istringstream in(kernels::read_file_bytes(path));
  std::vector<std::int64_t> ids;
  std::string line;
  for (std::int64_t line_no = 1; std::getline(in, line); ++line_no) {
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      std::size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(w, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != w.size() || v < 0 || v >= num_nodes)
        throw IoError(path + ":" + std::to_string(line_no) + ": '" + w +
                      "' is not a node id in [0, " + std::to_string(num_nodes) + ")");
      ids.push_back(v);
    }
  }
  if (ids.empty()) throw IoError(path + ": no node ids");
  return ids;
}

runtime::Split split_of(const std::string& name) {
  if (name == "train") return runtime::Split::Train;
  if (name == "val") return runtime::Split::Val;
  if (name == "test") return runtime::Split::Test;
  return runtime::Split::None;  // all
}

/// The chosen nodes' logits from every rank: the full-graph pass, or sampled neighbourhoods of
/// just those nodes with --fanouts.
runtime::GatheredNodes predicted_rows(ModelData& md, const PredictOptions& o,
                                      const std::vector<std::int64_t>& nodes) {
  const int layers = md.model.config().num_layers;
  if (o.mb.fanouts.empty())
    return runtime::gather_nodes(md.res, md.shard, md.inference->run(md.model, layers));
  std::vector<kernels::NodeId> seeds;
  if (o.nodes.empty()) {
    seeds = md.inference->split_nodes(split_of(o.split));
  } else {  // one process (checked when parsing): partition ids are the node ids
    seeds.assign(nodes.begin(), nodes.end());
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  }
  if (seeds.empty()) throw UsageError("--split " + o.split + ": the split has no nodes");
  const runtime::Inference::SampledRows r =
      md.inference->run_sampled(md.model, std::move(seeds), o.mb, o.seed);
  return runtime::gather_nodes(md.shard, r.local, r.rows, r.cols);
}

/// The npy array of rows x cols values of `v` (float32 or float64).
template <class T>
datasets::NpyArray npy_of(const std::vector<T>& v, std::int64_t rows, std::int64_t cols) {
  datasets::NpyArray a;
  a.dtype = sizeof(T) == 8 ? "<f8" : "<f4";
  a.shape = {rows, cols};
  a.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  return a;
}

/// UsageError for a flag a model of `task` does not take.
void refuse_for(bool given, const char* flag, const std::string& task, const char* why) {
  if (given)
    throw UsageError(std::string(flag) + ": not supported for a " + task + " model (" + why + ")");
}

/// A model of the heterogeneous task: the dataset (its typed directory or registered name, the
/// model's split) or a heterogeneous partition across ranks, the task's evaluation (the training
/// run's scores), and the probabilities or labels of the target type's nodes of --split, in id
/// order (rank 0 writes).
int run_hetero_predict(const PredictOptions& o) {
  const std::string task = "heterogeneous";
  refuse_for(!o.nodes.empty(), "--nodes", task, "choose the target nodes by --split");
  refuse_for(!o.mb.fanouts.empty(), "--fanouts", task, "it predicts on the full graph");
  check_output(o.out, "--out");
  check_output(o.json, "--json");
  HeteroModelData md(o.in, "predict");
  runtime::HeteroShard& shard = md.shard;
  const runtime::HeteroPrediction p =
      runtime::predict_hetero(md.res, shard, md.file.config, md.file.model);
  const datasets::HeteroGraph& g = shard.graph;
  const auto target_type = static_cast<std::size_t>(g.target_type);
  // This rank's target rows of the split (local ids; on a partition the owned rows), by their
  // ids in the whole graph.
  std::vector<kernels::NodeId> rows;
  const kernels::Resources host = runtime::host_resources(md.res);
  if (o.split == "all") {
    rows.resize(static_cast<std::size_t>(p.logits.rows()));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<kernels::NodeId>(i);
  } else {
    const auto& idx = o.split == "train" ? g.train_idx : o.split == "val" ? g.val_idx : g.test_idx;
    rows = idx.to_vector(host);
  }
  const std::int64_t cols = p.logits.cols();
  const std::vector<float> all = p.logits.to_vector(host);
  const std::vector<std::int32_t> every_label = g.labels.to_vector(host);
  std::vector<std::int64_t> ids(rows.size());
  std::vector<float> chosen(rows.size() * static_cast<std::size_t>(cols));
  std::vector<std::int32_t> labels(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto r = static_cast<std::size_t>(rows[i]);
    ids[i] = shard.layout.original[target_type].data()[r];
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(cols)), cols,
                chosen.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::size_t>(cols)));
    labels[i] = r < every_label.size() ? every_label[r] : -1;
  }
  const RowsById every = gather_rows_by_id(*shard.comm, ids, chosen, labels, cols);
  if (every.ids.empty()) throw UsageError("--split " + o.split + ": the split has no nodes");
  if (shard.comm->rank() == 0) {
    std::vector<float> values = every.values;
    const std::size_t n = every.ids.size();
    const std::vector<std::int32_t> predicted = runtime::argmax_rows(values, cols);
    const runtime::Scores s = runtime::score(predicted, every.labels, g.num_classes);
    if (o.labels) {
      datasets::NpyArray a;
      a.dtype = "<i8";
      a.shape = {static_cast<std::int64_t>(n)};
      std::vector<std::int64_t> v(predicted.begin(), predicted.end());
      a.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(std::int64_t));
      datasets::write_npy(o.out, a);
    } else {
      runtime::softmax_rows(values, cols);
      datasets::write_npy(o.out, npy_of(values, static_cast<std::int64_t>(n), cols));
    }
    const auto& target = g.node_types[target_type];
    std::printf(
        "predicted %zu '%s' nodes (split %s): accuracy %.4f, macro-F1 %.4f; test accuracy %.4f, "
        "macro-F1 %.4f, micro-F1 %.4f\n",
        n, target.name.c_str(), o.split.c_str(), s.accuracy, s.macro_f1,
        p.metrics.at("test_accuracy"), p.metrics.at("test_macro_f1"),
        p.metrics.at("test_micro_f1"));
    if (!o.json.empty()) {
      nlohmann::json j = {{"model", o.in.model},
                          {"task", "heterogeneous-node-classification"},
                          {"dataset", shard.dataset.empty() ? g.name : shard.dataset},
                          {"world_size", shard.comm->size()},
                          {"target_type", target.name},
                          {"split", o.split},
                          {"num_nodes", n},
                          {"num_classes", g.num_classes},
                          {"output", o.labels ? "labels" : "probabilities"},
                          {"labelled", s.labelled},
                          {"accuracy", json_number(s.accuracy)},
                          {"macro_f1", json_number(s.macro_f1)}};
      for (const auto& [name, value] : p.metrics) j[name] = json_number(value);
      kernels::write_file_atomically(o.json, j.dump(2) + "\n");
    }
  }
  shard.comm->barrier();  // no rank finalises MPI before rank 0 has written its files
  return 0;
}

/// A model of the link task: the events (the model's columns), its snapshots and split, in one
/// process or over a snapshot partition series; the task's test metrics, and per test step
/// (step, MRR, MAP, AUC) as float64 rows in --out (rank 0 writes).
int run_link_predict(const PredictOptions& o) {
  const std::string task = "link-prediction";
  refuse_for(!o.nodes.empty(), "--nodes", task, "it ranks the test steps' pairs");
  refuse_for(!o.mb.fanouts.empty(), "--fanouts", task, "it encodes whole snapshots");
  refuse_for(o.labels, "--labels", task, "it writes each test step's metrics");
  refuse_for(o.split != "test", "--split", task, "it scores the test steps");
  check_output(o.out, "--out");
  check_output(o.json, "--json");
  LinkModelData md(o.in, "predict");
  runtime::TemporalShard& shard = md.shard;
  const runtime::LinkPredictionResult r =
      runtime::predict_link(md.res, shard, md.file.config, md.file.model);
  if (shard.comm->rank() == 0) {
    std::vector<double> table;
    for (const auto& row : r.test_steps) table.insert(table.end(), row.begin(), row.end());
    datasets::write_npy(o.out, npy_of(table, static_cast<std::int64_t>(r.test_steps.size()), 4));
    std::printf("predicted %zu test steps: MRR %.4f, MAP %.4f, AUC %.4f\n", r.test_steps.size(),
                r.metrics.at("test_mrr"), r.metrics.at("test_map"), r.metrics.at("test_auc"));
    if (!o.json.empty()) {
      nlohmann::json j = {{"model", o.in.model},
                          {"task", "link"},
                          {"dataset", shard.dataset},
                          {"world_size", shard.comm->size()},
                          {"snapshots", shard.num_steps()},
                          {"test_steps", r.test_steps.size()},
                          {"output", "test-step-metrics"}};
      for (const auto& [name, value] : r.metrics) j[name] = json_number(value);
      kernels::write_file_atomically(o.json, j.dump(2) + "\n");
    }
  }
  shard.comm->barrier();  // no rank finalises MPI before rank 0 has written its files
  return 0;
}

int run_predict(const PredictOptions& o) {
  // A model of another task than node classification is applied by that task.
  const std::string task = nn::read_model_file(o.in.model).info.task;
  if (task == "heterogeneous-node-classification") return run_hetero_predict(o);
  if (task == "link") return run_link_predict(o);
  ModelData md(o.in, "predict", {o.out, o.json}, {"--out", "--json"},
               [&](const nn::ModelConfig& c) {
                 if (!o.mb.fanouts.empty() && static_cast<int>(o.mb.fanouts.size()) != c.num_layers)
                   throw UsageError("--fanouts: one fan-out per layer expected (the model has " +
                                    std::to_string(c.num_layers) + " layers, " +
                                    std::to_string(o.mb.fanouts.size()) + " given)");
               });
  const nn::ModelConfig& c = md.model.config();
  const std::int64_t num_nodes = md.shard.part.book().num_nodes();
  const std::vector<std::int64_t> nodes =
      o.nodes.empty() ? std::vector<std::int64_t>{} : read_nodes(o.nodes, num_nodes);
  const runtime::GatheredNodes g = predicted_rows(md, o, nodes);
  if (md.shard.comm->rank() == 0) {
    // The output rows: the file's nodes in its order, or the split's in ascending id.
    std::vector<std::int64_t> ids = nodes;
    if (o.nodes.empty()) {
      const runtime::Split want = split_of(o.split);
      for (std::size_t i = 0; i < g.ids.size(); ++i)
        if (o.split == "all" || g.split[i] == want) ids.push_back(g.ids[i]);
    }
    // The chosen rows' logits; predictions from the logits (as training scored them), then
    // probabilities.
    const auto cols = static_cast<std::size_t>(g.cols);
    std::vector<float> rows(ids.size() * cols);
    std::vector<std::int32_t> labels(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::int64_t at = g.position[static_cast<std::size_t>(ids[i])];
      HALO_EXPECTS(at >= 0, "predict: node " + std::to_string(ids[i]) + " was not computed");
      const auto p = static_cast<std::size_t>(at);
      std::copy_n(g.rows.begin() + static_cast<std::ptrdiff_t>(p * cols), cols,
                  rows.begin() + static_cast<std::ptrdiff_t>(i * cols));
      labels[i] = g.labels[p];
    }
    const std::vector<std::int32_t> predicted = runtime::argmax_rows(rows, g.cols);
    const runtime::Scores s =
        runtime::score(predicted, labels, static_cast<std::int32_t>(c.num_classes));
    datasets::NpyArray a;
    if (o.labels) {
      a.dtype = "<i8";
      a.shape = {static_cast<std::int64_t>(ids.size())};
      std::vector<std::int64_t> p(predicted.begin(), predicted.end());
      a.bytes.assign(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(std::int64_t));
    } else {
      runtime::softmax_rows(rows, g.cols);
      a.dtype = "<f4";
      a.shape = {static_cast<std::int64_t>(ids.size()), g.cols};
      a.bytes.assign(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(float));
    }
    datasets::write_npy(o.out, a);
    const std::string chosen = o.nodes.empty() ? "split " + o.split : o.nodes;
    const std::string how = o.mb.fanouts.empty() ? "full graph" : "sampled neighbourhoods";
    if (s.labelled > 0)
      std::printf("predicted %zu nodes (%s, %s): accuracy %.4f, macro-F1 %.4f over %lld labelled\n",
                  ids.size(), chosen.c_str(), how.c_str(), s.accuracy, s.macro_f1,
                  static_cast<long long>(s.labelled));
    else
      std::printf("predicted %zu nodes (%s, %s): none labelled\n", ids.size(), chosen.c_str(),
                  how.c_str());
    if (!o.json.empty()) {
      nlohmann::json j = {{"model", o.in.model},
                          {"dataset", md.shard.dataset},
                          {"world_size", md.shard.comm->size()},
                          {"num_nodes", ids.size()},
                          {"num_classes", c.num_classes},
                          {"output", o.labels ? "labels" : "probabilities"},
                          {"labelled", s.labelled},
                          {"accuracy", json_number(s.accuracy)},
                          {"macro_f1", json_number(s.macro_f1)}};
      if (o.nodes.empty())
        j["split"] = o.split;
      else
        j["nodes"] = o.nodes;
      if (!o.mb.fanouts.empty())
        j.update({{"fanouts", o.mb.fanouts}, {"batch_size", o.mb.batch_size}, {"seed", o.seed}});
      kernels::write_file_atomically(o.json, j.dump(2) + "\n");
    }
  }
  md.shard.comm->barrier();  // no rank finalises MPI before rank 0 has written its files
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* sub = app.add_subcommand(
      "predict",
      "Apply a saved model to a dataset or partition: class probabilities (or labels) of the "
      "chosen nodes as .npy; accuracy and macro-F1 where they have labels");
  add_model_data_options(sub, o->in);
  auto* nodes = sub->add_option("--nodes", o->nodes,
                                "Predict the nodes listed in FILE (node ids, whitespace-separated; "
                                "output rows in the file's order)");
  auto* split = sub->add_option("--split", o->split,
                                "Predict the nodes of a split, in ascending id: train, val, test "
                                "or all")
                    ->check(CLI::IsMember({"train", "val", "test", "all"}))
                    ->capture_default_str();
  nodes->excludes(split);
  sub->add_flag("--labels", o->labels,
                "Write the predicted class of each node (int64, shape (nodes,)) instead of the "
                "class probabilities (float32, shape (nodes, classes))");
  sub->add_option("--out", o->out, "The predictions, a NumPy .npy file")->required();
  sub->add_option("--json", o->json,
                  "Write the result (accuracy, macro_f1, ...) as one JSON object to FILE");
  auto* fanouts =
      sub->add_option("--fanouts", o->mb.fanouts,
                      "Predict on sampled neighbourhoods instead of the full graph: neighbours "
                      "sampled per node and layer, input layer first, one per layer (-1 = all), "
                      "e.g. 25,10")
          ->delimiter(',')
          ->check(integer_range(-1, 1 << 20));
  auto* batch = sub->add_option("--batch-size", o->mb.batch_size,
                                "With --fanouts: nodes per sampled batch (over all ranks)")
                    ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 30))
                    ->capture_default_str();
  auto* seed = sub->add_option("--seed", o->seed, "With --fanouts: the sampling seed")
                   ->check(seed_value())
                   ->capture_default_str();
  sub->callback([o, sub, fanouts, batch, seed, nodes] {
    note_given(sub, o->in);
    for (CLI::Option* opt : {batch, seed})
      if (opt->count() > 0 && fanouts->count() == 0)
        throw CLI::ValidationError(opt->get_name(), "applies with --fanouts only");
    if (fanouts->count() > 0 && nodes->count() > 0 && sub->get_option("--partitions")->count() > 0)
      throw CLI::ValidationError("--nodes",
                                 "with --fanouts and --partitions, choose the nodes by --split");
  });
  return {sub, [o] { return run_predict(*o); }};
}

}  // namespace halo::cli
