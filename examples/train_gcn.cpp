// Example 1 (and 4): train a GCN from C++ with runtime::train and save it as a model file.
//
//   train_gcn DATASET_DIR MODEL_FILE [EPOCHS]                       one process, a plain dataset
//   mpiexec -n P train_gcn --partitions DIR MODEL_FILE [EPOCHS]      one rank per part of DIR
//
// DATASET_DIR is a dataset in Halo's plain format (e.g. Cora, docs/datasets.md); DIR a partition
// written by `halo partition --parts P`. The ranks hold the same parameters; rank 0 saves them.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include <halo/datasets/readers/plain_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/runtime.hpp>

int main(int argc, char** argv) {
  namespace rt = halo::runtime;
  const bool partitioned = argc >= 2 && std::string(argv[1]) == "--partitions";
  const int first = partitioned ? 2 : 1;
  if (argc < first + 2) {
    std::fprintf(stderr,
                 "usage: train_gcn DATASET_DIR MODEL_FILE [EPOCHS]\n"
                 "       mpiexec -n P train_gcn --partitions DIR MODEL_FILE [EPOCHS]\n");
    return 2;
  }
  const std::string data = argv[first], model_file = argv[first + 1];
  const int epochs = argc > first + 2 ? std::atoi(argv[first + 2]) : 100;
  try {
    // The ranks the launcher started: one process is a SelfComm.
    std::unique_ptr<rt::Comm> world = rt::launcher_world_size() > 1
                                          ? rt::make_world_comm()
                                          : std::unique_ptr<rt::Comm>(new rt::SelfComm());
    // One thread per rank when several share the machine; all cores otherwise.
    const halo::kernels::Resources res(halo::kernels::Device::Cpu, world->size() > 1 ? 1 : 0);
    rt::Shard shard = partitioned ? rt::open_shard(res, *world, data)
                                  : rt::local_shard(res, halo::datasets::read_directory(res, data));

    rt::TrainConfig config;  // Kipf & Welling's GCN: 2 layers, 16 hidden, dropout 0.5, Adam
    config.model.kind = halo::nn::ModelKind::Gcn;
    config.epochs = epochs;
    rt::TrainRun run = rt::train(res, shard, config);

    if (shard.comm->rank() == 0) {
      // The model file records the architecture, the preprocessing and this run's result.
      const_cast<halo::nn::Model<float>&>(run.model).save(
          res, model_file, rt::model_file_info(config, run.result, shard.dataset));
      std::printf("train_gcn: %d rank(s), best epoch %d, test accuracy %.4f, saved %s\n",
                  run.result.world_size, run.result.best_epoch,
                  run.result.metrics.at("test_accuracy"), model_file.c_str());
    }
    shard.comm->barrier();  // rank 0 has written the file before any rank finalises MPI
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_gcn: %s\n", e.what());
    rt::abort_world(1);  // with several ranks: end them all
    return 1;
  }
}
