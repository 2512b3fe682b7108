#include <algorithm>
#include <cstring>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/tools/halo/model_data.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_link.hpp>

namespace halo::cli {

void add_model_data_options(CLI::App* sub, ModelDataOptions& o) {
  sub->add_option("--model", o.model, "The model file (written by halo train --save-model)")
      ->required();
  add_dataset_options(sub, o.data);
  sub->add_option("--partitions", o.partitions,
                  "Use the partition directory DIR written by `halo partition`, on 1 to K ranks "
                  "of its K parts: mpiexec -n R halo ... --partitions DIR (a heterogeneous "
                  "partition: one rank per part)")
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
        if (!o.data.features.empty())
          throw UsageError("--features: not for a heterogeneous model (each type has its own)");
        if (!o.partitions.empty() && o.dataset_given)
          throw UsageError(
              "--dataset: not with --partitions (a heterogeneous model reads its "
              "partition's parts)");
        return world_comm(o.partitions, command);
      }()),
      res(make_resources(o.device, o.threads, world->size())),
      file(runtime::load_hetero_model(res, o.model)),
      shard([&] {
        if (!o.partitions.empty()) {
          const partition::PartitionMeta meta = partition::read_partition_meta(o.partitions);
          if (meta.hetero && meta.hetero->split >= 0 && meta.hetero->split != file.split)
            throw IoError(o.model + ": the model was trained on split " +
                          std::to_string(file.split) + ", the partition " + o.partitions +
                          " holds split " + std::to_string(meta.hetero->split));
          return runtime::open_hetero_shard(res, *world, o.partitions);
        }
        datasets::LoadOptions load;
        load.offline = o.data.offline;
        load.synthetic_mag = o.data.mag;
        return runtime::local_hetero_shard(datasets::load_hetero_dataset(
            runtime::host_resources(res), o.data.dataset, file.split, load));
      }()) {
  runtime::check_hetero_schema(o.model, file.schema, runtime::hetero_schema(shard));
}

RowsById gather_rows_by_id(runtime::Comm& comm, const std::vector<std::int64_t>& ids,
                           const std::vector<float>& values,
                           const std::vector<std::int32_t>& labels, std::int64_t cols) {
  std::vector<std::size_t> counts;
  const auto all = [&](const void* data, std::size_t bytes) {
    return comm.allgatherv(data, bytes, counts);
  };
  const std::vector<std::byte> i = all(ids.data(), ids.size() * sizeof(std::int64_t));
  const std::vector<std::byte> v = all(values.data(), values.size() * sizeof(float));
  const std::vector<std::byte> l = all(labels.data(), labels.size() * sizeof(std::int32_t));
  const std::size_t n = i.size() / sizeof(std::int64_t);
  const auto c = static_cast<std::size_t>(cols);
  std::vector<std::int64_t> got(n);
  std::memcpy(got.data(), i.data(), i.size());
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return got[a] < got[b]; });
  RowsById r;
  r.values.resize(n * c);
  r.labels.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    r.ids.push_back(got[order[k]]);
    std::memcpy(r.values.data() + k * c, v.data() + order[k] * c * sizeof(float),
                c * sizeof(float));
    std::memcpy(&r.labels[k], l.data() + order[k] * sizeof(std::int32_t), sizeof(std::int32_t));
  }
  return r;
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
  shard = link_shard(res, *world, g, file.snapshots, o.partitions, file.config.link.train_fraction);
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
