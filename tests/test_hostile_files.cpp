// Hostile files and hostile bytes at the readers' boundary (issue 26): a model file truncated or rewritten by another
// process after it was loaded, paths that are not regular files (named pipes, devices, directories), gzip bombs in IDX
// files, dims whose running product hides an overflow behind a 0, tensor names tg_state_set would refuse, NUL bytes in
// GGUF strings, and BOOL bytes other than 0 and 1 from every way user bytes enter a tensor.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "api/dlpack.h"
#include "capi_handles.h"
#include "nn/state.h"
#include "rss.h"
#include "tinygrad.h"

namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;

void write_bytes(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), long(b.size()));
}
template <class V>
void put_le(Bytes& b, V v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof(V));
}
void put_be32(Bytes& b, uint32_t v) {
  for (int i = 3; i >= 0; i--) b.push_back(uint8_t(v >> (8 * i)));
}
Bytes safetensors_file(const std::string& header, const Bytes& data) {
  Bytes b;
  put_le<uint64_t>(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}
// a GGUF v3 file: key/values and tensor infos already serialized, counts given, data after them 32-aligned
struct Gguf {
  Bytes kv, infos, data;
  uint64_t n_kv = 0, n_tensors = 0;
  static void str(Bytes& b, const std::string& s) { put_le<uint64_t>(b, s.size()), b.insert(b.end(), s.begin(), s.end()); }
  Gguf& key(const std::string& k, uint32_t type, const Bytes& v) {
    str(kv, k), put_le<uint32_t>(kv, type), kv.insert(kv.end(), v.begin(), v.end()), n_kv++;
    return *this;
  }
  // dims as ggml writes them (innermost first)
  Gguf& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, const Bytes& raw) {
    str(infos, name), put_le<uint32_t>(infos, uint32_t(dims.size()));
    for (uint64_t d : dims) put_le<uint64_t>(infos, d);
    put_le<uint32_t>(infos, type), put_le<uint64_t>(infos, data.size()), n_tensors++;
    data.insert(data.end(), raw.begin(), raw.end());
    data.resize((data.size() + 31) / 32 * 32);
    return *this;
  }
  Bytes bytes() const {
    Bytes b = {'G', 'G', 'U', 'F'};
    put_le<uint32_t>(b, 3), put_le<uint64_t>(b, n_tensors), put_le<uint64_t>(b, n_kv);
    b.insert(b.end(), kv.begin(), kv.end());
    b.insert(b.end(), infos.begin(), infos.end());
    b.resize((b.size() + 31) / 32 * 32);
    b.insert(b.end(), data.begin(), data.end());
    return b;
  }
};
Bytes idx_file(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) put_be32(b, d);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}
// one gzip member of `b` (gzread reads concatenated members as one stream)
Bytes gzip_member(const Bytes& b) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&z, uLong(b.size())));
  z.next_in = const_cast<Bytef*>(b.data()), z.avail_in = uInt(b.size()), z.next_out = out.data(), z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<float> floats_of(tg_tensor* t) {
  std::vector<float> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * 4), TG_OK) << tg_last_error_message();
  return v;
}
template <class V>
std::vector<V> values_of(tg_tensor* t) {
  std::vector<V> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * sizeof(V)), TG_OK) << tg_last_error_message();
  return v;
}
void expect_error(tg_status code, const std::vector<std::string>& needles) {
  EXPECT_EQ(tg_last_error(), code) << tg_last_error_message();
  std::string msg = tg_last_error_message();
  for (auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "wanted '" << n << "' in: " << msg;
}

// A safetensors file of one float32 tensor "w" of n ones, its data starting 8-byte aligned.
fs::path ones_file(const fs::path& dir, size_t n) {
  std::string h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(n) + "],\"data_offsets\":[0," + std::to_string(4 * n) + "]}}";
  h.append((8 - h.size() % 8) % 8, ' ');
  Bytes data;
  for (size_t i = 0; i < n; i++) put_le<float>(data, 1.0f);
  fs::path p = dir / "w.safetensors";
  write_bytes(p, safetensors_file(h, data));
  return p;
}

// ---- 1. the file changes after the load ----------------------------------------------------------------------------

// Another process truncates the file after the load: the tensor was read into its own memory, so reading it is its
// values, not a SIGBUS (with the file mapped in place, this test dies).
TEST(HostileFiles, SafetensorsTruncatedAfterLoad) {
  TmpDir dir;
  fs::path p = ones_file(dir.p, 4096);
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    S s(tg_state_load(p.c_str(), dev));
    ASSERT_TRUE(s.p) << tg_last_error_message();
    ASSERT_EQ(::truncate(p.c_str(), 0), 0);
    T w(tg_state_get(s, "w"));
    EXPECT_EQ(floats_of(w), std::vector<float>(4096, 1.0f));
    T y(tg_tensor_add_scalar(w, 1));
    EXPECT_EQ(floats_of(y), std::vector<float>(4096, 2.0f));
    p = ones_file(dir.p, 4096);
  }
}

