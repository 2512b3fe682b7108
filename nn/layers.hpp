#pragma once
// The layers: Linear, GCNConv, SAGEConv, ReLU, Dropout. Instantiated for float and double.

#include <cstdint>
#include <memory>

#include <halo/kernels/elementwise.hpp>
#include <halo/nn/aggregate_transform.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// y = x W + b. x is n x in (dense or sparse), W in x out, b out.
template <class T>
class Linear final : public Module<T> {
 public:
  /// W Glorot-uniform from (seed, param_id), b zero. On res's device.
  Linear(const kernels::Resources& res, std::int64_t in, std::int64_t out, std::uint64_t seed,
         std::uint64_t param_id);
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::vector<Parameter<T>*> parameters() override { return {&m_weight, &m_bias}; }
  std::string name() const override { return "linear"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  Parameter<T> m_weight, m_bias;
  const Features<T>* m_input = nullptr;
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
};

/// Kipf & Welling's graph convolution: y = Â x W + b with Â the normalised adjacency passed as
/// `graph` (D^-1/2 (A + I) D^-1/2, see datasets::gcn_normalize).
template <class T>
class GCNConv final : public Module<T> {
 public:
  GCNConv(const kernels::Resources& res, std::int64_t in, std::int64_t out, std::uint64_t seed,
          std::uint64_t param_id);
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::vector<Parameter<T>*> parameters() override { return {&m_weight, &m_bias}; }
  std::string name() const override { return "gcn_conv"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  Parameter<T> m_weight, m_bias;
  AggregateTransform<T> m_agg{kernels::Aggregate::Sum};
  const Features<T>* m_input = nullptr;
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
};

/// GraphSAGE with the mean aggregator and a root weight (Hamilton et al.):
/// y = x W_root + mean_{u in N(v)} x_u W_neigh + b. `graph` is the plain adjacency; rows with no
/// neighbours aggregate to zero.
template <class T>
class SAGEConv final : public Module<T> {
 public:
  SAGEConv(const kernels::Resources& res, std::int64_t in, std::int64_t out, std::uint64_t seed,
           std::uint64_t param_id);
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::vector<Parameter<T>*> parameters() override {
    return {&m_weight_root, &m_weight_neigh, &m_bias};
  }
  std::string name() const override { return "sage_conv"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  Parameter<T> m_weight_root, m_weight_neigh, m_bias;
  AggregateTransform<T> m_agg{kernels::Aggregate::Mean};
  const Features<T>* m_input = nullptr;
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
};

/// y = max(x, 0) on dense inputs.
template <class T>
class ReLU final : public Module<T> {
 public:
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::string name() const override { return "relu"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
};

/// Inverted dropout with probability p while training, the identity otherwise. The mask is keyed
/// by (ctx.seed, ctx.epoch, layer_id, global row, column) — see kernels::DropoutKey; the global
/// row is graph.source_ids[r] when given, else ctx.row_offset + r — so it needs no storage and
/// every process draws the same mask for a node. `graph` is the next convolution's. A sparse
/// input's output stores only the entries kept (kernels::dropout_compact).
template <class T>
class Dropout final : public Module<T> {
 public:
  Dropout(float p, std::uint64_t layer_id);
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::string name() const override { return "dropout"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  float m_p;
  std::uint64_t m_layer_id;
  bool m_active = false;  // whether the last forward dropped anything
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
  kernels::DropoutCompactScratch m_compact;  // a sparse input's dropout_compact storage
};

/// ReLU followed by the next convolution's Dropout(p, layer_id), in one pass each way: while
/// training y = max(x, 0) / (1 - p) where Dropout's mask keeps, else 0 (kernels::relu_dropout:
/// the same mask and values as the two modules), and the backward pass needs no mask (dx =
/// dy / (1 - p) where y > 0); otherwise the plain ReLU. Like Dropout, `graph` is the next
/// convolution's (its sources are this module's rows).
template <class T>
class ReluDropout final : public Module<T> {
 public:
  ReluDropout(float p, std::uint64_t layer_id);
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::string name() const override { return "relu_dropout"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  float m_p;
  std::uint64_t m_layer_id;
  bool m_active = false;  // whether the last forward dropped anything
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
};

}  // namespace halo::nn
