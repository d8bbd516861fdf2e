// nn.state: safetensors round trips of every dtype, GGUF dequantization of every type against ggml's reference code
// (ported here), and hostile files: each malformed file is an error naming the problem, never a crash.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "nn/state.h"
#include "capi_handles.h"
#include "tinygrad.h"

namespace fs = std::filesystem;
using namespace tg;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
template <class T>
void put(Bytes& b, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}
// a safetensors file: the 8-byte header length, the header as given, then `data`
Bytes safetensors(const std::string& header, const Bytes& data = {}) {
  Bytes b;
  put<uint64_t>(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}
Bytes tensor_bytes(Tensor t) {
  Bytes b(size_t(t.numel()) * size_t(t.dtype().itemsize()));
  t.to_data(b.data(), b.size());
  return b;
}
// the error loading `b` raises: its status, and its message (which must name the file)
std::pair<tg_status, std::string> load_error(const Bytes& b) {
  try {
    nn::Loaded l = b.size() >= 4 && !std::memcmp(b.data(), "GGUF", 4) ? nn::gguf_load(nn::Bytes{b.data(), b.size(), "hostile.bin"}, "CPU")
                                                                     : nn::safe_load(nn::Bytes{b.data(), b.size(), "hostile.bin"}, "CPU");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hostile.bin"), std::string::npos) << e.what();
    return {e.code, e.what()};
  }
  return {TG_OK, ""};
}
#define EXPECT_IO_ERROR(bytes, needle)                                                  \
  do {                                                                                  \
    auto [code_, msg_] = load_error(bytes);                                             \
    EXPECT_EQ(code_, TG_ERROR_IO) << msg_;                                              \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "wanted '" << (needle) << "' in: " << msg_; \
  } while (0)

// ---- GGUF writing (the spec's layout) ----
struct GGUF {
  Bytes kv, infos, data;
  uint64_t n_kv = 0, n_tensors = 0, alignment = 32;
  uint32_t version = 3;
  static void str(Bytes& b, const std::string& s) {
    put<uint64_t>(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
  GGUF& key(const std::string& k, uint32_t type, const Bytes& value) {
    str(kv, k), put<uint32_t>(kv, type), kv.insert(kv.end(), value.begin(), value.end()), n_kv++;
    return *this;
  }
  // dims in the tensor's shape order (written innermost first); the data goes at the end, its offset there unless given
  GGUF& tensor(const std::string& name, std::vector<uint64_t> shape, uint32_t type, const Bytes& raw, int64_t offset = -1) {
    str(infos, name), put<uint32_t>(infos, uint32_t(shape.size()));
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) put<uint64_t>(infos, *it);
    put<uint32_t>(infos, type), put<uint64_t>(infos, offset < 0 ? data.size() : uint64_t(offset)), n_tensors++;
    data.insert(data.end(), raw.begin(), raw.end());
    data.resize((data.size() + alignment - 1) / alignment * alignment);
    return *this;
  }
  Bytes bytes() const {
    Bytes b = bytes_of("GGUF");
    put<uint32_t>(b, version), put<uint64_t>(b, n_tensors), put<uint64_t>(b, n_kv);
    b.insert(b.end(), kv.begin(), kv.end());
    b.insert(b.end(), infos.begin(), infos.end());
    b.resize((b.size() + alignment - 1) / alignment * alignment);
    b.insert(b.end(), data.begin(), data.end());
    return b;
  }
};
template <class T>
Bytes val(T v) {
  Bytes b;
  put<T>(b, v);
  return b;
}

// ---- ggml's reference dequantization (dequantize_row_* in ggml-quants.c) ----
float f16(const uint8_t* p) {
  uint16_t h = uint16_t(p[0] | p[1] << 8);
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? std::ldexp(float(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(float(m | 1024), e - 25);
  return h & 0x8000 ? -v : v;
}
void put_f16(uint8_t* p, float v) {  // v is a multiple of 2^-10 in (-2, 2): exact in float16
  uint16_t h = 0;
  if (v != 0) {
    int e;
    float m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
    h = uint16_t((e + 14) << 10 | (int(std::ldexp(m, 11)) & 1023));
  }
  if (v < 0) h |= 0x8000;
  p[0] = uint8_t(h), p[1] = uint8_t(h >> 8);
}
struct QType {
  uint32_t id;
  const char* name;
  int blk, bytes;
  std::vector<int> scales;  // byte offsets of f16 scales
};
const QType kQuant[] = {{2, "Q4_0", 32, 18, {0}},     {3, "Q4_1", 32, 20, {0, 2}},  {6, "Q5_0", 32, 22, {0}},     {7, "Q5_1", 32, 24, {0, 2}},
                        {8, "Q8_0", 32, 34, {0}},     {12, "Q4_K", 256, 144, {0, 2}}, {13, "Q5_K", 256, 176, {0, 2}}, {14, "Q6_K", 256, 210, {208}}};
void ref_block(uint32_t type, const uint8_t* x, float* y) {
  float d = f16(x);
  switch (type) {
    case 2:
    case 3: {
      const uint8_t* qs = x + (type == 2 ? 2 : 4);
      for (int j = 0; j < 16; j++) {
        int lo = qs[j] & 0xF, hi = qs[j] >> 4;
        if (type == 2) y[j] = float(lo - 8) * d, y[j + 16] = float(hi - 8) * d;
        else y[j] = float(lo) * d + f16(x + 2), y[j + 16] = float(hi) * d + f16(x + 2);
      }
      return;
    }
    case 6:
    case 7: {
      int o = type == 6 ? 2 : 4;
      uint32_t qh;
      std::memcpy(&qh, x + o, 4);
      const uint8_t* qs = x + o + 4;
      for (int j = 0; j < 16; j++) {
        int x0 = (qs[j] & 0xF) | (((qh >> j) << 4) & 0x10), x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
        if (type == 6) y[j] = float(x0 - 16) * d, y[j + 16] = float(x1 - 16) * d;
        else y[j] = float(x0) * d + f16(x + 2), y[j + 16] = float(x1) * d + f16(x + 2);
      }
      return;
    }
    case 8:
      for (int j = 0; j < 32; j++) y[j] = float(int8_t(x[2 + j])) * d;
      return;
    case 12:
    case 13: {
      float dmin = f16(x + 2);
      const uint8_t *s = x + 4, *qh = x + 16, *ql = x + (type == 13 ? 48 : 16);
      auto scale_min = [&](int j, int& sc, int& m) {
        if (j < 4) sc = s[j] & 63, m = s[j + 4] & 63;
        else sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      };
      for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32) {
        for (int h = 0; h < 2; h++) {
          int sc, m;
          scale_min(is + h, sc, m);
          float d1 = d * float(sc), m1 = dmin * float(m);
          for (int l = 0; l < 32; l++) {
            int q = (ql[l] >> (4 * h)) & 0xF;
            if (type == 13 && (qh[l] >> (is + h) & 1)) q += 16;
            y[j + 32 * h + l] = d1 * float(q) - m1;
          }
        }
      }
      return;
    }
    case 14: {
      const uint8_t *ql = x, *qh = x + 128;
      const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
      d = f16(x + 208);
      for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8, y += 128)
        for (int l = 0; l < 32; l++) {
          int is = l / 16;
          int q[4] = {((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32, ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32,
                      ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32, ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32};
          for (int k = 0; k < 4; k++) y[l + 32 * k] = d * float(sc[is + 2 * k]) * float(q[k]);
        }
      return;
    }
  }
  FAIL() << "no reference for type " << type;
}

}  // namespace

TEST(State, SafetensorsRoundTripEveryDtype) {
  TmpDir dir;
  std::mt19937_64 rng(7);
  nn::StateDict sd;
  for (DType dt : dtypes::all()) {
    Shape s = dt == dtypes::float32 ? Shape{3, 0, 2} : dt == dtypes::int8 ? Shape{} : Shape{2, 5, 3};
    Bytes raw(size_t(prod(s)) * size_t(dt.itemsize()));
    for (auto& b : raw) b = uint8_t(dt == dtypes::bool_ ? rng() & 1 : rng());  // any bits, NaN payloads included
    sd.emplace_back("t." + dt.name(), Tensor::from_data(raw.data(), raw.size(), dt, s, "CPU"));
  }
  fs::path p = dir.p / "all.safetensors";
  nn::safe_save(sd, p, {{"k", "v\"\n", ""}, {"unicode", "é✓", ""}});
  nn::Loaded l = nn::safe_load(p, "CPU");
  ASSERT_EQ(l.tensors.size(), sd.size());
  for (size_t i = 0; i < sd.size(); i++) {
    EXPECT_EQ(l.tensors[i].first, sd[i].first);
    EXPECT_EQ(l.tensors[i].second.dtype(), sd[i].second.dtype());
    EXPECT_EQ(l.tensors[i].second.shape(), sd[i].second.shape());
    EXPECT_EQ(tensor_bytes(l.tensors[i].second), tensor_bytes(sd[i].second)) << sd[i].first;
  }
  ASSERT_EQ(l.metadata.size(), 2u);
  EXPECT_EQ(l.metadata[0].value, "v\"\n");
  EXPECT_EQ(l.metadata[0].json, "\"v\\\"\\n\"");
  EXPECT_EQ(l.metadata[1].value, "é✓");
  // the header is padded to 8 bytes and no temporary file is left
  std::ifstream f(p, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.p), fs::directory_iterator{}), 1);
}

// the mapping of /proc/self/maps that holds `p`: its path ("" if anonymous or none)
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  auto a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || a < lo || a >= hi) continue;
    size_t slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

