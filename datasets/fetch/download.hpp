#pragma once
// Verified, resumable file downloads over HTTP(S) and file:// (libcurl), and SHA-256 digests.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace halo::datasets {

/// Where a transfer stands, passed to DownloadOptions::on_progress.
struct DownloadProgress {
  std::string url;
  /// Bytes on disk so far, the resumed prefix included.
  std::int64_t bytes_done = 0;
  /// Expected total in bytes; 0 when neither the server nor the caller knows it.
  std::int64_t bytes_total = 0;
  /// Bytes per second over this attempt (the resumed prefix excluded).
  double rate_bytes_per_s = 0;
  double elapsed_s = 0;
  /// Estimated seconds left; negative when unknown.
  double eta_s = -1;
};

/// How `download_file` fetches, retries and verifies.
struct DownloadOptions {
  /// Attempts in all (>= 1). A failure that another try cannot fix (HTTP 4xx other than 408 and
  /// 429, a checksum or size mismatch, a local I/O error) is not retried.
  int max_attempts = 5;
  /// Wait before the second attempt; doubled after each failure, at most `max_backoff_s`.
  double initial_backoff_s = 1.0;
  double max_backoff_s = 30.0;
  /// No new attempt starts once this much time has passed since the first one began.
  double max_total_s = 900.0;
  /// Seconds allowed for a TCP connection to be made.
  long connect_timeout_s = 30;
  /// An attempt fails when it moves under 1 KiB/s for this many seconds.
  long stall_timeout_s = 60;
  /// Lower-case hex SHA-256 of the file; empty when unknown (not checked).
  std::string expected_sha256;
  /// Size in bytes; 0 when unknown (not checked).
  std::int64_t expected_size = 0;
  /// Called from the downloading thread about every time data arrives; may be empty.
  std::function<void(const DownloadProgress&)> on_progress;
};

/// The options with overrides from the environment: HALO_DOWNLOAD_RETRIES (attempts) and
/// HALO_DOWNLOAD_BACKOFF_S (initial back-off in seconds). Malformed values throw halo::LogicError.
DownloadOptions download_options_from_env();

/// What `download_file` placed.
struct DownloadResult {
  std::string sha256;
  std::int64_t bytes = 0;
};

/// Downloads `url` (http://, https:// or file://) to `dest`. The data goes to `<dest>.part`
/// first: an existing `.part` file is resumed with an HTTP Range request (and started over when
/// the server answers with the whole file), a transfer cut short is resumed on the next attempt,
/// and failed attempts are retried with exponential back-off within the bounds of `options`.
/// When the transfer is complete its size and SHA-256 are checked against the expected values
/// (when given) and `<dest>.part` is renamed to `dest`, so `dest` never holds a partial or
/// unverified file. Missing parent directories are created. On failure throws halo::IoError
/// naming the URL and the HTTP status or the curl error, and leaves no `dest`; `<dest>.part` is
/// kept for a later resume unless its content was wrong (checksum or size mismatch). Blocking;
/// thread-safe for distinct `dest` paths.
DownloadResult download_file(const std::string& url, const std::filesystem::path& dest,
                             const DownloadOptions& options = {});

/// Lower-case hex SHA-256 of the file at `path` (halo::IoError when it cannot be read).
std::string sha256_file(const std::filesystem::path& path);

/// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

/// One line describing `p` for a progress bar: a bar (when the total is known), the bytes done
/// and total, the rate and the time left, e.g. "[#####.....]  41.0 MiB / 81.3 MiB  12.1 MiB/s
/// 3s left". No line ending.
std::string format_progress(const DownloadProgress& p);

/// `bytes` in the largest binary unit that keeps the number >= 1, one decimal ("81.3 MiB").
std::string format_bytes(std::int64_t bytes);

}  // namespace halo::datasets
