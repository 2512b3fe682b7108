#include <string>

#include <halo/kernels/detail/check_ids.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::kernels {
namespace {
/// Bytes of `n` values of T (a profile's traffic count).
template <class T>
double bytes_of(std::int64_t n) {
  return static_cast<double>(n) * sizeof(T);
}
}  // namespace

template <class T>
void fill(const Resources& res, Span<T> x, T value) {
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(x.size), 0);
  launch(res, x.size, detail::FillBody<T>{x, value}, x.size);
}

template <class T>
void axpy(const Resources& res, T alpha, ConstSpan<T> x, Span<T> y) {
  HALO_EXPECTS(x.size == y.size, "axpy: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(3 * y.size), 2.0 * y.size);
  launch(res, y.size, detail::AxpyBody<T>{alpha, x, y}, y.size);
}

template <class T>
void add_bias(const Resources& res, MatrixView<T> x, ConstSpan<T> bias) {
  HALO_EXPECTS(bias.size == x.cols, "add_bias: bias size must equal the number of columns");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(2 * x.size() + x.cols),
                      static_cast<double>(x.size()));
  launch_by_device(res, x.rows, detail::AddBiasBody<T>{x, bias}, x.size(),
                   detail::AddBiasElementsBody<T>{x, bias}, x.size());
}

template <class T>
void relu(const Resources& res, ConstSpan<T> x, Span<T> y) {
  HALO_EXPECTS(x.size == y.size, "relu: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(2 * y.size), static_cast<double>(y.size));
  launch(res, y.size, detail::ReluBody<T>{x, y}, y.size);
}

template <class T>
void relu_backward(const Resources& res, ConstSpan<T> y, ConstSpan<T> dy, Span<T> dx, T scale) {
  HALO_EXPECTS(y.size == dy.size && dy.size == dx.size, "relu_backward: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(3 * dx.size), static_cast<double>(dx.size));
  launch(res, dx.size, detail::ReluBackwardBody<T>{y, dy, dx, scale}, dx.size);
}

template <class T>
void elu(const Resources& res, ConstSpan<T> x, Span<T> y) {
  HALO_EXPECTS(x.size == y.size, "elu: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(2 * y.size), 2.0 * y.size);
  launch(res, y.size, detail::EluBody<T>{x, y}, y.size);
}

template <class T>
void elu_backward(const Resources& res, ConstSpan<T> x, ConstSpan<T> dy, Span<T> dx) {
  HALO_EXPECTS(x.size == dy.size && dy.size == dx.size, "elu_backward: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(3 * dx.size), 2.0 * dx.size);
  launch(res, dx.size, detail::EluBackwardBody<T>{x, dy, dx}, dx.size);
}

template <class T>
void gelu(const Resources& res, ConstSpan<T> x, Span<T> y) {
  HALO_EXPECTS(x.size == y.size, "gelu: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(2 * y.size), 10.0 * y.size);
  launch(res, y.size, detail::GeluBody<T>{x, y}, y.size);
}

template <class T>
void gelu_backward(const Resources& res, ConstSpan<T> x, ConstSpan<T> dy, Span<T> dx) {
  HALO_EXPECTS(x.size == dy.size && dy.size == dx.size, "gelu_backward: size mismatch");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(3 * dx.size), 14.0 * dx.size);
  launch(res, dx.size, detail::GeluBackwardBody<T>{x, dy, dx}, dx.size);
}

namespace {
/// dropout (Relu false) or relu_dropout (Relu true) into y of x's rows, or with `gather` of the
/// rows of x it names (gather_dropout); shapes checked by the callers.
template <bool Relu, class T>
void dense_dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
                   MatrixView<T> y, const std::string& op, const NodeId* gather = nullptr) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, op + ": p must be in [0, 1)");
  HALO_EXPECTS(key.row_ids.size == 0 || key.row_ids.size == y.rows,
               op + ": row_ids must hold one id per row");
  const OpTimer timer(res, Op::Elementwise, bytes_of<T>(2 * y.size()),
                      (Relu ? 2.0 : 1.0) * static_cast<double>(y.size()));
  const std::uint64_t rng_key = detail::dropout_rng_key(key);
  const std::uint64_t threshold = detail::dropout_threshold(p);
  launch_by_device(
      res, y.rows,
      detail::DropoutBody<T, Relu>{rng_key, threshold, key.row_offset, key.row_ids,
                                   dropout_scale<T>(p), x, y, gather},
      y.size(),
      detail::DropoutElementsBody<T, Relu>{rng_key, threshold, key.row_offset, key.row_ids,
                                           dropout_scale<T>(p), x, y, gather},
      y.size());
}

template <class T>
void check_same_shape(ConstMatrixView<T> x, MatrixView<T> y, const char* op) {
  HALO_EXPECTS(x.rows == y.rows && x.cols == y.cols, std::string(op) + ": shape mismatch");
}
}  // namespace

template <class T>
void dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
             MatrixView<T> y) {
  check_same_shape<T>(x, y, "dropout");
  dense_dropout<false>(res, key, p, x, y, "dropout");
}