// The tensors are read into buffers of their own, never the file's pages (another process may truncate or rewrite the
// file: see FilesHostile.*), and an assign into one never reaches the file.
TEST(State, SafetensorsOnTheCpuAreCopiedNotMapped) {
  TmpDir dir;
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); i++) v[i] = float(i) * 0.5f;
  fs::path p = dir.p / "w.safetensors";
  nn::safe_save({{"w", Tensor::from_data(v.data(), v.size() * 4, dtypes::float32, {10, 100}, "CPU")}}, p);
  Tensor w = nn::safe_load(p, "CPU").tensors.at(0).second;
  const UOp* b = w.uop().get();
  while (b->op != Ops::BUFFER) b = b->src[0].get();
  EXPECT_NE(fs::path(mapping_of(buffer_of(b)->ptr())), fs::canonical(p));  // the tensor's memory is its own
  // assigning into the tensor changes it and not the file
  std::vector<float> ones(v.size(), 1.0f);
  w.assign(Tensor::from_data(ones.data(), ones.size() * 4, dtypes::float32, {10, 100}, "CPU")).realize();
  fs::remove(p);
  EXPECT_EQ(tensor_bytes(w), tensor_bytes(Tensor::from_data(ones.data(), ones.size() * 4, dtypes::float32, {10, 100}, "CPU")));
  nn::safe_save({{"w", Tensor::from_data(v.data(), v.size() * 4, dtypes::float32, {10, 100}, "CPU")}}, p);
  Tensor again = nn::safe_load(p, "CPU").tensors.at(0).second;
  std::vector<float> back(v.size());
  again.to_data(back.data(), back.size() * 4);
  EXPECT_EQ(back, v);
}

