// Downloads with libcurl: .part file + Range resume, retries with back-off, verification.
#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include <halo/datasets/fetch/download.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FileHandle = std::unique_ptr<std::FILE, FileCloser>;

struct DigestDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

/// Incremental SHA-256 over OpenSSL's EVP interface.
class Sha256 {
 public:
  Sha256() : m_ctx(EVP_MD_CTX_new()) {
    if (!m_ctx || EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr) != 1)
      HALO_FAIL("SHA-256: cannot initialise the OpenSSL digest");
  }
  void update(const void* data, std::size_t n) {
    if (EVP_DigestUpdate(m_ctx.get(), data, n) != 1) HALO_FAIL("SHA-256: digest update failed");
  }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(m_ctx.get(), md.data(), &len) != 1)
      HALO_FAIL("SHA-256: digest finalisation failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      out += kHex[md[i] >> 4];
      out += kHex[md[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, DigestDeleter> m_ctx;
};

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) HALO_FAIL("curl_global_init failed");
  });
}

/// State shared with the curl callbacks during one attempt.
struct Attempt {
  CURL* curl = nullptr;
  std::FILE* file = nullptr;
  std::string url;
  /// Bytes of the .part file when the attempt started.
  std::int64_t offset = 0;
  std::int64_t written = 0;
  bool write_failed = false;
  Clock::time_point start = Clock::now();
  const DownloadOptions* options = nullptr;
};

std::size_t on_data(char* data, std::size_t size, std::size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t n = size * count;
  if (std::fwrite(data, 1, n, a.file) != n) {
    a.write_failed = true;
    return 0;
  }
  a.written += static_cast<std::int64_t>(n);
  return n;
}

int on_progress(void* user, curl_off_t dl_total, curl_off_t /*dl_now*/, curl_off_t /*ul_total*/,
                curl_off_t /*ul_now*/) {
  auto& a = *static_cast<Attempt*>(user);
  DownloadProgress p;
  p.url = a.url;
  p.bytes_done = a.offset + a.written;
  p.bytes_total =
      dl_total > 0 ? a.offset + static_cast<std::int64_t>(dl_total) : a.options->expected_size;
  p.elapsed_s = std::chrono::duration<double>(Clock::now() - a.start).count();
  p.rate_bytes_per_s = p.elapsed_s > 0 ? static_cast<double>(a.written) / p.elapsed_s : 0;
  if (p.bytes_total > 0 && p.rate_bytes_per_s > 0)
    p.eta_s = static_cast<double>(std::max<std::int64_t>(0, p.bytes_total - p.bytes_done)) /
              p.rate_bytes_per_s;
  a.options->on_progress(p);
  return 0;
}

enum class Outcome { Done, Retry, RetryNow, Fatal };

struct AttemptResult {
  Outcome outcome = Outcome::Done;
  std::string error;
};

std::int64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<std::int64_t>(n);
}

AttemptResult run_attempt(const std::string& url, const fs::path& part,
                          const DownloadOptions& options) {
  FileHandle file(std::fopen(part.c_str(), "ab"));
  if (!file) return {Outcome::Fatal, part.string() + ": cannot open for writing"};
  CurlHandle curl(curl_easy_init());
  if (!curl) return {Outcome::Fatal, "curl_easy_init failed"};

  Attempt a;
  a.curl = curl.get();
  a.file = file.get();
  a.url = url;
  a.offset = file_size_or_zero(part);
  a.options = &options;
  std::array<char, CURL_ERROR_SIZE> error_buffer{};

  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "halo/" HALO_VERSION);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer.data());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
  if (a.offset > 0)
    curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(a.offset));
  if (options.on_progress) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &a);
  }

  const CURLcode rc = curl_easy_perform(c);
  const bool flushed = std::fflush(file.get()) == 0;
  if (a.write_failed || !flushed) return {Outcome::Fatal, part.string() + ": write failed"};
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (rc == CURLE_OK) return {Outcome::Done, {}};

  std::string detail = error_buffer[0] != '\0' ? error_buffer.data() : curl_easy_strerror(rc);
  if (rc == CURLE_HTTP_RETURNED_ERROR) {
    const std::string what = "HTTP status " + std::to_string(code);
    // 416: the partial file does not fit the remote one (it changed or is complete and
    // longer): drop it and start over.
    if (code == 416 && a.offset > 0) return {Outcome::RetryNow, what};
    const bool transient = code == 408 || code == 429 || code >= 500;
    return {transient ? Outcome::Retry : Outcome::Fatal, what};
  }
  const std::string what =
      "curl error " + std::to_string(static_cast<int>(rc)) + " (" + detail + ")";
  switch (rc) {
    // The server ignores ranges (HTTP 200 to a Range request), or the partial file is longer
    // than the source: drop it and start over.
    case CURLE_RANGE_ERROR:
    case CURLE_BAD_DOWNLOAD_RESUME:
      return {Outcome::RetryNow, what};
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_FILE_COULDNT_READ_FILE:
    case CURLE_REMOTE_FILE_NOT_FOUND:
    case CURLE_LOGIN_DENIED:
    case CURLE_TOO_MANY_REDIRECTS:
      return {Outcome::Fatal, what};
    default:
      return {Outcome::Retry, what};
  }
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  int out = 0;
  const char* end = v + std::char_traits<char>::length(v);
  const auto [ptr, ec] = std::from_chars(v, end, out);
  HALO_EXPECTS(ec == std::errc() && ptr == end && out >= 1,
               std::string(name) + " must be a positive integer, got \"" + v + "\"");
  return out;
}

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  char* end = nullptr;
  const double out = std::strtod(v, &end);
  HALO_EXPECTS(end != v && *end == '\0' && std::isfinite(out) && out >= 0,
               std::string(name) + " must be a non-negative number, got \"" + v + "\"");
  return out;
}

