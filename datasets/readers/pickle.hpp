#pragma once
// A restricted, non-executing unpickler for the data pickles of public datasets (Planetoid).

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>

namespace halo::datasets {

/// One value of an unpickled document. Containers point at other values of the same
/// PickleDocument (the document owns them all, so self-referencing containers cannot leak).
struct PickleValue {
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    Str,    ///< Python 2 str / Python 3 str (UTF-8 or Latin-1 bytes as stored)
    Bytes,  ///< Python 3 bytes
    List,   ///< also sets and frozensets
    Tuple,
    Dict,     ///< also collections.defaultdict
    Global,   ///< an allowed class or function, by "module.name"
    Dtype,    ///< numpy.dtype
    NdArray,  ///< numpy.ndarray
    Object,   ///< an instance of an allowed class (scipy CSR matrix): `text` = class, `entries`
  };
  Kind kind = Kind::None;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  /// Str/Bytes content, Global and Object class name, Dtype type string ("<f4").
  std::string text;
  std::vector<const PickleValue*> items;                                   ///< List, Tuple
  std::vector<std::pair<const PickleValue*, const PickleValue*>> entries;  ///< Dict, Object
  NpyArray array;                                                          ///< NdArray

  /// The value stored under string key `key` of a Dict or Object, or nullptr.
  const PickleValue* find(std::string_view key) const;
};

/// The result of `unpickle`: owns every value; `root()` is the pickled object.
class PickleDocument {
 public:
  const PickleValue& root() const { return *m_root; }

 private:
  friend class Unpickler;
  std::deque<PickleValue> m_values;
  const PickleValue* m_root = nullptr;
};

/// Decodes a pickle (protocols 0 to 4) without executing anything. The only globals it accepts
/// are `numpy.core.multiarray._reconstruct` (also `numpy._core.multiarray`), `numpy.ndarray`,
/// `numpy.dtype`, `scipy.sparse.csr.csr_matrix` (also `scipy.sparse._csr`),
/// `collections.defaultdict`, `builtins.list` / `__builtin__.list` (only as a defaultdict
/// factory), `_codecs.encode` (only to turn a Latin-1 string into bytes, as Python 3 does for
/// protocol-2 NumPy pickles) and `copy_reg._reconstructor` with `object` (only to create an
/// allowed class, as protocols 0 and 1 do). Any other global (`os.system`, `builtins.eval`, other
/// NumPy functions), persistent ids, extension codes and the INST/OBJ opcodes are refused with a
/// halo::IoError "<source>: offset N: refusing global 'module.name' ...". Malformed data is
/// halo::IoError "<source>: offset N: ...". Memory is O(input size). Reentrant.
PickleDocument unpickle(std::string_view data, const std::string& source);

}  // namespace halo::datasets
