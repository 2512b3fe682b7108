// Prometheus exposition of a run's metrics: the text, the atomic file and a loopback HTTP server.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include <halo/cluster/metrics.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

namespace halo::cluster {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Go's strconv.FormatFloat(v, 'g', -1, 64) is what Prometheus prints; 17 significant digits
/// round-trip a double exactly, and NaN / infinities have their exposition spellings.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
  double value;
};

}  // namespace

std::string prometheus_text(const MetricsSnapshot& s) {
  std::vector<Family> f = {
      {"halo_ranks", "gauge",
       "Ranks the run trains on now (an elastic job resumed on another count reports it).",
       static_cast<double>(s.ranks)},
      {"halo_epoch", "gauge", "Training epochs completed.", static_cast<double>(s.epoch)},
      {"halo_epochs", "gauge", "Training epochs the run will do.", static_cast<double>(s.epochs)},
      {"halo_steps_total", "counter", "Optimizer steps completed.", static_cast<double>(s.steps)},
      {"halo_loss", "gauge", "Mean training loss of the last epoch.", s.loss},
      {"halo_epoch_seconds", "gauge", "Training time of the last epoch.", s.epoch_seconds},
      {"halo_exchange_bytes_total", "counter",
       "Bytes of halo rows and remote feature rows sent by all ranks.",
       static_cast<double>(s.exchange_bytes)},
      {"halo_exchange_exposed_seconds_total", "counter",
       "Exchange time not hidden behind computation (mean over ranks).",
       s.exchange_exposed_seconds},
      {"halo_host_resident_bytes", "gauge", "Resident set size of this rank's process.",
       static_cast<double>(s.host_resident_bytes)},
      {"halo_host_peak_resident_bytes", "gauge", "Peak resident set size of this rank's process.",
       static_cast<double>(s.host_peak_resident_bytes)},
      {"halo_gpu_memory_bytes", "gauge", "GPU memory in use by this rank (0 on the CPU).",
       static_cast<double>(s.gpu_memory_bytes)},
  };
  if (s.predicted_epoch_seconds >= 0)
    f.push_back({"halo_predicted_epoch_seconds", "gauge",
                 "Epoch time halo plan predicts for this run.", s.predicted_epoch_seconds});
  if (s.predicted_peak_host_bytes >= 0)
    f.push_back({"halo_predicted_peak_host_bytes", "gauge",
                 "Peak resident set halo plan predicts for this rank.",
                 static_cast<double>(s.predicted_peak_host_bytes)});
  if (s.predicted_peak_gpu_bytes >= 0)
    f.push_back({"halo_predicted_peak_gpu_bytes", "gauge",
                 "Peak GPU memory halo plan predicts for this rank.",
                 static_cast<double>(s.predicted_peak_gpu_bytes)});
  std::string out;
  const std::string labels = "{rank=\"" + std::to_string(s.rank) + "\"}";
  for (const Family& x : f) {
    out += std::string("# HELP ") + x.name + " " + x.help + "\n";
    out += std::string("# TYPE ") + x.name + " " + x.type + "\n";
    out += std::string(x.name) + labels + " " + number(x.value) + "\n";
  }
  return out;
}

std::filesystem::path rank_metrics_file(const std::filesystem::path& file, int rank, int ranks) {
  if (ranks <= 1) return file;
  return file.parent_path() /
         (file.stem().string() + "-rank" + std::to_string(rank) + file.extension().string());
}

MetricsSink::MetricsSink(const MetricsConfig& config) : m_config(config) {
  if (!config.serve) return;
  HALO_EXPECTS(config.port >= 0 && config.port <= 65535,
               "metrics: port must be in [0, 65535], got " + std::to_string(config.port));
  m_listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (m_listen_fd < 0) throw IoError(std::string("metrics: socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(m_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only
  addr.sin_port = htons(static_cast<std::uint16_t>(config.port));
  if (::bind(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(m_listen_fd, 8) != 0) {
    const std::string why = std::strerror(errno);
    ::close(m_listen_fd);
    throw IoError("--metrics-port " + std::to_string(config.port) +
                  ": cannot listen on 127.0.0.1: " + why);
  }
  socklen_t len = sizeof addr;
  ::getsockname(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  m_port = ntohs(addr.sin_port);
  if (::pipe2(m_wake, O_CLOEXEC) != 0) {
    ::close(m_listen_fd);
    throw IoError(std::string("metrics: pipe: ") + std::strerror(errno));
  }
  m_server = std::thread([this] { serve(); });
}

MetricsSink::~MetricsSink() {
  try {
    stop();
  } catch (const std::exception& e) {
    HALO_LOG_WARN("metrics: " << e.what());
  }
}

void MetricsSink::stop() {
  if (m_server.joinable()) {
    const char byte = 0;
    [[maybe_unused]] const ssize_t w = ::write(m_wake[1], &byte, 1);
    m_server.join();
  }
  for (int* fd : {&m_listen_fd, &m_wake[0], &m_wake[1]})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  bool have_text = false;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    have_text = !m_text.empty();
  }
  if (have_text) write_file();
}

void MetricsSink::publish(const MetricsSnapshot& s, bool force) {
  const std::string text = prometheus_text(s);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_text = text;
  }
  const double t = now_s();
  if (!m_config.file.empty() && (force || t - m_last_write >= m_config.interval_s)) {
    write_file();
    m_last_write = t;
  }
}

void MetricsSink::write_file() {
  if (m_config.file.empty()) return;
  std::string text;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    text = m_text;
  }
  kernels::write_file_atomically(m_config.file, text);  // temp name beside it, then rename
}

void MetricsSink::serve() {
  for (;;) {
    pollfd fds[2] = {{m_listen_fd, POLLIN, 0}, {m_wake[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;  // stop()
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int c = ::accept4(m_listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    // Read the request line and headers (up to the blank line, 8 KiB at most, 2 s at most).
    std::string req;
    char buf[1024];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 8192) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) break;
      const ssize_t got = ::recv(c, buf, sizeof buf, 0);
      if (got <= 0) break;
      req.append(buf, static_cast<std::size_t>(got));
    }
    std::string body, status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8";
    if (req.rfind("GET /metrics ", 0) == 0 || req.rfind("GET /metrics?", 0) == 0) {
      std::lock_guard<std::mutex> lock(m_mutex);
      body = m_text;
    } else {
      status = "404 Not Found";
      type = "text/plain; charset=utf-8";
      body = "halo serves GET /metrics only\n";
    }
    const std::string head = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
                             "\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: close\r\n\r\n";
    const std::string all = head + body;
    std::size_t sent = 0;
    while (sent < all.size()) {
      const ssize_t n = ::send(c, all.data() + sent, all.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::close(c);
  }
}

}  // namespace halo::cluster
