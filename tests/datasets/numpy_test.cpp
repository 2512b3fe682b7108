// .npy / .npz parsing, SciPy sparse matrices in .npz, and the Reddit (DGL) reader, on fixtures
// the tests write byte by byte.

#include <cstring>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/kernels/error.hpp>

#include "archive_test_util.hpp"
#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

/// A .npy file: magic, version, little-endian header length, padded header, data.
std::string npy(const std::string& header_dict, const std::string& data, int major = 1) {
  std::string header = header_dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <class T>
std::string npy_of(const char* descr, const std::string& shape, const std::vector<T>& values,
                   int major = 1) {
  return npy(
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }",
      raw(values), major);
}

std::string error_of(const std::string& data) {
  try {
    parse_npy(data, "x.npy");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, ParsesVersionsAndDtypes) {
  const NpyArray f = parse_npy(npy_of<float>("<f4", "(2, 3)", {1, 2, 3, 4, 5, -6}), "a");
  EXPECT_EQ(f.dtype, "<f4");
  EXPECT_EQ(f.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(to_doubles(f, "a"), (std::vector<double>{1, 2, 3, 4, 5, -6}));
  const NpyArray d = parse_npy(npy_of<double>("<f8", "(2,)", {0.5, 1e300}, 2), "b");
  EXPECT_EQ(to_doubles(d, "b"), (std::vector<double>{0.5, 1e300}));
  const NpyArray i = parse_npy(npy_of<std::int32_t>("<i4", "(3,)", {-1, 0, 7}, 3), "c");
  EXPECT_EQ(to_int64s(i, "c"), (std::vector<std::int64_t>{-1, 0, 7}));
  const NpyArray l = parse_npy(npy_of<std::int64_t>("<i8", "()", {1ll << 40}), "d");
  EXPECT_TRUE(l.shape.empty());
  EXPECT_EQ(to_int64s(l, "d"), (std::vector<std::int64_t>{1ll << 40}));
  const NpyArray u = parse_npy(npy_of<std::uint8_t>("|u1", "(2, 0)", {}), "e");
  EXPECT_EQ(u.numel(), 0);
  const NpyArray b = parse_npy(npy_of<std::uint8_t>("|b1", "(3,)", {1, 0, 1}), "f");
  EXPECT_EQ(to_int64s(b, "f"), (std::vector<std::int64_t>{1, 0, 1}));
}

TEST(Npy, RefusesUnsupportedLayouts) {
  std::string msg =
      error_of(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1), }", raw<float>({1})));
  EXPECT_NE(msg.find("Fortran-ordered"), std::string::npos) << msg;
  msg = error_of(npy_of<float>(">f4", "(1,)", {1}));
  EXPECT_NE(msg.find("big-endian"), std::string::npos) << msg;
  msg = error_of(npy_of<std::int64_t>("|O", "(1,)", {0}));
  EXPECT_NE(msg.find("object arrays are refused"), std::string::npos) << msg;
  msg = error_of(npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                     raw<std::int32_t>({1})));
  EXPECT_NE(msg.find("structured"), std::string::npos) << msg;
  msg = error_of(npy_of<float>("<f4", "(3,)", {1, 2}));
  EXPECT_NE(msg.find("truncated data"), std::string::npos) << msg;
  msg = error_of(npy_of<float>("<f4", "(1,)", {1, 2}));
  EXPECT_NE(msg.find("unexpected bytes"), std::string::npos) << msg;
  msg = error_of("\x93NUMPX\x01\x00\x00\x00");
  EXPECT_NE(msg.find("bad magic"), std::string::npos) << msg;
  msg = error_of(npy_of<float>("<c8", "(1,)", {1, 2}));
  EXPECT_NE(msg.find("unsupported dtype"), std::string::npos) << msg;
  msg = error_of(npy_of<float>("<f4", "(-1,)", {}));
  EXPECT_NE(msg.find("x.npy"), std::string::npos) << msg;
}

