// gzip and zip reading: round trips, corrupt data, size limits and unsafe zip entries.

#include <sys/stat.h>
#include <zip.h>
#include <zlib.h>

#include <string>
#include <vector>

#include <halo/datasets/fetch/archive.hpp>
#include <halo/kernels/error.hpp>

#include "archive_test_util.hpp"
#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Gzip, RoundTripsAndJoinsMembers) {
  TempDir tmp;
  const fs::path gz = tmp.path() / "a.gz";
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + ",x\n";
  write_gz(gz, text);
  EXPECT_EQ(gunzip_file(gz, text.size()), text);
  // Two members concatenated read as one stream (like gzip -d).
  write_gz(tmp.path() / "b.gz", "hello ");
  write_gz(tmp.path() / "c.gz", "world");
  const std::string two = read_file(tmp.path() / "b.gz") + read_file(tmp.path() / "c.gz");
  write_text(tmp.path() / "two.gz", two);
  EXPECT_EQ(gunzip_file(tmp.path() / "two.gz", 100), "hello world");
}

TEST(Gzip, EnforcesTheLimit) {
  TempDir tmp;
  write_gz(tmp.path() / "a.gz", std::string(5000, 'z'));
  const std::string msg = error_of([&] { gunzip_file(tmp.path() / "a.gz", 4999); });
  EXPECT_NE(msg.find("exceeds the limit of 4999 bytes"), std::string::npos) << msg;
  EXPECT_EQ(gunzip_file(tmp.path() / "a.gz", 5000).size(), 5000u);
}

TEST(Gzip, RejectsCorruptTruncatedAndPlainData) {
  TempDir tmp;
  std::string text;
  for (int i = 0; i < 5000; ++i) text += std::to_string(i * 7919 % 1000) + "\n";
  write_gz(tmp.path() / "a.gz", text);
  const std::string good = read_file(tmp.path() / "a.gz");
  write_text(tmp.path() / "trunc.gz", good.substr(0, good.size() / 2));
  EXPECT_NE(error_of([&] { gunzip_file(tmp.path() / "trunc.gz", 1 << 20); }).find("truncated"),
            std::string::npos);
  std::string bad = good;
  bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x55);
  bad[bad.size() / 2 + 1] = static_cast<char>(bad[bad.size() / 2 + 1] ^ 0x55);
  write_text(tmp.path() / "bad.gz", bad);
  const std::string msg = error_of([&] { gunzip_file(tmp.path() / "bad.gz", 1 << 20); });
  EXPECT_NE(msg.find("bad.gz"), std::string::npos) << msg;
  write_text(tmp.path() / "empty.gz", "");
  EXPECT_NE(error_of([&] { gunzip_file(tmp.path() / "empty.gz", 1); }).find("empty file"),
            std::string::npos);
  write_text(tmp.path() / "plain.gz", "not gzip at all\n");
  EXPECT_NE(error_of([&] { gunzip_file(tmp.path() / "plain.gz", 1 << 20); }).find("not gzip"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gunzip_file(tmp.path() / "missing.gz", 1); }).find("missing.gz"),
            std::string::npos);
}

TEST(GzLineReader, StreamsLinesAcrossChunks) {
  TempDir tmp;
  std::string text;
  std::vector<std::string> want;
  for (int i = 0; i < 300000; ++i) {
    want.push_back(std::string(static_cast<std::size_t>(i % 17), 'a') + std::to_string(i));
    text += want.back() + (i % 3 == 0 ? "\r\n" : "\n");
  }
  text += "last-no-newline";
  want.emplace_back("last-no-newline");
  write_gz(tmp.path() / "lines.gz", text);
  GzLineReader in(tmp.path() / "lines.gz");
  std::string_view line;
  std::size_t count = 0;
  while (in.next(line)) {
    ASSERT_LT(count, want.size());
    ASSERT_EQ(line, want[count]) << "line " << count + 1;
    ++count;
    EXPECT_EQ(in.number(), static_cast<std::int64_t>(count));
  }
  EXPECT_EQ(count, want.size());
}

