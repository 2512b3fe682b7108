// libFuzzer target: the comma-separated number parsers of the OGB reader, line by line.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <halo/datasets/detail/csv.hpp>
#include <halo/datasets/detail/text.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  halo::datasets::detail::TextLines lines(text);
  std::string_view line;
  std::string_view bad;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  while (lines.next(line)) {
    floats.clear();
    ints.clear();
    (void)halo::datasets::detail::parse_csv_floats(line, floats, bad);
    (void)halo::datasets::detail::parse_csv_ints(line, ints, bad);
  }
  return 0;
}
