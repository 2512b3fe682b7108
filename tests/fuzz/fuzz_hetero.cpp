// libFuzzer target: the typed directory reader (heterogeneous graphs). The input holds the
// files of a dataset directory separated by '\x01' bytes, in this order: node_types.tsv,
// edge_types.tsv, e0.tsv, e1.tsv, fa.coo.tsv, fb.dense.tsv, labels_a.txt, splits/train_1.txt,
// splits/val_1.txt, splits/test_1.txt. node_types.tsv and edge_types.tsv name the others.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/error.hpp>

#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!halo::fuzz::small_numbers(text)) return -1;
  const auto dir = halo::fuzz::scratch() / "typed";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir / "splits");
  const char* names[] = {"node_types.tsv",   "edge_types.tsv",     "e0.tsv",
                         "e1.tsv",           "fa.coo.tsv",         "fb.dense.tsv",
                         "labels_a.txt",     "splits/train_1.txt", "splits/val_1.txt",
                         "splits/test_1.txt"};
  for (const char* name : names) {
    const std::size_t cut = text.find('\x01');
    halo::fuzz::write_file(dir / name, text.substr(0, cut));
    text = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 1);
  }
  try {
    (void)halo::datasets::read_hetero_directory(halo::fuzz::cpu(), dir);
  } catch (const halo::IoError&) {
  }
  return 0;
}
