// libFuzzer target: the temporal event-list reader and the snapshots cut from what it reads.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/error.hpp>

#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto path = halo::fuzz::scratch() / "events.tsv";
  halo::fuzz::write_file(path, text);
  try {
    const auto g = halo::datasets::read_temporal_events(path);
    halo::datasets::SnapshotConfig c;
    c.num_snapshots = 3;
    c.window_snapshots = 2;
    const auto s = halo::datasets::make_snapshots(g, c);
    for (std::size_t i = 1; i < s.size(); ++i)
      (void)halo::datasets::apply_delta(s[i - 1], halo::datasets::snapshot_delta(s[i - 1], s[i]));
  } catch (const halo::Error&) {  // IoError from the reader, LogicError: times spanning > 2^63
  }
  return 0;
}
