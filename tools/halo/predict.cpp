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

#include <halo/datasets/numpy.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/inference.hpp>
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

nlohmann::json number(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }

int run_predict(const PredictOptions& o) {
  ModelData md(o.in, "predict", {o.out, o.json}, {"--out", "--json"});
  const nn::ModelConfig& c = md.model.config();
  const runtime::GatheredNodes g =
      runtime::gather_nodes(md.res, md.shard, md.inference->run(md.model, c.num_layers));
  if (md.shard.comm->rank() == 0) {
    std::vector<std::int64_t> ids;
    if (!o.nodes.empty()) {
      ids = read_nodes(o.nodes, g.num_nodes);
    } else {
      const runtime::Split want = o.split == "train" ? runtime::Split::Train
                                  : o.split == "val" ? runtime::Split::Val
                                                     : runtime::Split::Test;
      for (std::int64_t v = 0; v < g.num_nodes; ++v)
        if (o.split == "all" || g.split[static_cast<std::size_t>(v)] == want) ids.push_back(v);
    }
    // The chosen rows' logits; predictions from the logits (as training scored them), then
    // probabilities.
    const auto cols = static_cast<std::size_t>(g.cols);
    std::vector<float> rows(ids.size() * cols);
    std::vector<std::int32_t> labels(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto v = static_cast<std::size_t>(ids[i]);
      std::copy_n(g.rows.begin() + static_cast<std::ptrdiff_t>(v * cols), cols,
                  rows.begin() + static_cast<std::ptrdiff_t>(i * cols));
      labels[i] = g.labels[v];
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
    if (s.labelled > 0)
      std::printf("predicted %zu nodes (%s): accuracy %.4f, macro-F1 %.4f over %lld labelled\n",
                  ids.size(), chosen.c_str(), s.accuracy, s.macro_f1,
                  static_cast<long long>(s.labelled));
    else
      std::printf("predicted %zu nodes (%s): none labelled\n", ids.size(), chosen.c_str());
    if (!o.json.empty()) {
      nlohmann::json j = {{"model", o.in.model},
                          {"dataset", md.shard.dataset},
                          {"world_size", md.shard.comm->size()},
                          {"num_nodes", ids.size()},
                          {"num_classes", c.num_classes},
                          {"output", o.labels ? "labels" : "probabilities"},
                          {"labelled", s.labelled},
                          {"accuracy", number(s.accuracy)},
                          {"macro_f1", number(s.macro_f1)}};
      if (o.nodes.empty())
        j["split"] = o.split;
      else
        j["nodes"] = o.nodes;
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
  sub->callback([o] { check_dataset_options(o->in.data); });
  return {sub, [o] {
            try {
              return run_predict(*o);
            } catch (const UsageError& e) {
              std::fprintf(stderr, "halo predict: %s\n", e.what());
              return 2;
            }
          }};
}

}  // namespace halo::cli
