#include <unistd.h>

#include <fstream>
#include <iterator>

#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>

namespace halo::kernels {

namespace fs = std::filesystem;

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  // The pid keeps two processes that write the same file (ranks, parallel jobs) apart.
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  bool ok = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    ok = out && out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) && out.flush();
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw IoError(path.string() + ": cannot write" + (ec ? " (" + ec.message() + ")" : ""));
  }
}

std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string() + ": cannot open for reading");
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw IoError(path.string() + ": read failed");
  return bytes;
}

}  // namespace halo::kernels
