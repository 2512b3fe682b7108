#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>

namespace halo::kernels {

namespace fs = std::filesystem;

namespace {

std::string os_error(int err) { return std::strerror(err); }

/// What a file type is called in a message.
const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

/// The directory a file named `p` lives in ("." for a bare name).
fs::path directory_of(const fs::path& p) {
  const fs::path parent = p.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// A name no other process or thread uses beside `target`.
fs::path sibling(const fs::path& target, const char* what) {
  static std::atomic<int> counter{0};
  return target.string() + "." + what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

}  // namespace

fs::path output_file_target(const fs::path& path) {
  fs::path target = path;
  // A chain of links ends within 40 hops (the kernel's own limit) or is a loop.
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) {
      if (errno == ENOENT) return target;  // absent: created by the write
      throw IoError(path.string() + ": " + os_error(errno));
    }
    if (!S_ISLNK(st.st_mode)) break;
    if (hops == 40) throw IoError(path.string() + ": " + os_error(ELOOP));
    const fs::path link = fs::read_symlink(target);
    target = link.is_absolute() ? link : directory_of(target) / link;
  }
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (st.type() != fs::file_type::regular)
    throw IoError(path.string() + ": " + kind_of(st.type()) +
                  ", not a regular file; refusing to replace it (name a file)");
  return target;
}

void check_output_file(const fs::path& path) {
  const fs::path target = output_file_target(path);
  const fs::path probe = sibling(target, "probe");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw IoError(path.string() + ": cannot create it: " + os_error(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_directory_path(const fs::path& dir) {
  fs::path target = dir.lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (target.empty()) target = ".";
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw IoError(dir.string() + ": " + os_error(ENOTDIR) + " (it exists and is " +
                    kind_of(fs::status(target).type()) + ")");
    check_output_file(target / "probe");
    return;
  }
  // Missing (ENOENT), or below a file (ENOTDIR): the ancestors say which.
  if (errno != ENOENT && errno != ENOTDIR) throw IoError(dir.string() + ": " + os_error(errno));
  check_directory_creatable(target);  // missing: created in its nearest existing ancestor
}

void check_directory_creatable(const fs::path& dir) {
  fs::path target = dir.lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path ancestor = directory_of(target);
  struct stat st {};
  while (::stat(ancestor.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR) &&
         ancestor != directory_of(ancestor))
    ancestor = directory_of(ancestor);
  if (::stat(ancestor.c_str(), &st) != 0)
    throw IoError(target.string() + ": " + ancestor.string() + ": " + os_error(errno));
  if (!S_ISDIR(st.st_mode))
    throw IoError(ancestor.string() + ": not a directory, so " + target.string() +
                  " cannot be created");
  const fs::path probe = sibling(ancestor / target.filename(), "probe");
  if (::mkdir(probe.c_str(), 0755) != 0)
    throw IoError(target.string() + ": cannot be created in " + ancestor.string() + ": " +
                  os_error(errno));
  ::rmdir(probe.c_str());
}

void commit_output_file(const fs::path& tmp, const fs::path& path) {
  fs::path target;
  try {
    target = output_file_target(path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw IoError(path.string() + ": cannot write it: " + os_error(err));
  }
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  const fs::path target = output_file_target(path);
  // The pid (and a counter) keep two processes or threads that write one file apart.
  const fs::path tmp = sibling(target, "tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path.string() + ": cannot write it: " + os_error(errno));
  int err = 0;
  for (std::size_t done = 0; done < bytes.size() && err == 0;) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  // close() reports what a network or quota-limited file system deferred.
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw IoError(path.string() + ": cannot write it: " + os_error(err));
  }
  commit_output_file(tmp, path);
}

std::string read_file_bytes(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path.string() + ": cannot open it: " + os_error(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    throw IoError(path.string() + ": cannot read it: " + os_error(err) + " (name a file)");
  }
  std::string bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw IoError(path.string() + ": read failed: " + os_error(err));
    }
    bytes.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return bytes;
}

}  // namespace halo::kernels
