#pragma once
// A small HTTP/1.1 file server on 127.0.0.1 for download tests: Range requests, injected
// truncation, forced statuses, a request log, and stop() to make the port refuse connections.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace halo::testing {

/// Serves GET requests from directories mapped to URL prefixes, one connection at a time, each
/// closed after its response. Listens on 127.0.0.1 only, on an ephemeral port; the destructor
/// stops it. All setters are thread-safe.
class HttpTestServer {
 public:
  /// One request as received.
  struct Request {
    std::string path;
    /// The value of the Range header, empty when absent.
    std::string range;
  };

  HttpTestServer() {
    m_listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (m_listen_fd < 0) throw std::runtime_error("HttpTestServer: socket() failed");
    const int one = 1;
    ::setsockopt(m_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listen_fd, 16) != 0) {
      ::close(m_listen_fd);
      throw std::runtime_error("HttpTestServer: cannot listen on 127.0.0.1");
    }
    socklen_t len = sizeof addr;
    ::getsockname(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
    m_port = ntohs(addr.sin_port);
    m_thread = std::thread([this] { serve(); });
  }
  ~HttpTestServer() { stop(); }
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const { return m_port; }
  /// "http://127.0.0.1:<port>" followed by `path` (which should start with '/').
  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(m_port) + path;
  }

  /// GET <prefix>/<rest> serves <dir>/<rest>. `prefix` starts with '/' and has no trailing '/'.
  void map(const std::string& prefix, const std::filesystem::path& dir) {
    const std::lock_guard lock(m_mutex);
    m_routes[prefix] = dir;
  }
  /// The next `times` responses with a body send only `bytes` bytes of it (after announcing the
  /// full length) and then close the connection.
  void truncate_next(std::int64_t bytes, int times = 1) {
    const std::lock_guard lock(m_mutex);
    m_truncate_bytes = bytes;
    m_truncate_times = times;
  }
  /// Answer every request with the whole file (200), ignoring Range headers.
  void ignore_range(bool on) {
    const std::lock_guard lock(m_mutex);
    m_ignore_range = on;
  }
  /// Answer every request with `status` and an empty body (0 to serve files again).
  void force_status(int status) {
    const std::lock_guard lock(m_mutex);
    m_forced_status = status;
  }
  std::vector<Request> requests() const {
    const std::lock_guard lock(m_mutex);
    return m_requests;
  }

  /// Stops listening and joins the server thread; connections to the port are refused after it.
  void stop() {
    if (m_stopping.exchange(true)) return;
    if (m_thread.joinable()) m_thread.join();
    ::close(m_listen_fd);
  }

 private:
  void serve() {
    while (!m_stopping) {
      pollfd p{m_listen_fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(m_listen_fd, nullptr, nullptr);
      if (fd < 0) continue;
      handle(fd);
      ::close(fd);
    }
  }

  static bool send_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
      const ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
      if (k <= 0) return false;
      data += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }

  static void respond_status(int fd, int status) {
    const std::string head = "HTTP/1.1 " + std::to_string(status) +
                             " Test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(fd, head.data(), head.size());
  }

  void handle(int fd) {
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos && in.size() < 65536) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) return;
      const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
      if (k <= 0) return;
      in.append(buf, static_cast<std::size_t>(k));
    }
    std::istringstream lines(in);
    std::string method, target, line;
    lines >> method >> target;
    std::getline(lines, line);
    Request req{target, {}};
    while (std::getline(lines, line) && line != "\r") {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon);
      std::transform(key.begin(), key.end(), key.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (key == "range") {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(' '));
        if (!v.empty() && v.back() == '\r') v.pop_back();
        req.range = v;
      }
    }
    std::filesystem::path file;
    int forced = 0;
    bool ignore_range = false;
    std::int64_t truncate = -1;
    {
      const std::lock_guard lock(m_mutex);
      m_requests.push_back(req);
      forced = m_forced_status;
      ignore_range = m_ignore_range;
      for (const auto& [prefix, dir] : m_routes)
        if (target.rfind(prefix + "/", 0) == 0) file = dir / target.substr(prefix.size() + 1);
      if (m_truncate_times > 0 && forced == 0) {
        truncate = m_truncate_bytes;
        --m_truncate_times;
      }
    }
    if (method != "GET") return respond_status(fd, 405);
    if (forced != 0) return respond_status(fd, forced);
    if (file.empty() || target.find("..") != std::string::npos ||
        !std::filesystem::is_regular_file(file))
      return respond_status(fd, 404);
    std::ifstream f(file, std::ios::binary);
    const std::string body((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto size = static_cast<std::int64_t>(body.size());
    std::int64_t from = 0;
    if (!ignore_range && req.range.rfind("bytes=", 0) == 0) {
      from = std::stoll(req.range.substr(6));  // "bytes=N-": the only form curl sends here
      if (from >= size) {
        const std::string head = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" +
                                 std::to_string(size) +
                                 "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        send_all(fd, head.data(), head.size());
        return;
      }
    }
    std::string head;
    if (from > 0)
      head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(from) + "-" +
             std::to_string(size - 1) + "/" + std::to_string(size) + "\r\n";
    else
      head = "HTTP/1.1 200 OK\r\n";
    head += "Content-Length: " + std::to_string(size - from) +
            "\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n";
    if (!send_all(fd, head.data(), head.size())) return;
    std::int64_t n = size - from;
    if (truncate >= 0) n = std::min(n, truncate);
    send_all(fd, body.data() + from, static_cast<std::size_t>(n));
  }

  int m_listen_fd = -1;
  int m_port = 0;
  std::atomic<bool> m_stopping{false};
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::map<std::string, std::filesystem::path> m_routes;
  std::vector<Request> m_requests;
  std::int64_t m_truncate_bytes = 0;
  int m_truncate_times = 0;
  bool m_ignore_range = false;
  int m_forced_status = 0;
};

}  // namespace halo::testing
