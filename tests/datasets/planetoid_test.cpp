// The restricted unpickler and the Planetoid reader, against the plain-text Cora conversion.

#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/readers/pickle.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/readers/planetoid.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

using Kind = PickleValue::Kind;

fs::path planetoid_raw_dir() { return halo::testing::datasets_dir() / "planetoid" / "raw"; }

/// The bytes of a string literal, embedded NULs included.
template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

/// The message of the halo::IoError that unpickling `data` throws ("" if none).
std::string refusal(const std::string& data) {
  try {
    unpickle(data, "evil.pkl");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Unpickler, RefusesOsSystem) {
  // pickle.dumps(os.system) style: GLOBAL 'os system', then REDUCE with ('ls',).
  const std::string p = bytes(
      "\x80\x02"
      "cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.");
  const std::string msg = refusal(p);
  EXPECT_NE(msg.find("refusing global 'os.system'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("evil.pkl"), std::string::npos) << msg;
}

TEST(Unpickler, RefusesBuiltinsEvalThroughStackGlobal) {
  // Protocol 4: SHORT_BINUNICODE 'builtins', 'eval', STACK_GLOBAL, then a call.
  const std::string p = bytes(
      "\x80\x04\x8c\x08"
      "builtins\x94\x8c\x04"
      "eval\x94\x93\x94\x8c\x04"
      "1+1\x94\x85\x94R\x94.");
  const std::string msg = refusal(p);
  EXPECT_NE(msg.find("refusing global 'builtins.eval'"), std::string::npos) << msg;
}

TEST(Unpickler, RefusesUnknownNumpyFunction) {
  const std::string p = bytes(
      "\x80\x02"
      "cnumpy\nload\nq\x00X\x01\x00\x00\x00xq\x01\x85R.");
  const std::string msg = refusal(p);
  EXPECT_NE(msg.find("refusing global 'numpy.load'"), std::string::npos) << msg;
}

TEST(Unpickler, RefusesInstAndPersistentIds) {
  EXPECT_NE(refusal("(ios\nsystem\nS'ls'\n.").find("INST/OBJ"), std::string::npos);
  EXPECT_NE(refusal("P1\n.").find("persistent"), std::string::npos);
}

TEST(Unpickler, RefusesMalformedData) {
  EXPECT_NE(refusal("").find("without a STOP"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02]a.").find("underflow"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02h\x05.").find("never stored"), std::string::npos);
  EXPECT_NE(refusal(bytes("\x80\x02T\xff\xff\x00\x00"
                          "ab."))
                .find("truncated"),
            std::string::npos);
}

TEST(Unpickler, DecodesPlainContainers) {
  // {0: [5, 300, 70000], 'k': (1.5, None, True)} in protocol 2.
  const std::string p = bytes(
      "\x80\x02}q\x00(K\x00]q\x01(K\x05M,\x01J\x70\x11\x01\x00"
      "eU\x01kG?\xf8\x00\x00\x00\x00"
      "\x00\x00N\x88\x87u.");
  const PickleDocument doc = unpickle(p, "ok.pkl");
  const PickleValue& root = doc.root();
  ASSERT_EQ(root.kind, Kind::Dict);
  ASSERT_EQ(root.entries.size(), 2u);
  const PickleValue* list = root.entries[0].second;
  ASSERT_EQ(list->kind, Kind::List);
  ASSERT_EQ(list->items.size(), 3u);
  EXPECT_EQ(list->items[0]->integer, 5);
  EXPECT_EQ(list->items[1]->integer, 300);
  EXPECT_EQ(list->items[2]->integer, 70000);
  const PickleValue* tuple = root.find("k");
  ASSERT_NE(tuple, nullptr);
  ASSERT_EQ(tuple->kind, Kind::Tuple);
  EXPECT_DOUBLE_EQ(tuple->items[0]->real, 1.5);
  EXPECT_EQ(tuple->items[1]->kind, Kind::None);
  EXPECT_TRUE(tuple->items[2]->boolean);
}

TEST(Unpickler, SelfReferencingListDoesNotLeak) {
  // l = []; l.append(l): the document owns every value, so no reference cycle can leak.
  const PickleDocument doc = unpickle(bytes("\x80\x02]q\x00h\x00"
                                            "a."),
                                      "cycle.pkl");
  ASSERT_EQ(doc.root().kind, Kind::List);
  EXPECT_EQ(doc.root().items.at(0), &doc.root());
}

TEST(Planetoid, CoraMatchesPlainConversion) {
  const Dataset got = read_planetoid(cpu(), planetoid_raw_dir(), "cora");
  const Dataset want = read_directory(cpu(), cora_dir());
  EXPECT_EQ(got.name, "cora");
  ASSERT_EQ(got.num_nodes(), 2708);
  ASSERT_EQ(got.num_nodes(), want.num_nodes());
  EXPECT_EQ(got.graph.num_edges(), 10556);
  EXPECT_TRUE(got.graph.symmetric);
  EXPECT_EQ(vec(got.graph.indptr), vec(want.graph.indptr));
  EXPECT_EQ(vec(got.graph.indices), vec(want.graph.indices));
  EXPECT_TRUE(got.graph.values.empty());

  using Sparse = kernels::CsrMatrix<std::int32_t, float>;
  ASSERT_TRUE(std::holds_alternative<Sparse>(got.features));
  ASSERT_TRUE(std::holds_alternative<Sparse>(want.features));
  const auto& gx = std::get<Sparse>(got.features);
  const auto& wx = std::get<Sparse>(want.features);
  EXPECT_EQ(gx.num_cols, 1433);
  EXPECT_EQ(gx.num_cols, wx.num_cols);
  EXPECT_EQ(gx.num_edges(), 49216);
  EXPECT_EQ(vec(gx.indptr), vec(wx.indptr));
  EXPECT_EQ(vec(gx.indices), vec(wx.indices));
  EXPECT_EQ(vec(gx.values), vec(wx.values));

  EXPECT_EQ(got.num_classes, 7);
  EXPECT_EQ(got.num_classes, want.num_classes);
  EXPECT_EQ(vec(got.labels), vec(want.labels));
  EXPECT_EQ(vec(got.train_idx), vec(want.train_idx));
  EXPECT_EQ(vec(got.val_idx), vec(want.val_idx));
  EXPECT_EQ(vec(got.test_idx), vec(want.test_idx));
  EXPECT_EQ(got.train_idx.numel(), 140);
  EXPECT_EQ(got.val_idx.numel(), 500);
  EXPECT_EQ(got.test_idx.numel(), 1000);
}

TEST(Planetoid, MissingFileIsNamed) {
  TempDir tmp;
  try {
    read_planetoid(cpu(), tmp.path(), "cora");
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("ind.cora.x"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace halo::datasets::test

namespace halo::datasets::test {
namespace {

/// The CSR-matrix pickles of the fuzz corpus, written by Python's pickle in protocols 0, 2 and 4
/// (with stand-in numpy / scipy classes that pickle exactly as the real ones do).
TEST(Unpickler, DecodesCsrMatrixInProtocols0To4) {
  const fs::path corpus = fs::path(HALO_TEST_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "pickle";
  for (const char* file : {"csr_p0.pkl", "csr_p2.pkl", "csr_p4.pkl"}) {
    SCOPED_TRACE(file);
    const std::string data = halo::datasets::detail::read_whole_file(corpus / file);
    const PickleDocument doc = unpickle(data, file);
    const PickleValue& m = doc.root();
    ASSERT_EQ(m.kind, Kind::Object);
    const PickleValue* shape = m.find("_shape");
    ASSERT_NE(shape, nullptr);
    ASSERT_EQ(shape->items.size(), 2u);
    EXPECT_EQ(shape->items[0]->integer, 2);
    EXPECT_EQ(shape->items[1]->integer, 3);
    const PickleValue* indices = m.find("indices");
    ASSERT_NE(indices, nullptr);
    ASSERT_EQ(indices->kind, Kind::NdArray);
    EXPECT_EQ(indices->array.dtype, "<i4");
    EXPECT_EQ(to_int64s(indices->array, file), (std::vector<std::int64_t>{2, 0}));
    const PickleValue* values = m.find("data");
    ASSERT_NE(values, nullptr);
    EXPECT_EQ(to_doubles(values->array, file), (std::vector<double>{1, 1}));
  }
  for (const char* file : {"graph_p0.pkl", "graph_p2.pkl"}) {
    SCOPED_TRACE(file);
    const PickleDocument doc =
        unpickle(halo::datasets::detail::read_whole_file(corpus / file), file);
    ASSERT_EQ(doc.root().kind, Kind::Dict);
    ASSERT_EQ(doc.root().entries.size(), 3u);
    EXPECT_EQ(doc.root().entries[2].second->items.size(), 2u);
  }
}

}  // namespace
}  // namespace halo::datasets::test

namespace halo::datasets::test {
namespace {

// ---- a tiny pickle writer for hand-made Planetoid files (protocol 2, as Python 2 wrote) ----

std::string pickle_int(std::int32_t v) {
  std::string out = "J";
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((static_cast<std::uint32_t>(v) >> (8 * i)) & 0xff);
  return out;
}

std::string pickle_binstring(const std::string& s) {
  std::string out = "T";
  for (int i = 0; i < 4; ++i) out += static_cast<char>((s.size() >> (8 * i)) & 0xff);
  return out + s;
}

/// A numpy array pickle: _reconstruct(ndarray, (0,), 'b') + BUILD(1, shape, dtype, False, data).
std::string pickle_ndarray(const std::string& type, const std::vector<std::int32_t>& shape,
                           const std::string& data) {
  std::string p =
      "\x80\x02"
      "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n";
  p += pickle_int(0) + "\x85" + pickle_binstring("b") + "\x87R(" + pickle_int(1) + "(";
  for (const std::int32_t d : shape) p += pickle_int(d);
  p += "tcnumpy\ndtype\n" + pickle_binstring(type) + pickle_int(0) + pickle_int(1) + "\x87R(" +
       pickle_int(3) + pickle_binstring("<") + "NNN" + pickle_int(-1) + pickle_int(-1) +
       pickle_int(0) + "tb\x89" + pickle_binstring(data) + "tb.";
  return p;
}

template <class T>
std::string pickle_matrix(const char* type, std::int32_t rows, std::int32_t cols,
                          const std::vector<T>& values) {
  std::string data(values.size() * sizeof(T), '\0');
  std::memcpy(data.data(), values.data(), data.size());
  return pickle_ndarray(type, {rows, cols}, data);
}

TEST(Planetoid, PadsMissingTestIdsLikePyG) {
  // 502 training-pool nodes (allx), test ids {505, 502, 504} in file order: 503 is missing,
  // as CiteSeer's isolated test nodes are. tx row i belongs to test id i of the file.
  TempDir tmp;
  const auto put = [&](const char* part, const std::string& bytes) {
    write_text(tmp.path() / (std::string("ind.fake.") + part), bytes);
  };
  constexpr std::int32_t kPool = 502;
  std::vector<float> allx(kPool * 3, 0.f);
  std::vector<std::int32_t> ally(kPool * 2, 0);
  for (std::int32_t v = 0; v < kPool; ++v) {
    allx[static_cast<std::size_t>(v * 3 + v % 3)] = 1.f;
    ally[static_cast<std::size_t>(v * 2 + v % 2)] = 1;
  }
  put("allx", pickle_matrix<float>("f4", kPool, 3, allx));
  put("ally", pickle_matrix<std::int32_t>("i4", kPool, 2, ally));
  put("x", pickle_matrix<float>("f4", 1, 3, {allx[0], allx[1], allx[2]}));
  put("y", pickle_matrix<std::int32_t>("i4", 1, 2, {ally[0], ally[1]}));
  put("tx", pickle_matrix<float>("f4", 3, 3, {5, 0, 0, 0, 2, 0, 0, 0, 4}));
  put("ty", pickle_matrix<std::int32_t>("i4", 3, 2, {0, 1, 1, 0, 0, 1}));
  put("test.index", "505\n502\n504\n");
  // {0: [1], 503: [503, 502]}: the self-loop goes, each edge gets both directions.
  put("graph", std::string("\x80\x02"
                           "ccollections\ndefaultdict\nc__builtin__\nlist\n\x85R(") +
                   pickle_int(0) + "](" + pickle_int(1) + "e" + pickle_int(503) + "](" +
                   pickle_int(503) + pickle_int(502) + "eu.");

  const Dataset ds = read_planetoid(cpu(), tmp.path(), "fake");
  ASSERT_EQ(ds.num_nodes(), 506);
  using Sparse = kernels::CsrMatrix<std::int32_t, float>;
  const auto& x = std::get<Sparse>(ds.features);
  const auto row = [&](std::int64_t v) {
    Row r;
    for (std::int64_t e = x.indptr.data()[v]; e < x.indptr.data()[v + 1]; ++e)
      r.emplace_back(x.indices.data()[e], x.values.data()[e]);
    return r;
  };
  EXPECT_EQ(row(505), (Row{{0, 5.0}}));  // tx row 0
  EXPECT_EQ(row(502), (Row{{1, 2.0}}));  // tx row 1
  EXPECT_EQ(row(504), (Row{{2, 4.0}}));  // tx row 2
  EXPECT_EQ(row(503), Row{});            // padded: all zeros
  EXPECT_EQ(row(7), (Row{{1, 1.0}}));
  const std::vector<std::int32_t> labels = vec(ds.labels);
  EXPECT_EQ(labels[505], 1);
  EXPECT_EQ(labels[502], 0);
  EXPECT_EQ(labels[504], 1);
  EXPECT_EQ(labels[503], 0);  // argmax of a zero row
  EXPECT_EQ(labels[7], 1);
  EXPECT_EQ(vec(ds.train_idx), (std::vector<NodeId>{0}));
  EXPECT_EQ(ds.val_idx.numel(), 500);
  EXPECT_EQ(ds.val_idx.data()[499], 500);
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{502, 504, 505}));
  EXPECT_EQ(ds.graph.num_edges(), 4);
  EXPECT_EQ(rows_of(ds.graph)[502], (Row{{503, 1.0}}));
  EXPECT_EQ(rows_of(ds.graph)[1], (Row{{0, 1.0}}));
}

}  // namespace
}  // namespace halo::datasets::test
