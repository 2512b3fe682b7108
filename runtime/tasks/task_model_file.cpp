#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/runtime/tasks/task_model_file.hpp>

namespace halo::runtime {

void write_task_model(const kernels::Resources& res, const std::filesystem::path& path,
                      const nn::ModelFileInfo& info, const std::vector<NamedTensor>& tensors) {
  nn::ModelFile file{info, "<f4", {}};
  for (const NamedTensor& t : tensors) {
    const std::vector<float> values = t.tensor->to_vector(res);  // device -> host
    file.arrays.push_back(
        {t.name, t.tensor->rows(), t.tensor->cols(),
         std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float))});
  }
  nn::write_model_file(path, file);
}

void read_task_arrays(const kernels::Resources& res, const std::filesystem::path& path,
                      const nn::ModelFile& file, const std::vector<NamedTensor>& tensors) {
  const auto fail = [&](const std::string& what) { throw IoError(path.string() + ": " + what); };
  if (file.dtype != "<f4") fail("holds " + file.dtype + " parameters, the model uses <f4");
  if (file.arrays.size() != tensors.size())
    fail("holds " + std::to_string(file.arrays.size()) + " arrays, the model has " +
         std::to_string(tensors.size()));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const nn::ModelFileArray& a = file.arrays[i];
    kernels::Tensor<float>& t = *tensors[i].tensor;
    if (a.name != tensors[i].name || a.rows != t.rows() || a.cols != t.cols())
      fail("array " + std::to_string(i) + " is '" + a.name + "' " + std::to_string(a.rows) + "x" +
           std::to_string(a.cols) + ", the model expects '" + tensors[i].name + "' " +
           std::to_string(t.rows()) + "x" + std::to_string(t.cols()));
    kernels::copy_bytes(res, t.data(), t.device(), a.bytes.data(), kernels::Device::Cpu,
                        a.bytes.size());
  }
}

nn::ModelFile read_task_model(const std::filesystem::path& path, const std::string& task) {
  nn::ModelFile file = nn::read_model_file(path);
  if (file.info.task != task)
    throw IoError(path.string() + ": a model of the " + file.info.task + " task, not of the " +
                  task + " task");
  return file;
}

std::string training_record(const TrainConfig& config, const TrainResult& result) {
  const auto number = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json t = {{"mode", config.mini_batch ? "mini-batch" : "full-graph"},
                      {"epochs", config.epochs},
                      {"lr", config.lr},
                      {"weight_decay", config.weight_decay},
                      {"seed", config.seed},
                      {"optimizer", "adam"},
                      {"world_size", result.world_size},
                      {"best_epoch", result.best_epoch},
                      {"final_train_loss", number(result.final_train_loss)}};
  if (config.mini_batch)
    t.update({{"batch_size", config.mini_batch->batch_size},
              {"fanouts", config.mini_batch->fanouts},
              {"replace", config.mini_batch->replace}});
  for (const auto& [name, value] : result.metrics) t[name] = number(value);
  return t.dump();
}

}  // namespace halo::runtime
