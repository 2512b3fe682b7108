#pragma once
// Temporal GNNs over a window of snapshots with explicit backward through time: EvolveGCN-O
// (GCN weights evolved by a matrix GRU) and a GCRN-style model (GCN outputs fed to a per-node
// GRU), and the node-pair scorer of link prediction. Host (CPU) tensors.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/views.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

enum class TemporalKind {
  EvolveGcnO,  ///< "evolvegcn-o"
  Gcrn,        ///< "gcrn"
};

/// "evolvegcn-o" / "gcrn"; parse_temporal_kind throws halo::LogicError naming the accepted ones.
std::string to_string(TemporalKind k);
TemporalKind parse_temporal_kind(const std::string& s);

struct TemporalModelConfig {
  TemporalKind kind = TemporalKind::EvolveGcnO;
  /// Width of the one-hot input (the degree buckets).
  std::int64_t in_features = 0;
  /// Width of both GCN layers (and of the GCRN's GRU state): the node embeddings.
  std::int64_t hidden = 100;
};

/// One step of a window: the snapshot's GCN matrix D^-1/2 (A + I) D^-1/2 and each row's
/// one-hot input column (its degree bucket, in [0, in_features)). In one process `adj` is the
/// square CSR over every node of the run; in distributed training it is a Propagation over the
/// rows a rank owns at that step (runtime::HaloExchange: the halo rows come from their owners),
/// num_rows x num_rows, and `feature` holds the owned rows' columns.
template <class T>
struct TemporalStep {
  Adjacency<T> adj;
  std::span<const std::int32_t> feature;
};

/// EvolveGCN-O (Pareja et al., AAAI 2020, the -O variant) or a GCRN-style model, two GCN layers
/// each, trained by backpropagation through the window.
///
/// EvolveGCN-O: each layer l's weight evolves over the window, Q_s = GRU(Q_{s-1}) with Q_0 a
/// parameter, by the matrix GRU of the paper's code (input and hidden state both the weight
/// matrix; gates act on its rows: z = sigmoid(W_z Q + U_z Q + B_z), r = sigmoid(W_r Q + U_r Q
/// + B_r), h = tanh(W_h Q + U_h (r * Q) + B_h), Q' = (1 - z) * Q + z * h, W_*, U_* square of the
/// layer's input width, B_* of Q's shape). Layer l at step s is H_l = relu(A_s H_{l-1} Q_s),
/// H_0 = X_s. The output is the last step's H_2: in -O the weights do not depend on the data, so
/// the GCN of the earlier steps does not reach it and is not computed.
///
/// GCRN: G_s = relu(A_s relu(A_s X_s W_1) W_2) with static W_1, W_2, then a GRU per node with
/// shared weights, H_s = GRU(G_s, H_{s-1}), H_0 = 0: z = sigmoid(G W_z + H U_z + b_z), r =
/// sigmoid(G W_r + H U_r + b_r), h = tanh(G W_h + (r * H) U_h + b_h), H' = (1 - z) * H + z * h.
/// The output is H at the last step.
///
/// Instantiated for float and double (the finite-difference tests). Not thread-safe.
template <class T>
class TemporalModel {
 public:
  TemporalModel(const kernels::Resources& res, const TemporalModelConfig& config,
                std::uint64_t seed);

  /// The node embeddings (num_nodes x hidden) after the window; caches what backward needs.
  /// Every step's matrix is square with the same number of nodes. Valid until the next forward.
  const kernels::Tensor<T>& forward(std::span<const TemporalStep<T>> window);
  /// Overwrites every parameter's gradient with dL/dparameter for dL/d(embeddings) `d_out`,
  /// through the window of the last forward.
  void backward(const kernels::Tensor<T>& d_out);

