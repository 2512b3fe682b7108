#pragma once
// Shared by the fuzz targets: a per-process scratch directory, and an input filter for readers
// whose sizes come from the data.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <halo/kernels/resources.hpp>

namespace halo::fuzz {

/// A directory private to this process (removed at exit).
inline const std::filesystem::path& scratch() {
  static const struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("halo_fuzz_" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

inline void write_file(const std::filesystem::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

/// False when `data` holds a number of 7 or more digits. Node counts are taken from the data,
/// and a legitimate 10-byte file can ask for a graph of 2^31 nodes; such inputs would only
/// measure the allocator, so the harnesses skip them.
inline bool small_numbers(std::string_view data) {
  int run = 0;
  for (const char c : data) {
    run = (c >= '0' && c <= '9') ? run + 1 : 0;
    if (run >= 7) return false;
  }
  return true;
}

inline const kernels::Resources& cpu() {
  static const kernels::Resources res(kernels::Device::Cpu, 1);
  return res;
}

}  // namespace halo::fuzz
