// safetensors load/save, the file reading every reader uses, and the small strict JSON parser of safetensors headers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "nn/state.h"

namespace tg::nn {

bool valid_utf8(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n;) {
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;  // 0x80-0xC1: continuation or overlong lead
    if (!len || c > 0xF4 || n - i < len) return false;
    uint32_t cp = c & (0x3F >> (len - 1));
    for (size_t j = 1; j < len; j++) {
      if ((p[i + j] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (p[i + j] & 0x3F);
    }
    // overlong forms, UTF-16 surrogates, past U+10FFFF
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

std::string json_quote(const std::string& s, const char* what) {
  TG_CHECK(valid_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size()), TG_ERROR_INVALID_ARGUMENT, std::string(what) + " is not UTF-8");
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += char(c);
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else if (c < 0x20) o += strformat("\\u%04x", c);
    else o += char(c);
  }
  return o + '"';
}

struct FileReader {
  int fd;
  std::string path;
  std::vector<uint8_t> prefix;  // bytes [0, prefix.size()) of the file, as far as a header parser has asked
  FileReader(int f, std::string p) : fd(f), path(std::move(p)) {}
  ~FileReader() { ::close(fd); }
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
};

int open_regular(const std::string& path, const char* what) {
  std::string why;
  int fd = tg::open_regular(path, why);
  TG_CHECK(fd >= 0, TG_ERROR_IO, strformat("%s: '%s': %s", what, path.c_str(), why.c_str()));
  return fd;
}

Bytes open_file(const std::string& path, const char* what) {
  auto f = std::make_shared<FileReader>(open_regular(path, what), path);
  int fd = f->fd;
  struct stat st;
  TG_CHECK(::fstat(fd, &st) == 0, TG_ERROR_IO, strformat("%s: '%s': %s", what, path.c_str(), std::strerror(errno)));
  return Bytes{nullptr, size_t(st.st_size), path, std::move(f)};
}

void Bytes::read(uint64_t off, void* dst, size_t len) const {
  if (p) return (void)(len && std::memcpy(dst, p + off, len));
  for (auto* d = static_cast<uint8_t*>(dst); len;) {
    ssize_t r = ::pread(file->fd, d, std::min<size_t>(len, size_t(1) << 30), off_t(off));
    if (r < 0 && errno == EINTR) continue;
    TG_CHECK(r >= 0, TG_ERROR_IO, strformat("%s: read failed: %s", name.c_str(), std::strerror(errno)));
    TG_CHECK(r > 0, TG_ERROR_IO,
             strformat("%s: the file ended at byte %llu, before the %zu bytes it had when opened: it was truncated while being read", name.c_str(),
                       (unsigned long long)off, n));
    d += r, off += uint64_t(r), len -= size_t(r);
  }
}

const uint8_t* Bytes::at(uint64_t off, uint64_t len) const {
  if (p) return p + off;
  std::vector<uint8_t>& pre = file->prefix;
  if (off + len > pre.size()) {  // grown geometrically (headers are read front to back), never past the file
    size_t want = std::min<size_t>(n, std::max<size_t>(size_t(off + len), std::max<size_t>(pre.size() * 2, 1 << 16)));
    size_t had = pre.size();
    pre.resize(want);
    try {
      read(had, pre.data() + had, want - had);
    } catch (...) {
      pre.resize(had);
      throw;
    }
  }
  return pre.data() + off;
}

Tensor tensor_from_bytes(const Bytes& b, uint64_t off, size_t nbytes, DType dtype, const Shape& shape, const std::string& device) {
  if (b.p) return Tensor::from_data(b.p + off, nbytes, dtype, shape, device);
  check_shape(shape, dtype, "from_data");
  TG_CHECK(nbytes == size_t(tg::prod(shape)) * size_t(dtype.itemsize()), TG_ERROR_INTERNAL, "tensor_from_bytes: the size doesn't match the shape");
  auto buf = std::make_shared<Buffer>(device, dtype, tg::prod(shape));
  if (nbytes) {
    auto fill = [&](uint8_t* dst) {
      b.read(off, dst, nbytes);
      if (dtype == dtypes::bool_)
        for (size_t i = 0; i < nbytes; i++) dst[i] = dst[i] != 0;
    };
    if (get_device(device).host_memory()) fill(static_cast<uint8_t*>(buf->ptr()));
    else {
      std::vector<uint8_t> host(nbytes);
      fill(host.data());
      buf->copyin(host.data(), nbytes);
    }
  }
  Tensor t(buffer_uop(std::move(buf)), device);
  return t.shape() == shape ? t : t.reshape(shape);
}

uint64_t checked_nbytes(const std::vector<uint64_t>& dims, uint64_t itemsize, const std::string& file, const char* format,
                        const std::string& tensor) {
  uint64_t nbytes = itemsize;
  bool zero = false;
  for (size_t i = 0; i < dims.size(); i++) {
    uint64_t d = dims[i];
    if (d > uint64_t(INT64_MAX))
      fail(TG_ERROR_IO,
           strformat("%s: %s: tensor '%s': dim %zu is %llu, past int64", file.c_str(), format, tensor.c_str(), i, (unsigned long long)d));
    if (d == 0) zero = true;
    else if (__builtin_mul_overflow(nbytes, d, &nbytes) || nbytes > uint64_t(INT64_MAX))
      fail(TG_ERROR_IO, strformat("%s: %s: tensor '%s': the shape is too large: its byte size overflows int64 (a 0 dim doesn't excuse the others)",
                                  file.c_str(), format, tensor.c_str()));
  }
  return zero ? 0 : nbytes;
}

void check_tensor_name(const std::string& name, const std::string& file, const char* format) {
  if (name.empty()) fail(TG_ERROR_IO, strformat("%s: %s: a tensor name is empty (tg_state_set refuses it too)", file.c_str(), format));
  if (name.find('\0') != std::string::npos)
    fail(TG_ERROR_IO, strformat("%s: %s: tensor name '%s' holds a NUL character", file.c_str(), format, name.c_str()));
}

namespace {

// ---- JSON (RFC 8259), strict: UTF-8, no duplicate keys, no trailing commas, nesting limited ----
struct Json {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  std::string s;  // Str: the string; Num: the number as written; Bool: "true" or "false"
  std::vector<Json> items;
  struct Member;
  std::vector<Member> members;
  const Json* get(const std::string& k) const;
  std::string dump() const;
};
struct Json::Member {
  std::string key;
  Json value;
};
const Json* Json::get(const std::string& k) const {
  for (auto& [key, v] : members)
    if (key == k) return &v;
  return nullptr;
}
std::string Json::dump() const {
  switch (kind) {
    case Null: return "null";
    case Str: return json_quote(s, "a string");
    case Arr: {
      std::string o = "[";
      for (auto& v : items) o += (o.size() > 1 ? "," : "") + v.dump();
      return o + "]";
    }
    case Obj: {
      std::string o = "{";
      for (auto& [k, v] : members) o += (o.size() > 1 ? "," : "") + json_quote(k, "a key") + ":" + v.dump();
      return o + "}";
    }
    default: return s;
  }
}

class JsonParser {
 public:
  JsonParser(const char* p, size_t n, const std::string& file) : p_(p), end_(p + n), begin_(p), file_(file) {}
  Json document() {
    Json v = value(0);
    ws();
    if (p_ != end_) bad("text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;
  const char *p_, *end_, *begin_;
  const std::string& file_;
  [[noreturn]] void bad(const std::string& what) const {
    fail(TG_ERROR_IO, strformat("%s: safetensors header: invalid JSON: %s at byte %zu", file_.c_str(), what.c_str(), size_t(p_ - begin_)));
  }
  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) p_++;
  }
  bool eat(char c) {
    ws();
    if (p_ != end_ && *p_ == c) return p_++, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) bad(strformat("'%c' expected", c));
  }
  bool word(const char* w) {
    size_t n = std::strlen(w);
    if (size_t(end_ - p_) < n || std::memcmp(p_, w, n)) return false;
    return p_ += n, true;
  }
  Json value(int depth) {
    if (depth > kMaxDepth) bad(strformat("nested deeper than %d", kMaxDepth));
    ws();
    if (p_ == end_) bad("a value expected");
    Json v;
    if (*p_ == '{') {
      p_++, v.kind = Json::Obj;
      std::unordered_set<std::string> keys;
      if (eat('}')) return v;
      do {
        ws();
        std::string k = string();
        if (!keys.insert(k).second) bad("duplicate key \"" + k + "\"");
        expect(':');
        v.members.push_back({std::move(k), value(depth + 1)});
      } while (eat(','));
      expect('}');
    } else if (*p_ == '[') {
      p_++, v.kind = Json::Arr;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (*p_ == '"') v.kind = Json::Str, v.s = string();
    else if (word("true")) v.kind = Json::Bool, v.s = "true";
    else if (word("false")) v.kind = Json::Bool, v.s = "false";
    else if (word("null")) v.kind = Json::Null;
    else v.kind = Json::Num, v.s = number();
    return v;
  }
  std::string number() {
    const char* s = p_;
    auto digits = [&] {
      const char* d = p_;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') p_++;
      if (p_ == d) bad("a digit expected");
    };
    if (p_ != end_ && *p_ == '-') p_++;
    if (p_ != end_ && *p_ == '0') p_++;
    else digits();
    if (p_ != end_ && *p_ == '.') p_++, digits();
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      p_++;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) p_++;
      digits();
    }
    return std::string(s, p_);
  }
  uint32_t hex4() {
    if (end_ - p_ < 4) bad("a truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++, p_++) {
      char c = *p_;
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) bad("a bad \\u escape");
      v = v << 4 | uint32_t(d);
    }
    return v;
  }
  std::string string() {  // the header was checked to be UTF-8 as a whole, so raw bytes pass through
    if (p_ == end_ || *p_ != '"') bad("a string expected");
    p_++;
    std::string o;
    while (true) {
      if (p_ == end_) bad("an unterminated string");
      unsigned char c = static_cast<unsigned char>(*p_++);
      if (c == '"') return o;
      if (c < 0x20) bad("a control character in a string");
      if (c != '\\') {
        o += char(c);
        continue;
      }
      if (p_ == end_) bad("an unterminated escape");
      switch (char e = *p_++) {
        case '"': case '\\': case '/': o += e; break;
        case 'b': o += '\b'; break;
        case 'f': o += '\f'; break;
        case 'n': o += '\n'; break;
        case 'r': o += '\r'; break;
        case 't': o += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) bad("a lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate must pair with a low one
            if (!word("\\u")) bad("a lone high surrogate");
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) bad("a high surrogate without its low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          if (cp < 0x80) o += char(cp);
          else if (cp < 0x800) o += char(0xC0 | cp >> 6), o += char(0x80 | (cp & 0x3F));
          else if (cp < 0x10000) o += char(0xE0 | cp >> 12), o += char(0x80 | ((cp >> 6) & 0x3F)), o += char(0x80 | (cp & 0x3F));
          else o += char(0xF0 | cp >> 18), o += char(0x80 | ((cp >> 12) & 0x3F)), o += char(0x80 | ((cp >> 6) & 0x3F)), o += char(0x80 | (cp & 0x3F));
          break;
        }
        default: bad(strformat("a bad escape '\\%c'", e));
      }
    }
  }
};

