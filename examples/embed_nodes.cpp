// Example 3: load a saved model and embed nodes, with no training code.
//
//   embed_nodes MODEL_FILE DATASET_DIR LAYER OUT.npy
//
// The model file describes itself (architecture, preprocessing): nn::load_model rebuilds the
// model, runtime::Inference prepares the graph and features as training did, and the rows after
// layer LAYER go to a NumPy file (numpy.load(OUT) gives a float32 (nodes, width) array).
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/data/inference.hpp>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: embed_nodes MODEL_FILE DATASET_DIR LAYER OUT.npy\n");
    return 2;
  }
  try {
    const halo::kernels::Resources res(halo::kernels::Device::Cpu);
    halo::nn::ModelFileInfo info;
    halo::nn::Model<float> model = halo::nn::load_model<float>(res, argv[1], &info);
    halo::runtime::Shard shard =
        halo::runtime::local_shard(res, halo::datasets::read_directory(res, argv[2]));
    halo::nn::check_input_width(argv[1], info, shard.num_features);  // the same features?

    halo::runtime::Inference inference(res, shard, info.config.kind, info.normalize_features);
    const int layer = std::atoi(argv[3]);
    const halo::kernels::Tensor<float>& rows = inference.run(model, layer);  // one process:
    const std::vector<float> values = rows.to_vector(res);  // rows in node id order

    halo::datasets::NpyArray out;
    out.dtype = "<f4";
    out.shape = {rows.rows(), rows.cols()};
    out.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    halo::datasets::write_npy(argv[4], out);
    std::printf("embed_nodes: %s (%s, trained on %s): %lld x %lld after layer %d -> %s\n", argv[1],
                halo::nn::to_string(info.config.kind).c_str(), info.dataset.c_str(),
                static_cast<long long>(rows.rows()), static_cast<long long>(rows.cols()), layer,
                argv[4]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed_nodes: %s\n", e.what());
    return 1;
  }
}