TEST(State, SafeSaveRefusesBadInput) {
  TmpDir dir;
  Tensor t = Tensor::full({2}, 1, dtypes::float32, "CPU");
  auto code = [&](const nn::StateDict& sd, const nn::Metadata& m, const fs::path& p) {
    try {
      nn::safe_save(sd, p, m);
    } catch (const Error& e) {
      return e.code;
    }
    return TG_OK;
  };
  EXPECT_EQ(code({{"a", t}, {"a", t}}, {}, dir.p / "x"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(code({{"__metadata__", t}}, {}, dir.p / "x"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(code({{"\xff", t}}, {}, dir.p / "x"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(code({{"a", t}}, {{"k", "\xc0\x80", ""}}, dir.p / "x"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(code({{"a", t}}, {}, dir.p / "missing" / "x"), TG_ERROR_IO);
  EXPECT_TRUE(fs::is_empty(dir.p));
}

static std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A path that exists and isn't a regular file is written in place, never renamed over: as root, a save to /dev/null
// through a temporary file and a rename replaced the device node with the file. A FIFO gets the same bytes a file
// does, and stays a FIFO; a directory is refused
TEST(State, SafeSaveWritesSpecialFilesInPlace) {
  TmpDir dir;
  nn::StateDict sd{{"w", Tensor::arange(0, 6, 1, dtypes::float32, "CPU").reshape({2, 3})}};
  nn::safe_save(sd, dir.p / "plain.safetensors", {});
  std::string want = read_file(dir.p / "plain.safetensors");
  fs::path fifo = dir.p / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // the read end opened first (it doesn't wait for a writer), and read after the save: a small file fits in the pipe's
  // buffer, so no second thread, and nothing can hang whatever the save did
  int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(rfd, 0);
  bool saved = true;
  try {
    nn::safe_save(sd, fifo, {});
  } catch (const Error& e) {
    saved = false;
    ADD_FAILURE() << e.what();
  }
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(rfd, buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  ::close(rfd);
  ASSERT_TRUE(saved);
  ASSERT_LT(want.size(), 65536u);  // within a pipe's buffer
  EXPECT_EQ(got, want);
  EXPECT_TRUE(fs::is_fifo(fifo));
  try {  // no reader now: a named error, not a wait without end
    nn::safe_save(sd, fifo, {});
    ADD_FAILURE() << "a FIFO without a reader was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code, TG_ERROR_IO);
    EXPECT_NE(std::string(e.what()).find("no reader"), std::string::npos) << e.what();
  }
  try {
    nn::safe_save(sd, dir.p, {});
    ADD_FAILURE() << "a directory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code, TG_ERROR_IO);
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir.p)) entries += e.path().filename().string().find(".tmp.") == std::string::npos ? 1 : 100;
  EXPECT_EQ(entries, 2);  // plain.safetensors and the FIFO, no temporary left
}

TEST(State, SafetensorsHostileFiles) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const Bytes d8(8, 0);
  EXPECT_IO_ERROR(Bytes(5, 0), "too few");
  EXPECT_IO_ERROR(safetensors(ok, Bytes(7, 0)), "not inside");                                        // truncated data
  Bytes big = safetensors(ok, d8);
  big[7] = 0x7f;
  EXPECT_IO_ERROR(big, "header length");                                                             // giant header length
  EXPECT_IO_ERROR(safetensors(ok, Bytes(9, 0)), "belong to no tensor");                              // trailing bytes
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},})", d8), "invalid JSON");
  EXPECT_IO_ERROR(safetensors("{\"a\xff\":1}", d8), "not UTF-8");
  EXPECT_IO_ERROR(safetensors(R"({"__metadata__":{"x":"\ud800"}})"), "surrogate");
  EXPECT_IO_ERROR(safetensors(std::string(100, '[') + std::string(100, ']')), "nested deeper");
  EXPECT_IO_ERROR(safetensors("[]"), "not a JSON object");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{}})", d8), "duplicate key");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", Bytes(2, 0)), "unknown dtype");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8), "not an integer");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", d8), "not an integer");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}})", d8), "not an integer");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", d8), "overflows");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}})"), "overflows");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", d8), "not an integer");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", d8), "not inside");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8), "needs 12");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                              Bytes(4, 0)), "overlap");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8), "belong to no tensor");  // a hole
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", d8), "lacks data_offsets");
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", d8), "unknown field");
  EXPECT_IO_ERROR(safetensors(R"({"__metadata__":{"x":1}})"), "not a string");
  EXPECT_IO_ERROR(safetensors(R"({"a\u0000b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d8), "NUL");
  std::string many = "[1";
  for (int i = 0; i < 64; i++) many += ",1";
  many += "]";
  EXPECT_IO_ERROR(safetensors(R"({"a":{"dtype":"U8","shape":)" + many + R"(,"data_offsets":[0,1]}})", Bytes(1, 0)), "dims");
  // out of order in the header is fine: the data is covered exactly
  Bytes ordered = safetensors(R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", {7, 9});
  nn::Loaded l = nn::safe_load(nn::Bytes{ordered.data(), ordered.size(), "ordered"}, "CPU");
  ASSERT_EQ(l.tensors.size(), 2u);
  EXPECT_EQ(l.tensors[0].first, "b");
  EXPECT_EQ(tensor_bytes(l.tensors[0].second), Bytes{9});
}

