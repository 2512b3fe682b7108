#pragma once
// The Heterogeneous Graph Transformer layer (Hu et al., "Heterogeneous Graph Transformer",
// WWW 2020) on the heterogeneous layer interface. Instantiated for float and double.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/attention.hpp>
#include <halo/nn/hetero.hpp>

namespace halo::nn {

/// What an HGT layer is built from. The relations are listed in the order the layer's
/// HeteroGraphView lists them (forward checks their types).
struct HgtConfig {
  /// Input width of each node type (the number of types is its size).
  std::vector<std::int64_t> in_widths;
  /// (source type, destination type) of each relation.
  std::vector<std::pair<std::int32_t, std::int32_t>> relations;
  /// Output width of every node type, heads * head width.
  std::int64_t out_width = 64;
  std::int64_t heads = 4;
  /// Dropout probability on the output projection, while training.
  float dropout = 0.f;
  /// The gated residual of the paper, for the types whose input width equals out_width.
  bool skip = true;
  /// Keys the dropout masks (as nn::Dropout's layer_id).
  std::uint64_t layer_id = 0;
};

/// One HGT layer. With H heads of width d = out_width / H, for every node type t:
///   K_t = x_t Wk_t + bk_t, V_t = x_t Wv_t + bv_t (all input rows), Q_t = x_t Wq_t + bq_t
///   (destination rows); for every relation r = (s -> t) and head h:
///   score(e = (i, j), h) = (K_s[j, h] W_att[r, h]) . Q_t[i, h] * mu[r, h] / sqrt(d),
///   message(e, h) = V_s[j, h] W_msg[r, h];
/// alpha = softmax of the scores per (destination node, head) over ALL its incoming edges of
/// every relation; agg_t[i, h] = sum over r and e = (i, j) of alpha(e, h) message(e, h);
/// o_t = dropout(gelu(agg_t) Wa_t + ba_t) (gelu: the tanh approximation);
/// y_t = sigmoid(g_t) o_t + (1 - sigmoid(g_t)) x_t[dst rows] when skip and in_t == out_width,
/// else o_t. W_att, W_msg are d x d per relation and head, mu (the priors) starts at 1, g_t at 1.
/// A type without incoming relations (or without destination rows) aggregates nothing: its
/// output is the projection of gelu(0) = 0. Dropout masks are keyed by (ctx.seed, ctx.epoch,
/// layer_id, global row, column), the global row being source_ids[t][i] when given, else
/// type_offset[t] + i (0 + i without type_offset). Stage times (when graph.times is set; the
/// layer then synchronises res at each stage's end so device work is attributed to its stage):
/// feature projection = K/Q/V and output projections with gelu, dropout and gate; neighbour
/// aggregation = per-relation transforms, SDDMM scores and the weighted sums of messages;
/// semantic aggregation = the softmax across relations. Buffers are kept across passes
/// (reallocated only when a pass is larger than all before). Parameters, in parameters()'s
/// order: per node type t `k_weight.t<t>` (in_t x out), `k_bias.t<t>` (out), likewise `q_*`,
/// `v_*`, `a_weight.t<t>` (out x out), `a_bias.t<t>`, `skip.t<t>` (1 x 1, gated types only);
/// then per relation r `att.r<r>`, `msg.r<r>` (H x d*d: head h's d x d matrix row-major in
/// row h) and `prior.r<r>` (H).
template <class T>
class HGTConv final : public HeteroModule<T> {
 public:
  /// Weights Glorot-uniform keyed by (seed, param_id + k) for the k-th weight tensor, biases 0,
  /// priors and gates 1. On res's device.
  HGTConv(const kernels::Resources& res, HgtConfig config, std::uint64_t seed,
          std::uint64_t param_id);
  const std::vector<kernels::Tensor<T>>& forward(const Context& ctx,
                                                 const HeteroGraphView<T>& graph,
                                                 std::span<const kernels::Tensor<T>> x) override;
  const std::vector<kernels::Tensor<T>>& backward(const Context& ctx,
                                                  const HeteroGraphView<T>& graph,
                                                  std::span<const kernels::Tensor<T>> dy,
                                                  bool need_input_grad) override;
  std::vector<Parameter<T>*> parameters() override;
  /// A zero type's K, Q and V are their biases (no products; their weights' gradients zeros),
  /// and it gets no input gradient.
  void set_zero_inputs(std::vector<bool> zero) override { m_zero = std::move(zero); }
  std::string name() const override { return "hgt_conv"; }
  const HgtConfig& config() const { return m_config; }

 private:
  /// Per node type: parameters, forward activations, backward scratch.
  struct TypeState {
    Parameter<T> k_weight, k_bias, q_weight, q_bias, v_weight, v_bias, a_weight, a_bias;
    Parameter<T> gate;                         // 1 x 1 when gated, else empty
    kernels::Tensor<T> keys, queries, values;  // K (src rows), Q (dst rows), V (src rows)
    kernels::Tensor<T> agg, act, lin;          // aggregate, gelu(aggregate), dropout(a-linear)
    kernels::Tensor<T> row_max, row_sum;       // softmax statistics (row_sum: row_dot backward)
    kernels::Tensor<T> d_keys, d_queries, d_values, d_lin, d_act;
  };
  /// Per relation: parameters, forward activations, backward scratch.
  struct RelationState {
    Parameter<T> att, msg, prior;               // H x d*d, H x d*d, H x 1
    kernels::Tensor<T> att_block, msg_block;    // block-diagonal forms (out x out)
    kernels::Tensor<T> rel_keys, rel_messages;  // K_s W_att (scaled), V_s W_msg
    kernels::Tensor<T> alpha, d_alpha;          // E x H
  };
  void check_graph(const HeteroGraphView<T>& graph) const;
  bool gated(std::size_t t) const;
  bool zero_input(std::size_t t) const { return t < m_zero.size() && m_zero[t]; }

  HgtConfig m_config;
  std::int64_t m_head_width;
  std::vector<TypeState> m_types;
  std::vector<RelationState> m_relations;
  std::span<const kernels::Tensor<T>> m_input;
  bool m_forward_done = false;
  bool m_dropout_active = false;
  std::vector<kernels::Tensor<T>> m_output;
  std::vector<kernels::Tensor<T>> m_dx;
  std::vector<kernels::Tensor<T>> m_no_grad;
  std::vector<bool> m_zero;  // per node type: its input is zeros (set_zero_inputs)
  std::vector<kernels::SoftmaxSegments<kernels::NodeId, T>> m_parts, m_grad_parts;
  kernels::Tensor<T> m_d_rel_keys;      // dL/d(K_s W_att), one relation at a time
  kernels::Tensor<T> m_d_rel_messages;  // dL/d(V_s W_msg), one relation at a time
  kernels::Tensor<T> m_d_block;         // dL/d(block-diagonal), one relation at a time
};

}  // namespace halo::nn
