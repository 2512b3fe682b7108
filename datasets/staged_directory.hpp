#pragma once
// Writing a whole output directory so that it is either complete or absent.

#include <filesystem>
#include <functional>

namespace halo::datasets {

/// Creates directory `dir` with the files `fill(staging)` writes into `staging`, a temporary
/// sibling of `dir` that is renamed to `dir` only after `fill` returns, so `dir` is never
/// half-written. `dir` must not exist or be an empty directory (halo::IoError otherwise);
/// missing parents are created. If `fill` throws, the staging directory is removed and the
/// exception propagates. Used by the plain-format writer and the partition writer.
void write_staged_directory(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path&)>& fill);

}  // namespace halo::datasets
