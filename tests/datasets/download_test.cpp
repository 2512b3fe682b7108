// The downloader against a real HTTP server on 127.0.0.1: fresh download, resume, restart when
// ranges are ignored, verification, HTTP errors, a vanished server, file:// URLs.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include <halo/datasets/fetch/download.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"
#include "support/http_server.hpp"

namespace halo::datasets::test {
namespace {

using halo::testing::HttpTestServer;

fs::path planetoid_raw() { return halo::testing::datasets_dir() / "planetoid" / "raw"; }

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Short back-off so that failure paths finish in well under a second.
DownloadOptions quick() {
  DownloadOptions o;
  o.max_attempts = 3;
  o.initial_backoff_s = 0.01;
  o.max_backoff_s = 0.05;
  o.connect_timeout_s = 5;
  o.stall_timeout_s = 10;
  return o;
}

TEST(Sha256, MatchesNistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, OfFileMatchesPublishedSums) {
  EXPECT_EQ(sha256_file(planetoid_raw() / "ind.cora.y"),
            "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1");
  EXPECT_THROW(sha256_file(planetoid_raw() / "no-such-file"), IoError);
}

class Download : public ::testing::Test {
 protected:
  Download() { server.map("/data", planetoid_raw()); }

  fs::path dest(const std::string& name = "ind.cora.x") const { return temp.path() / "d" / name; }
  std::string expected(const std::string& name = "ind.cora.x") const {
    return read_all(planetoid_raw() / name);
  }

  TempDir temp;
  HttpTestServer server;
};

TEST_F(Download, FreshDownloadIsVerifiedAndPlaced) {
  DownloadOptions o = quick();
  o.expected_sha256 = "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab";
  o.expected_size = 22119;
  int progress_calls = 0;
  std::int64_t last_done = 0;
  o.on_progress = [&](const DownloadProgress& p) {
    ++progress_calls;
    last_done = p.bytes_done;
  };
  const DownloadResult r = download_file(server.url("/data/ind.cora.x"), dest(), o);
  EXPECT_EQ(r.bytes, 22119);
  EXPECT_EQ(r.sha256, o.expected_sha256);
  EXPECT_EQ(read_all(dest()), expected());
  EXPECT_FALSE(fs::exists(dest().string() + ".part"));
  EXPECT_GT(progress_calls, 0);
  EXPECT_EQ(last_done, 22119);
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/data/ind.cora.x");
  EXPECT_EQ(reqs[0].range, "");
}

TEST_F(Download, ResumesAfterTruncatedTransfer) {
  server.truncate_next(10000);
  DownloadOptions o = quick();
  o.expected_sha256 = sha256_hex(expected());
  const DownloadResult r = download_file(server.url("/data/ind.cora.x"), dest(), o);
  EXPECT_EQ(r.bytes, 22119);
  EXPECT_EQ(read_all(dest()), expected());
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].range, "");
  EXPECT_EQ(reqs[1].range, "bytes=10000-");
}

TEST_F(Download, ResumesPartFileLeftByEarlierRun) {
  fs::create_directories(dest().parent_path());
  write_text(dest().string() + ".part", expected().substr(0, 5000));
  const DownloadResult r = download_file(server.url("/data/ind.cora.x"), dest(), quick());
  EXPECT_EQ(read_all(dest()), expected());
  EXPECT_EQ(r.sha256, sha256_hex(expected()));
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].range, "bytes=5000-");
}

TEST_F(Download, StartsOverWhenServerIgnoresRange) {
  server.ignore_range(true);
  fs::create_directories(dest().parent_path());
  write_text(dest().string() + ".part", std::string(5000, 'z'));  // not a prefix of the file
  download_file(server.url("/data/ind.cora.x"), dest(), quick());
  EXPECT_EQ(read_all(dest()), expected());
}

TEST_F(Download, StartsOverWhenPartFileIsLongerThanRemote) {
  fs::create_directories(dest().parent_path());
  write_text(dest().string() + ".part", std::string(30000, 'z'));  // 416 from the server
  download_file(server.url("/data/ind.cora.x"), dest(), quick());
  EXPECT_EQ(read_all(dest()), expected());
}