// Another process rewrites the file in place (same size, new bytes): a loaded tensor, realized or not, keeps the values
// it was loaded with (a private mapping keeps our writes out of the file, not the file's out of us).
TEST(HostileFiles, SafetensorsRewrittenInPlaceAfterLoad) {
  TmpDir dir;
  fs::path p = ones_file(dir.p, 1024);
  S s(tg_state_load(p.c_str(), "CPU"));
  ASSERT_TRUE(s.p) << tg_last_error_message();
  T w(tg_state_get(s, "w"));
  T before(tg_tensor_mul_scalar(w, 1));
  EXPECT_EQ(floats_of(before), std::vector<float>(1024, 1.0f));
  uint64_t hl = 0;
  {
    std::ifstream in(p, std::ios::binary);
    in.read(reinterpret_cast<char*>(&hl), 8);
  }
  int fd = ::open(p.c_str(), O_WRONLY);  // no O_TRUNC: the same inode, the same pages
  ASSERT_GE(fd, 0);
  std::vector<float> sevens(1024, 7.0f);
  ASSERT_EQ(::pwrite(fd, sevens.data(), sevens.size() * 4, off_t(8 + hl)), ssize_t(sevens.size() * 4));
  ::close(fd);
  EXPECT_EQ(floats_of(w), std::vector<float>(1024, 1.0f));
  T y(tg_tensor_mul_scalar(w, 2));
  EXPECT_EQ(floats_of(y), std::vector<float>(1024, 2.0f));
}

