#pragma once
// What `halo predict` and `halo embed` share: a saved model, the data it is applied to (a dataset
// in one process or one rank per part of a partition), and the inference pass over them.

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/dataset_options.hpp>

namespace halo::cli {

struct ModelDataOptions {
  std::string model;  // --model FILE
  DatasetOptions data;
  bool dataset_given = false;  // --dataset was given (note_given)
  std::string partitions;
  int threads = 0;
  std::string device = "cpu";
};

/// Registers --model, the dataset options, --partitions, --threads and --device on `sub`.
void add_model_data_options(CLI::App* sub, ModelDataOptions& o);
/// After parsing `sub`: records in `o` which of its options were given.
void note_given(CLI::App* sub, ModelDataOptions& o);

/// The opened model and data, in the order they are needed: the ranks, the Resources, the model
/// file, the data (with the model's structural features when --features was not given), and
/// the inference pass (prepared as in training). Not movable: the pass keeps references.
class ModelData {
 public:
  /// Checks `outputs` (paths, each named by its flag in `flags`) before any work; reads the
  /// model file (halo::IoError naming it: damaged, another format version), calls `check_model`
  /// (usage errors that need the model, e.g. embed's --layer), then the data, and refuses a
  /// feature width other than the model's (IoError naming the model file).
  ModelData(const ModelDataOptions& o, const char* command, const std::vector<std::string>& outputs,
            const std::vector<const char*>& flags,
            const std::function<void(const nn::ModelConfig&)>& check_model = {});
  ModelData(const ModelData&) = delete;
  ModelData& operator=(const ModelData&) = delete;

  std::unique_ptr<runtime::Comm> world;
  kernels::Resources res;
  nn::ModelFileInfo info;
  nn::Model<float> model;
  runtime::Shard shard;
  std::unique_ptr<runtime::Inference> inference;
};

/// A saved heterogeneous model and its data, checked against the schema the model was built
/// for (halo::IoError naming the model file): in one process the typed directory (or registered
/// name) with the model's split; with --partitions a heterogeneous partition, one rank per part
/// (its split must be the model's). Refuses --features (usage).
class HeteroModelData {
 public:
  HeteroModelData(const ModelDataOptions& o, const char* command);
  HeteroModelData(const HeteroModelData&) = delete;
  HeteroModelData& operator=(const HeteroModelData&) = delete;

  std::unique_ptr<runtime::Comm> world;
  kernels::Resources res;
  runtime::HeteroModelFile file;
  runtime::HeteroShard shard;
};

/// Rows held across the ranks, by id: every rank's (id, `cols` values, label) rows gathered on
/// every rank and ordered by id. Collective.
struct RowsById {
  std::vector<std::int64_t> ids;
  std::vector<float> values;
  std::vector<std::int32_t> labels;
};
RowsById gather_rows_by_id(runtime::Comm& comm, const std::vector<std::int64_t>& ids,
                           const std::vector<float>& values,
                           const std::vector<std::int32_t>& labels, std::int64_t cols);

/// A saved link-prediction model and its events cut into the model's snapshots: in one process,
/// or with --partitions a snapshot partition series (halo partition --method migration), one
/// rank per part, each holding its rows of every snapshot (runtime::distributed_temporal_shard).
/// The events are read with the model's columns unless --columns names others. halo::IoError
/// naming the model file for snapshots that do not fit it (another degree width, too few steps).
class LinkModelData {
 public:
  LinkModelData(const ModelDataOptions& o, const char* command);
  LinkModelData(const LinkModelData&) = delete;
  LinkModelData& operator=(const LinkModelData&) = delete;

  std::unique_ptr<runtime::Comm> world;
  kernels::Resources res;
  runtime::LinkModelFile file;
  runtime::TemporalShard shard;
};

}  // namespace halo::cli