TEST(Zip, ReadsAndExtractsEntries) {
  TempDir tmp;
  const fs::path z = tmp.path() / "a.zip";
  write_zip(z, {{"dir/", ""}, {"dir/a.txt", "alpha"}, {"b.bin", std::string(70000, '\1')}});
  EXPECT_EQ(list_zip_entries(z), (std::vector<std::string>{"dir/", "dir/a.txt", "b.bin"}));
  EXPECT_EQ(read_zip_entry(z, "dir/a.txt", 5), "alpha");
  EXPECT_NE(error_of([&] { read_zip_entry(z, "dir/a.txt", 4); }).find("over the limit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_zip_entry(z, "nope", 4); }).find("no such entry"),
            std::string::npos);
  const fs::path out = tmp.path() / "out";
  extract_zip(z, out, ZipLimits{});
  EXPECT_EQ(read_file(out / "dir" / "a.txt"), "alpha");
  EXPECT_EQ(read_file(out / "b.bin"), std::string(70000, '\1'));
  // The target now exists and is not empty: refused, left as it was.
  EXPECT_NE(error_of([&] { extract_zip(z, out, ZipLimits{}); }).find("already exists"),
            std::string::npos);
}

/// Extracting `z` into tmp/out fails with a message containing `what`, and leaves nothing.
void expect_refused(const TempDir& tmp, const fs::path& z, const std::string& what,
                    const ZipLimits& limits = {}) {
  const fs::path out = tmp.path() / "out";
  const std::string msg = error_of([&] { extract_zip(z, out, limits); });
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename().string().find("out.tmp"), std::string::npos) << e.path();
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "evil"));
}

TEST(Zip, RefusesUnsafeEntries) {
  TempDir tmp;
  write_zip(tmp.path() / "dots.zip", {{"ok.txt", "1"}, {"a/../../evil", "x"}});
  expect_refused(tmp, tmp.path() / "dots.zip", "a \"..\" component");
  write_zip(tmp.path() / "abs.zip", {{"/tmp/evil", "x"}});
  expect_refused(tmp, tmp.path() / "abs.zip", "an absolute path");
  write_zip(tmp.path() / "bs.zip", {{"..\\evil", "x"}});
  expect_refused(tmp, tmp.path() / "bs.zip", "backslash");
  write_zip(tmp.path() / "link.zip", {{"ok.txt", "1"}, {"link", "/etc/passwd"}}, "link");
  expect_refused(tmp, tmp.path() / "link.zip", "symbolic link");
  EXPECT_NE(
      error_of([&] { read_zip_entry(tmp.path() / "link.zip", "link", 100); }).find("symbolic link"),
      std::string::npos);
}

TEST(Zip, FileThatIsAlsoADirectoryFailsCleanly) {
  TempDir tmp;
  write_zip(tmp.path() / "clash.zip", {{"a", "file"}, {"a/b", "x"}});
  expect_refused(tmp, tmp.path() / "clash.zip", "cannot extract");
}

TEST(Zip, EnforcesLimits) {
  TempDir tmp;
  const fs::path z = tmp.path() / "big.zip";
  write_zip(z, {{"a", std::string(1000, 'a')}, {"b", std::string(1000, 'b')}});
  expect_refused(tmp, z, "over the limit of 999", ZipLimits{1 << 20, 999, 10});
  expect_refused(tmp, z, "total more than the limit of 1999", ZipLimits{1999, 1000, 10});
  expect_refused(tmp, z, "over the limit of 1", ZipLimits{1 << 20, 1 << 20, 1});
  extract_zip(z, tmp.path() / "ok", ZipLimits{2000, 1000, 2});
  EXPECT_EQ(read_file(tmp.path() / "ok" / "b"), std::string(1000, 'b'));
}

TEST(Zip, RejectsNonZip) {
  TempDir tmp;
  write_text(tmp.path() / "x.zip", "PK but not really");
  EXPECT_NE(error_of([&] { list_zip_entries(tmp.path() / "x.zip"); }).find("not a readable zip"),
            std::string::npos);
}

}  // namespace
}  // namespace halo::datasets::test
