#pragma once
// The download progress bar of the `halo` program: one line on stderr, rewritten in place.

#include <functional>
#include <string>

#include <halo/datasets/fetch/download.hpp>

namespace halo::cli {

/// Draws download progress on stderr when it is a terminal (at most ten redraws a second, a new
/// line for each new file), and nothing otherwise, so logs stay clean. `finish` ends the line.
class DownloadProgressBar {
 public:
  DownloadProgressBar();
  ~DownloadProgressBar() { finish(); }
  DownloadProgressBar(const DownloadProgressBar&) = delete;
  DownloadProgressBar& operator=(const DownloadProgressBar&) = delete;

  /// The callback for DownloadOptions::on_progress (empty when stderr is not a terminal); it
  /// refers to this object, which must outlive the downloads.
  std::function<void(const datasets::DownloadProgress&)> callback();
  void finish();

 private:
  void draw(const datasets::DownloadProgress& p);
  bool m_tty = false;
  bool m_open = false;
  std::string m_url;
  std::string m_done_url;
  double m_last_draw_s = -1;
};

}  // namespace halo::cli
