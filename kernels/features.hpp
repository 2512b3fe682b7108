#pragma once
// Node feature matrices: dense (Tensor) or sparse (CSR, for bag-of-words inputs like Cora's).

#include <cstdint>
#include <variant>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::kernels {

/// num_nodes x num_features, dense or sparse. Sparse rows hold (feature index, value) pairs.
template <class T>
using FeatureMatrix = std::variant<Tensor<T>, CsrMatrix<std::int32_t, T>>;

template <class T>
std::int64_t num_rows(const FeatureMatrix<T>& x) {
  return std::visit(
      [](const auto& m) -> std::int64_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, Tensor<T>>)
          return m.rows();
        else
          return m.num_rows();
      },
      x);
}

template <class T>
std::int64_t num_cols(const FeatureMatrix<T>& x) {
  return std::visit(
      [](const auto& m) -> std::int64_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, Tensor<T>>)
          return m.cols();
        else
          return m.num_cols;
      },
      x);
}

}  // namespace halo::kernels
