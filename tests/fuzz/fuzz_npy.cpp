// libFuzzer target: the .npy parser and the element conversions.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/kernels/error.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const halo::datasets::NpyArray a = halo::datasets::parse_npy(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    (void)halo::datasets::to_doubles(a, "fuzz");
    (void)halo::datasets::to_int64s(a, "fuzz");
  } catch (const halo::IoError&) {
  }
  return 0;
}
