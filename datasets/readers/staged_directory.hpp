#pragma once
// Writing a whole output directory so that it is either complete or absent.

#include <filesystem>
#include <functional>

namespace halo::datasets {

/// Creates directory `dir` with the files `fill(staging)` writes into `staging`, a temporary
/// sibling of `dir` that is renamed to `dir` only after `fill` returns, so `dir` is never
/// half-written. `dir` must not exist or be an empty directory (halo::IoError otherwise, as
/// `check_output_directory`); missing parents are created. If `fill` throws, the staging
/// directory and the parents this call created are removed and the exception propagates. Used
/// by the plain-format writer and the partition writer.
void write_staged_directory(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path&)>& fill);

/// Throws halo::IoError (one line naming the path) unless `write_staged_directory(dir, ...)` can
/// start: `dir` must not exist or be an empty directory, and its nearest existing ancestor must
/// be a directory in which this process may create entries (missing parents are created by the
/// writer). Creates nothing; a few stat calls. Commands call it before long work so that a bad
/// output location is refused at once rather than after the work.
void check_output_directory(const std::filesystem::path& dir);

/// Removes the staging directories of every write_staged_directory call in progress (and the
/// parents they created are left: a few empty directories at most). For a command ended by a
/// signal, from a normal thread (not a signal handler): the output then stays absent. Thread-safe.
void remove_staging_directories();

/// Adds (`add`) or removes `tmp` from the directories remove_staging_directories removes: for a
/// writer that stages its output itself (datasets::StoreWriter). Thread-safe.
void track_staging_directory(const std::filesystem::path& tmp, bool add);

}  // namespace halo::datasets
