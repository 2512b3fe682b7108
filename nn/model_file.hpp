#pragma once
// Model files: a self-describing header (JSON) and the parameters as raw little-endian arrays,
// with a format version and a checksum. The layout is in docs/formats.md, "Model file".

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <halo/nn/model_types.hpp>

namespace halo::nn {

/// The format version this Halo writes and the only one it reads.
inline constexpr std::uint32_t kModelFileVersion = 1;

/// One parameter as stored: rows x cols elements of the file's dtype, row-major, little-endian.
struct ModelFileArray {
  std::string name;  // e.g. "layer1.weight"
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::string bytes;  // rows * cols * element size raw bytes
};

/// A model file in memory.
struct ModelFile {
  ModelFileInfo info;
  std::string dtype;  // "<f4" or "<f8"
  std::vector<ModelFileArray> arrays;
};

/// Writes `file` to `path` atomically (kernels::write_file_atomically), stamping the format
/// version and HALO_VERSION. halo::IoError naming `path` when it cannot be written; LogicError
/// for an array whose byte count does not match its shape and dtype. Host only.
void write_model_file(const std::filesystem::path& path, const ModelFile& file);

/// Reads and checks `path`: the magic, the format version (another version is refused, naming
/// both), the sizes the header announces (a shorter file is "truncated", a longer one has
/// trailing bytes), the checksum (a mismatch means the file is corrupted) and the header's
/// fields. Every failure is one halo::IoError line that starts with the path. Host only.
ModelFile read_model_file(const std::filesystem::path& path);

/// halo::IoError naming `path` unless the model it describes reads `num_features` input
/// features: data prepared for another model must not be fed to this one.
void check_input_width(const std::filesystem::path& path, const ModelFileInfo& info,
                       std::int64_t num_features);

}  // namespace halo::nn
