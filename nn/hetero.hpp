#pragma once
// The heterogeneous layer interface: node types, typed relations, one input and one output
// tensor per node type. R-GCN and HGT layers implement HeteroModule; the heterogeneous
// node-classification task composes them.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <halo/kernels/tensor.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// One relation (edge type) as a layer aggregates over it: rows are destination nodes of
/// `dst_type` (the first num_dst[dst_type] input rows of that type), columns are input rows of
/// `src_type`. Every incoming edge of a destination row is stored (a partition keeps all
/// in-edges of its owned rows), so row degrees are the relation's true in-degrees. Values are
/// not read: the layers weight edges themselves (R-GCN: 1 / in-degree; HGT: attention).
template <class T>
struct HeteroRelation {
  std::string name;
  std::int32_t src_type = 0;
  std::int32_t dst_type = 0;
  kernels::CsrView<kernels::NodeId, T> adj = {};
};

/// Seconds spent in the stages of a heterogeneous layer, as "Characterizing and Understanding
/// HGNNs on GPUs" (Yan et al., IEEE CAL 2022) names them. The task adds the subgraph build
/// (sampling, per-relation adjacency); layers add the other three: feature projection (the
/// per-type or per-relation dense transforms), neighbour aggregation (per relation: messages,
/// attention, the sparse products) and semantic aggregation (combining the relations at a node).
struct HeteroStageTimes {
  double subgraph_build_s = 0;
  double feature_projection_s = 0;
  double neighbor_aggregation_s = 0;
  double semantic_aggregation_s = 0;
};

/// The exchange of halo rows between the processes training one partitioned graph
/// (runtime::HeteroHaloExchange). Per node type t, rows num_dst[t] .. num_src[t] - 1 of a layer's
/// input are halo rows: nodes another process owns and computes. Collective: every process of
/// the partition calls each method at the same point with every type's tensor.
template <class T>
class HeteroHalo {
 public:
  virtual ~HeteroHalo() = default;
  /// x[t] holds num_src[t] x width rows, the first num_dst[t] computed here: overwrites the
  /// halo rows with their owners' rows.
  virtual void gather(const kernels::Resources& res, std::span<kernels::Tensor<T>> x) = 0;
  /// dx[t] holds num_src[t] x width rows: adds each halo row into its owner's row of the
  /// owner's dx (the halo rows themselves are left as they are).
  virtual void scatter_add(const kernels::Resources& res, std::span<kernels::Tensor<T>> dx) = 0;

 protected:
  HeteroHalo() = default;
  HeteroHalo(const HeteroHalo&) = default;
  HeteroHalo& operator=(const HeteroHalo&) = default;
};

/// The graph of one heterogeneous layer. Per node type t: num_src[t] input rows and
/// num_dst[t] <= num_src[t] output rows, the destinations being the first num_dst[t] inputs
/// (full graph in one process: num_src == num_dst; a partition: owned rows then halo rows; a
/// sampled block: destinations then the other sources).
template <class T>
struct HeteroGraphView {
  std::vector<std::int64_t> num_src;
  std::vector<std::int64_t> num_dst;
  std::vector<HeteroRelation<T>> relations;
  /// Per node type, the global (homogenised) id of every input row, keying dropout masks so
  /// that every process and batch drops the same entries of a node; empty: row r of type t is
  /// id type_offset[t] + r.
  std::vector<kernels::Span<const kernels::NodeId>> source_ids;
  /// Per node type, the global id of its first node (the homogenised id ranges).
  std::vector<std::int64_t> type_offset;
  /// When set, the layers add the time of their stages to it (host wall time around each
  /// stage; on a device the caller synchronises, see the task).
  HeteroStageTimes* times = nullptr;
  /// A partition's exchange (full graph across processes): the model fills the halo rows of
  /// every layer's input from their owners and returns their gradients; the layers see the same
  /// graph at every layer. Null in one process.
  HeteroHalo<T>* halo = nullptr;

  std::int32_t num_types() const { return static_cast<std::int32_t>(num_src.size()); }
};

/// Contract, as Module's, per node type: `forward` takes one tensor per node type
/// (num_src[t] x in_width(t); a type with no input rows may pass an empty tensor), caches what
/// `backward` needs (it may keep pointers into `x`, which must stay alive and unchanged until
/// `backward`), and returns one output per node type (num_dst[t] rows), owned by the module and
/// valid until its next forward. `backward` takes dL/d(output) per type, overwrites the
/// gradients of its parameters and returns dL/d(input) per type (empty tensors when
/// `need_input_grad` is false). Not thread-safe.
template <class T>
class HeteroModule {
 public:
  virtual ~HeteroModule() = default;
  virtual const std::vector<kernels::Tensor<T>>& forward(const Context& ctx,
                                                         const HeteroGraphView<T>& graph,
                                                         std::span<const kernels::Tensor<T>> x) = 0;
  virtual const std::vector<kernels::Tensor<T>>& backward(const Context& ctx,
                                                          const HeteroGraphView<T>& graph,
                                                          std::span<const kernels::Tensor<T>> dy,
                                                          bool need_input_grad) = 0;
  virtual std::vector<Parameter<T>*> parameters() = 0;
  virtual std::string name() const = 0;
  /// Declares the node types (zero[t]) whose input rows are always zeros: a featureless type
  /// without an embedding, at the input layer. A layer may then skip their products (the same
  /// results) and return them no input gradient (an empty tensor); by default it ignores this.
  virtual void set_zero_inputs(std::vector<bool> zero) { (void)zero; }

 protected:
  HeteroModule() = default;
  HeteroModule(const HeteroModule&) = default;
  HeteroModule(HeteroModule&&) noexcept = default;
  HeteroModule& operator=(const HeteroModule&) = default;
  HeteroModule& operator=(HeteroModule&&) noexcept = default;
};

}  // namespace halo::nn