std::string format_duration(double s) {
  const auto t = static_cast<long long>(std::llround(s));
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", t);
  return buf;
}

}  // namespace

DownloadOptions download_options_from_env() {
  DownloadOptions o;
  o.max_attempts = env_int("HALO_DOWNLOAD_RETRIES", o.max_attempts);
  o.initial_backoff_s = env_double("HALO_DOWNLOAD_BACKOFF_S", o.initial_backoff_s);
  return o;
}

DownloadResult download_file(const std::string& url, const fs::path& dest,
                             const DownloadOptions& options) {
  HALO_EXPECTS(options.max_attempts >= 1, "download_file: max_attempts must be >= 1");
  HALO_EXPECTS(!dest.empty() && dest.has_filename(), "download_file: empty destination");
  global_init();
  const fs::path part = dest.string() + ".part";
  std::error_code ec;
  if (dest.has_parent_path()) fs::create_directories(dest.parent_path(), ec);
  if (ec) throw IoError(dest.parent_path().string() + ": cannot create directory: " + ec.message());

  const auto start = Clock::now();
  double backoff = options.initial_backoff_s;
  std::string last_error;
  int attempt = 0;
  for (;;) {
    ++attempt;
    const AttemptResult r = run_attempt(url, part, options);
    if (r.outcome == Outcome::Done) break;
    last_error = r.error;
    // An empty .part file holds nothing worth resuming.
    if (r.outcome != Outcome::Retry && file_size_or_zero(part) == 0) remove_quietly(part);
    if (r.outcome == Outcome::Fatal) throw IoError("download of " + url + " failed: " + last_error);
    if (r.outcome == Outcome::RetryNow) remove_quietly(part);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double wait = r.outcome == Outcome::RetryNow ? 0.0 : backoff;
    if (attempt >= options.max_attempts || elapsed + wait > options.max_total_s) {
      if (file_size_or_zero(part) == 0) remove_quietly(part);
      throw IoError("download of " + url + " failed after " + std::to_string(attempt) +
                    (attempt == 1 ? " attempt: " : " attempts: ") + last_error);
    }
    HALO_LOG_DEBUG(url << ": " << last_error << "; retrying in " << wait << " s");
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    if (r.outcome == Outcome::Retry) backoff = std::min(backoff * 2, options.max_backoff_s);
  }

  DownloadResult result;
  result.bytes = file_size_or_zero(part);
  if (options.expected_size > 0 && result.bytes != options.expected_size) {
    remove_quietly(part);
    throw IoError("download of " + url + " has the wrong size: expected " +
                  std::to_string(options.expected_size) + " bytes, got " +
                  std::to_string(result.bytes) + " (the file was deleted)");
  }
  result.sha256 = sha256_file(part);
  if (!options.expected_sha256.empty() && result.sha256 != options.expected_sha256) {
    remove_quietly(part);
    throw IoError("download of " + url + " failed verification: SHA-256 " + result.sha256 +
                  " differs from the expected " + options.expected_sha256 +
                  " (the file was deleted)");
  }
  fs::rename(part, dest, ec);
  if (ec) {
    remove_quietly(part);
    throw IoError(dest.string() + ": cannot move the download into place: " + ec.message());
  }
  return result;
}

std::string sha256_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string() + ": cannot open for reading");
  Sha256 sha;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) sha.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw IoError(path.string() + ": read error");
  return sha.hex();
}

std::string sha256_hex(std::string_view data) {
  Sha256 sha;
  sha.update(data.data(), data.size());
  return sha.hex();
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string format_progress(const DownloadProgress& p) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on chains of
  // `"literal" + std::string` here.
  std::string line;
  if (p.bytes_total > 0) {
    constexpr int kWidth = 20;
    const double frac = std::clamp(
        static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total), 0.0, 1.0);
    const int filled = static_cast<int>(frac * kWidth);
    line.append(1, '[')
        .append(static_cast<std::size_t>(filled), '#')
        .append(static_cast<std::size_t>(kWidth - filled), '.')
        .append("] ")
        .append(format_bytes(p.bytes_done))
        .append(" / ")
        .append(format_bytes(p.bytes_total));
  } else {
    line = format_bytes(p.bytes_done);
  }
  line.append("  ")
      .append(format_bytes(static_cast<std::int64_t>(p.rate_bytes_per_s)))
      .append("/s");
  if (p.eta_s >= 0) line.append("  ").append(format_duration(p.eta_s)).append(" left");
  return line;
}

}  // namespace halo::datasets