TEST(State, GGUFDequantizesEveryType) {
  std::mt19937_64 rng(3);
  for (const QType& q : kQuant) {
    SCOPED_TRACE(q.name);
    const int nb = 4;
    Bytes raw(size_t(nb * q.bytes));
    for (auto& b : raw) b = uint8_t(rng());
    for (int i = 0; i < nb; i++)
      for (int o : q.scales) put_f16(&raw[size_t(i * q.bytes + o)], float(int(rng() % 4096) - 2048) / 1024);
    Bytes file = GGUF().tensor("w", {2, uint64_t(2 * q.blk)}, q.id, raw).bytes();
    nn::Loaded l = nn::gguf_load(nn::Bytes{file.data(), file.size(), "q.gguf"}, "CPU");
    ASSERT_EQ(l.tensors.size(), 1u);
    Tensor t = l.tensors[0].second;
    EXPECT_EQ(t.shape(), (Shape{2, 2 * q.blk}));
    ASSERT_EQ(t.dtype(), dtypes::float32);
    std::vector<float> got(size_t(nb * q.blk)), want(got.size());
    t.to_data(got.data(), got.size() * 4);
    for (int i = 0; i < nb; i++) ref_block(q.id, &raw[size_t(i * q.bytes)], &want[size_t(i * q.blk)]);
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-7) << "element " << i;
  }
}