/// A SciPy-style sparse matrix as .npz entries (format stored as a 0-d bytes array).
std::vector<std::pair<std::string, std::string>> scipy_csr(std::int64_t rows, std::int64_t cols,
                                                           const std::vector<std::int32_t>& indptr,
                                                           const std::vector<std::int32_t>& indices,
                                                           const std::vector<float>& data) {
  return {{"indices.npy", npy_of("<i4", "(" + std::to_string(indices.size()) + ",)", indices)},
          {"indptr.npy", npy_of("<i4", "(" + std::to_string(indptr.size()) + ",)", indptr)},
          {"format.npy", npy("{'descr': '|S3', 'fortran_order': False, 'shape': (), }", "csr")},
          {"shape.npy", npy_of<std::int64_t>("<i8", "(2,)", {rows, cols})},
          {"data.npy", npy_of("<f4", "(" + std::to_string(data.size()) + ",)", data)}};
}

TEST(Npz, ReadsArraysAndScipyCsr) {
  TempDir tmp;
  const fs::path z = tmp.path() / "m.npz";
  // 3 x 4: row 0 = {2: 1.5, 0: 2} (unsorted), row 1 empty, row 2 = {3: -1}.
  write_zip(z, scipy_csr(3, 4, {0, 2, 2, 3}, {2, 0, 3}, {1.5f, 2, -1}));
  const auto arrays = read_npz(z);
  EXPECT_EQ(arrays.size(), 5u);
  EXPECT_EQ(arrays.at("shape").shape, (std::vector<std::int64_t>{2}));
  const auto a = read_scipy_npz(cpu(), z);
  EXPECT_EQ(a.num_rows(), 3);
  EXPECT_EQ(a.num_cols, 4);
  EXPECT_EQ(vec(a.indptr), (std::vector<std::int64_t>{0, 2, 2, 3}));
  EXPECT_EQ(vec(a.indices), (std::vector<NodeId>{0, 2, 3}));
  EXPECT_EQ(vec(a.values), (std::vector<float>{2, 1.5f, -1}));
}

TEST(Npz, ReadsScipyCooWithUnicodeFormat) {
  TempDir tmp;
  const fs::path z = tmp.path() / "coo.npz";
  std::string fmt = raw<std::uint32_t>({'c', 'o', 'o'});
  write_zip(z, {{"format.npy", npy("{'descr': '<U3', 'fortran_order': False, 'shape': (), }", fmt)},
                {"shape.npy", npy_of<std::int64_t>("<i8", "(2,)", {2, 2})},
                {"row.npy", npy_of<std::int32_t>("<i4", "(3,)", {1, 0, 1})},
                {"col.npy", npy_of<std::int32_t>("<i4", "(3,)", {1, 1, 0})}});
  const auto a = read_scipy_npz(cpu(), z);
  EXPECT_EQ(vec(a.indptr), (std::vector<std::int64_t>{0, 1, 3}));
  EXPECT_EQ(vec(a.indices), (std::vector<NodeId>{1, 0, 1}));
  EXPECT_EQ(vec(a.values), (std::vector<float>{1, 1, 1}));
}

TEST(Npz, RejectsInconsistentSparse) {
  TempDir tmp;
  const fs::path z = tmp.path() / "bad.npz";
  write_zip(z, scipy_csr(2, 2, {0, 1, 2}, {0, 5}, {1, 1}));
  try {
    read_scipy_npz(cpu(), z);
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("column 5 of entry 1"), std::string::npos) << e.what();
  }
}

