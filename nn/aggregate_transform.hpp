#pragma once
// Agg(A, X) W in whichever order is cheaper, with its backward. Shared by GCNConv and SAGEConv.

#include <halo/kernels/spmm.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// AggregateTransform's cost rule for a graph of `rows` destinations, `cols` sources and `entries`
/// stored entries, in -> out features: true when aggregating first is cheaper (strictly; ties
/// false).
bool aggregate_first_is_cheaper(std::int64_t rows, std::int64_t cols, std::int64_t entries,
                                std::int64_t in, std::int64_t out);

/// Which order AggregateTransform runs in: the cheaper one, or one forced (tests).
enum class AggregationOrder { Cheaper, AggregateFirst, TransformFirst };

/// Computes out = Agg(A, X) W (+ out when accumulating). Aggregating first costs an SpMM over
/// in_features columns and a product over the destination rows; transforming first a product
/// over every source row and an SpMM over out_features columns. The cheaper order wins, an SpMM
/// entry-column counted as 8 multiply-adds (it moves a row of x from memory; measured ~10x on
/// the project's machine): on the full graph (sources = destinations) the narrower side, on a
/// sampled block (many more sources than destinations) nearly always aggregation first. Ties
/// transform first. Sparse inputs always transform first: X W is then a sparse product and
/// Agg(A, X) would be dense and wide; a partition's propagation (halo exchange) aggregates the
/// narrower side, the width it exchanges. Owns the cached intermediate and the temporaries of
/// the backward pass.
template <class T>
class AggregateTransform {
 public:
  explicit AggregateTransform(kernels::Aggregate aggregate,
                              AggregationOrder order = AggregationOrder::Cheaper)
      : m_aggregate(aggregate), m_order(order) {}

  void forward(const kernels::Resources& res, Adjacency<T> a, const Features<T>& x,
               const kernels::Tensor<T>& w, kernels::Tensor<T>& out, bool accumulate);
  /// grad_w = d/dW (overwritten); dx = d/dX added to (accumulate) or written into dx when
  /// need_dx. Must follow `forward` with the same a, x and w.
  void backward(const kernels::Resources& res, Adjacency<T> a, const Features<T>& x,
                const kernels::Tensor<T>& w, const kernels::Tensor<T>& dy,
                kernels::Tensor<T>& grad_w, kernels::Tensor<T>& dx, bool need_dx,
                bool accumulate_dx);
  /// Storage for passes over at most src_rows x in inputs and dst_rows x out outputs.
  void reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t dst_rows,
               std::int64_t in, std::int64_t out);
  /// The order the last `forward` ran in.
  bool aggregated_first() const { return m_aggregate_first; }

 private:
  kernels::Aggregate m_aggregate;
  AggregationOrder m_order;
  bool m_aggregate_first = false;
  kernels::Tensor<T> m_cached;  // Agg(A, X) when aggregating first, else X W
  kernels::Tensor<T> m_tmp;     // backward temporaries, kept across epochs
  kernels::Tensor<T> m_tmp_dx;
  kernels::Tensor<T> m_tmp_out;  // forward temporary when accumulating into out
};

}  // namespace halo::nn