// The LLM's decode orders (gguf_repack_decode): every block's values, its integer form's codes, scales and mins are the
// file's, bit for bit, through each reader of the new types, and the bytes lie where gguf.cpp says
TEST(State, DecodeOrdersKeepEveryValue) {
  struct Case {
    uint32_t type;
    int bytes, codes;
  };
  for (Case c : {Case{2, 18, 16}, Case{8, 34, 32}, Case{12, 144, 128}}) {
    SCOPED_TRACE("ggml type " + std::to_string(c.type));
    std::mt19937_64 rng(11 + c.type);
    const int nb = 6;
    Bytes raw(size_t(nb * c.bytes));
    for (auto& b : raw) b = uint8_t(rng());
    for (int i = 0; i < nb; i++)
      for (int o : {0, 2})
        if (o == 0 || c.type == 12) put_f16(&raw[size_t(i * c.bytes + o)], float(int(rng() % 4096) - 2048) / 1024);
    Tensor bl = Tensor::from_data(raw.data(), raw.size(), dtypes::uint8, {nb, c.bytes}, "CPU");
    ASSERT_TRUE(nn::gguf_has_decode_order(c.type));
    uint32_t dt = nn::kGGMLDecode | c.type;
    Tensor re = nn::gguf_repack_decode(bl, c.type).contiguous();
    EXPECT_EQ(re.shape(), (Shape{nb, c.bytes}));
    auto floats = [](const Tensor& t) {
      std::vector<float> v(size_t(t.numel()));
      t.cast(dtypes::float32).contiguous().to_data(v.data(), v.size() * 4);
      return v;
    };
    auto same = [&](const Tensor& a, const Tensor& b, const char* what) {
      SCOPED_TRACE(what);
      ASSERT_EQ(a.numel(), b.numel());
      std::vector<float> x = floats(a), y = floats(b);
      for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(std::memcmp(&x[i], &y[i], 4), 0) << "element " << i << ": " << x[i] << " vs " << y[i];
    };
    same(nn::gguf_dequantize(re, dt), nn::gguf_dequantize(bl, c.type), "values");
    same(nn::gguf_dequantize_blocked(re, dt).flatten(1), nn::gguf_dequantize(bl, c.type), "blocked values, flattened");
    // the integer forms, with the float16 scales read through a 16-bit view of the blocks and without one
    auto as_u16 = [&](Tensor t) {
      Bytes b(size_t(t.numel()));
      t.to_data(b.data(), b.size());
      return Tensor::from_data(b.data(), b.size(), dtypes::uint16, {nb, c.bytes / 2}, "CPU");
    };
    Tensor h_re = as_u16(re), h_bl = as_u16(bl);
    for (bool halves : {false, true}) {
      auto a = nn::gguf_int8_form(re, dt, halves ? &h_re : nullptr), b = nn::gguf_int8_form(bl, c.type, halves ? &h_bl : nullptr);
      ASSERT_TRUE(a && b);
      same(a->codes, b->codes, "codes");
      same(a->scale, b->scale, "scales");
      same(a->min, b->min, "mins");
      EXPECT_EQ(a->offset, b->offset);
    }
    EXPECT_TRUE(nn::gguf_has_int8_form(dt));
    // the layout itself: every block's codes first, then the rest of each block, as the file's
    std::vector<float> back = floats(re);
    int rest = c.bytes - c.codes;
    for (int i = 0; i < nb; i++) {
      if (c.type != 12) {  // Q4_0, Q8_0: each block's codes as the file's, its d after all the codes
        for (int b = 0; b < rest; b++)
          ASSERT_EQ(int(back[size_t(c.codes * nb + rest * i + b)]), int(raw[size_t(c.bytes * i + b)])) << "block " << i << " byte " << b;
        for (int b = 0; b < c.codes; b++)
          ASSERT_EQ(int(back[size_t(c.codes * i + b)]), int(raw[size_t(c.bytes * i + rest + b)])) << "block " << i << " code byte " << b;
        continue;
      }
      // Q4_K: code e of sub-block j (e = 16r + 8h + 4 nibble + y) in byte 64h + 32r + 4j + y of the block's 128; d and
      // dmin as the file's
      for (int j = 0; j < 8; j++)
        for (int e = 0; e < 32; e++) {
          int r = e / 16, h = e / 8 % 2, nib = e / 4 % 2, y = e % 4;
          int file = raw[size_t(144 * i + 16 + 32 * (j / 2) + e)] >> (4 * (j % 2)) & 15;
          int ours = int(back[size_t(128 * i + 64 * h + 32 * r + 4 * j + y)]) >> (4 * nib) & 15;
          ASSERT_EQ(ours, file) << "block " << i << " sub-block " << j << " code " << e;
        }
      for (int b = 0; b < 4; b++)
        ASSERT_EQ(int(back[size_t(128 * nb + 16 * i + b)]), int(raw[size_t(144 * i + b)])) << "block " << i << " byte " << b;
    }
  }
  EXPECT_FALSE(nn::gguf_has_decode_order(14));
}

