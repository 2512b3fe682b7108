#pragma once
// The module interface: explicit forward/backward with the activations each layer caches.

#include <cstdint>
#include <string>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/spmm_body.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::nn {

template <class T>
using Features = kernels::FeatureMatrix<T>;

/// An aggregation implemented outside the layers, for a graph whose source rows are not all in
/// the layer's input, e.g. a partition whose halo rows live in other processes
/// (runtime::HaloExchange). The layers call it where they would run an SpMM on a local graph.
template <class T>
class Propagation {
 public:
  virtual ~Propagation() = default;
  /// out = Agg(A, x): one row of x per input node of the layer, one row of out per destination.
  /// `aggregate` is the layer's choice; an implementation accepts the one it was built for.
  virtual void forward(const kernels::Resources& res, kernels::Aggregate aggregate,
                       kernels::ConstMatrixView<T> x, kernels::MatrixView<T> out) = 0;
  /// The adjoint: out = Agg^T(A, dy), one row per input node.
  virtual void backward(const kernels::Resources& res, kernels::Aggregate aggregate,
                        kernels::ConstMatrixView<T> dy, kernels::MatrixView<T> out) = 0;

  // For layers that weight the edges themselves (attention): they need the graph's structure
  // and the rows of the sources that live elsewhere, not a product with fixed weights. An
  // implementation that does not offer them throws halo::LogicError (the defaults).

  /// The graph as a local CSR on res's device: num_rows destinations (the layer's input rows,
  /// e.g. a part's owned nodes) x num_rows + (rows held elsewhere) sources, whose first num_rows
  /// columns are the input rows themselves and the others the rows exchange_rows brings (a
  /// part's halo). Values are not meaningful. Valid while the propagation lives.
  virtual kernels::CsrView<kernels::NodeId, T> local_graph() const {
    throw LogicError("propagation: this graph offers no local CSR (local_graph)");
  }
  /// The global node id of every column of local_graph() (dropout masks), or empty when column
  /// c is node Context::row_offset + c. On res's device.
  virtual kernels::Span<const kernels::NodeId> column_ids() const { return {}; }
  /// x has one row per column of local_graph(): the first num_rows hold this process's rows;
  /// fills the others with the rows their owners hold (collective over the processes).
  virtual void exchange_rows(const kernels::Resources& res, kernels::MatrixView<T> x) {
    (void)res, (void)x;
    throw LogicError("propagation: this graph exchanges no rows (exchange_rows)");
  }
  /// The adjoint of exchange_rows: dx has one row per column of local_graph(); the rows past
  /// the first num_rows are sent to their owners, which add them to the rows they sent (dx's
  /// first num_rows rows are updated; the others are left as they were). Collective.
  virtual void reduce_rows(const kernels::Resources& res, kernels::MatrixView<T> dx) {
    (void)res, (void)dx;
    throw LogicError("propagation: this graph exchanges no rows (reduce_rows)");
  }
};

/// The graph a layer aggregates over: rows are destination nodes, columns the layer's input
/// rows (source nodes). Either a local CSR (GCN layers expect the normalised adjacency with its
/// values, SAGE layers the plain one) or a Propagation with the shape it acts as. On a block
/// (mini-batch) the destinations are the first num_rows sources.
template <class T>
struct Adjacency {
  Adjacency() = default;                             // no graph: for layers that do not aggregate
  Adjacency(kernels::CsrView<kernels::NodeId, T> a)  // NOLINT: a local CSR is the common case
      : num_rows(a.num_rows), num_cols(a.num_cols), csr(a) {}
  Adjacency(std::int64_t rows, std::int64_t cols, Propagation<T>& p)
      : num_rows(rows), num_cols(cols), propagation(&p) {}
  std::int64_t num_rows = 0;
  std::int64_t num_cols = 0;
  kernels::CsrView<kernels::NodeId, T> csr = {};
  Propagation<T>* propagation = nullptr;
  /// Global node id of every source (input row) when they are not the range
  /// Context::row_offset + r: a partition's owned nodes, a block's sources. Keys the dropout
  /// masks, so that every process and every batch drops the same entries of a node.
  kernels::Span<const kernels::NodeId> source_ids = {};
};

/// What a pass needs besides its inputs.
struct Context {
  const kernels::Resources* res = nullptr;
  bool training = false;
  std::uint64_t seed = 0;       // base seed of the run (dropout masks)
  std::uint64_t epoch = 0;      // keys the dropout masks of this pass
  std::int64_t row_offset = 0;  // global node id of local row 0 (see Adjacency::source_ids)
  /// The input already went through the model's input dropout, with the mask it would draw
  /// (a batch whose gather applied it, runtime::SampledBatches): the model skips that module.
  bool input_dropped = false;
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
  /// Sizes the buffers of later passes for graphs of at most `src_rows` sources and `dst_rows`
  /// destinations and inputs `in_width` wide (sparse with at most `in_entries` stored entries
  /// when in_entries > 0, dense otherwise), so that those passes allocate nothing (the bounds of
  /// a mini-batch's envelope). Modules without buffers do nothing.
  virtual void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
                       std::int64_t in_width, std::int64_t in_entries) {
    (void)res, (void)src_rows, (void)dst_rows, (void)in_width, (void)in_entries;
  }
  virtual std::string name() const = 0;
};

}  // namespace halo::nn
