#pragma once
// Model files of the tasks other than node classification (the heterogeneous and link tasks):
// their named tensors with the task's own description (nn::ModelFileInfo::task, task_model).
// The layout is the model file's (docs/formats.md, "Model file"); each task writes and reads its
// description (hetero_classification.hpp, link_prediction.hpp).

#include <filesystem>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/nn/model_file.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/engine/results.hpp>
#include <halo/runtime/engine/task.hpp>

namespace halo::runtime {

/// Writes `tensors` (by name, float32) with `info` to `path` atomically.
void write_task_model(const kernels::Resources& res, const std::filesystem::path& path,
                      const nn::ModelFileInfo& info, const std::vector<NamedTensor>& tensors);

/// Copies `file`'s arrays into `tensors`, which must match them one for one by name and shape
/// (halo::IoError naming `path` and the first that differs).
void read_task_arrays(const kernels::Resources& res, const std::filesystem::path& path,
                      const nn::ModelFile& file, const std::vector<NamedTensor>& tensors);

/// `path`'s model file, checked to hold a model of `task` (halo::IoError naming the task it
/// holds otherwise).
nn::ModelFile read_task_model(const std::filesystem::path& path, const std::string& task);

/// What a model file records of the run that trained it (nn::ModelFileInfo::training), one JSON
/// object as text: the mode (with its batch settings), epochs, optimizer, seed, ranks, the kept
/// epoch with its scores, the final loss.
std::string training_record(const TrainConfig& config, const TrainResult& result);

}  // namespace halo::runtime
