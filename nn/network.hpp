#pragma once
// What runtime::Trainer trains: any network of Halo's modules that maps graphs and features to
// logits, the built-in nn::Model or one a user composes.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <halo/nn/model_types.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// What the trainer needs to know about a network besides its passes: the data it reads and
/// the graph it aggregates over.
struct NetworkShape {
  /// The graph the aggregations expect, which the runtime prepares (GraphPreparation).
  GraphPreparation graph = GraphPreparation::Symmetric;
  /// Graphs of a mini-batch pass (one block per layer, input layer first).
  int num_layers = 1;
  std::int64_t in_features = 0;
  std::int64_t num_classes = 0;
};

/// Contract: forward maps node features to one row of logits per destination of the last
/// graph, caching what backward needs (like Module::forward, x must stay alive and unchanged
/// until backward); backward takes dL/dlogits and leaves every parameter's gradient in its
/// `grad` (overwritten, not accumulated). `graphs` holds one graph for the whole pass (full
/// graph: every layer aggregates over it) or shape().num_layers blocks, input layer first.
/// parameters() lists the same tensors in the same order on every call (the optimizer keeps
/// pointers to them). Not thread-safe.
template <class T>
class Network {
 public:
  virtual ~Network() = default;
  virtual const kernels::Tensor<T>& forward(const Context& ctx,
                                            std::span<const Adjacency<T>> graphs,
                                            const Features<T>& x) = 0;
  virtual void backward(const Context& ctx, std::span<const Adjacency<T>> graphs,
                        const kernels::Tensor<T>& dlogits) = 0;
  virtual std::vector<Parameter<T>*> parameters() = 0;
  virtual NetworkShape shape() const = 0;
  /// The dropout the network applies to its input first, with the mask kernels::dropout draws
  /// for DropoutKey{ctx.seed, ctx.epoch, kInputDropoutLayer, ctx.row_offset, the input graph's
  /// source_ids}, or 0 for none. A network that reports p > 0 skips it when ctx.input_dropped
  /// (the trainer applies it while gathering a batch's rows and says so). Default: 0.
  virtual float input_dropout() const { return 0.f; }
  /// Sizes buffers for graphs within `bounds` ((sources, destinations) per layer, input layer
  /// first) and inputs of at most `input_entries` stored entries (0: dense), so that later passes
  /// allocate nothing. Optional: the default does nothing (passes then allocate as needed).
  virtual void reserve(const kernels::Resources& res,
                       std::span<const std::pair<std::int64_t, std::int64_t>> bounds,
                       std::int64_t input_entries) {
    (void)res, (void)bounds, (void)input_entries;
  }

 protected:
  Network() = default;
  Network(const Network&) = default;
  Network(Network&&) noexcept = default;
  Network& operator=(const Network&) = default;
  Network& operator=(Network&&) noexcept = default;
};

}  // namespace halo::nn
