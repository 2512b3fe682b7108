#pragma once
// Devices, element types and the id aliases shared by every component.

#include <cstdint>
#include <string_view>

namespace halo::kernels {

enum class Device { Cpu, Cuda };

enum class DType { F32, F64, I32, I64, U8 };

/// Node ids of Halo's datasets are 32-bit: half the index traffic of 64-bit ids, and room for
/// 2^31 - 1 nodes (ogbn-papers100M has 111M). Edge offsets are always 64-bit. Kernels are
/// templates on `Idx` and are instantiated and tested for both widths.
using NodeId = std::int32_t;
using EdgeId = std::int64_t;

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::U8;
}

constexpr std::string_view to_string(Device d) { return d == Device::Cpu ? "cpu" : "cuda"; }

}  // namespace halo::kernels
