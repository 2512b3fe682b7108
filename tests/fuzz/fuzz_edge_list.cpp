// libFuzzer target: the SNAP edge-list reader (through a scratch file: it reads paths).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <halo/datasets/readers/edge_list.hpp>
#include <halo/kernels/error.hpp>

#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto path = halo::fuzz::scratch() / "input.txt";
  halo::fuzz::write_file(path, text);
  try {
    (void)halo::datasets::read_edge_list(halo::fuzz::cpu(), path);
  } catch (const halo::IoError&) {
  }
  return 0;
}
