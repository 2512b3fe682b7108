#include <unistd.h>

#include <atomic>
#include <string>

#include <halo/datasets/staged_directory.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {

namespace fs = std::filesystem;

void write_staged_directory(const fs::path& dir, const std::function<void(const fs::path&)>& fill) {
  fs::path target = dir.lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (fs::exists(target) && !(fs::is_directory(target) && fs::is_empty(target)))
    throw IoError(target.string() +
                  ": already exists and is not an empty directory; refusing to overwrite it");
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  static std::atomic<int> counter{0};
  const fs::path tmp =
      target.parent_path() / (target.filename().string() + ".tmp-" + std::to_string(::getpid()) +
                              "-" + std::to_string(counter++));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    throw IoError(tmp.string() + ": cannot create directory: " + ec.message());
  try {
    fill(tmp);
    fs::rename(tmp, target, ec);  // rename(2) replaces an empty directory atomically
    if (ec)
      throw IoError(target.string() +
                    ": cannot move the finished output in place: " + ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
}

}  // namespace halo::datasets
