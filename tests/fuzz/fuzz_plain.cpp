// libFuzzer target: the plain directory reader. The input holds the files of a dataset
// directory separated by '\x01' bytes, in this order: edges.tsv, labels.txt, train_idx.txt,
// val_idx.txt, test_idx.txt, features.coo.tsv (or features.tsv when the input starts with 'D'),
// meta.tsv.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include <halo/datasets/readers/plain_format.hpp>
#include <halo/kernels/error.hpp>

#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!halo::fuzz::small_numbers(text)) return -1;
  const bool dense = !text.empty() && text.front() == 'D';
  if (dense) text.remove_prefix(1);
  const auto dir = halo::fuzz::scratch() / "dataset";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  const char* names[] = {"edges.tsv",   "labels.txt",   "train_idx.txt",
                         "val_idx.txt", "test_idx.txt", dense ? "features.tsv" : "features.coo.tsv",
                         "meta.tsv"};
  for (const char* name : names) {
    const std::size_t cut = text.find('\x01');
    halo::fuzz::write_file(dir / name, text.substr(0, cut));
    text = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 1);
  }
  try {
    (void)halo::datasets::read_directory(halo::fuzz::cpu(), dir);
  } catch (const halo::IoError&) {
  }
  return 0;
}
