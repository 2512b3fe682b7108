#pragma once
// Agg(A, X) W in whichever order is cheaper, with its backward. Shared by GCNConv and SAGEConv.

#include <halo/kernels/spmm.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// Computes out = Agg(A, X) W (+ out when accumulating). Aggregating first costs an SpMM over
/// in_features columns, transforming first one over out_features columns; the narrower side wins
/// (sparse inputs always transform first: X W is then a sparse product and Agg(A, X) would be
/// dense and wide). Owns the cached intermediate and the temporaries of the backward pass.
template <class T>
class AggregateTransform {
 public:
  explicit AggregateTransform(kernels::Aggregate aggregate) : m_aggregate(aggregate) {}

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

 private:
  kernels::Aggregate m_aggregate;
  bool m_aggregate_first = false;
  kernels::Tensor<T> m_cached;  // Agg(A, X) when aggregating first, else X W
  kernels::Tensor<T> m_tmp;     // backward temporaries, kept across epochs
  kernels::Tensor<T> m_tmp_dx;
  kernels::Tensor<T> m_tmp_out;  // forward temporary when accumulating into out
};

}  // namespace halo::nn