// safetensors dtype names, both ways
const std::pair<const char*, DType> kSafeDtypes[] = {
    {"F64", dtypes::float64}, {"F32", dtypes::float32}, {"F16", dtypes::float16}, {"BF16", dtypes::bfloat16}, {"I64", dtypes::int64},
    {"I32", dtypes::int32},   {"I16", dtypes::int16},   {"I8", dtypes::int8},      {"U8", dtypes::uint8},        {"BOOL", dtypes::bool_},
    {"U16", dtypes::uint16},  {"U32", dtypes::uint32},  {"U64", dtypes::uint64},
};
constexpr size_t kMaxDims = 64;

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

}  // namespace

Loaded safe_load(const Bytes& b, const std::string& device) {
  auto bad = [&](const std::string& what) { fail(TG_ERROR_IO, strformat("%s: safetensors: %s", b.name.c_str(), what.c_str())); };
  if (b.n < 8) bad(strformat("the file has %zu bytes, too few for the 8-byte header length", b.n));
  uint64_t hl = le64(b.at(0, 8));
  if (hl > b.n - 8) bad(strformat("the header length %llu is more than the %zu bytes after it", (unsigned long long)hl, b.n - 8));
  const uint8_t* h = b.at(8, hl);
  if (!valid_utf8(h, size_t(hl))) bad("the header is not UTF-8");
  Json doc = JsonParser(reinterpret_cast<const char*>(h), size_t(hl), b.name).document();
  if (doc.kind != Json::Obj) bad("the header is not a JSON object");
  uint64_t data_at = 8 + hl, data_n = b.n - 8 - hl;
  // a non-negative integer JSON number that fits in int64
  auto uint_of = [&](const Json& v, const std::string& what) -> uint64_t {
    bool digits = v.kind == Json::Num && !v.s.empty() && std::all_of(v.s.begin(), v.s.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || v.s.size() > 19 || (v.s.size() == 19 && v.s > "9223372036854775807")) bad(what + " is not an integer in [0, 2^63)");
    return std::stoull(v.s);
  };
  Loaded out;
  std::vector<Entry> entries;
  for (auto& [name, v] : doc.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::Obj) bad("__metadata__ is not an object");
      for (auto& [k, mv] : v.members) {
        if (mv.kind != Json::Str) bad("__metadata__ value of '" + k + "' is not a string");
        // the C API hands keys and values out as C strings, with no length: a NUL would cut them short
        if (k.find('\0') != std::string::npos) bad("a __metadata__ key holds a NUL character");
        if (mv.s.find('\0') != std::string::npos) bad("__metadata__ value of '" + k + "' holds a NUL character");
        out.metadata.push_back({k, mv.s, mv.dump()});
      }
      continue;
    }
    check_tensor_name(name, b.name, "safetensors");
    std::string t = "tensor '" + name + "'";
    if (v.kind != Json::Obj) bad(t + " is not an object");
    for (auto& [k, _] : v.members)
      if (k != "dtype" && k != "shape" && k != "data_offsets") bad(t + " has an unknown field '" + k + "'");
    const Json *dt = v.get("dtype"), *shape = v.get("shape"), *offs = v.get("data_offsets");
    if (!dt || !shape || !offs) bad(t + " lacks " + (!dt ? "dtype" : !shape ? "shape" : "data_offsets"));
    Entry e{name, dtypes::void_, {}, 0, 0};
    for (auto& [nm, d] : kSafeDtypes)
      if (dt->kind == Json::Str && dt->s == nm) e.dtype = d;
    if (e.dtype == dtypes::void_) bad(t + " has an unknown dtype " + dt->dump());
    if (shape->kind != Json::Arr) bad(t + ": shape is not an array");
    if (shape->items.size() > kMaxDims) bad(strformat("%s has %zu dims (at most %zu)", t.c_str(), shape->items.size(), kMaxDims));
    std::vector<uint64_t> dims;
    for (auto& d : shape->items) dims.push_back(uint_of(d, t + ": a dim"));
    uint64_t nbytes = checked_nbytes(dims, uint64_t(e.dtype.itemsize()), b.name, "safetensors", name);
    e.shape.assign(dims.begin(), dims.end());
    if (offs->kind != Json::Arr || offs->items.size() != 2) bad(t + ": data_offsets is not [begin, end]");
    e.begin = uint_of(offs->items[0], t + ": data_offsets[0]"), e.end = uint_of(offs->items[1], t + ": data_offsets[1]");
    if (e.begin > e.end || e.end > data_n)
      bad(strformat("%s data [%llu, %llu) is not inside the %llu bytes of data", t.c_str(), (unsigned long long)e.begin, (unsigned long long)e.end,
                    (unsigned long long)data_n));
    if (e.end - e.begin != nbytes)
      bad(strformat("%s data [%llu, %llu) is %llu bytes, its shape %s of %s needs %llu", t.c_str(), (unsigned long long)e.begin,
                    (unsigned long long)e.end, (unsigned long long)(e.end - e.begin), shape_str(e.shape).c_str(), dt->s.c_str(), (unsigned long long)nbytes));
    entries.push_back(std::move(e));
  }
  // the spec: the tensors' data covers the data section exactly, no holes and no overlaps (no polyglot files)
  std::vector<const Entry*> sorted;
  for (auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* c) { return a->begin != c->begin ? a->begin < c->begin : a->end < c->end; });
  uint64_t at = 0;
  for (size_t i = 0; i < sorted.size(); i++) {
    const Entry& e = *sorted[i];
    if (e.begin < at) bad(strformat("tensors '%s' and '%s' overlap", sorted[i - 1]->name.c_str(), e.name.c_str()));
    if (e.begin > at) bad(strformat("data bytes [%llu, %llu) belong to no tensor", (unsigned long long)at, (unsigned long long)e.begin));
    at = e.end;
  }
  if (at != data_n) bad(strformat("data bytes [%llu, %llu) belong to no tensor", (unsigned long long)at, (unsigned long long)data_n));
  for (auto& e : entries) out.tensors.emplace_back(e.name, tensor_from_bytes(b, data_at + e.begin, size_t(e.end - e.begin), e.dtype, e.shape, device));
  return out;
}

