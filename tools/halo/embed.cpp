// `halo embed`: the node representations of a saved model, as a NumPy .npy file: after layer K
// of a node or heterogeneous classifier, or a link-prediction encoder's embeddings before a step.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/model_file.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/model_data.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {
namespace {

struct EmbedOptions {
  ModelDataOptions in;
  int layer = 0;  // 0: not given
  std::string type;
  std::int64_t step = -1;  // -1: not given
  std::string out;
};

/// The float32 rows x cols .npy of `rows`, written to `path`, and the line saying so.
void write_rows(const std::string& path, std::int64_t num_rows, std::int64_t cols,
                const float* rows, const std::string& what) {
  datasets::NpyArray a;
  a.dtype = "<f4";
  a.shape = {num_rows, cols};
  a.bytes.assign(reinterpret_cast<const char*>(rows),
                 static_cast<std::size_t>(num_rows * cols) * sizeof(float));
  datasets::write_npy(path, a);
  std::printf("embedded %lld %s, width %lld, written to %s\n", static_cast<long long>(num_rows),
              what.c_str(), static_cast<long long>(cols), path.c_str());
}

/// UsageError unless 1 <= --layer <= layers.
void check_layer(int layer, int layers) {
  if (layer == 0)
    throw UsageError("--layer: required for this model (1.." + std::to_string(layers) + ")");
  if (layer > layers)
    throw UsageError("--layer " + std::to_string(layer) + ": the model has " +
                     std::to_string(layers) + " layer" + (layers > 1 ? "s" : "") + " (1.." +
                     std::to_string(layers) + ")");
}

/// A heterogeneous model: the rows of one node type (--type, default the target type), in
/// type-local id order, after layer K (one process, or across the ranks of a heterogeneous
/// partition: rank 0 writes); the last layer gives the target type's logits only.
int run_hetero_embed(const EmbedOptions& o) {
  if (o.step >= 0)
    throw UsageError("--step: a link-prediction model's option (this model is heterogeneous)");
  check_output(o.out, "--out");
  HeteroModelData md(o.in, "embed");
  const nn::HeteroSchema& schema = md.file.schema;
  const int layers = md.file.model.config().num_layers;
  check_layer(o.layer, layers);
  std::int32_t type = schema.target_type;
  if (!o.type.empty()) {
    type = -1;
    std::string names;
    for (std::size_t t = 0; t < schema.type_names.size(); ++t) {
      if (schema.type_names[t] == o.type) type = static_cast<std::int32_t>(t);
      names += (t > 0 ? ", " : "") + schema.type_names[t];
    }
    if (type < 0) throw UsageError("--type " + o.type + ": the model's node types are " + names);
  }
  const std::string& name = schema.type_names[static_cast<std::size_t>(type)];
  if (o.layer == layers && type != schema.target_type)
    throw UsageError(
        "--layer " + std::to_string(o.layer) + ": the last layer computes the target type '" +
        schema.type_names[static_cast<std::size_t>(schema.target_type)] + "' only (for '" + name +
        "' choose a layer below " + std::to_string(layers) + ")");
  const kernels::Tensor<float> rows =
      runtime::embed_hetero(md.res, md.shard, md.file.config, md.file.model, o.layer, type);
  // Every rank's rows (its owned ones on a partition) in the type's id order.
  const auto t = static_cast<std::size_t>(type);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(rows.rows()));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = md.shard.layout.original[t].data()[i];
  const std::vector<float> values(rows.data(), rows.data() + rows.numel());
  const RowsById every = gather_rows_by_id(*md.shard.comm, ids, values,
                                           std::vector<std::int32_t>(ids.size(), 0), rows.cols());
  if (md.shard.comm->rank() == 0)
    write_rows(o.out, static_cast<std::int64_t>(every.ids.size()), rows.cols(), every.values.data(),
               "'" + name + "' nodes (layer " + std::to_string(o.layer) + " of " +
                   std::to_string(layers) + ")");
  md.shard.comm->barrier();  // no rank finalises MPI before rank 0 has written the file
  return 0;
}