template <class T>
void relu_dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
                  MatrixView<T> y) {
  check_same_shape<T>(x, y, "relu_dropout");
  dense_dropout<true>(res, key, p, x, y, "relu_dropout");
}

template <class T>
void gather_dropout(const Resources& res, const DropoutKey& key, float p, ConstMatrixView<T> x,
                    Span<const NodeId> idx, MatrixView<T> y) {
  HALO_EXPECTS(idx.size == y.rows && x.cols == y.cols, "gather_dropout: shape mismatch");
  detail::check_ids(res, idx, x.rows, "gather_dropout");
  dense_dropout<false>(res, key, p, x, y, "gather_dropout", idx.data);
}

template <class Idx, class T>
void dropout(const Resources& res, const DropoutKey& key, float p, CsrView<Idx, T> x,
             Span<T> values_out) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, "dropout: p must be in [0, 1)");
  // num_edges() reads indptr, which host code may do only for CPU data.
  const std::int64_t entries =
      x.num_entries >= 0 ? x.num_entries : (res.device() == Device::Cpu ? x.num_edges() : -1);
  if (entries >= 0) HALO_EXPECTS(values_out.size == entries, "dropout: values_out size mismatch");
  HALO_EXPECTS(key.row_ids.size == 0 || key.row_ids.size == x.num_rows,
               "dropout: row_ids must hold one id per row");
  const OpTimer timer(res, Op::Elementwise,
                      bytes_of<T>(2 * values_out.size) + 8.0 * static_cast<double>(x.num_rows + 1),
                      static_cast<double>(values_out.size));
  launch(res, x.num_rows,
         detail::CsrDropoutBody<Idx, T>{detail::dropout_rng_key(key), detail::dropout_threshold(p),
                                        key.row_offset, key.row_ids, dropout_scale<T>(p), x,
                                        values_out.data},
         values_out.size + x.num_rows);
}

namespace {
/// Rows per block of dropout_compact's indptr scan.
constexpr std::int64_t kCompactScanBlock = 1024;
}  // namespace

std::int64_t dropout_compact_scan_size(std::int64_t rows) {
  return scan_blocks(rows, kCompactScanBlock);
}