TEST(State, GGUFNativeTypesAndMetadata) {
  std::vector<float> f32{1.5f, -2, 3.25f, 0};
  Bytes raw32(16), raw16{0x00, 0x3c, 0x00, 0xc0}, rawbf{0x80, 0x3f, 0x40, 0xc0};  // f16 1, -2; bf16 1, -3
  std::memcpy(raw32.data(), f32.data(), 16);
  Bytes arr;
  put<uint32_t>(arr, 8), put<uint64_t>(arr, 2), GGUF::str(arr, "a\"b"), GGUF::str(arr, "c");
  Bytes nested;
  put<uint32_t>(nested, 9), put<uint64_t>(nested, 1), put<uint32_t>(nested, 6), put<uint64_t>(nested, 1), put<float>(nested, NAN);
  Bytes name;
  GGUF::str(name, "llama");
  GGUF g;
  g.version = 2, g.alignment = 64;
  g.key("general.architecture", 8, name).key("general.alignment", 4, val<uint32_t>(64)).key("i8", 1, val<int8_t>(-5));
  g.key("u64", 10, val<uint64_t>(UINT64_MAX)).key("f64", 12, val<double>(0.1)).key("b", 7, val<uint8_t>(1)).key("arr", 9, arr).key("nest", 9, nested);
  g.tensor("f32", {2, 2}, 0, raw32).tensor("f16", {2}, 1, raw16).tensor("bf16", {2}, 30, rawbf);
  Bytes file = g.bytes();
  nn::Loaded l = nn::gguf_load(nn::Bytes{file.data(), file.size(), "n.gguf"}, "CPU");
  std::vector<std::pair<std::string, std::string>> kv;
  for (auto& e : l.metadata) kv.emplace_back(e.key, e.json);
  EXPECT_EQ(kv, (std::vector<std::pair<std::string, std::string>>{{"general.architecture", "\"llama\""}, {"general.alignment", "64"}, {"i8", "-5"},
                                                                   {"u64", "18446744073709551615"}, {"f64", "0.10000000000000001"}, {"b", "true"},
                                                                   {"arr", "[\"a\\\"b\",\"c\"]"}, {"nest", "[[NaN]]"}}));
  EXPECT_EQ(l.metadata[0].value, "llama");
  ASSERT_EQ(l.tensors.size(), 3u);
  EXPECT_EQ(tensor_bytes(l.tensors[0].second), raw32);
  EXPECT_EQ(l.tensors[1].second.dtype(), dtypes::float16);
  EXPECT_EQ(tensor_bytes(l.tensors[1].second), raw16);
  EXPECT_EQ(l.tensors[2].second.dtype(), dtypes::bfloat16);
  EXPECT_EQ(tensor_bytes(l.tensors[2].second), rawbf);
}

