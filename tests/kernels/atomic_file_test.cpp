// Outputs written whole or not at all, through symbolic links, never over a device or a FIFO.

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <string>

#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;
using halo::IoError;
using halo::kernels::check_output_directory_path;
using halo::kernels::check_output_file;
using halo::kernels::output_file_target;
using halo::kernels::write_file_atomically;
using halo::testing::read_file;

/// The message `f` throws as halo::IoError ("" when it does not throw).
template <class F>
std::string io_error(F&& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

/// Nothing but `names` in `dir` (no temporary or probe left behind).
void expect_only(const fs::path& dir, std::set<std::string> names) {
  std::set<std::string> seen;
  for (const auto& e : fs::directory_iterator(dir)) seen.insert(e.path().filename().string());
  EXPECT_EQ(seen, names);
}

TEST(AtomicFile, WritesAndReplacesARegularFile) {
  const halo::testing::TempDir t;
  const fs::path p = t.path() / "out.json";
  write_file_atomically(p, "one");
  EXPECT_EQ(read_file(p), "one");
  write_file_atomically(p, "two");
  EXPECT_EQ(read_file(p), "two");
  expect_only(t.path(), {"out.json"});
}

TEST(AtomicFile, WritesThroughASymbolicLink) {
  const halo::testing::TempDir t;
  fs::create_directory(t.path() / "real");
  const fs::path target = t.path() / "real" / "result.json";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("real/result.json", t.path() / "link.json");  // relative, as users make them
  fs::create_symlink(t.path() / "link.json", t.path() / "link2.json");  // a chain
  EXPECT_EQ(output_file_target(t.path() / "link2.json"), target);
  write_file_atomically(t.path() / "link2.json", "new");
  EXPECT_TRUE(fs::is_symlink(t.path() / "link.json"));
  EXPECT_TRUE(fs::is_symlink(t.path() / "link2.json"));
  EXPECT_EQ(read_file(target), "new");
  // A dangling link: the file is created where it points.
  fs::create_symlink("real/later.json", t.path() / "dangling.json");
  write_file_atomically(t.path() / "dangling.json", "x");
  EXPECT_TRUE(fs::is_symlink(t.path() / "dangling.json"));
  EXPECT_EQ(read_file(t.path() / "real" / "later.json"), "x");
  expect_only(t.path() / "real", {"result.json", "later.json"});
}

TEST(AtomicFile, RefusesWhatIsNotARegularFile) {
  const halo::testing::TempDir t;
  const fs::path fifo = t.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::string e = io_error([&] { write_file_atomically(fifo, "x"); });
  EXPECT_NE(e.find(fifo.string() + ": a FIFO, not a regular file"), std::string::npos) << e;
  EXPECT_TRUE(fs::is_fifo(fifo));
  e = io_error([&] { check_output_file(fifo); });
  EXPECT_NE(e.find("a FIFO"), std::string::npos) << e;
  // A link to a FIFO is judged by its target.
  fs::create_symlink(fifo, t.path() / "to-fifo");
  EXPECT_NE(io_error([&] { write_file_atomically(t.path() / "to-fifo", "x"); }).find("a FIFO"),
            std::string::npos);
  fs::create_directory(t.path() / "dir");
  e = io_error([&] { write_file_atomically(t.path() / "dir", "x"); });
  EXPECT_NE(e.find("a directory"), std::string::npos) << e;
  expect_only(t.path(), {"fifo", "to-fifo", "dir"});
  if (fs::is_character_file("/dev/full")) {
    e = io_error([] { write_file_atomically("/dev/full", "x"); });
    EXPECT_NE(e.find("/dev/full: a character device"), std::string::npos) << e;
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  fs::create_symlink(t.path() / "loop-a", t.path() / "loop-b");
  fs::create_symlink(t.path() / "loop-b", t.path() / "loop-a");
  e = io_error([&] { check_output_file(t.path() / "loop-a"); });
  EXPECT_NE(e.find("Too many levels of symbolic links"), std::string::npos) << e;
}

TEST(AtomicFile, ChecksNameTheOperatingSystemsReason) {
  const halo::testing::TempDir t;
  std::string e = io_error([&] { check_output_file(t.path() / "no" / "x.json"); });
  EXPECT_NE(e.find("No such file or directory"), std::string::npos) << e;
  { std::ofstream(t.path() / "file") << "x"; }
  e = io_error([&] { check_output_file(t.path() / "file" / "x.json"); });
  EXPECT_NE(e.find("Not a directory"), std::string::npos) << e;
  EXPECT_EQ(io_error([&] { check_output_file(t.path() / "fine.json"); }), "");
  expect_only(t.path(), {"file"});

  // Directories: a regular file in the way, or under an ancestor that is a file.
  e = io_error([&] { check_output_directory_path(t.path() / "file"); });
  EXPECT_NE(e.find("Not a directory"), std::string::npos) << e;
  e = io_error([&] { check_output_directory_path(t.path() / "file" / "a" / "b"); });
  EXPECT_NE(e.find((t.path() / "file").string() + ": not a directory"), std::string::npos) << e;
  EXPECT_EQ(io_error([&] { check_output_directory_path(t.path() / "new" / "deeper"); }), "");
  EXPECT_EQ(io_error([&] { check_output_directory_path(t.path()); }), "");
  expect_only(t.path(), {"file"});
  // /proc takes no new directories, even from root (access(2) says it does).
  if (fs::is_directory("/proc/self")) {
    e = io_error([] { check_output_directory_path("/proc/halo-test-x"); });
    EXPECT_NE(e.find("/proc/halo-test-x: cannot be created in /proc"), std::string::npos) << e;
    e = io_error([] { check_output_file("/proc/halo-test-x"); });
    EXPECT_NE(e.find("/proc/halo-test-x: cannot create it"), std::string::npos) << e;
  }
}

TEST(AtomicFile, AFullDiskLeavesThePreviousFile) {
  // /dev/full refuses every write with ENOSPC; a directory entry cannot be made there, so the
  // case is an unwritable tmpfs where one is mountable, and is skipped otherwise.
  const halo::testing::TempDir t;
  const fs::path mnt = t.path() / "mnt";
  fs::create_directory(mnt);
  if (::geteuid() != 0 ||
      std::system(("mount -t tmpfs -o size=16k tmpfs " + mnt.string() + " 2>/dev/null").c_str()) !=
          0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  const fs::path p = mnt / "out.bin";
  write_file_atomically(p, "previous");
  const std::string e = io_error([&] { write_file_atomically(p, std::string(1 << 20, 'x')); });
  EXPECT_NE(e.find("No space left on device"), std::string::npos) << e;
  EXPECT_EQ(read_file(p), "previous");
  expect_only(mnt, {"out.bin"});
  EXPECT_EQ(std::system(("umount " + mnt.string()).c_str()), 0);
}

}  // namespace
