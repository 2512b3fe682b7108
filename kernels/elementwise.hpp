#pragma once
// Element-wise ops. All arguments live on res's device; every op is asynchronous on res's
// stream. Instantiated for T in {float, double}; the CSR dropout also for Idx in {int32, int64}.

#include <halo/kernels/csr.hpp>
#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// x[i] = value.
template <class T>
void fill(const Resources& res, Span<T> x, T value);

/// y += alpha * x (same size).
template <class T>
void axpy(const Resources& res, T alpha, ConstSpan<T> x, Span<T> y);

/// x(r, :) += bias for every row (bias has x.cols entries). In place.
template <class T>
void add_bias(const Resources& res, MatrixView<T> x, ConstSpan<T> bias);

/// y = max(x, 0). y may alias x.
template <class T>
void relu(const Resources& res, ConstSpan<T> x, Span<T> y);

/// dx = scale * dy where y > 0, else 0, given ReLU's output y (scale 1), or relu_dropout's
/// (scale 1 / (1 - p): y > 0 exactly where ReLU passed and the mask kept). dx may alias dy.
template <class T>
void relu_backward(const Resources& res, ConstSpan<T> y, ConstSpan<T> dy, Span<T> dx,
                   T scale = T(1));

/// y = elu(x) = x for x > 0, exp(x) - 1 otherwise (Clevert et al., alpha = 1). y may alias x.
template <class T>
void elu(const Resources& res, ConstSpan<T> x, Span<T> y);

/// dx = elu'(x) * dy (1 for x > 0, exp(x) otherwise), given ELU's input x. dx may alias dy.
template <class T>
void elu_backward(const Resources& res, ConstSpan<T> x, ConstSpan<T> dy, Span<T> dx);

/// y = gelu(x), the tanh approximation x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). y may
/// alias x.
template <class T>
void gelu(const Resources& res, ConstSpan<T> x, Span<T> y);

/// dx = gelu'(x) * dy, given GELU's input x. dx may alias dy.
template <class T>
void gelu_backward(const Resources& res, ConstSpan<T> x, ConstSpan<T> dy, Span<T> dx);

/// Inverted dropout: y = x / (1 - p) where the mask keyed by `key` keeps, else 0; 0 <= p < 1.
/// The mask is a pure function of the key, so the backward pass is this same op applied to dy.
/// y may alias x.
template <class T>
void dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
             MatrixView<T> y);

/// dropout(relu(x)) in one pass over x: y = max(x, 0) / (1 - p) where the mask keyed by `key`
/// keeps, else 0 (the same mask and values as relu, then dropout). Its backward needs no mask:
/// relu_backward(y, dy, dx, 1 / (1 - p)). y may alias x.
template <class T>
void relu_dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
                  MatrixView<T> y);

/// y(i, :) = dropout of row idx[i] of x, with the mask `dropout` would apply to the gathered
/// matrix (row i is node key.row_ids[i], or key.row_offset + i): a gather and a dropout in one
/// pass. p = 0 keeps every entry. idx entries must be in [0, x.rows) (checked on the host for CPU
/// data); y has idx.size rows and must not overlap x.
template <class T>
void gather_dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
                    Span<const NodeId> idx, MatrixView<T> y);

/// Dropout of a sparse matrix's stored entries with exactly the mask `dropout` would apply to
/// its dense form: values_out[e] = x.value(e) / (1 - p) or 0. values_out has x.num_edges().
template <class Idx, class T>
void dropout(const Resources& res, const DropoutKey& key, float p, CsrView<Idx, T> x,
             Span<T> values_out);

/// dropout_compact's working storage, reused from call to call.
struct DropoutCompactScratch {
  Tensor<std::uint8_t> keep;       // one mask byte per stored entry
  Tensor<std::int64_t> scan_sums;  // the scan of the kept counts
};

/// The scan_sums entries dropout_compact uses for a matrix of `rows` rows (to reserve them).
std::int64_t dropout_compact_scan_size(std::int64_t rows);

/// Dropout of a sparse matrix that stores only the entries the mask keeps: `out` becomes x's
/// shape with the entries `dropout` keeps (the same mask), scaled by 1 / (1 - p), in x's order:
/// the same products as dropout's output without its stored zeros (at p = 0.5 half the entries,
/// so half the work of every product with it). `out`'s and `scratch`'s buffers are kept and
/// reused: after the first call with a matrix, calls with the same or fewer entries allocate
/// nothing. On a device the kept count is read back (and x's entry count, when its view does not
/// know it): one scalar per call. x and out must not share storage.
template <class Idx, class T>
void dropout_compact(const Resources& res, const DropoutKey& key, float p, CsrView<Idx, T> x,
                     CsrMatrix<Idx, T>& out, DropoutCompactScratch& scratch);

}  // namespace halo::kernels