TEST_F(Download, ChecksumMismatchIsClearAndLeavesNothing) {
  DownloadOptions o = quick();
  o.expected_sha256 = std::string(64, '0');
  try {
    download_file(server.url("/data/ind.cora.y"), dest("ind.cora.y"), o);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SHA-256"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(64, '0')), std::string::npos) << what;
    EXPECT_NE(what.find("/data/ind.cora.y"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(dest("ind.cora.y")));
  EXPECT_FALSE(fs::exists(dest("ind.cora.y").string() + ".part"));
}

TEST_F(Download, SizeMismatchIsClearAndLeavesNothing) {
  DownloadOptions o = quick();
  o.expected_size = 4055;
  EXPECT_THROW(download_file(server.url("/data/ind.cora.y"), dest("ind.cora.y"), o), IoError);
  EXPECT_FALSE(fs::exists(dest("ind.cora.y")));
  EXPECT_FALSE(fs::exists(dest("ind.cora.y").string() + ".part"));
}

TEST_F(Download, NotFoundNamesUrlAndStatusWithoutRetrying) {
  const std::string url = server.url("/data/ind.cora.nothing");
  try {
    download_file(url, dest("nothing"), quick());
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(url), std::string::npos) << what;
    EXPECT_NE(what.find("HTTP status 404"), std::string::npos) << what;
  }
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_FALSE(fs::exists(dest("nothing")));
  EXPECT_FALSE(fs::exists(dest("nothing").string() + ".part"));
}

TEST_F(Download, ServerErrorsAreRetriedThenReported) {
  server.force_status(503);
  try {
    download_file(server.url("/data/ind.cora.y"), dest("ind.cora.y"), quick());
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("after 3 attempts"), std::string::npos) << what;
    EXPECT_NE(what.find("HTTP status 503"), std::string::npos) << what;
  }
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(Download, ServerGoneFailsClearlyInBoundedTime) {
  const std::string url = server.url("/data/ind.cora.y");
  server.stop();
  const auto start = std::chrono::steady_clock::now();
  try {
    download_file(url, dest("ind.cora.y"), quick());
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(url), std::string::npos) << what;
    EXPECT_NE(what.find("curl error 7"), std::string::npos) << what;
    EXPECT_NE(what.find("after 3 attempts"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_FALSE(fs::exists(dest("ind.cora.y")));
}

TEST_F(Download, RetriesAreBoundedByTotalTime) {
  const std::string url = server.url("/data/ind.cora.y");
  server.stop();
  DownloadOptions o = quick();
  o.max_attempts = 1000;
  o.initial_backoff_s = 0.2;
  o.max_total_s = 0.5;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(download_file(url, dest("ind.cora.y"), o), IoError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
}

TEST_F(Download, FileUrlsWork) {
  const std::string url = "file://" + fs::absolute(planetoid_raw() / "ind.cora.ty").string();
  const DownloadResult r = download_file(url, dest("ind.cora.ty"), quick());
  EXPECT_EQ(r.sha256, "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad");
  try {
    download_file("file:///no/such/file", dest("x"), quick());
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("file:///no/such/file"), std::string::npos) << e.what();
  }
}

TEST(DownloadOptionsFromEnv, ReadsOverrides) {
  ::setenv("HALO_DOWNLOAD_RETRIES", "2", 1);
  ::setenv("HALO_DOWNLOAD_BACKOFF_S", "0.25", 1);
  const DownloadOptions o = download_options_from_env();
  EXPECT_EQ(o.max_attempts, 2);
  EXPECT_DOUBLE_EQ(o.initial_backoff_s, 0.25);
  ::setenv("HALO_DOWNLOAD_RETRIES", "zero", 1);
  EXPECT_THROW(download_options_from_env(), LogicError);
  ::unsetenv("HALO_DOWNLOAD_RETRIES");
  ::unsetenv("HALO_DOWNLOAD_BACKOFF_S");
}

TEST(FormatProgress, ShowsBytesRateAndTimeLeft) {
  DownloadProgress p;
  p.bytes_done = 3 << 20;
  p.bytes_total = 12 << 20;
  p.rate_bytes_per_s = 1 << 20;
  p.eta_s = 9;
  EXPECT_EQ(format_progress(p), "[#####...............] 3.0 MiB / 12.0 MiB  1.0 MiB/s  9s left");
  p.bytes_total = 0;
  p.eta_s = -1;
  EXPECT_EQ(format_progress(p), "3.0 MiB  1.0 MiB/s");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
}

}  // namespace
}  // namespace halo::datasets::test