TEST(State, GGUFHostileFiles) {
  Bytes q8(34, 1);
  Bytes good = GGUF().key("k", 8, [] { Bytes b; GGUF::str(b, "v"); return b; }()).tensor("w", {32}, 8, q8).bytes();
  EXPECT_EQ(load_error(good).first, TG_OK) << load_error(good).second;
  auto with = [&](size_t at, Bytes v) {
    Bytes b = good;
    std::copy(v.begin(), v.end(), b.begin() + long(at));
    return b;
  };
  // layout of `good`: magic 0, version 4, n_tensors 8, n_kv 16, key len 24, "k" 32, type 33, value len 37, "v" 45,
  // name len 46, "w" 54, n_dims 55, dim 59, type 67, offset 71, data at 96
  EXPECT_IO_ERROR(Bytes(good.begin(), good.begin() + 30), "can't fit");
  EXPECT_IO_ERROR(Bytes(good.begin(), good.begin() + 50), "runs past the end");
  EXPECT_IO_ERROR(Bytes(good.begin(), good.end() - 40), "past the end of the");
  EXPECT_IO_ERROR(with(4, val<uint32_t>(1)), "version 1");
  EXPECT_IO_ERROR(with(16, val<uint64_t>(UINT64_MAX)), "key/values can't fit");
  EXPECT_IO_ERROR(with(8, val<uint64_t>(1ull << 40)), "tensors can't fit");
  EXPECT_IO_ERROR(with(24, val<uint64_t>(UINT64_MAX)), "runs past the end");
  EXPECT_IO_ERROR(with(37, val<uint64_t>(1ull << 62)), "runs past the end");
  EXPECT_IO_ERROR(with(33, val<uint32_t>(13)), "unknown metadata value type 13");
  EXPECT_IO_ERROR(with(32, bytes_of("\xff")), "not UTF-8");
  EXPECT_IO_ERROR(with(67, val<uint32_t>(10)), "unknown or unsupported type 10");  // Q2_K
  EXPECT_IO_ERROR(with(55, val<uint32_t>(5)), "5 dims");
  EXPECT_IO_ERROR(with(59, val<uint64_t>(UINT64_MAX)), "dim 0");
  EXPECT_IO_ERROR(with(59, val<uint64_t>(16)), "not a multiple of Q8_0's block");
  EXPECT_IO_ERROR(with(71, val<uint64_t>(8)), "not a multiple of the alignment");
  EXPECT_IO_ERROR(with(71, val<uint64_t>(1ull << 40)), "past the end");
  Bytes arr;  // an array claiming 2^60 elements
  put<uint32_t>(arr, 0), put<uint64_t>(arr, 1ull << 60);
  EXPECT_IO_ERROR(GGUF().key("a", 9, arr).bytes(), "needs more than");
  Bytes deep;  // arrays nested 9 deep
  for (int i = 0; i < 9; i++) put<uint32_t>(deep, 9), put<uint64_t>(deep, 1);
  put<uint32_t>(deep, 0), put<uint64_t>(deep, 0);
  EXPECT_IO_ERROR(GGUF().key("a", 9, deep).bytes(), "nested deeper");
  EXPECT_IO_ERROR(GGUF().key("a", 4, val<uint32_t>(1)).key("a", 4, val<uint32_t>(2)).bytes(), "duplicate key 'a'");
  EXPECT_IO_ERROR(GGUF().tensor("w", {32}, 8, q8).tensor("w", {32}, 8, q8).bytes(), "duplicate tensor 'w'");
  EXPECT_IO_ERROR(GGUF().key("general.alignment", 4, val<uint32_t>(24)).bytes(), "not a power of two");
  EXPECT_IO_ERROR(GGUF().key("general.alignment", 5, val<int32_t>(32)).bytes(), "not a uint32");
  EXPECT_IO_ERROR(GGUF().tensor("w", {1ull << 32, 1ull << 32, 1ull << 32}, 0, {}).bytes(), "overflows");
  EXPECT_IO_ERROR(GGUF().tensor("a", {32}, 8, q8).tensor("b", {32}, 8, q8, 0).bytes(), "tensors 'a' and 'b' overlap");
}