template <class Idx, class T>
void dropout_compact(const Resources& res, const DropoutKey& key, float p, CsrView<Idx, T> x,
                     CsrMatrix<Idx, T>& out, DropoutCompactScratch& scratch) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, "dropout_compact: p must be in [0, 1)");
  HALO_EXPECTS(key.row_ids.size == 0 || key.row_ids.size == x.num_rows,
               "dropout_compact: row_ids must hold one id per row");
  const std::int64_t n = x.num_rows;
  // The stored entries (read back from a device when the view does not know them).
  std::int64_t entries = x.num_entries;
  if (entries < 0)
    copy_bytes(res, &entries, Device::Cpu, x.indptr + n, res.device(), sizeof entries);
  ensure_shape(res, out.indptr, n + 1, 1);
  out.num_cols = x.num_cols;
  out.symmetric = false;
  if (n == 0) {  // no rows: indptr is {0}
    zero_bytes(res, out.indptr.data(), res.device(), sizeof(std::int64_t));
    ensure_shape(res, out.indices, 0, 1);
    ensure_shape(res, out.values, 0, 1);
    return;
  }
  reserve(res, scratch.keep, entries);
  reserve(res, scratch.scan_sums, dropout_compact_scan_size(n));
  {
    const OpTimer timer(res, Op::Elementwise,
                        5.0 * static_cast<double>(entries) + 16.0 * static_cast<double>(n + 1),
                        static_cast<double>(entries));
    launch(res, n,
           detail::CsrDropoutCountBody<Idx, T>{
               detail::dropout_rng_key(key), detail::dropout_threshold(p), key.row_offset,
               key.row_ids, x, scratch.keep.data(), out.indptr.data()},
           entries + n);
    inclusive_scan(res, out.indptr.data() + 1, n, scratch.scan_sums.data(), kCompactScanBlock);
  }
  std::int64_t kept = 0;
  copy_bytes(res, &kept, Device::Cpu, out.indptr.data() + n, res.device(), sizeof kept);
  // Room for every entry on the first call, so that later calls (other masks) reallocate nothing.
  reserve(res, out.indices, entries);
  reserve(res, out.values, entries);
  ensure_shape(res, out.indices, kept, 1);
  ensure_shape(res, out.values, kept, 1);
  const OpTimer timer(res, Op::Elementwise,
                      bytes_of<T>(entries + kept) + 5.0 * static_cast<double>(entries + kept) +
                          8.0 * static_cast<double>(n + 1),
                      static_cast<double>(entries));
  launch(res, n,
         detail::CsrDropoutCompactBody<Idx, T>{dropout_scale<T>(p), x, scratch.keep.data(),
                                               out.indptr.data(), out.indices.data(),
                                               out.values.data()},
         entries + n);
}

#define HALO_INSTANTIATE(T)                                                                        \
  template void fill<T>(const Resources&, Span<T>, T);                                             \
  template void axpy<T>(const Resources&, T, Span<const T>, Span<T>);                              \
  template void add_bias<T>(const Resources&, MatrixView<T>, Span<const T>);                       \
  template void relu<T>(const Resources&, Span<const T>, Span<T>);                                 \
  template void relu_backward<T>(const Resources&, Span<const T>, Span<const T>, Span<T>, T);      \
  template void elu<T>(const Resources&, Span<const T>, Span<T>);                                  \
  template void elu_backward<T>(const Resources&, Span<const T>, Span<const T>, Span<T>);          \
  template void gelu<T>(const Resources&, Span<const T>, Span<T>);                                 \
  template void gelu_backward<T>(const Resources&, Span<const T>, Span<const T>, Span<T>);         \
  template void dropout<T>(const Resources&, const DropoutKey&, float, MatrixView<const T>,        \
                           MatrixView<T>);                                                         \
  template void relu_dropout<T>(const Resources&, const DropoutKey&, float, MatrixView<const T>,   \
                                MatrixView<T>);                                                    \
  template void gather_dropout<T>(const Resources&, const DropoutKey&, float, MatrixView<const T>, \
                                  Span<const NodeId>, MatrixView<T>);                              \
  template void dropout<std::int32_t, T>(const Resources&, const DropoutKey&, float,               \
                                         CsrView<std::int32_t, T>, Span<T>);                       \
  template void dropout<std::int64_t, T>(const Resources&, const DropoutKey&, float,               \
                                         CsrView<std::int64_t, T>, Span<T>);                       \
  template void dropout_compact<std::int32_t, T>(                                                  \
      const Resources&, const DropoutKey&, float, CsrView<std::int32_t, T>,                        \
      CsrMatrix<std::int32_t, T>&, DropoutCompactScratch&);                                        \
  template void dropout_compact<std::int64_t, T>(                                                  \
      const Resources&, const DropoutKey&, float, CsrView<std::int64_t, T>,                        \
      CsrMatrix<std::int64_t, T>&, DropoutCompactScratch&);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels
