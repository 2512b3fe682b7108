#include <algorithm>

#include <halo/kernels/exec.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/kernels/reduce_body.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::kernels {

template <class T>
void column_sum(const Resources& res, ConstMatrixView<T> x, Span<T> out, bool accumulate) {
  HALO_EXPECTS(out.size == x.cols, "column_sum: out must have one entry per column");
  const OpTimer timer(res, Op::Elementwise,
                      static_cast<double>(x.size() + x.cols * (accumulate ? 2 : 1)) * sizeof(T),
                      static_cast<double>(x.size()));
  // Enough blocks to keep every thread busy, few enough that combining them is cheap: a CPU
  // thread sums whole rows of its block; a GPU thread one column of its block, and the GPU
  // needs many more threads in flight.
  const std::int64_t max_blocks = res.device() == Device::Cuda ? 2048 : 256;
  const std::int64_t rows_per_block =
      std::max<std::int64_t>(1, (x.rows + max_blocks - 1) / max_blocks);
  const std::int64_t blocks = x.rows == 0 ? 0 : (x.rows + rows_per_block - 1) / rows_per_block;
  // The partial sums live in the Resources' scratch, sized for the most blocks whatever the
  // rows: after the first call with as many columns, a reduction allocates nothing.
  const MatrixView<T> partial{
      static_cast<T*>(res.scratch(0, static_cast<std::size_t>(max_blocks * x.cols) * sizeof(T))),
      blocks, x.cols};
  launch_by_device(res, blocks, detail::ColumnPartialSumBody<T>{x, rows_per_block, partial},
                   blocks * x.cols,
                   detail::ColumnPartialSumByColumnBody<T>{x, rows_per_block, partial}, x.size());
  launch(res, x.cols, detail::ColumnCombineBody<T>{partial, out, accumulate}, blocks * x.cols);
}

template <class T>
T sum(const Resources& res, Span<const T> x) {
  Tensor<T> out(res, 1, 1);
  column_sum(res, MatrixView<const T>{x.data, x.size, 1}, out.span());
  return out.to_vector(res)[0];
}

template void column_sum<float>(const Resources&, MatrixView<const float>, Span<float>, bool);
template void column_sum<double>(const Resources&, MatrixView<const double>, Span<double>, bool);
template float sum<float>(const Resources&, Span<const float>);
template double sum<double>(const Resources&, Span<const double>);

}  // namespace halo::kernels
