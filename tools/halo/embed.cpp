// `halo embed`: the node representations after layer K of a saved model, as a NumPy .npy file.
#include <cstdio>
#include <memory>
#include <string>

#include <halo/datasets/numpy.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/model_data.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {
namespace {

struct EmbedOptions {
  ModelDataOptions in;
  int layer = 0;
  std::string out;
};

int run_embed(const EmbedOptions& o) {
  ModelData md(o.in, "embed", {o.out}, {"--out"}, [&](const nn::ModelConfig& c) {
    if (o.layer > c.num_layers)
      throw UsageError("--layer " + std::to_string(o.layer) + ": the model has " +
                       std::to_string(c.num_layers) + " layer" + (c.num_layers > 1 ? "s" : "") +
                       " (1.." + std::to_string(c.num_layers) + ")");
  });
  const runtime::GatheredNodes g =
      runtime::gather_nodes(md.res, md.shard, md.inference->run(md.model, o.layer));
  if (md.shard.comm->rank() == 0) {
    datasets::NpyArray a;
    a.dtype = "<f4";
    a.shape = {g.num_nodes, g.cols};
    a.bytes.assign(reinterpret_cast<const char*>(g.rows.data()), g.rows.size() * sizeof(float));
    datasets::write_npy(o.out, a);
    std::printf("embedded %lld nodes: layer %d of %d, width %lld, written to %s\n",
                static_cast<long long>(g.num_nodes), o.layer, md.model.config().num_layers,
                static_cast<long long>(g.cols), o.out.c_str());
  }
  md.shard.comm->barrier();  // no rank finalises MPI before rank 0 has written the file
  return 0;
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto o = std::make_shared<EmbedOptions>();
  CLI::App* sub = app.add_subcommand(
      "embed",
      "Write the node representations after layer K of a saved model (every node, in node id "
      "order) as a NumPy .npy file");
  add_model_data_options(sub, o->in);
  sub->add_option("--layer", o->layer,
                  "K: the representation after graph convolution K (1 = the first; its ReLU "
                  "included; the last layer gives the logits)")
      ->required()
      ->check(integer_range(1, 16));
  sub->add_option("--out", o->out, "The embeddings: float32 (nodes, width), a NumPy .npy file")
      ->required();
  sub->callback([o] { check_dataset_options(o->in.data); });
  return {sub, [o] { return run_embed(*o); }};
}

}  // namespace halo::cli