/// A link-prediction model: every node's embedding after the encoder's window before --step
/// (default: after the last snapshot), what its scorer reads; rank 0 writes.
int run_link_embed(const EmbedOptions& o) {
  if (o.layer > 0)
    throw UsageError(
        "--layer: a link-prediction model gives its encoder's output (choose the "
        "snapshot by --step)");
  if (!o.type.empty())
    throw UsageError("--type: a heterogeneous model's option (this model predicts links)");
  check_output(o.out, "--out");
  LinkModelData md(o.in, "embed");
  const std::int64_t steps = md.shard.num_steps(), window = md.file.config.link.window;
  const std::int64_t step = o.step >= 0 ? o.step : steps;
  if (step < window || step > steps)
    throw UsageError("--step " + std::to_string(o.step) + ": the encoder's window of " +
                     std::to_string(window) + " snapshots ends before a step in " +
                     std::to_string(window) + ".." + std::to_string(steps) + " (" +
                     std::to_string(steps) + ": after the last snapshot)");
  const kernels::Tensor<float> e =
      runtime::embed_link(md.res, md.shard, md.file.config, md.file.model, step);
  if (md.shard.comm->rank() == 0)
    write_rows(o.out, e.rows(), e.cols(), e.data(),
               "nodes (the window before step " + std::to_string(step) + " of " +
                   std::to_string(steps) + ")");
  md.shard.comm->barrier();  // no rank finalises MPI before rank 0 has written the file
  return 0;
}

int run_embed(const EmbedOptions& o) {
  // A model of another task than node classification is applied by that task.
  const std::string task = nn::read_model_file(o.in.model).info.task;
  if (task == "heterogeneous-node-classification") return run_hetero_embed(o);
  if (task == "link") return run_link_embed(o);
  if (!o.type.empty())
    throw UsageError("--type: a heterogeneous model's option (this model is homogeneous)");
  if (o.step >= 0)
    throw UsageError("--step: a link-prediction model's option (this model classifies nodes)");
  ModelData md(o.in, "embed", {o.out}, {"--out"},
               [&](const nn::ModelConfig& c) { check_layer(o.layer, c.num_layers); });
  const runtime::GatheredNodes g =
      runtime::gather_nodes(md.res, md.shard, md.inference->run(md.model, o.layer));
  if (md.shard.comm->rank() == 0)
    write_rows(o.out, g.num_nodes, g.cols, g.rows.data(),
               "nodes (layer " + std::to_string(o.layer) + " of " +
                   std::to_string(md.model.config().num_layers) + ")");
  md.shard.comm->barrier();  // no rank finalises MPI before rank 0 has written the file
  return 0;
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto o = std::make_shared<EmbedOptions>();
  CLI::App* sub = app.add_subcommand(
      "embed",
      "Write the node representations of a saved model as a NumPy .npy file: after layer K (every "
      "node in node id order; a heterogeneous model: one node type's), or a link-prediction "
      "model's node embeddings before a snapshot");
  add_model_data_options(sub, o->in);
  sub->add_option("--layer", o->layer,
                  "K: the representation after layer K (1 = the first; its ReLU included; the "
                  "last layer gives the logits); required for node and heterogeneous models")
      ->check(integer_range(1, 16));
  sub->add_option("--type", o->type,
                  "A heterogeneous model: the node type whose rows to write (default: the target "
                  "type)");
  sub->add_option("--step", o->step,
                  "A link-prediction model: the embeddings after the encoder's window before "
                  "snapshot T (default: after the last snapshot)")
      ->check(integer_range(std::int64_t{0}, std::int64_t{1} << 40));
  sub->add_option("--out", o->out, "The embeddings: float32 (nodes, width), a NumPy .npy file")
      ->required();
  sub->callback([o, sub] { note_given(sub, o->in); });
  return {sub, [o] { return run_embed(*o); }};
}

}  // namespace halo::cli
