#include <halo/datasets/hetero.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>
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
      ->check(CLI::ExistingDirectory);
  sub->add_option("--threads", o.threads,
                  "CPU threads (default: all cores, shared by the ranks started on one host)")
      ->check(integer_range(1, 4096));
  sub->add_option("--device", o.device, "cpu, or cuda: run on a GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void note_given(CLI::App* sub, ModelDataOptions& o) {
  o.dataset_given = sub->get_option("--dataset")->count() > 0;
}

namespace {

/// The data options with the model's preprocessing: its structural features unless --features
/// names some (then they must be the model's).
DatasetOptions data_for(const ModelDataOptions& o, const nn::ModelFileInfo& info) {
  DatasetOptions d = o.data;
  if (!o.partitions.empty()) {
    if (o.dataset_given)
      throw UsageError(
          "--dataset: not with --partitions (a node-classification model reads its "
          "partition's data)");
    return d;
  }
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

HeteroModelData::HeteroModelData(const ModelDataOptions& o, const char* command)
    : world([&] {
        if (!o.partitions.empty())
          throw UsageError(std::string("--partitions: ") + command +
                           " applies a heterogeneous model in one process (give its --dataset)");
        if (!o.data.features.empty())
          throw UsageError("--features: not for a heterogeneous model (each type has its own)");
        return world_comm("", command);
      }()),
      res(make_resources(o.device, o.threads, world->size())),
      file(runtime::load_hetero_model(res, o.model)),
      shard([&] {
        datasets::LoadOptions load;
        load.offline = o.data.offline;
        load.synthetic_mag = o.data.mag;
        return runtime::local_hetero_shard(datasets::load_hetero_dataset(
            runtime::host_resources(res), o.data.dataset, file.split, load));
      }()) {
  runtime::check_hetero_schema(o.model, file.schema, runtime::hetero_schema(shard.graph));
}

LinkModelData::LinkModelData(const ModelDataOptions& o, const char* command)
    : world([&] {
        if (o.device != "cpu")
          throw UsageError("--device " + o.device + ": a link-prediction model runs on the CPU");
        return world_comm(o.partitions, command);
      }()),
      res(make_resources("cpu", o.threads, world->size())),
      file(runtime::load_link_model(res, o.model)) {
  if (!datasets::temporal_events_file(o.data.dataset))
    throw UsageError("--dataset: '" + o.data.dataset +
                     "' is not a temporal dataset (a directory holding events.tsv or events.csv), "
                     "which a link-prediction model needs");
  const std::string columns = o.data.columns == "auto" ? file.columns : o.data.columns;
  const datasets::TemporalGraph g =
      datasets::load_temporal_dataset(o.data.dataset, datasets::parse_temporal_layout(columns));
  const double train_fraction = file.config.link.train_fraction;
  shard = o.partitions.empty()
              ? runtime::local_temporal_shard(res, g, file.snapshots, train_fraction)
              : runtime::distributed_temporal_shard(
                    res, g, file.snapshots,
                    runtime::read_snapshot_owners(o.partitions, g.num_nodes(),
                                                  datasets::snapshot_boundaries(g, file.snapshots),
                                                  world->size()),
                    *world, train_fraction);
  if (shard.num_features != file.config.link.model.in_features)
    throw IoError(o.model + ": the model reads " +
                  std::to_string(file.config.link.model.in_features) +
                  " degree buckets, the dataset's snapshots give " +
                  std::to_string(shard.num_features) + " (other events than it was trained on)");
  if (const std::string e = runtime::link_split_problem(shard.num_steps(), file.config.link);
      !e.empty())
    throw IoError(o.model + ": " + e);
}

}  // namespace halo::cli