// The file shrinks between the open and the read of the data (another process truncating it during the load): an
// error naming the file, not a SIGBUS and not a tensor of stale bytes.
TEST(HostileFiles, SafetensorsTruncatedDuringLoad) {
  TmpDir dir;
  fs::path p = ones_file(dir.p, 4096);
  tg::nn::Bytes b = tg::nn::open_file(p, "test");
  ASSERT_EQ(::truncate(p.c_str(), 200), 0);
  try {
    tg::nn::safe_load(b, "CPU");
    ADD_FAILURE() << "loaded a truncated file";
  } catch (const tg::Error& e) {
    EXPECT_EQ(e.code, TG_ERROR_IO);
    EXPECT_NE(std::string(e.what()).find("truncated while being read"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}

// A GGUF whose header is far longer than the first read of a file (a 300 KB string, a long array): read from the file
// it parses as it does from memory.
TEST(HostileFiles, GgufLongHeaderFromAFile) {
  TmpDir dir;
  Bytes v, arr;
  Gguf::str(v, std::string(300000, 'x'));
  put_le<uint32_t>(arr, 4), put_le<uint64_t>(arr, 50000);
  for (uint32_t i = 0; i < 50000; i++) put_le<uint32_t>(arr, i);
  Bytes w;
  for (int i = 0; i < 8; i++) put_le<float>(w, float(i));
  Bytes g = Gguf().key("long", 8, v).key("arr", 9, arr).tensor("w", {8}, 0, w).bytes();
  write_bytes(dir.p / "long.gguf", g);
  S s(tg_state_load((dir.p / "long.gguf").c_str(), nullptr));
  ASSERT_TRUE(s.p) << tg_last_error_message();
  EXPECT_EQ(std::string(tg_state_metadata_value(s, 0)), std::string(300000, 'x'));
  T t(tg_state_get(s, "w"));
  EXPECT_EQ(floats_of(t), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  // cut inside the array (it spans bytes ~300 K to ~500 K): an error, from the file as from memory
  ASSERT_GT(g.size(), 500000u);
  write_bytes(dir.p / "cut.gguf", Bytes(g.begin(), g.begin() + 400000));
  EXPECT_EQ(tg_state_load((dir.p / "cut.gguf").c_str(), nullptr), nullptr);
  expect_error(TG_ERROR_IO, {"cut.gguf", "needs more than"});
}

// ---- 7. paths that are not regular files ---------------------------------------------------------------------------

// `call` must come back on its own, with TG_ERROR_IO naming the path and saying it is not a regular file. A call that
// blocks (an open of a FIFO waits for a writer) is a failure; the test then opens the FIFO's other end to let it go.
void expect_refused_fast(const std::function<bool()>& call, const fs::path& p, const fs::path& fifo, const char* fn) {
  auto fut = std::async(std::launch::async, [&] {
    bool ok = call();
    return std::make_pair(ok, std::make_pair(tg_last_error(), std::string(tg_last_error_message())));
  });
  if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << p << ": the call blocked";
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // a reader is waiting, so this opens; closing it is EOF
    if (w >= 0) ::close(w);
  }
  auto [ok, err] = fut.get();
  EXPECT_FALSE(ok) << p;
  EXPECT_EQ(err.first, TG_ERROR_IO) << err.second;
  EXPECT_NE(err.second.find("not a regular file"), std::string::npos) << err.second;
  EXPECT_NE(err.second.find(p.string()), std::string::npos) << err.second;
  EXPECT_EQ(err.second.rfind(fn, 0), 0u) << err.second;
}

TEST(HostileFiles, NonRegularPathsAreRefusedWithoutBlocking) {
  TmpDir dir;
  fs::path fifo = dir.p / "pipe", sub = dir.p / "sub";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(sub);
  for (fs::path p : {fifo, sub, fs::path("/dev/zero")}) {
    SCOPED_TRACE(p.string());
    expect_refused_fast([&] {
      tg_state* s = tg_state_load(p.c_str(), nullptr);
      return tg_state_release(s), s != nullptr;
    }, p, fifo, "state_load");
    expect_refused_fast([&] {
      tg_tensor* t = tg_tensor_from_idx(p.c_str(), nullptr);
      return tg_tensor_release(t), t != nullptr;
    }, p, fifo, "idx");
  }
  // mnist: one of its files (the .gz it looks for first) a FIFO
  fs::path mn = dir.p / "mnist";
  fs::create_directory(mn);
  fs::path gz = mn / "train-images-idx3-ubyte.gz";
  ASSERT_EQ(::mkfifo(gz.c_str(), 0600), 0);
  tg_tensor *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  expect_refused_fast([&] { return tg_dataset_mnist(mn.c_str(), nullptr, &a, &b, &c, &d) == TG_OK; }, gz, gz, "idx");
}

// ---- 12. IDX .gz: the header first, then only what it declares ------------------------------------------------------

// A gzip whose IDX header declares one uint8 but which inflates to hundreds of MB: refused as malformed once a little
// past the declared byte is read, with resident memory barely moving (it was inflated whole before).
TEST(HostileFiles, IdxGzipBombIsMalformedNotBig) {
  TmpDir dir;
  Bytes head = idx_file(0x08, {1}, {42});
  Bytes zeros(64 << 20, 0), zgz = gzip_member(zeros), file = gzip_member(head);
  for (int i = 0; i < 8; i++) file.insert(file.end(), zgz.begin(), zgz.end());  // 512 MiB inflated from ~0.5 MB
  fs::path p = dir.p / "bomb.gz";
  write_bytes(p, file);
  Bytes().swap(zeros);
  size_t rss0 = rss_bytes();
  auto t0 = std::chrono::steady_clock::now();
  T t(tg_tensor_from_idx(p.c_str(), nullptr));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(t.p, nullptr);
  expect_error(TG_ERROR_IO, {"bomb.gz", "more than", "need 1"});
  EXPECT_LT(rss_bytes(), rss0 + (32u << 20)) << "resident memory grew by " << (rss_bytes() - rss0) / 1048576 << " MiB";
  EXPECT_LT(s, 2.0);
  // a few bytes declaring 2^31 elements hold 10: an error after reading them, not a 2 GiB allocation
  write_bytes(dir.p / "liar.gz", gzip_member(idx_file(0x08, {0x80000000u}, Bytes(10, 1))));
  rss0 = rss_bytes();
  T l(tg_tensor_from_idx((dir.p / "liar.gz").c_str(), nullptr));
  EXPECT_EQ(l.p, nullptr);
  expect_error(TG_ERROR_IO, {"liar.gz", "holds 10 data bytes", "need 2147483648"});
  EXPECT_LT(rss_bytes(), rss0 + (32u << 20));
  // and a valid one still loads, with exactly its declared bytes
  write_bytes(dir.p / "ok.gz", gzip_member(idx_file(0x0C, {2}, {0, 0, 0, 5, 0xFF, 0xFF, 0xFF, 0xFE})));
  T ok(tg_tensor_from_idx((dir.p / "ok.gz").c_str(), nullptr));
  ASSERT_TRUE(ok.p) << tg_last_error_message();
  EXPECT_EQ(values_of<int32_t>(ok), (std::vector<int32_t>{5, -2}));
}

// ---- 13. a 0 dim hides no overflow ---------------------------------------------------------------------------------

TEST(HostileFiles, ZeroDimDoesNotHideOverflowingDims) {
  TmpDir dir;
  uint64_t big = uint64_t(1) << 62;
  // GGUF (0, 2^62, 2^62) F32 and the same with the 0 last
  for (auto dims : {std::vector<uint64_t>{0, big, big}, std::vector<uint64_t>{big, big, 0}}) {
    write_bytes(dir.p / "z.gguf", Gguf().tensor("blk.0.w", dims, 0, {}).bytes());
    S s(tg_state_load((dir.p / "z.gguf").c_str(), nullptr));
    EXPECT_EQ(s.p, nullptr);
    expect_error(TG_ERROR_IO, {"z.gguf", "blk.0.w", "too large"});
  }
  // IDX: (0, 2^32-1, 2^32-1, 2^32-1) float64
  write_bytes(dir.p / "z.idx", idx_file(0x0E, {0, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {}));
  T t(tg_tensor_from_idx((dir.p / "z.idx").c_str(), nullptr));
  EXPECT_EQ(t.p, nullptr);
  expect_error(TG_ERROR_IO, {"z.idx", "too large"});
  // safetensors had it right already, through the same check now
  std::string h = "{\"e\":{\"dtype\":\"F32\",\"shape\":[0," + std::to_string(big) + "," + std::to_string(big) + "],\"data_offsets\":[0,0]}}";
  write_bytes(dir.p / "z.safetensors", safetensors_file(h, {}));
  S st(tg_state_load((dir.p / "z.safetensors").c_str(), nullptr));
  EXPECT_EQ(st.p, nullptr);
  expect_error(TG_ERROR_IO, {"z.safetensors", "'e'", "too large"});
  // a 0 dim with sane others is still an empty tensor
  write_bytes(dir.p / "ok.gguf", Gguf().tensor("e", {4, 0}, 0, {}).bytes());
  S ok(tg_state_load((dir.p / "ok.gguf").c_str(), nullptr));
  ASSERT_TRUE(ok.p) << tg_last_error_message();
}

// ---- 15. names and strings ---------------------------------------------------------------------------------------

TEST(HostileFiles, NamesTgStateSetRefusesAreRefusedOnLoad) {
  Bytes st = safetensors_file("{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", {7});
  EXPECT_EQ(tg_state_load_memory(st.data(), st.size(), "empty.safetensors", nullptr), nullptr);
  expect_error(TG_ERROR_IO, {"empty.safetensors", "name is empty"});
  Bytes gg = Gguf().tensor("", {1}, 24, {7}).bytes();
  EXPECT_EQ(tg_state_load_memory(gg.data(), gg.size(), "empty.gguf", nullptr), nullptr);
  expect_error(TG_ERROR_IO, {"empty.gguf", "name is empty"});
  // the rule on load is tg_state_set's
  S s(tg_state_create());
  T x(tg_tensor_zeros(std::vector<int64_t>{1}.data(), 1, TG_UINT8, nullptr));
  EXPECT_EQ(tg_state_set(s, "", x), TG_ERROR_INVALID_ARGUMENT);
}

// A GGUF string value with a NUL inside would come back cut at the NUL from tg_state_metadata_value (a C string with
// no length): refused, naming the key. Inside an array the strings come back whole, as JSON (\u0000).
TEST(HostileFiles, GgufStringWithNulIsRefusedNamingTheKey) {
  Bytes v;
  Gguf::str(v, std::string("abc\0def", 7));
  Bytes g = Gguf().key("tokenizer.chat_template", 8, v).bytes();
  EXPECT_EQ(tg_state_load_memory(g.data(), g.size(), "nul.gguf", nullptr), nullptr);
  expect_error(TG_ERROR_IO, {"nul.gguf", "tokenizer.chat_template", "NUL"});
  Bytes arr;
  put_le<uint32_t>(arr, 8), put_le<uint64_t>(arr, 1), Gguf::str(arr, std::string("a\0b", 3));
  Bytes ga = Gguf().key("arr", 9, arr).bytes();
  S s(tg_state_load_memory(ga.data(), ga.size(), "arr.gguf", nullptr));
  ASSERT_TRUE(s.p) << tg_last_error_message();
  EXPECT_STREQ(tg_state_metadata_json(s, 0), "[\"a\\u0000b\"]");
  // safetensors' __metadata__ the same way (JSON can spell a NUL)
  std::string h = "{\"__metadata__\":{\"k\":\"a\\u0000b\"}}";
  h.append((8 - h.size() % 8) % 8, ' ');
  Bytes st = safetensors_file(h, {});
  EXPECT_EQ(tg_state_load_memory(st.data(), st.size(), "nul.safetensors", nullptr), nullptr);
  expect_error(TG_ERROR_IO, {"nul.safetensors", "'k'", "NUL"});
}

// ---- 11. BOOL bytes other than 0 and 1 -----------------------------------------------------------------------------

// cast to int32 and logical_not of a bool tensor made from bytes {0, 1, 2, 255}: {0, 1, 1, 1} and {1, 0, 0, 0} on
// every CPU device (CPU:CLANG's _Bool gave 2 and 3)
void expect_canonical(tg_tensor* b, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_NE(b, nullptr) << tg_last_error_message();
  T i(tg_tensor_cast(b, TG_INT32)), n(tg_tensor_logical_not(b)), ni(tg_tensor_cast(n, TG_INT32));
  EXPECT_EQ(values_of<int32_t>(i), (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(values_of<int32_t>(ni), (std::vector<int32_t>{1, 0, 0, 0}));
  EXPECT_EQ(values_of<uint8_t>(b), (Bytes{0, 1, 1, 1}));
}

TEST(HostileFiles, BoolBytesAreCanonicalFromEveryBoundary) {
  const Bytes raw = {0, 1, 2, 255};
  int64_t shape = 4;
  TmpDir dir;
  Bytes st = safetensors_file("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]}}  ", raw);
  write_bytes(dir.p / "b.safetensors", st);
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    T a(tg_tensor_from_data(raw.data(), raw.size(), TG_BOOL, &shape, 1, dev));
    expect_canonical(a, "from_data");
    S f(tg_state_load((dir.p / "b.safetensors").c_str(), dev));
    ASSERT_TRUE(f.p) << tg_last_error_message();
    T fb(tg_state_get(f, "b"));
    expect_canonical(fb, "safetensors file");
    S m(tg_state_load_memory(st.data(), st.size(), "b", dev));
    ASSERT_TRUE(m.p) << tg_last_error_message();
    T mb(tg_state_get(m, "b"));
    expect_canonical(mb, "safetensors in memory");
  }
}

// DLPack: compact bool memory holding a 2 would be shared as is; it is copied with the bytes made 0/1 instead (the
// producer's memory is let go at once), while canonical bool memory is still shared without a copy.
struct DlSource {
  Bytes bytes;
  int64_t shape;
  DLManagedTensor m{};
  int deletes = 0;
  explicit DlSource(Bytes b) : bytes(std::move(b)), shape(int64_t(bytes.size())) {
    m.dl_tensor = DLTensor{bytes.data(), DLDevice{kDLCPU, 0}, 1, DLDataType{kDLBool, 8, 1}, &shape, nullptr, 0};
    m.manager_ctx = this;
    m.deleter = [](DLManagedTensor* t) { static_cast<DlSource*>(t->manager_ctx)->deletes++; };
  }
};

// (The import lands on the default CPU device; moved to CPU:CLANG its bytes go as they are, so CLANG's kernels see
// what the import stored.)
TEST(HostileFiles, DlpackBoolBytesAreCanonical) {
  DlSource bad({0, 1, 2, 255});
  {
    T t(tg_tensor_from_dlpack(&bad.m));
    EXPECT_EQ(bad.deletes, 1) << "copied: the producer's memory is let go at once";
    expect_canonical(t, "dlpack");
    T c(tg_tensor_to(t, "CPU:CLANG"));
    expect_canonical(c, "dlpack, then CPU:CLANG");
    EXPECT_EQ(bad.bytes, (Bytes{0, 1, 2, 255})) << "the producer's memory is not written";
  }
  DlSource good({0, 1, 1, 1});
  {
    T t(tg_tensor_from_dlpack(&good.m));
    expect_canonical(t, "dlpack canonical");
    EXPECT_EQ(good.deletes, 0) << "canonical bools are still shared";
  }
  EXPECT_EQ(good.deletes, 1);
}

}  // namespace
