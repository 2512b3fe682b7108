#pragma once
// The arrays `halo datasets export` writes into an .npz (datasets::write_npz): host data copied
// into datasets::NpyArray with its NumPy dtype and shape. Shared by the homogeneous, typed and
// temporal exports (docs/formats.md, "Exported datasets").

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::cli {

using NpzArrays = std::map<std::string, datasets::NpyArray>;

/// `n` elements of host data, `shape` (empty: a scalar), as `dtype` ("<i4", "<f4", "|u1", ...).
template <class T>
datasets::NpyArray npy_array(const char* dtype, std::vector<std::int64_t> shape, const T* data,
                             std::int64_t n) {
  datasets::NpyArray a{dtype, std::move(shape),
                       std::string(static_cast<std::size_t>(n) * sizeof(T), '\0')};
  if (n > 0) std::memcpy(a.bytes.data(), data, a.bytes.size());
  return a;
}

template <class T>
datasets::NpyArray npy_vector(const char* dtype, const kernels::Tensor<T>& t) {
  return npy_array(dtype, {t.numel()}, t.data(), t.numel());
}

template <class T>
datasets::NpyArray npy_vector(const char* dtype, const std::vector<T>& v) {
  return npy_array(dtype, {static_cast<std::int64_t>(v.size())}, v.data(),
                   static_cast<std::int64_t>(v.size()));
}

inline datasets::NpyArray npy_scalar(std::int64_t x) { return npy_array("<i8", {}, &x, 1); }

/// Text (meta_json) as its UTF-8 bytes, "|u1".
inline datasets::NpyArray npy_text(const std::string& text) {
  return npy_array("|u1", {static_cast<std::int64_t>(text.size())},
                   reinterpret_cast<const std::uint8_t*>(text.data()),
                   static_cast<std::int64_t>(text.size()));
}

}  // namespace halo::cli
