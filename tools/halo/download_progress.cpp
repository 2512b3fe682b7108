// The download progress bar: throttled redraws of one stderr line per file.
#include <unistd.h>

#include <chrono>

#include <halo/tools/halo/download_progress.hpp>

namespace halo::cli {

DownloadProgressBar::DownloadProgressBar() : m_tty(isatty(fileno(stderr)) != 0) {}

std::function<void(const datasets::DownloadProgress&)> DownloadProgressBar::callback() {
  if (!m_tty) return {};
  return [this](const datasets::DownloadProgress& p) { draw(p); };
}

void DownloadProgressBar::draw(const datasets::DownloadProgress& p) {
  if (p.url == m_done_url) return;  // curl reports a finished transfer more than once
  const bool new_file = p.url != m_url;
  const bool done = p.bytes_total > 0 && p.bytes_done >= p.bytes_total;
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (!new_file && !done && now - m_last_draw_s < 0.1) return;
  if (new_file && m_open) std::fputc('\n', stderr);
  m_url = p.url;
  m_last_draw_s = now;
  const auto slash = p.url.find_last_of('/');
  const std::string name = slash == std::string::npos ? p.url : p.url.substr(slash + 1);
  std::fprintf(stderr, "\r%s  %s\033[K", name.c_str(), datasets::format_progress(p).c_str());
  m_open = true;
  // End the line at 100%, so that log lines written next start on a line of their own.
  if (done) {
    std::fputc('\n', stderr);
    m_open = false;
    m_done_url = p.url;
  }
  std::fflush(stderr);
}

void DownloadProgressBar::finish() {
  if (!m_open) return;
  std::fputc('\n', stderr);
  std::fflush(stderr);
  m_open = false;
  m_url.clear();
}

}  // namespace halo::cli
