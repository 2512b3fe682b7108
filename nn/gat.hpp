#pragma once
// GAT's layer (Veličković et al., "Graph Attention Networks", ICLR 2018) and the ELU + dropout
// between two of them. Instantiated for float and double.

#include <cstdint>
#include <string>
#include <vector>

#include <halo/kernels/elementwise_body.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// The mask key's layer (kernels::DropoutKey::layer) of the attention dropout of the GAT layer
/// whose feature dropout is keyed `layer`: a range of its own, so the two masks never share
/// draws.
inline constexpr std::uint64_t kAttentionDropoutLayer = std::uint64_t{1} << 20;

/// Multi-head graph attention. For every head h (H heads of `out` features):
///   z = x W (W: in x H*out, head h is columns h*out ..),
///   e_ij = LeakyReLU_0.2(a_dst_h . z_i + a_src_h . z_j) for every edge j -> i of `graph`,
///   alpha_ij = softmax over i's incoming edges of e_ij,
///   y_i = sum_j dropout(alpha_ij) z_j,
/// then the heads concatenated (H*out columns) or averaged (out columns), plus a bias. The graph
/// is the one nn::GraphPreparation::SelfLoops prepares (S + I; its values are not read), and a
/// row without edges gives the bias. While training, the coefficients alpha go through inverted
/// dropout with probability `attention_dropout`, keyed per edge by the global ids of both ends
/// (kernels::edge_dropout; ids as Dropout's: graph.source_ids, or Propagation::column_ids on a
/// partition, else ctx.row_offset + r), so that ranks and batches drop the same edges as one
/// process.
///
/// `graph` may be a local CSR (destinations are the first num_rows sources: the full graph or a
/// block) or a Propagation offering local_graph(): then x holds the layer's own rows, z is
/// computed for them, the rows of the other sources are brought by exchange_rows and their
/// gradients returned by reduce_rows (a partition's halo).
template <class T>
class GATConv final : public Module<T> {
 public:
  /// W and the attention vectors Glorot-uniform from (seed, param_id .. param_id + 2), b zero.
  GATConv(const kernels::Resources& res, std::int64_t in, std::int64_t out, std::int64_t heads,
          bool concat, float attention_dropout, std::uint64_t dropout_layer, std::uint64_t seed,
          std::uint64_t param_id, T negative_slope = T(0.2));
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::vector<Parameter<T>*> parameters() override {
    return {&m_weight, &m_att_src, &m_att_dst, &m_bias};
  }
  std::string name() const override { return "gat_conv"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

  /// The attention coefficients of the last forward pass (E x heads, edge e of the local graph
  /// in its stored order), before their dropout.
  const kernels::Tensor<T>& attention() const { return m_alpha; }
  std::int64_t heads() const { return m_heads; }
  /// Output width: heads * out when concatenating, out when averaging.
  std::int64_t width() const { return m_concat ? m_heads * m_out : m_out; }

 private:
  /// The local CSR, its sources' ids and the exchange (nullptr: none) for `graph`.
  struct Local {
    kernels::CsrView<kernels::NodeId, T> csr;
    kernels::Span<const kernels::NodeId> ids;
    Propagation<T>* exchange = nullptr;
  };
  Local local(const Adjacency<T>& graph, std::int64_t input_rows) const;
  kernels::DropoutKey dropout_key(const Context& ctx, const Local& g) const;

  Parameter<T> m_weight, m_att_src, m_att_dst, m_bias;
  std::int64_t m_out, m_heads;
  bool m_concat;
  float m_p;
  std::uint64_t m_layer;
  T m_slope;
  bool m_dropped = false;  // whether the last forward dropped attention coefficients
  const Features<T>* m_input = nullptr;
  // z (one row per source), the node scalars, the edges' scores, softmax and dropped
  // coefficients, the heads' outputs before averaging (concat: the output itself).
  kernels::Tensor<T> m_z, m_s_src, m_s_dst, m_score, m_alpha, m_alpha_dropped, m_heads_out;
  kernels::Tensor<T> m_row_max, m_row_sum;
  Features<T> m_output;
  // Backward buffers.
  kernels::Tensor<T> m_dheads, m_dalpha, m_ds_src, m_ds_dst, m_dz, m_dx;
};

/// ELU followed by the next convolution's Dropout(p, layer_id): the activation between two GAT
/// layers, as nn::ReluDropout is between GCN layers (the same mask as a Dropout module keyed
/// `layer_id` over `graph`, the next convolution's). Backward: dx = elu'(x) * dropout(dy), from
/// the input x cached in forward (which must stay alive until backward).
template <class T>
class EluDropout final : public Module<T> {
 public:
  EluDropout(float p, std::uint64_t layer_id);
  const Features<T>& forward(const Context& ctx, Adjacency<T> graph, const Features<T>& x) override;
  const kernels::Tensor<T>& backward(const Context& ctx, Adjacency<T> graph,
                                     const kernels::Tensor<T>& dy, bool need_input_grad) override;
  std::string name() const override { return "elu_dropout"; }
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in_width, std::int64_t in_entries) override;

 private:
  float m_p;
  std::uint64_t m_layer_id;
  bool m_active = false;
  const kernels::Tensor<T>* m_input = nullptr;
  Features<T> m_output;
  kernels::Tensor<T> m_dx;
};

}  // namespace halo::nn
