// Tests of write_staged_directory and check_output_directory: complete or absent, never partial.

#include <gtest/gtest.h>
#include <stdexcept>
#include <string>
#include <vector>

#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

std::string check_error(const fs::path& dir) {
  try {
    check_output_directory(dir);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(StagedDirectory, WritesAndCreatesParents) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "a" / "b" / "out";
  write_staged_directory(dir, [](const fs::path& staging) { write_text(staging / "f", "x"); });
  EXPECT_TRUE(fs::is_regular_file(dir / "f"));
  EXPECT_EQ(entries_of(dir.parent_path()), std::vector<std::string>{"out"});
}

TEST(StagedDirectory, FailureLeavesNothingBehind) {
  TempDir tmp;
  // The staging directory, the target and the parents this call created all go.
  const fs::path dir = tmp.path() / "new" / "deeper" / "out";
  EXPECT_THROW(write_staged_directory(dir,
                                      [](const fs::path& staging) {
                                        write_text(staging / "half-written", "x");
                                        throw IoError("disk full");
                                      }),
               IoError);
  EXPECT_TRUE(entries_of(tmp.path()).empty());

  // Parents that existed before stay, and so does what they held.
  fs::create_directory(tmp.path() / "kept");
  write_text(tmp.path() / "kept" / "other", "y");
  EXPECT_THROW(write_staged_directory(tmp.path() / "kept" / "out",
                                      [](const fs::path&) { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(entries_of(tmp.path()), std::vector<std::string>{"kept"});
  EXPECT_EQ(entries_of(tmp.path() / "kept"), std::vector<std::string>{"other"});

  // An empty target directory is left as it was.
  fs::create_directory(tmp.path() / "empty");
  EXPECT_THROW(write_staged_directory(tmp.path() / "empty",
                                      [](const fs::path&) { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_TRUE(fs::is_directory(tmp.path() / "empty"));
  EXPECT_EQ(entries_of(tmp.path()).size(), 2u);
}

TEST(StagedDirectory, CheckRefusesUnusableLocationsAndCreatesNothing) {
  TempDir tmp;
  EXPECT_EQ(check_error(tmp.path() / "absent"), "");
  EXPECT_EQ(check_error(tmp.path() / "missing" / "parents" / "out"), "");
  fs::create_directory(tmp.path() / "empty");
  EXPECT_EQ(check_error(tmp.path() / "empty"), "");
  EXPECT_EQ(check_error((tmp.path() / "empty").string() + "/"), "");
  EXPECT_EQ(entries_of(tmp.path()), std::vector<std::string>{"empty"});

  fs::create_directory(tmp.path() / "full");
  write_text(tmp.path() / "full" / "f", "x");
  EXPECT_NE(check_error(tmp.path() / "full")
                .find("full: already exists and is not an empty "
                      "directory"),
            std::string::npos);
  write_text(tmp.path() / "file", "x");
  EXPECT_NE(check_error(tmp.path() / "file").find("already exists"), std::string::npos);
  const std::string msg = check_error(tmp.path() / "file" / "sub" / "out");
  EXPECT_NE(msg.find((tmp.path() / "file").string() + ": not a directory"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // The writer refuses the same locations before calling fill.
  bool called = false;
  EXPECT_THROW(
      write_staged_directory(tmp.path() / "file" / "out", [&](const fs::path&) { called = true; }),
      IoError);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace halo::datasets::test
