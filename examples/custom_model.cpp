// Example 2: a model composed from Halo's layers, trained by the one Trainer.
//
//   custom_model DATASET_DIR [EPOCHS]
//
// SkipSage is two GraphSAGE layers with a skip connection from the input to the logits:
//   logits = SAGE2(ReLU(SAGE1(x))) + x W_skip + b_skip.
// Anything that implements nn::Network (forward, backward, parameters, shape) can be trained:
// the Trainer prepares the graph shape() declares (SAGE's mean here), runs the passes, the loss
// and Adam.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/readers/plain_format.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/nn/layers.hpp>
#include <halo/nn/network.hpp>
#include <halo/runtime/runtime.hpp>

namespace nn = halo::nn;
namespace k = halo::kernels;

class SkipSage final : public nn::Network<float> {
 public:
  SkipSage(const k::Resources& res, std::int64_t in, std::int64_t hidden, std::int64_t classes,
           std::uint64_t seed)
      : m_sage1(res, in, hidden, seed, /*param_id=*/0),
        m_sage2(res, hidden, classes, seed, /*param_id=*/3),
        m_skip(res, in, classes, seed, /*param_id=*/6),
        m_shape{nn::GraphPreparation::Mean, /*num_layers=*/2, in, classes} {}

  // Full graph: one graph for both layers. (On mini-batch blocks the skip branch would need
  // the rows of the last block's destinations only; this example trains on the full graph.)
  const k::Tensor<float>& forward(const nn::Context& ctx, std::span<const nn::Adjacency<float>> g,
                                  const nn::Features<float>& x) override {
    const nn::Adjacency<float>& graph = g.front();
    const auto& h = m_relu.forward(ctx, graph, m_sage1.forward(ctx, graph, x));
    const auto& y = std::get<k::Tensor<float>>(m_sage2.forward(ctx, graph, h));
    const auto& s = std::get<k::Tensor<float>>(m_skip.forward(ctx, {}, x));
    k::ensure_shape(*ctx.res, m_logits, y.rows(), y.cols());
    k::copy_async(*ctx.res, m_logits, y);
    k::axpy(*ctx.res, 1.f, s.span(), m_logits.span());  // logits = y + s
    return m_logits;
  }

  void backward(const nn::Context& ctx, std::span<const nn::Adjacency<float>> g,
                const k::Tensor<float>& dlogits) override {
    const nn::Adjacency<float>& graph = g.front();
    // The sum passes dlogits to both branches; the input's own gradient is never needed.
    const auto& dh = m_sage2.backward(ctx, graph, dlogits, /*need_input_grad=*/true);
    const auto& dz = m_relu.backward(ctx, graph, dh, true);
    m_sage1.backward(ctx, graph, dz, false);
    m_skip.backward(ctx, {}, dlogits, false);
  }

  std::vector<nn::Parameter<float>*> parameters() override {
    std::vector<nn::Parameter<float>*> p;
    for (nn::Module<float>* m :
         std::initializer_list<nn::Module<float>*>{&m_sage1, &m_sage2, &m_skip})
      for (auto* q : m->parameters()) p.push_back(q);
    return p;
  }

  nn::NetworkShape shape() const override { return m_shape; }

 private:
  nn::SAGEConv<float> m_sage1, m_sage2;
  nn::ReLU<float> m_relu;
  nn::Linear<float> m_skip;
  nn::NetworkShape m_shape;
  k::Tensor<float> m_logits;
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: custom_model DATASET_DIR [EPOCHS]\n");
    return 2;
  }
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 100;
  try {
    const k::Resources res(k::Device::Cpu);
    halo::runtime::Shard shard =
        halo::runtime::local_shard(res, halo::datasets::read_directory(res, argv[1]));
    SkipSage model(res, shard.num_features, /*hidden=*/32, shard.part.num_classes, /*seed=*/1);

    halo::runtime::TrainConfig config;  // full graph; the model fields are the network's
    config.epochs = epochs;
    halo::runtime::Trainer trainer(res,
                                   halo::runtime::node_classification(res, shard, config, model),
                                   config.epochs, config.checkpoint);
    const halo::runtime::TrainResult r = trainer.run();
    std::printf("custom_model: SAGE + skip, %zu parameters, best epoch %d, test accuracy %.4f\n",
                model.parameters().size(), r.best_epoch, r.metrics.at("test_accuracy"));
    return r.metrics.at("test_accuracy") > 0.5
               ? 0
               : 1;  // Cora: far above chance (1/7) after a few epochs
  } catch (const std::exception& e) {
    std::fprintf(stderr, "custom_model: %s\n", e.what());
    return 1;
  }
}