Loaded safe_load(const std::string& path, const std::string& device) { return safe_load(open_file(path, "safe_load"), device); }
Loaded gguf_load(const std::string& path, const std::string& device) { return gguf_load(open_file(path, "gguf_load"), device); }
Loaded load(const std::string& path, const std::string& device) {
  Bytes b = open_file(path, "state_load");
  return b.n >= 4 && !std::memcmp(b.at(0, 4), "GGUF", 4) ? gguf_load(b, device) : safe_load(b, device);
}

void safe_save(const StateDict& sd, const std::string& path, const Metadata& metadata) {
  std::string j = "{";
  if (!metadata.empty()) {
    j += "\"__metadata__\":{";
    std::unordered_set<std::string> keys;
    for (auto& m : metadata) {
      TG_CHECK(keys.insert(m.key).second, TG_ERROR_INVALID_ARGUMENT, "safe_save: metadata key '" + m.key + "' appears twice");
      j += (keys.size() > 1 ? "," : "") + json_quote(m.key, "safe_save: a metadata key") + ":" + json_quote(m.value, "safe_save: a metadata value");
    }
    j += "}";
  }
  std::unordered_set<std::string> names;
  std::vector<Tensor> ts;
  uint64_t offset = 0;
  for (auto& [name, t] : sd) {
    TG_CHECK(names.insert(name).second, TG_ERROR_INVALID_ARGUMENT, "safe_save: tensor '" + name + "' appears twice");
    TG_CHECK(name != "__metadata__", TG_ERROR_INVALID_ARGUMENT, "safe_save: a tensor can't be named __metadata__");
    const char* dn = nullptr;
    for (auto& [nm, d] : kSafeDtypes)
      if (d == t.dtype()) dn = nm;
    TG_CHECK(dn, TG_ERROR_DTYPE, "safe_save: tensor '" + name + "' has dtype " + t.dtype().name() + ", which safetensors lacks");
    uint64_t nb = uint64_t(t.numel()) * uint64_t(t.dtype().itemsize());
    j += (j.size() > 1 ? "," : "") + json_quote(name, "safe_save: a tensor name") + ":{\"dtype\":\"" + dn + "\",\"shape\":[" + join_ints(t.shape()) +
         "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nb) + "]}";
    offset += nb;
    ts.push_back(t);
  }
  j += "}";
  j.append((8 - j.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::vector<Tensor*> ptrs;
  for (auto& t : ts) ptrs.push_back(&t);
  Tensor::realize_all(ptrs);

  // written next to `path` and renamed over it, so a reader never sees a half-written file. A path that exists and isn't
  // a regular file (/dev/null, a FIFO) is written in place: renamed over, the device node itself would be replaced
  struct stat st;
  bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  TG_CHECK(!in_place || !S_ISDIR(st.st_mode), TG_ERROR_IO, path + ": is a directory");
  static std::atomic<uint64_t> counter{0};
  std::string tmp = in_place ? path : strformat("%s.tmp.%d.%llu", path.c_str(), int(::getpid()), (unsigned long long)counter++);
  // in place without blocking (as open_regular does for reads): a FIFO with no reader would wait for one forever
  int fd = in_place ? ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) : ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  const char* why = errno == ENXIO ? "a named pipe with no reader" : std::strerror(errno);
  TG_CHECK(fd >= 0, TG_ERROR_IO, strformat("%s: can't %s: %s", tmp.c_str(), in_place ? "open" : "create", why));
  if (in_place) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
      int err = errno;
      ::close(fd);
      TG_CHECK(false, TG_ERROR_IO, strformat("%s: fcntl: %s", path.c_str(), std::strerror(err)));
    }
  }
  try {
    auto write_all = [&](const void* p, size_t n) {
      for (const char* c = static_cast<const char*>(p); n;) {
        ssize_t w = ::write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        TG_CHECK(w > 0, TG_ERROR_IO, strformat("%s: write failed: %s", tmp.c_str(), std::strerror(errno)));
        c += w, n -= size_t(w);
      }
    };
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = uint8_t(uint64_t(j.size()) >> (8 * i));
    write_all(len, 8);
    write_all(j.data(), j.size());
    std::vector<uint8_t> buf;
    for (auto& t : ts) {
      buf.resize(size_t(t.numel()) * size_t(t.dtype().itemsize()));
      t.to_data(buf.data(), buf.size());
      write_all(buf.data(), buf.size());
    }
    TG_CHECK(in_place || ::fsync(fd) == 0, TG_ERROR_IO, strformat("%s: fsync failed: %s", tmp.c_str(), std::strerror(errno)));
    int rc = ::close(fd);
    fd = -1;
    TG_CHECK(rc == 0, TG_ERROR_IO, strformat("%s: close failed: %s", tmp.c_str(), std::strerror(errno)));
    TG_CHECK(in_place || ::rename(tmp.c_str(), path.c_str()) == 0, TG_ERROR_IO,
             strformat("%s: can't rename into place: %s", path.c_str(), std::strerror(errno)));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    if (!in_place) ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace tg::nn
