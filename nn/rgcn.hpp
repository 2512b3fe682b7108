#pragma once
// R-GCN (Schlichtkrull et al., 2018): per-relation mean aggregation, a self-loop weight per
// node type, optional basis decomposition of the relation weights.

#include <cstdint>
#include <utility>
#include <vector>

#include <halo/nn/hetero.hpp>

namespace halo::nn {

/// For every node type t with destinations:
///   y_t = x_t[:num_dst] W_self_t + b_t + sum over relations r into t of mean_r(x_src(r)) W_r
/// where mean_r averages a destination's in-neighbours under r (rows without any give zero).
/// With num_bases B > 0, W_r = sum_b a_rb V_b (B shared in x out bases, R x B coefficients),
/// which needs every relation's source width equal. Stages timed into graph.times: feature
/// projection (the self-loop and relation products), neighbour aggregation (the mean SpMMs),
/// semantic aggregation (the sum over relations and the bias).
template <class T>
class RGCNConv final : public HeteroModule<T> {
 public:
  /// in_width[t]: the input width of type t; relations (src_type, dst_type) in the order of
  /// the graphs' relations. Weights Glorot-uniform from (seed, param_id, param_id + 1, ...),
  /// biases zero. On res's device.
  RGCNConv(const kernels::Resources& res, std::vector<std::int64_t> in_width, std::int64_t out,
           std::vector<std::pair<std::int32_t, std::int32_t>> relations, int num_bases,
           std::uint64_t seed, std::uint64_t param_id);

  const std::vector<kernels::Tensor<T>>& forward(const Context& ctx,
                                                 const HeteroGraphView<T>& graph,
                                                 std::span<const kernels::Tensor<T>> x) override;
  const std::vector<kernels::Tensor<T>>& backward(const Context& ctx,
                                                  const HeteroGraphView<T>& graph,
                                                  std::span<const kernels::Tensor<T>> dy,
                                                  bool need_input_grad) override;
  std::vector<Parameter<T>*> parameters() override;
  std::string name() const override { return "rgcn_conv"; }
  /// A zero type's self product and the relations from it are skipped (their messages are
  /// zeros; their weights' gradients zeros), and it gets no input gradient.
  void set_zero_inputs(std::vector<bool> zero) override { m_zero = std::move(zero); }

 private:
  bool zero_input(std::size_t type) const;
  /// Relation r's weight (in x out): its own parameter, or row r of the composed m_w.
  kernels::MatrixView<const T> relation_weight(std::size_t r) const;

  std::vector<std::int64_t> m_in;
  std::int64_t m_out;
  std::vector<std::pair<std::int32_t, std::int32_t>> m_rel;
  int m_num_bases;
  std::vector<Parameter<T>> m_self, m_bias;  // per node type
  std::vector<Parameter<T>> m_weight;        // per relation (no bases)
  Parameter<T> m_basis, m_coef;              // B x (in * out), R x B (bases)
  kernels::Tensor<T> m_w, m_dw;              // R x (in * out): composed weights, their grads
  std::span<const kernels::Tensor<T>> m_x;
  std::vector<kernels::Tensor<T>> m_agg;  // per relation: mean_r(x_src), num_dst x in
  std::vector<kernels::Tensor<T>> m_msg;  // per relation: m_agg W_r, num_dst x out
  std::vector<kernels::Tensor<T>> m_y, m_dx;
  std::vector<bool> m_zero;  // per node type: its input is zeros (set_zero_inputs)
};

}  // namespace halo::nn