  /// Across ranks each rank's steps hold its owned rows (Propagation adjacencies), so the
  /// gradients are partial sums; `sum` (an all-reduce over the ranks, in place) is called once
  /// per backward: EvolveGCN-O's on the GCN's gradients of the evolved weights, before they go
  /// back through the weights' GRU, whose gradients then agree on every rank; GCRN's on every
  /// parameter's gradient at the end. Empty (the default): nothing to sum. GCRN's per-node
  /// state is carried row by row from step to step, so its steps must hold the same nodes in
  /// the same rows (one process; runtime's link task refuses GCRN across ranks, whose rows
  /// migrate between snapshots).
  void set_gradient_sum(std::function<void(std::span<T>)> sum) { m_sum = std::move(sum); }

  std::vector<Parameter<T>*> parameters();
  const TemporalModelConfig& config() const { return m_config; }

 private:
  /// One GRU step: its input state, gates and (GCRN) node input; EvolveGCN-O also keeps each
  /// layer's evolved weight in an extra entry's `input`.
  struct GruCache {
    kernels::Tensor<T> prev, z, r, h, input;
  };
  /// One step's two GCN layers: the pre-activations and the aggregated first-layer output.
  struct GcnCache {
    kernels::Tensor<T> z1, ah1, z2, h2;
  };
  const kernels::Resources& m_res;
  TemporalModelConfig m_config;
  std::vector<Parameter<T>> m_params;
  std::vector<TemporalStep<T>> m_window;
  std::vector<GruCache> m_gru;  // per step (and layer, EvolveGCN-O)
  std::vector<GcnCache> m_gcn;  // per step computed
  kernels::Tensor<T> m_out;
  /// EvolveGCN-O, per layer: the forward's [W_z + U_z; W_r + U_r; W_h] (3 rows x rows).
  kernels::Tensor<T> m_stack[2];
  std::function<void(std::span<T>)> m_sum;
};

/// EvolveGCN's edge classifier on node-pair embeddings: s(u, v) = w_2 . relu(A^T e_u + B^T e_v
/// + b_1) + b_2, the one-hidden-layer MLP on the concatenation [e_u, e_v] (its first weight
/// split into A and B) with one logit (two-class softmax = a sigmoid of the logit difference).
template <class T>
class PairScorer {
 public:
  PairScorer(const kernels::Resources& res, std::int64_t in, std::int64_t hidden,
             std::uint64_t seed);
  /// Caches P = E A + b_1 and Q = E B for the embeddings `e` (kept by reference until
  /// backward): call before score / score_row.
  void prepare(const kernels::Tensor<T>& e);
  /// logits[i] = s(src[i], dst[i]).
  void score(std::span<const kernels::NodeId> src, std::span<const kernels::NodeId> dst,
             std::span<T> logits) const;
  /// out[v] = s(u, v) for every node v.
  void score_row(kernels::NodeId u, std::span<T> out) const;
  /// Overwrites the gradients for dL/dlogits of the pairs of the last score, and returns
  /// dL/d(embeddings) of the prepared `e`.
  const kernels::Tensor<T>& backward(std::span<const kernels::NodeId> src,
                                     std::span<const kernels::NodeId> dst,
                                     std::span<const T> d_logits);
  std::vector<Parameter<T>*> parameters();

 private:
  const kernels::Resources& m_res;
  std::int64_t m_hidden = 0;
  Parameter<T> m_a, m_b, m_b1, m_w2, m_b2;
  const kernels::Tensor<T>* m_e = nullptr;
  kernels::Tensor<T> m_p, m_q, m_dp, m_dq, m_de;
};

/// EvolveGCN's class-weighted cross-entropy on one logit per pair: sum_i w_i softplus(-y_i s_i)
/// / W over labels y_i in {+1 (positive), -1}, w_i = pos_weight or neg_weight, W = sum_i w_i,
/// or `total_weight` when > 0 (a rank's share of pairs normalised by the weight of all ranks'
/// pairs); d_logits receives its gradient. Returns the loss (0 without pairs).
template <class T>
double weighted_logistic_loss(std::span<const T> logits, std::span<const std::int8_t> positive,
                              double pos_weight, double neg_weight, std::span<T> d_logits,
                              double total_weight = 0);

}  // namespace halo::nn
