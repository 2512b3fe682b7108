#pragma once
// Live metrics of a training run in the Prometheus text exposition format (version 0.0.4):
// written atomically to a file (node_exporter's textfile collector) and optionally served on
// 127.0.0.1:PORT/metrics. Names and meanings: docs/scheduler.md, "Live metrics".

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <halo/runtime/runtime.hpp>

namespace halo::cluster {

/// What the metrics say at one moment. Times in seconds, sizes in bytes; NaN / -1: unknown.
struct MetricsSnapshot {
  int rank = 0;
  int ranks = 1;
  int epoch = 0;  // epochs completed
  int epochs = 0;
  std::int64_t steps = 0;  // optimizer steps completed
  double loss = 0;         // the last epoch's mean training loss
  double epoch_seconds = 0;
  std::int64_t exchange_bytes = 0;  // totals since the start (all ranks' bytes)
  double exchange_exposed_seconds = 0;
  std::int64_t host_resident_bytes = 0;
  std::int64_t host_peak_resident_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;  // used by the device pool (0 on the CPU)
  double predicted_epoch_seconds = -1;
  std::int64_t predicted_peak_host_bytes = -1;
  std::int64_t predicted_peak_gpu_bytes = -1;
};

/// The snapshot as exposition text: one HELP and one TYPE line per metric family, `halo_*`
/// names, `_total` on counters, a `rank` label on every sample; predictions only when known.
std::string prometheus_text(const MetricsSnapshot& s);

/// Where and how often the metrics go.
struct MetricsConfig {
  /// File rewritten (temp file in the same directory, then rename) at most every
  /// `interval_s` seconds and at the end; empty: no file.
  std::filesystem::path file;
  double interval_s = 10;
  /// Serve GET /metrics on 127.0.0.1:port (0 with `serve`: a free port the system picks).
  bool serve = false;
  int port = 0;
};

/// The file name rank `rank` of `ranks` writes for `file`: `file` itself in one process, else
/// `<stem>-rank<r><extension>` beside it (halo.prom -> halo-rank1.prom).
std::filesystem::path rank_metrics_file(const std::filesystem::path& file, int rank, int ranks);

/// Publishes snapshots: the file and the HTTP endpoint. The server thread answers every
/// request with the latest text and stops (joined) in the destructor or stop().
class MetricsSink {
 public:
  explicit MetricsSink(const MetricsConfig& config);
  ~MetricsSink();
  MetricsSink(const MetricsSink&) = delete;
  MetricsSink& operator=(const MetricsSink&) = delete;

  /// Stores `s`; writes the file when `force` or `interval_s` has passed since the last write.
  void publish(const MetricsSnapshot& s, bool force = false);
  /// The port served on (the chosen one when config.port was 0); -1 when not serving.
  int port() const { return m_port; }
  /// Stops the server and writes the file one last time.
  void stop();

 private:
  void serve();
  void write_file();

  MetricsConfig m_config;
  std::mutex m_mutex;
  std::string m_text;
  double m_last_write = -1e300;
  int m_listen_fd = -1;
  int m_wake[2] = {-1, -1};  // a pipe that wakes the server to stop
  int m_port = -1;
  std::thread m_server;
};

}  // namespace halo::cluster
