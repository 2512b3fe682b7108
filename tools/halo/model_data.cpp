#include <halo/datasets/hetero.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/tools/halo/model_data.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {

void add_model_data_options(CLI::App* sub, ModelDataOptions& o) {
  sub->add_option("--model", o.model, "The model file (written by halo train --save-model)")
      ->required();
  add_dataset_options(sub, o.data);
  sub->add_option("--partitions", o.partitions,
                  "Use the partition directory DIR written by `halo partition`, one rank per part: "
                  "mpiexec -n P halo ... --partitions DIR")
      ->check(CLI::ExistingDirectory)
      ->excludes(sub->get_option("--dataset"));
  sub->add_option("--threads", o.threads,
                  "CPU threads (default: all cores, shared by the ranks started on one host)")
      ->check(integer_range(1, 4096));
  sub->add_option("--device", o.device, "cpu, or cuda: run on a GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

namespace {

/// The data options with the model's preprocessing: its structural features unless --features
/// names some (then they must be the model's).
DatasetOptions data_for(const ModelDataOptions& o, const nn::ModelFileInfo& info) {
  DatasetOptions d = o.data;
  if (!o.partitions.empty()) return d;
  // Saved models are node classifiers of homogeneous graphs so far: a typed or temporal
  // directory is refused by name rather than failing on a file it does not have.
  if (datasets::is_hetero_directory(d.dataset) ||
      datasets::temporal_events_file(d.dataset).has_value())
    throw UsageError("--dataset: '" + d.dataset + "' is a " +
                     (datasets::is_hetero_directory(d.dataset) ? "heterogeneous" : "temporal") +
                     " dataset; predict and embed take models of homogeneous node "
                     "classification (GCN, GraphSAGE) and their datasets");
  if (d.features.empty()) d.features = info.structural_features;
  if (d.features != info.structural_features)
    throw UsageError("--features: the model was trained on " +
                     (info.structural_features.empty() ? std::string("the dataset's features")
                                                       : "--features " + info.structural_features));
  return d;
}

}  // namespace

ModelData::ModelData(const ModelDataOptions& o, const char* command,
                     const std::vector<std::string>& outputs, const std::vector<const char*>& flags,
                     const std::function<void(const nn::ModelConfig&)>& check_model)
    : world(world_comm(o.partitions, command)),
      res(make_resources(o.device, o.threads, world->size())),
      model([&] {
        for (std::size_t i = 0; i < outputs.size(); ++i) check_output(outputs[i], flags[i]);
        nn::Model<float> m = nn::load_model<float>(res, o.model, &info);
        if (check_model) check_model(m.config());
        return m;
      }()),
      shard(open_data(res, *world, data_for(o, info), o.partitions)) {
  nn::check_input_width(o.model, info, shard.num_features);
  if (shard.part.num_classes > info.config.num_classes)
    throw IoError(o.model + ": the model predicts " + std::to_string(info.config.num_classes) +
                  " classes, dataset '" + shard.dataset + "' has " +
                  std::to_string(shard.part.num_classes));
  inference =
      std::make_unique<runtime::Inference>(res, shard, info.config.kind, info.normalize_features);
}

}  // namespace halo::cli
