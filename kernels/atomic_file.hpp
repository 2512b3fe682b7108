#pragma once
// Files written whole or not at all: a temporary sibling, flushed, then renamed over the target.

#include <filesystem>
#include <string>
#include <string_view>

namespace halo::kernels {

/// Writes `bytes` to `path` through the temporary `<path>.tmp-<pid>` and a rename, so a reader
/// never sees a half-written file and a failure (a full disk, a directory in the way) leaves
/// the previous file, if any, and no temporary. halo::IoError naming `path` on failure. Host
/// only; safe to call from several threads for different paths.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// The whole content of `path` (binary). halo::IoError naming it when it cannot be read.
std::string read_file_bytes(const std::filesystem::path& path);

}  // namespace halo::kernels
