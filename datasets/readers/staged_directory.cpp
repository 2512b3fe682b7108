#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {

namespace fs = std::filesystem;

namespace {

/// `dir` without a trailing separator ("out/" and "out" name the same directory).
fs::path target_of(const fs::path& dir) {
  fs::path target = dir.lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  return target;
}

/// The parent directory of `p` ("." for a bare name).
fs::path parent_of(const fs::path& p) {
  const fs::path parent = p.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// The staging directories being filled now (remove_staging_directories).
std::mutex g_staging_mutex;
std::vector<fs::path> g_staging;

bool exists_no_throw(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

}  // namespace

void check_output_directory(const fs::path& dir) {
  const fs::path target = target_of(dir);
  std::error_code ec;
  if (exists_no_throw(target)) {
    const bool empty_dir = fs::is_directory(target, ec) && fs::is_empty(target, ec) && !ec;
    if (!empty_dir)
      throw IoError(target.string() +
                    ": already exists and is not an empty directory; refusing to overwrite it");
  }
  // The staging directory is created next to `target`, in its parent (created if missing), so
  // the nearest ancestor that exists decides whether any of it can be created.
  kernels::check_directory_creatable(target);
}

void write_staged_directory(const fs::path& dir, const std::function<void(const fs::path&)>& fill) {
  const fs::path target = target_of(dir);
  check_output_directory(target);
  // The highest missing ancestor: what this call creates, and removes again on failure.
  fs::path created;
  for (fs::path p = parent_of(target); !exists_no_throw(p); p = parent_of(p)) {
    created = p;
    if (p == parent_of(p)) break;
  }
  std::error_code ec;
  if (!created.empty()) {
    fs::create_directories(parent_of(target), ec);
    if (ec)
      throw IoError(parent_of(target).string() + ": cannot create directory: " + ec.message());
  }
  static std::atomic<int> counter{0};
  const fs::path tmp =
      parent_of(target) / (target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++));
  const auto remove_created_parents = [&] {
    if (created.empty()) return;
    // Deepest first, each only while empty (fs::remove refuses a non-empty directory), so a
    // file someone else put there meanwhile survives.
    std::error_code ignored;
    for (fs::path p = parent_of(target);; p = parent_of(p)) {
      if (!fs::remove(p, ignored) || p == created) break;
    }
  };
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec) {
    const std::string why = ec.message();
    remove_created_parents();
    throw IoError(target.string() + ": cannot create its staging directory " + tmp.string() + ": " +
                  why);
  }
  track_staging_directory(tmp, true);
  try {
    fill(tmp);
    track_staging_directory(tmp, false);
    fs::rename(tmp, target, ec);  // rename(2) replaces an empty directory atomically
    if (ec)
      throw IoError(target.string() +
                    ": cannot move the finished output in place: " + ec.message());
  } catch (...) {
    track_staging_directory(tmp, false);
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    remove_created_parents();
    throw;
  }
}

void track_staging_directory(const fs::path& tmp, bool add) {
  const std::lock_guard<std::mutex> lock(g_staging_mutex);
  if (add)
    g_staging.push_back(tmp);
  else
    g_staging.erase(std::remove(g_staging.begin(), g_staging.end(), tmp), g_staging.end());
}

void remove_staging_directories() {
  const std::lock_guard<std::mutex> lock(g_staging_mutex);
  for (const fs::path& p : g_staging) {
    std::error_code ignored;
    fs::remove_all(p, ignored);
  }
  g_staging.clear();
}

}  // namespace halo::datasets
