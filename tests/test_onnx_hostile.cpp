// Hostile ONNX files, each made by hand on the wire: every one is refused with the status and a message naming the
// problem, never a crash, a hang or a read past the buffer; and bad arguments to the tg_onnx_* functions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnx_writer.h"
#include "tinygrad.h"

namespace fs = std::filesystem;
using namespace onnx_writer;

namespace {

struct Refusal {
  tg_status code;
  std::string msg;
};
Refusal load_mem(const Msg& bytes, const char* base_dir = nullptr) {
  tg_onnx_options o{sizeof o, nullptr, nullptr, base_dir};
  tg_onnx_model* m = tg_onnx_load_buffer(bytes.data(), bytes.size(), &o);
  if (m) {
    tg_onnx_model_release(m);
    return {TG_OK, ""};
  }
  return {tg_last_error(), tg_last_error_message()};
}
#define EXPECT_REFUSED(r, code_, text)                      \
  do {                                                      \
    Refusal r_ = (r);                                       \
    EXPECT_EQ(r_.code, code_) << r_.msg;                    \
    EXPECT_NE(r_.msg.find(text), std::string::npos) << r_.msg; \
  } while (0)

TEST(OnnxHostile, WireFormat) {
  EXPECT_EQ(load_mem(relu_model()).code, TG_OK);  // the well-formed model the others break
  EXPECT_REFUSED(load_mem(""), TG_ERROR_IO, "no graph");
  EXPECT_REFUSED(load_mem("\x80"), TG_ERROR_IO, "truncated varint");
  EXPECT_REFUSED(load_mem(tag(1, 0) + std::string(11, '\xff')), TG_ERROR_IO, "longer than 10 bytes");
  EXPECT_REFUSED(load_mem(tag(7, 2) + varint(1000) + "abc"), TG_ERROR_IO, "runs past the end");
  EXPECT_REFUSED(load_mem(tag(7, 2) + varint(uint64_t(1) << 62)), TG_ERROR_IO, "runs past the end");
  EXPECT_REFUSED(load_mem(tag(9, 3)), TG_ERROR_IO, "wire type 3");
  EXPECT_REFUSED(load_mem(tag(0, 0) + varint(1)), TG_ERROR_IO, "field number 0");
  EXPECT_REFUSED(load_mem(len(1, "x") + len(7, "")), TG_ERROR_IO, "wire type");  // ir_version as bytes
  EXPECT_REFUSED(load_mem(tag(100, 1) + "1234"), TG_ERROR_IO, "truncated fixed-width");  // an unknown field, skipped
  Msg m = relu_model();
  for (size_t cut : {size_t(1), m.size() / 3, m.size() / 2, m.size() - 1}) {  // every truncation fails cleanly
    Refusal r = load_mem(m.substr(0, cut));
    EXPECT_NE(r.code, TG_OK) << cut;
  }
}

// `core` wrapped n times in a message whose head (the bytes before the inner message) head(inner size) gives: built in
// linear time (sizes inside out, then the heads outside in), as rebuilding the string per level would be quadratic
Msg wrap_n(const Msg& core, int n, Msg (*head)(size_t inner)) {
  std::vector<size_t> sizes{core.size()};
  for (int i = 0; i < n; i++) sizes.push_back(head(sizes.back()).size() + sizes.back());
  Msg out;
  out.reserve(sizes.back());
  for (int i = n - 1; i >= 0; i--) out += head(sizes[size_t(i)]);
  return out + core;
}

TEST(OnnxHostile, DeepNesting) {
  // a graph in an If's then_branch in a graph ... 100000 deep: refused at 64, without recursing deeper
  Msg chain = wrap_n(len(2, "g"), 100000, [](size_t inner) {
    Msg attr = len(1, "then_branch") + num(20, 5) + tag(6, 2) + varint(inner);
    Msg node = len(4, "If") + tag(5, 2) + varint(attr.size() + inner) + attr;
    return len(2, "g") + tag(1, 2) + varint(node.size() + inner) + node;
  });
  EXPECT_REFUSED(load_mem(model(chain)), TG_ERROR_IO, "nested more than 64");
  // a type 100000 deep: a sequence of a sequence of ...
  Msg ty = wrap_n(len(1, num(1, 1)), 100000, [](size_t inner) {
    Msg seq = tag(1, 2) + varint(inner);
    return tag(4, 2) + varint(seq.size() + inner) + seq;
  });
  Msg vi = len(1, "x") + len(2, ty);
  EXPECT_REFUSED(load_mem(model(graph({}, {}, {vi}, {}))), TG_ERROR_IO, "nested more than 64");
}

TEST(OnnxHostile, Tensors) {
  auto init = [](const Msg& t) { return load_mem(relu_model({t})); };
  EXPECT_EQ(init(tensor("w", 1, {2}, raw(std::string(8, '\0')))).code, TG_OK);
  EXPECT_REFUSED(init(tensor("w", 1, {int64_t(1) << 40, int64_t(1) << 40}, raw(""))), TG_ERROR_SHAPE, "w");
  EXPECT_REFUSED(init(tensor("w", 1, {-3}, raw(""))), TG_ERROR_IO, "negative dim");
  EXPECT_REFUSED(init(tensor("w", 1, {4}, raw(std::string(8, '\0')))), TG_ERROR_IO, "raw_data has 8 bytes");
  EXPECT_REFUSED(init(tensor("w", 1, {1}, raw(std::string(8, '\0')))), TG_ERROR_IO, "raw_data has 8 bytes");
  EXPECT_REFUSED(init(tensor("w", 1, {5}, floats(3))), TG_ERROR_IO, "3 values");
  EXPECT_REFUSED(init(tensor("w", 8, {1}, len(6, "abc"))), TG_ERROR_UNSUPPORTED, "string");
  EXPECT_REFUSED(init(tensor("w", 14, {1}, raw(std::string(8, '\0')))), TG_ERROR_UNSUPPORTED, "complex64");
  EXPECT_REFUSED(init(tensor("w", 99, {1}, raw("x"))), TG_ERROR_UNSUPPORTED, "type 99");
  EXPECT_REFUSED(init(tensor("w", 1, {1}, len(3, num(1, 0) + num(2, 1)))), TG_ERROR_IO, "segmented");
  EXPECT_REFUSED(load_mem(model(graph({node("Relu", {"x"}, {"y"})}, {}, {}, {}) + len(15, ""))), TG_ERROR_IO, "sparse");
}

// external data: a tensor whose bytes live in `location`
Msg external(const std::string& loc, const std::string& offset = "", const std::string& length = "") {
  Msg e = len(13, len(1, "location") + len(2, loc));
  if (!offset.empty()) e += len(13, len(1, "offset") + len(2, offset));
  if (!length.empty()) e += len(13, len(1, "length") + len(2, length));
  return tensor("w", 1, {2}, e + num(14, 1));
}

TEST(OnnxHostile, ExternalData) {
  fs::path dir = fs::temp_directory_path() / ("tg_onnx_ext_" + std::to_string(getpid()));
  fs::create_directories(dir / "model");
  {
    std::ofstream(dir / "model" / "w.bin", std::ios::binary) << std::string(16, '\0');
    std::ofstream(dir / "secret.bin", std::ios::binary) << std::string(16, '\0');
  }
  fs::create_symlink(dir / "secret.bin", dir / "model" / "link.bin");
  auto with = [&](const Msg& t) {
    Msg bytes = relu_model({t});
    fs::path p = dir / "model" / "m.onnx";
    std::ofstream(p, std::ios::binary) << bytes;
    tg_onnx_model* m = tg_onnx_load(p.c_str(), nullptr);
    if (m) {
      tg_onnx_model_release(m);
      return Refusal{TG_OK, ""};
    }
    return Refusal{tg_last_error(), tg_last_error_message()};
  };
  EXPECT_EQ(with(external("w.bin")).code, TG_OK);
  EXPECT_EQ(with(external("w.bin", "8", "8")).code, TG_OK);
  EXPECT_REFUSED(with(external("../secret.bin")), TG_ERROR_IO, "leaves the model's directory");
  EXPECT_REFUSED(with(external("../../../../../../etc/passwd")), TG_ERROR_IO, "leaves the model's directory");
  EXPECT_REFUSED(with(external("/etc/passwd")), TG_ERROR_IO, "not a relative path");
  EXPECT_REFUSED(with(external("link.bin")), TG_ERROR_IO, "leaves the model's directory");
  EXPECT_REFUSED(with(external("missing.bin")), TG_ERROR_IO, "cannot open");
  EXPECT_REFUSED(with(external("w.bin", "12")), TG_ERROR_IO, "needs 8 at offset 12");
  EXPECT_REFUSED(with(external("w.bin", "0", "4")), TG_ERROR_IO, "length 4");
  EXPECT_REFUSED(with(external("w.bin", "-1")), TG_ERROR_IO, "not a number");
  EXPECT_REFUSED(with(external("w.bin", "99999999999999999999999")), TG_ERROR_IO, "not a number");
  EXPECT_REFUSED(with(external("")), TG_ERROR_IO, "not a relative path");
  EXPECT_REFUSED(load_mem(relu_model({external("w.bin")})), TG_ERROR_IO, "model's directory");  // from memory, no base_dir
  fs::remove_all(dir);
}

TEST(OnnxHostile, Graphs) {
  auto vi = [](const char* n) { return value_info(n, 1, {2, 3}); };
  EXPECT_REFUSED(load_mem(model(graph({node("NoSuchOp", {"x"}, {"y"})}, {}, {vi("x")}, {vi("y")}))), TG_ERROR_UNSUPPORTED,
                 "node 'NoSuchOp_node' (NoSuchOp): operator NoSuchOp is not supported");
  EXPECT_REFUSED(load_mem(model(graph({node("Relu", {"x"}, {"y"}, "", "com.example")}, {}, {vi("x")}, {vi("y")}))), TG_ERROR_UNSUPPORTED,
                 "domain 'com.example'");
  EXPECT_REFUSED(load_mem(model(graph({node("Relu", {"x"}, {"y"}, len(5, len(1, "a") + len(21, "ref")))}, {}, {vi("x")}, {vi("y")}))), TG_ERROR_IO,
                 "ref_attr_name");
  // errors found when running: a value nobody produces, an output nobody makes
  auto run_err = [&](const Msg& bytes) {
    tg_onnx_model* m = tg_onnx_load_buffer(bytes.data(), bytes.size(), nullptr);
    EXPECT_NE(m, nullptr) << tg_last_error_message();
    float data[6] = {};
    int64_t s[2] = {2, 3};
    tg_tensor* x = tg_tensor_from_data(data, sizeof data, TG_FLOAT32, s, 2, nullptr);
    tg_tensor* y = nullptr;
    tg_status st = tg_onnx_run(m, &x, 1, &y, 1);
    Refusal r{st, st == TG_OK ? "" : tg_last_error_message()};
    EXPECT_EQ(y, nullptr);
    tg_tensor_release(x);
    tg_tensor_release(y);
    tg_onnx_model_release(m);
    return r;
  };
  EXPECT_REFUSED(run_err(model(graph({node("Relu", {"nowhere"}, {"y"})}, {}, {vi("x")}, {vi("y")}))), TG_ERROR_INVALID_ARGUMENT,
                 "input 'nowhere' is produced by no earlier node");
  EXPECT_REFUSED(run_err(model(graph({node("Relu", {"x"}, {"z"})}, {}, {vi("x")}, {vi("y")}))), TG_ERROR_INVALID_ARGUMENT,
                 "graph output 'y' is produced by no node");
}

TEST(OnnxHostile, Arguments) {
  Msg bytes = model(graph({node("Add", {"x", "x2"}, {"y"})}, {}, {value_info("x", 1, {-1, 3}), value_info("x2", 1, {-1, 3})}, {value_info("y", 1, {-1, 3})}));
  tg_onnx_model* m = tg_onnx_load_buffer(bytes.data(), bytes.size(), nullptr);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  EXPECT_EQ(tg_onnx_input_count(m), 2);
  EXPECT_STREQ(tg_onnx_input_dim_name(m, 0, 0), "batch");
  EXPECT_STREQ(tg_onnx_input_dim_name(m, 0, 1), "");
  int64_t shape[2], nd = 0;
  tg_dtype dt;
  ASSERT_EQ(tg_onnx_input_info(m, 0, &dt, shape, 2, &nd), TG_OK);
  EXPECT_EQ(nd, 2);
  EXPECT_EQ(shape[0], -1);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(dt, TG_FLOAT32);
  EXPECT_EQ(tg_onnx_input_info(m, 0, &dt, shape, 1, &nd), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_input_name(m, 2), nullptr);
  EXPECT_EQ(tg_onnx_input_dim_name(m, 0, 2), nullptr);
  EXPECT_EQ(tg_onnx_opset(m), 13);
  EXPECT_STREQ(tg_onnx_producer(m), "hand");
  float d6[6] = {}, d9[9] = {};
  int64_t s23[2] = {2, 3}, s33[2] = {3, 3}, s6[1] = {6};
  tg_tensor* a = tg_tensor_from_data(d6, sizeof d6, TG_FLOAT32, s23, 2, nullptr);
  tg_tensor* b = tg_tensor_from_data(d9, sizeof d9, TG_FLOAT32, s33, 2, nullptr);
  tg_tensor* flat = tg_tensor_from_data(d6, sizeof d6, TG_FLOAT32, s6, 1, nullptr);
  tg_tensor* ints = tg_tensor_cast(a, TG_INT32);
  tg_tensor* out[1] = {nullptr};
  tg_tensor* ab[2] = {a, b};
  EXPECT_EQ(tg_onnx_run(m, ab, 2, out, 1), TG_ERROR_SHAPE);  // 'batch' 2 and 3 in one call
  EXPECT_NE(std::string(tg_last_error_message()).find("'batch'"), std::string::npos) << tg_last_error_message();
  tg_tensor* af[2] = {a, flat};
  EXPECT_EQ(tg_onnx_run(m, af, 2, out, 1), TG_ERROR_SHAPE);
  tg_tensor* ai[2] = {a, ints};
  EXPECT_EQ(tg_onnx_run(m, ai, 2, out, 1), TG_ERROR_DTYPE);
  tg_tensor* aa[2] = {a, a};
  EXPECT_EQ(tg_onnx_run(m, aa, 1, out, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_run(m, aa, 2, out, 2), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_run(m, aa, 2, nullptr, 1), TG_ERROR_INVALID_ARGUMENT);
  tg_tensor* an[2] = {a, nullptr};
  EXPECT_EQ(tg_onnx_run(m, an, 2, out, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(out[0], nullptr);
  const char* names[2] = {"x2", "x"};
  EXPECT_EQ(tg_onnx_run_named(m, names, aa, 2, out, 1), TG_OK) << tg_last_error_message();
  tg_tensor_release(out[0]);
  const char* twice[2] = {"x", "x"};
  EXPECT_EQ(tg_onnx_run_named(m, twice, aa, 2, out, 1), TG_ERROR_INVALID_ARGUMENT);
  const char* unknown[2] = {"x", "nope"};
  EXPECT_EQ(tg_onnx_run_named(m, unknown, aa, 2, out, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_run(nullptr, aa, 2, out, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_input_count(nullptr), -1);
  EXPECT_EQ(tg_onnx_load(nullptr, nullptr), nullptr);
  EXPECT_EQ(tg_onnx_load("/nonexistent/model.onnx", nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_IO);
  EXPECT_EQ(tg_onnx_load_tensor("/nonexistent/t.pb", nullptr), nullptr);
  EXPECT_EQ(tg_onnx_load_buffer(bytes.data(), size_t(1) << 63, nullptr), nullptr);  // past protobuf's 2 GiB: not read at all
  EXPECT_EQ(tg_last_error(), TG_ERROR_IO);
  for (const char* bad : {"batch", "batch=", "=3", "batch=x", "batch=1,", "batch=-1"}) {
    tg_onnx_options o{sizeof o, nullptr, bad, nullptr};
    EXPECT_EQ(tg_onnx_load_buffer(bytes.data(), bytes.size(), &o), nullptr) << bad;
    EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT) << bad;
  }
  tg_onnx_options fixed{sizeof fixed, nullptr, "batch=2", nullptr};
  tg_onnx_model* m2 = tg_onnx_load_buffer(bytes.data(), bytes.size(), &fixed);
  ASSERT_NE(m2, nullptr) << tg_last_error_message();
  ASSERT_EQ(tg_onnx_input_info(m2, 0, nullptr, shape, 2, &nd), TG_OK);
  EXPECT_EQ(shape[0], 2);
  tg_tensor* bb[2] = {b, b};
  EXPECT_EQ(tg_onnx_run(m2, bb, 2, out, 1), TG_ERROR_SHAPE);
  tg_onnx_model_release(m2);
  for (tg_tensor* t : {a, b, flat, ints}) tg_tensor_release(t);
  tg_onnx_model_release(m);
  tg_onnx_model_release(m);  // released twice: an error, not a crash
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

TEST(OnnxHostile, SequencesThroughRunValues) {
  Msg bytes = model(graph({node("SequenceConstruct", {"x", "x2"}, {"s"})}, {}, {value_info("x", 1, {2, 3}), value_info("x2", 1, {2, 3})},
                          {seq_info("s", 1)}));
  tg_onnx_model* m = tg_onnx_load_buffer(bytes.data(), bytes.size(), nullptr);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  EXPECT_EQ(tg_onnx_input_kind(m, 0), 0);
  EXPECT_EQ(tg_onnx_output_kind(m, 0), 1);
  EXPECT_EQ(tg_onnx_output_kind(m, 1), -1);
  float da[6] = {1, 2, 3, 4, 5, 6}, db[6] = {-1, -2, -3, -4, -5, -6};
  int64_t s23[2] = {2, 3};
  tg_tensor* a = tg_tensor_from_data(da, sizeof da, TG_FLOAT32, s23, 2, nullptr);
  tg_tensor* b = tg_tensor_from_data(db, sizeof db, TG_FLOAT32, s23, 2, nullptr);
  tg_tensor* ab[2] = {a, b};
  tg_tensor* out[4] = {};
  EXPECT_EQ(tg_onnx_run(m, ab, 2, out, 1), TG_ERROR_UNSUPPORTED);  // a sequence output needs tg_onnx_run_values
  int64_t lens[2] = {1, 1}, out_len[1] = {0};
  ASSERT_EQ(tg_onnx_run_values(m, ab, 2, lens, 2, out, 4, out_len, 1), TG_OK) << tg_last_error_message();
  ASSERT_EQ(out_len[0], 2);
  float got[6];
  ASSERT_EQ(tg_tensor_to_data(out[1], got, sizeof got), TG_OK);
  EXPECT_EQ(got[5], -6);
  tg_tensor_release(out[0]), tg_tensor_release(out[1]);
  out[0] = out[1] = nullptr;
  out_len[0] = 0;
  EXPECT_EQ(tg_onnx_run_values(m, ab, 2, lens, 2, out, 1, out_len, 1), TG_ERROR_INVALID_ARGUMENT);  // capacity 1 for 2 tensors
  EXPECT_EQ(out_len[0], 2);
  EXPECT_EQ(out[0], nullptr);
  int64_t two[2] = {2, 0}, none[2] = {-1, 1}, short_[2] = {1, 0};
  EXPECT_EQ(tg_onnx_run_values(m, ab, 2, two, 2, out, 4, out_len, 1), TG_ERROR_INVALID_ARGUMENT);   // a tensor input takes 1
  EXPECT_EQ(tg_onnx_run_values(m, ab, 2, none, 2, out, 4, out_len, 1), TG_ERROR_INVALID_ARGUMENT);  // not optional
  EXPECT_EQ(tg_onnx_run_values(m, ab, 2, short_, 2, out, 4, out_len, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_run_values(m, ab, 2, lens, 1, out, 4, out_len, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_onnx_run_values(m, ab, 2, lens, 2, out, 4, nullptr, 1), TG_ERROR_INVALID_ARGUMENT);
  int64_t n = 0;
  EXPECT_EQ(tg_onnx_load_value("/nonexistent.pb", nullptr, 1, out, 4, &n), TG_ERROR_IO);
  EXPECT_EQ(tg_onnx_load_value("/nonexistent.pb", nullptr, 7, out, 4, &n), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(out[0], nullptr);
  tg_tensor_release(a), tg_tensor_release(b);
  tg_onnx_model_release(m);
}

}  // namespace
