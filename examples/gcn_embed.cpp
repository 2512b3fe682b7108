// Embedding Halo's layers in your own program: a 2-layer GCN trained by hand on a generated
// graph, with the loop written out (forward, loss, backward, Adam) instead of runtime::train.
#include <cstdio>

#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/optimizer.hpp>

int main() {
  namespace k = halo::kernels;
  const k::Resources res(k::Device::Cpu);

  halo::datasets::SyntheticConfig data_config;
  data_config.num_nodes = 1000;
  data_config.num_classes = 4;
  const halo::datasets::Dataset data = halo::datasets::make_synthetic(res, data_config);
  // GCN propagates over D^-1/2 (A + I) D^-1/2 of the symmetric graph.
  const auto adjacency =
      halo::datasets::gcn_normalize<float>(res, halo::datasets::symmetrize(res, data.graph));

  halo::nn::ModelConfig config;
  config.kind = halo::nn::ModelKind::Gcn;
  config.hidden = 32;
  config.in_features = data.num_features();
  config.num_classes = data.num_classes;
  halo::nn::Model<float> model(res, config, /*seed=*/42);
  halo::nn::Adam<float> adam(res, model.parameters(),
                             k::AdamConfig{.lr = 0.01, .weight_decay = 5e-4});

  k::Tensor<float> dlogits;
  for (int epoch = 1; epoch <= 100; ++epoch) {
    const halo::nn::Context ctx{&res, /*training=*/true, /*seed=*/42,
                                static_cast<std::uint64_t>(epoch), 0};
    const auto& logits = model.forward(ctx, adjacency.view(), data.features);
    const float loss =
        k::log_softmax_nll(res, logits.view(), data.labels.span(), data.train_idx.span());
    k::ensure_shape(res, dlogits, logits.rows(), logits.cols());
    k::log_softmax_nll_backward(res, logits.view(), data.labels.span(), data.train_idx.span(),
                                dlogits.view());
    model.backward(ctx, adjacency.view(), dlogits);
    adam.step(res);
    if (epoch % 20 == 0) std::printf("epoch %3d  loss %.4f\n", epoch, loss);
  }

  const halo::nn::Context eval{&res, /*training=*/false, 42, 0, 0};
  const auto& logits = model.forward(eval, adjacency.view(), data.features);
  const auto correct =
      k::count_correct(res, logits.view(), data.labels.span(), data.test_idx.span());
  std::printf("test accuracy %.3f\n", static_cast<double>(correct) / data.test_idx.numel());
  return 0;
}
