// libFuzzer target: the restricted unpickler. Any input must give a document or halo::IoError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <halo/datasets/readers/pickle.hpp>
#include <halo/kernels/error.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const halo::datasets::PickleDocument doc = halo::datasets::unpickle(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.pkl");
    const auto& root = doc.root();
    if (root.kind == halo::datasets::PickleValue::Kind::NdArray) {
      (void)halo::datasets::to_doubles(root.array, "fuzz");
    }
  } catch (const halo::IoError&) {
  }
  return 0;
}
