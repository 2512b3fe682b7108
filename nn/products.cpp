#include <cmath>
#include <vector>

#include <halo/kernels/gemm.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/nn/detail/products.hpp>

namespace halo::nn::detail {

using kernels::CsrMatrix;
using kernels::Tensor;
using kernels::Trans;

namespace {
// The first `rows` rows of x (all when rows < 0): a prefix is a view of the same storage.
template <class T>
kernels::MatrixView<const T> prefix(const Tensor<T>& x, std::int64_t rows) {
  return {x.data(), rows < 0 ? x.rows() : rows, x.cols()};
}
template <class T>
kernels::CsrView<std::int32_t, T> prefix(const CsrMatrix<std::int32_t, T>& x, std::int64_t rows) {
  auto v = x.view();
  if (rows >= 0 && rows < v.num_rows) {
    v.num_rows = rows;
    v.num_entries = -1;  // indptr[rows]: not known on the host without reading device memory
  }
  v.symmetric = false;
  return v;
}
}  // namespace

template <class T>
void multiply(const kernels::Resources& res, const kernels::FeatureMatrix<T>& x, const Tensor<T>& w,
              Tensor<T>& out, std::int64_t rows) {
  HALO_EXPECTS(rows <= kernels::num_rows(x), "multiply: more rows than the input has");
  if (const auto* sparse = std::get_if<CsrMatrix<std::int32_t, T>>(&x)) {
    kernels::spmm(res, prefix(*sparse, rows), w.view(), out.view());
  } else {
    kernels::gemm(res, Trans::No, Trans::No, T(1), prefix(std::get<Tensor<T>>(x), rows), w.view(),
                  T(0), out.view());
  }
}

template <class T>
void multiply_transposed(const kernels::Resources& res, const kernels::FeatureMatrix<T>& x,
                         const Tensor<T>& dy, Tensor<T>& grad_w, std::int64_t rows) {
  HALO_EXPECTS(rows <= kernels::num_rows(x), "multiply_transposed: more rows than the input has");
  if (const auto* sparse = std::get_if<CsrMatrix<std::int32_t, T>>(&x)) {
    kernels::spmm_transposed(res, prefix(*sparse, rows), dy.view(), grad_w.view());
  } else {
    kernels::gemm(res, Trans::Yes, Trans::No, T(1), prefix(std::get<Tensor<T>>(x), rows), dy.view(),
                  T(0), grad_w.view());
  }
}

template <class T>
const Tensor<T>& dense(const kernels::FeatureMatrix<T>& x, const char* layer) {
  const auto* d = std::get_if<Tensor<T>>(&x);
  HALO_EXPECTS(d != nullptr, std::string(layer) + ": needs a dense input");
  return *d;
}

template <class T>
void glorot_uniform(const kernels::Resources& res, Tensor<T>& w, std::uint64_t seed,
                    std::uint64_t param_id) {
  const double a = std::sqrt(6.0 / static_cast<double>(w.rows() + w.cols()));
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamInit, param_id);
  std::vector<T> host(static_cast<std::size_t>(w.numel()));
  for (std::size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<T>((2.0 * kernels::rng::uniform_double(seed, stream, i) - 1.0) * a);
  w = Tensor<T>::from_host(res, host, w.rows(), w.cols());
}

#define HALO_INSTANTIATE(T)                                                                \
  template void multiply<T>(const kernels::Resources&, const kernels::FeatureMatrix<T>&,   \
                            const Tensor<T>&, Tensor<T>&, std::int64_t);                   \
  template void multiply_transposed<T>(const kernels::Resources&,                          \
                                       const kernels::FeatureMatrix<T>&, const Tensor<T>&, \
                                       Tensor<T>&, std::int64_t);                          \
  template const Tensor<T>& dense<T>(const kernels::FeatureMatrix<T>&, const char*);       \
  template void glorot_uniform<T>(const kernels::Resources&, Tensor<T>&, std::uint64_t,    \
                                  std::uint64_t);
HALO_INSTANTIATE(float)
HALO_INSTANTIATE(double)
#undef HALO_INSTANTIATE

}  // namespace halo::nn::detail
