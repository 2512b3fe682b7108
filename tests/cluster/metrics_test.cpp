// Live metrics: the exposition text passes Prometheus' own checker (promtool, installed by
// tools/setup.sh), the file is replaced atomically, and the loopback endpoint serves the same text
// and stops cleanly.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <limits>
#include <set>
#include <sstream>
#include <string>

#include <halo/cluster/metrics.hpp>

#include "support/testing.hpp"

namespace halo::cluster::test {
namespace {

using namespace halo::runtime;  // the trainer's types the snapshots carry

namespace fs = std::filesystem;
using halo::testing::read_file;
using halo::testing::run_command;

MetricsSnapshot sample() {
  MetricsSnapshot s;
  s.rank = 1;
  s.ranks = 2;
  s.epoch = 3;
  s.epochs = 10;
  s.steps = 12;
  s.loss = 0.693;
  s.epoch_seconds = 0.0125;
  s.exchange_bytes = 1 << 20;
  s.exchange_exposed_seconds = 0.002;
  s.host_resident_bytes = 100 << 20;
  s.host_peak_resident_bytes = 120 << 20;
  s.predicted_epoch_seconds = 0.011;
  s.predicted_peak_host_bytes = 110 << 20;
  return s;
}

TEST(Metrics, TextPassesPromtool) {
  const halo::testing::TempDir dir;
  for (double loss : {0.693, std::numeric_limits<double>::quiet_NaN()}) {
    MetricsSnapshot s = sample();
    s.loss = loss;
    const fs::path file = dir.path() / "halo.prom";
    {
      MetricsConfig c;
      c.file = file;
      MetricsSink sink(c);
      sink.publish(s, true);
    }
    const auto r = run_command("promtool check metrics < " + file.string(), dir.path());
    EXPECT_EQ(r.code, 0) << r.out << r.err;
  }
}

TEST(Metrics, EveryFamilyHasHelpTypeAndBaseUnits) {
  const std::string text = prometheus_text(sample());
  std::istringstream in(text);
  std::string line;
  std::set<std::string> help, type, samples;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string a, b, c;
    w >> a >> b >> c;
    if (a == "#" && b == "HELP") help.insert(c);
    if (a == "#" && b == "TYPE") {
      type.insert(c);
      std::string kind;
      std::istringstream(line.substr(line.find(c) + c.size())) >> kind;
      const bool total = c.size() > 6 && c.compare(c.size() - 6, 6, "_total") == 0;
      EXPECT_EQ(kind == "counter", total) << c << " is a " << kind;
    }
    if (a != "#") {
      samples.insert(a.substr(0, a.find('{')));
      EXPECT_NE(a.find("{rank=\"1\"}"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(help, type);
  EXPECT_EQ(help, samples);
  EXPECT_NE(prometheus_text(sample()).find("halo_ranks{rank=\"1\"} 2\n"), std::string::npos);
  for (const char* name :
       {"halo_ranks", "halo_epoch", "halo_steps_total", "halo_loss", "halo_epoch_seconds",
        "halo_exchange_bytes_total", "halo_exchange_exposed_seconds_total",
        "halo_host_resident_bytes", "halo_gpu_memory_bytes", "halo_predicted_epoch_seconds",
        "halo_predicted_peak_host_bytes"})
    EXPECT_EQ(samples.count(name), 1u) << name;
  for (const std::string& n : samples) EXPECT_EQ(n.rfind("halo_", 0), 0u) << n;
  // Unknown predictions are left out, not written as a value.
  MetricsSnapshot s = sample();
  s.predicted_epoch_seconds = -1;
  EXPECT_EQ(prometheus_text(s).find("halo_predicted_epoch_seconds"), std::string::npos);
}

TEST(Metrics, FileIsWrittenEveryIntervalAndReplacedWhole) {
  const halo::testing::TempDir dir;
  MetricsConfig c;
  c.file = dir.path() / "halo.prom";
  c.interval_s = 3600;
  MetricsSink sink(c);
  MetricsSnapshot s = sample();
  sink.publish(s);  // the first publication writes
  EXPECT_EQ(read_file(c.file), prometheus_text(s));
  s.epoch = 4;
  sink.publish(s);  // within the interval: not yet
  EXPECT_NE(read_file(c.file).find("halo_epoch{rank=\"1\"} 3\n"), std::string::npos);
  sink.publish(s, true);
  EXPECT_EQ(read_file(c.file), prometheus_text(s));
  // Nothing but the file itself in the directory: the temporary names were renamed.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(Metrics, RankFilesSitBesideTheGivenName) {
  EXPECT_EQ(rank_metrics_file("/m/halo.prom", 0, 1), fs::path("/m/halo.prom"));
  EXPECT_EQ(rank_metrics_file("/m/halo.prom", 1, 4), fs::path("/m/halo-rank1.prom"));
  EXPECT_EQ(rank_metrics_file("halo", 2, 4), fs::path("halo-rank2"));
}

TEST(Metrics, LoopbackEndpointServesTheSameTextAndStops) {
  const halo::testing::TempDir dir;
  MetricsConfig c;
  c.file = dir.path() / "halo.prom";
  c.serve = true;
  c.port = 0;  // a free port
  MetricsSink sink(c);
  ASSERT_GT(sink.port(), 0);
  sink.publish(sample(), true);
  const std::string url = "http://127.0.0.1:" + std::to_string(sink.port());
  auto r = run_command("curl -sS --max-time 10 " + url + "/metrics", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(c.file));
  r = run_command("curl -s -o /dev/null -w '%{http_code}' --max-time 10 " + url + "/other",
                  dir.path());
  EXPECT_EQ(r.out, "404");
  sink.stop();
  r = run_command("curl -sS --max-time 5 " + url + "/metrics", dir.path());
  EXPECT_NE(r.code, 0) << "still serving after stop(): " << r.out;
}

TEST(Metrics, APortInUseIsAClearError) {
  MetricsConfig c;
  c.serve = true;
  MetricsSink first(c);
  c.port = first.port();
  try {
    MetricsSink second(c);
    FAIL() << "two servers on port " << c.port;
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("--metrics-port " + std::to_string(c.port)),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace halo::cluster::test