TEST(State, CApi) {
  TmpDir dir;
  tg_state* s = tg_state_create();
  ASSERT_TRUE(s);
  float v[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  tg_tensor* t = tg_tensor_from_data(v, sizeof v, TG_FLOAT32, shape, 1, nullptr);
  ASSERT_EQ(tg_state_set(s, "w", t), TG_OK);
  ASSERT_EQ(tg_state_set(s, "w", t), TG_OK);  // replaces
  EXPECT_EQ(tg_state_count(s), 1);
  EXPECT_STREQ(tg_state_name(s, 0), "w");
  EXPECT_EQ(tg_state_name(s, 1), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  tg_dtype dt;
  int64_t got[4], nd = 0;
  EXPECT_EQ(tg_state_info(s, "w", &dt, nullptr, 0, &nd), TG_OK);
  EXPECT_EQ(nd, 1);
  EXPECT_EQ(tg_state_info(s, "w", &dt, got, 4, &nd), TG_OK);
  EXPECT_EQ(dt, TG_FLOAT32);
  EXPECT_EQ(got[0], 3);
  EXPECT_EQ(tg_state_info(s, "nope", &dt, got, 4, &nd), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("nope"), std::string::npos);
  ASSERT_EQ(tg_state_metadata_set(s, "epoch", "3"), TG_OK);
  std::string path = (dir.p / "s.safetensors").string();
  ASSERT_EQ(tg_state_save(s, path.c_str()), TG_OK);
  tg_state* l = tg_state_load(path.c_str(), nullptr);
  ASSERT_TRUE(l) << tg_last_error_message();
  EXPECT_EQ(tg_state_metadata_count(l), 1);
  EXPECT_STREQ(tg_state_metadata_key(l, 0), "epoch");
  EXPECT_STREQ(tg_state_metadata_value(l, 0), "3");
  EXPECT_STREQ(tg_state_metadata_json(l, 0), "\"3\"");
  tg_tensor* w = tg_state_get(l, "w");
  float out[3];
  ASSERT_EQ(tg_tensor_to_data(w, out, sizeof out), TG_OK);
  EXPECT_EQ(std::vector<float>(out, out + 3), std::vector<float>(v, v + 3));
  EXPECT_EQ(tg_state_load((dir.p / "missing").c_str(), nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_IO);
  EXPECT_EQ(tg_state_load_memory("GGUF", 4, "mem", nullptr), nullptr);
  EXPECT_NE(std::string(tg_last_error_message()).find("mem: GGUF"), std::string::npos);
  EXPECT_EQ(tg_state_count(nullptr), -1);
  tg_tensor_release(w);
  tg_tensor_release(t);
  tg_state_release(l);
  tg_state_release(s);
  EXPECT_EQ(tg_state_count(s), -1);  // released
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_state_set(s, "x", nullptr), TG_ERROR_INVALID_ARGUMENT);
}

// every input a fuzzer crashed on once: an error now, never a crash
TEST(State, FuzzRegressions) {
  const char* src = std::getenv("TG_TEST_SRC");
  fs::path root = fs::path(src ? src : TG_SOURCE_DIR) / "fuzz" / "regressions";
  ASSERT_TRUE(fs::is_directory(root)) << root << " is absent";
  for (auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    tg_state* s = tg_state_load(e.path().c_str(), nullptr);
    EXPECT_EQ(s, nullptr) << e.path();
    EXPECT_EQ(tg_last_error(), TG_ERROR_IO) << e.path() << ": " << tg_last_error_message();
    tg_state_release(s);
  }
}
