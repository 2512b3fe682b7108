#pragma once
// Files written whole or not at all: a temporary sibling, flushed, then renamed over the target;
// and the checks an output path gets before any work is done.

#include <filesystem>
#include <string>
#include <string_view>

namespace halo::kernels {

/// The file an output path names: `path` itself, or the end of its chain of symbolic links (so
/// writing replaces the link's target, never the link). halo::IoError naming `path` when what
/// is there is not a regular file (a directory, a device such as /dev/full, a FIFO, a socket):
/// an output is only ever a regular file, so such a path is refused rather than replaced.
std::filesystem::path output_file_target(const std::filesystem::path& path);

/// Checks, without leaving anything behind, that `path` can be written as a file: its target
/// (output_file_target) is a regular file or absent, and a file can be created in the target's
/// directory (probed with a file of this process's own). halo::IoError naming `path` and the
/// operating system's reason ("No such file or directory", "Not a directory", "Permission
/// denied", "No space left on device", ...).
void check_output_file(const std::filesystem::path& path);

/// Checks that directory `dir` can be created (whether or not it exists now): its nearest
/// existing ancestor above it is a directory in which this process can create one, probed by
/// creating and removing a sibling of `dir` there (access(2) cannot tell: root passes it on
/// /proc or a read-only mount). halo::IoError naming the reason ("ANCESTOR: not a directory,
/// so DIR cannot be created", "DIR: cannot be created in ANCESTOR: Permission denied", ...).
void check_directory_creatable(const std::filesystem::path& dir);

/// Checks that `dir` can be used as an output directory: an existing directory in which a
/// file can be created, or a path whose nearest existing ancestor is a directory where one can
/// be created (probed by creating and removing a directory there). halo::IoError naming `dir`
/// and the operating system's reason otherwise (for example "Not a directory" when `dir` or an
/// ancestor is a regular file).
void check_output_directory_path(const std::filesystem::path& dir);

/// Writes `bytes` to `path` through the temporary `<target>.tmp-<pid>` and a rename, where the
/// target is output_file_target(path) (a symbolic link is written through), so a reader never
/// sees a half-written file and a failure (a full disk, a directory in the way) leaves the
/// previous file, if any, and no temporary. halo::IoError naming `path` and the operating
/// system's reason on failure. Host only; safe to call from several threads for different paths.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// Moves the finished temporary `tmp` over `path`'s target (output_file_target): rename(2),
/// which is atomic. halo::IoError naming `path` on failure; `tmp` is then removed.
void commit_output_file(const std::filesystem::path& tmp, const std::filesystem::path& path);

/// The whole content of `path` (binary). halo::IoError naming it when it cannot be read.
std::string read_file_bytes(const std::filesystem::path& path);

}  // namespace halo::kernels
