#pragma once
// The module interface: explicit forward/backward with the activations each layer caches.

#include <cstdint>
#include <string>
#include <vector>

#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::nn {

template <class T>
using Features = kernels::FeatureMatrix<T>;

/// The graph a layer aggregates over: rows are destination nodes, columns source nodes. GCN
/// layers expect the normalised adjacency (values set), SAGE layers the plain one.
template <class T>
using Adjacency = kernels::CsrView<kernels::NodeId, T>;

/// What a pass needs besides its inputs.
struct Context {
  const kernels::Resources* res = nullptr;
  bool training = false;
  std::uint64_t seed = 0;       // base seed of the run (dropout masks)
  std::uint64_t epoch = 0;      // keys the dropout masks of this pass
  std::int64_t row_offset = 0;  // global node id of local row 0
};

/// A trainable tensor and its gradient (same shape, same device).
template <class T>
struct Parameter {
  std::string name;
  kernels::Tensor<T> value;
  kernels::Tensor<T> grad;
};

/// Contract: `forward` computes the output from `x`, caches what `backward` needs (it may keep a
/// pointer to `x`, which must stay alive and unchanged until `backward`), and returns a reference
/// to an output it owns, valid until its next forward. `backward` takes dL/d(output), overwrites
/// the gradients of its parameters and returns dL/d(input), owned by the module; when
/// `need_input_grad` is false it may skip that product and return an empty tensor. Modules are
/// not thread-safe.
template <class T>
class Module {
 public:
  virtual ~Module() = default;
  virtual const Features<T>& forward(const Context& ctx, Adjacency<T> graph,
                                     const Features<T>& x) = 0;
  virtual const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                             const kernels::Tensor<T>& dy,
                                             bool need_input_grad) = 0;
  virtual std::vector<Parameter<T>*> parameters() { return {}; }
  virtual std::string name() const = 0;
};

}  // namespace halo::nn