TEST(Npz, WriteReadsBackEveryArray) {
  TempDir tmp;
  const fs::path z = tmp.path() / "out.npz";
  std::map<std::string, NpyArray> arrays;
  arrays["ints"] = {"<i8", {3}, raw<std::int64_t>({-1, 0, 7})};
  arrays["mat"] = {"<f4", {2, 2}, raw<float>({1.5f, -2, 0, 3})};
  arrays["empty"] = {"<i4", {0}, ""};
  arrays["scalar"] = {"<i8", {}, raw<std::int64_t>({42})};
  write_npz(z, arrays);
  const auto back = read_npz(z);
  ASSERT_EQ(back.size(), arrays.size());
  for (const auto& [name, a] : arrays) {
    EXPECT_EQ(back.at(name).dtype, a.dtype) << name;
    EXPECT_EQ(back.at(name).shape, a.shape) << name;
    EXPECT_EQ(back.at(name).bytes, a.bytes) << name;
  }
  // Written over: the new archive replaces the old whole, and no temporary is left behind.
  write_npz(z, {{"only", arrays["ints"]}});
  EXPECT_EQ(read_npz(z).size(), 1u);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(Npz, WriteRefusesBadArraysAndLeavesNoFile) {
  TempDir tmp;
  const fs::path z = tmp.path() / "bad.npz";
  EXPECT_THROW(write_npz(z, {{"x", NpyArray{"<f4", {3}, "ab"}}}), LogicError);
  EXPECT_THROW(write_npz(z, {{"a/b", NpyArray{"<i8", {0}, ""}}}), LogicError);
  EXPECT_THROW(write_npz(z, {{"", NpyArray{"<i8", {0}, ""}}}), LogicError);
  EXPECT_FALSE(fs::exists(z));
  try {
    write_npz(tmp.path() / "no-such-dir" / "x.npz", {{"x", NpyArray{"<i8", {0}, ""}}});
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
  }
}

TEST(Reddit, ReadsTheDglLayout) {
  TempDir tmp;
  // 4 nodes, 2 features; node 3 has type 0 (in no split); symmetric adjacency 0-1, 1-2.
  write_zip(tmp.path() / "reddit_data.npz",
            {{"feature.npy", npy_of<float>("<f4", "(4, 2)", {1, 2, 3, 4, 5, 6, 7, 8})},
             {"label.npy", npy_of<std::int64_t>("<i8", "(4,)", {3, 0, 1, 3})},
             {"node_types.npy", npy_of<std::int32_t>("<i4", "(4,)", {1, 2, 3, 0})}});
  write_zip(tmp.path() / "reddit_graph.npz",
            scipy_csr(4, 4, {0, 1, 3, 4, 4}, {1, 0, 2, 1}, {1, 1, 1, 1}));
  const Dataset ds = read_reddit(cpu(), tmp.path());
  EXPECT_EQ(ds.name, "reddit");
  EXPECT_EQ(ds.num_nodes(), 4);
  EXPECT_TRUE(ds.graph.symmetric);
  EXPECT_TRUE(ds.graph.values.empty());
  EXPECT_EQ(rows_of(ds.graph),
            (std::vector<Row>{{{1, 1.0}}, {{0, 1.0}, {2, 1.0}}, {{1, 1.0}}, {}}));
  EXPECT_EQ(vec(std::get<kernels::Tensor<float>>(ds.features)),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(vec(ds.labels), (std::vector<std::int32_t>{3, 0, 1, 3}));
  EXPECT_EQ(ds.num_classes, 4);
  EXPECT_EQ(vec(ds.train_idx), (std::vector<NodeId>{0}));
  EXPECT_EQ(vec(ds.val_idx), (std::vector<NodeId>{1}));
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{2}));
}

TEST(Reddit, RefusesAbsurdInferredClassCount) {
  TempDir tmp;
  write_zip(tmp.path() / "reddit_data.npz",
            {{"feature.npy", npy_of<float>("<f4", "(2, 1)", {1, 2})},
             {"label.npy", npy_of<std::int64_t>("<i8", "(2,)", {0, 2147483646})},
             {"node_types.npy", npy_of<std::int32_t>("<i4", "(2,)", {1, 2})}});
  write_zip(tmp.path() / "reddit_graph.npz", scipy_csr(2, 2, {0, 1, 2}, {1, 0}, {1, 1}));
  try {
    read_reddit(cpu(), tmp.path());
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("label[1]: class id 2147483646 would make"),
              std::string::npos)
        << e.what();
  }
}

TEST(Reddit, MissingArrayIsNamed) {
  TempDir tmp;
  write_zip(tmp.path() / "reddit_data.npz", {{"feature.npy", npy_of<float>("<f4", "(1, 1)", {1})}});
  try {
    read_reddit(cpu(), tmp.path());
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("missing array 'label'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace halo::datasets::test
