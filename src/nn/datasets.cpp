// IDX files (the MNIST family's format), plain or gzip-compressed, and tinygrad's nn.datasets.mnist over them.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "nn/datasets.h"
#include "nn/state.h"
#include "runtime/dynlib.h"

namespace tg::nn {

namespace {

struct IdxType {
  uint8_t code;
  DType dt;
};
const IdxType kTypes[] = {{0x08, dtypes::uint8}, {0x09, dtypes::int8},    {0x0B, dtypes::int16},
                          {0x0C, dtypes::int32}, {0x0D, dtypes::float32}, {0x0E, dtypes::float64}};

// zlib, loaded on first use (runtime/dynlib.h): its gz* file calls, as zlib.h declares them. It reads plain files
// through the same calls; without libz.so.1 (a Debian system always has it) an IDX file can't be read.
using gzFile = struct gzFile_s*;
enum : int { Z_OK = 0, Z_BUF_ERROR = -5 };
struct ZLib {
  gzFile (*gzdopen)(int, const char*) = nullptr;
  int (*gzread)(gzFile, void*, unsigned) = nullptr;
  const char* (*gzerror)(gzFile, int*) = nullptr;
  int (*gzclose)(gzFile) = nullptr;
  std::string error;
};
const ZLib& zlib() {
  static const ZLib* api = [] {
    auto* a = new ZLib();
    void* h = dl_open_first({"libz.so.1", "libz.so"});
    if (!h) return a->error = "no zlib (libz.so.1): install zlib1g", a;
    TG_DLSYM(a, h, gzdopen, "libz.so.1"); TG_DLSYM(a, h, gzread, "libz.so.1"); TG_DLSYM(a, h, gzerror, "libz.so.1");
    TG_DLSYM(a, h, gzclose, "libz.so.1");
    return a;
  }();
  return *api;
}

// An IDX file read as a stream, inflated if it is gzip (zlib reads plain files through the same calls), so that the
// header is checked before the data is inflated and no more than the header declares is ever inflated.
struct GzStream {
  const std::string& path;
  gzFile f;
  explicit GzStream(const std::string& p) : path(p) {
    TG_CHECK(zlib().error.empty(), TG_ERROR_UNSUPPORTED, "idx: '" + path + "': " + zlib().error);
    int fd = nn::open_regular(path, "idx");
    f = zlib().gzdopen(fd, "rb");
    if (!f) ::close(fd);
    TG_CHECK(f, TG_ERROR_OUT_OF_MEMORY, "idx: '" + path + "': no memory for zlib's state");
  }
  ~GzStream() { zlib().gzclose(f); }
  // up to n bytes into dst: how many there were before the stream ended
  size_t read(uint8_t* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      int r = zlib().gzread(f, dst + got, unsigned(std::min<size_t>(n - got, 1 << 30)));
      if (r < 0) {
        int err = 0;
        const char* msg = zlib().gzerror(f, &err);
        fail(TG_ERROR_IO, "idx: '" + path + "' is not readable: " + (msg ? msg : "read error"));
      }
      if (r == 0) break;
      got += size_t(r);
    }
    return got;
  }
  // zlib reports a gzip stream that ends early (even one missing only its CRC trailer) as a non-fatal Z_BUF_ERROR
  void ended() {
    int err = Z_OK;
    zlib().gzerror(f, &err);
    TG_CHECK(err != Z_BUF_ERROR, TG_ERROR_IO, "idx: '" + path + "' is truncated: its gzip stream ends early");
  }
};

}  // namespace

Tensor load_idx(const std::string& path, const std::string& device) {
  // IDX: 0, 0, type, ndim, then ndim big-endian uint32 dims, then the values big-endian, row-major
  GzStream in(path);
  uint8_t h[4];
  TG_CHECK(in.read(h, 4) == 4 && h[0] == 0 && h[1] == 0, TG_ERROR_IO, "idx: '" + path + "' does not start with an IDX magic number");
  const IdxType* ty = nullptr;
  for (auto& t : kTypes)
    if (t.code == h[2]) ty = &t;
  TG_CHECK(ty, TG_ERROR_IO, strformat("idx: '%s' has unknown element type 0x%02x", path.c_str(), h[2]));
  size_t ndim = h[3];
  uint8_t dimb[4 * 255];
  TG_CHECK(ndim >= 1 && in.read(dimb, 4 * ndim) == 4 * ndim, TG_ERROR_IO, strformat("idx: '%s' is truncated in its %zu dims", path.c_str(), ndim));
  std::vector<uint64_t> dims;
  for (size_t i = 0; i < ndim; i++) {
    const uint8_t* p = &dimb[4 * i];
    dims.push_back(uint64_t(p[0]) << 24 | uint64_t(p[1]) << 16 | uint64_t(p[2]) << 8 | p[3]);
  }
  size_t isz = size_t(ty->dt.itemsize());
  size_t nbytes = size_t(nn::checked_nbytes(dims, isz, path, "idx", "data"));
  TG_CHECK(nbytes / isz <= uint64_t(1) << 40, TG_ERROR_IO,
           strformat("idx: '%s' declares %zu elements, too large a data set", path.c_str(), nbytes / isz));
  // the data, into a buffer that grows with what the stream really holds (a few bytes of gzip may declare gigabytes)
  std::vector<uint8_t> d;
  while (d.size() < nbytes) {
    size_t had = d.size(), want = std::min(nbytes, std::max<size_t>(had * 2, 1 << 20));
    d.resize(want);
    size_t got = in.read(d.data() + had, want - had);
    if (had + got < want) {
      in.ended();
      fail(TG_ERROR_IO, strformat("idx: '%s' holds %zu data bytes, its dims %s of %s need %zu", path.c_str(), had + got,
                                  shape_str(Shape(dims.begin(), dims.end())).c_str(), ty->dt.name().c_str(), nbytes));
    }
  }
  // bytes past the declared data make the file malformed too (a header that lies); counted up to 1 MiB for the message
  uint8_t extra[4096];
  size_t more = 0;
  for (size_t r; more < (1 << 20) && (r = in.read(extra, sizeof extra)) > 0;) more += r;
  TG_CHECK(more == 0, TG_ERROR_IO,
           strformat("idx: '%s' holds %s%zu data bytes, its dims %s of %s need %zu", path.c_str(), more >= (1 << 20) ? "more than " : "",
                     nbytes + more, shape_str(Shape(dims.begin(), dims.end())).c_str(), ty->dt.name().c_str(), nbytes));
  in.ended();
  uint8_t* v = d.data();
  if (isz > 1)  // big-endian on disk
    for (size_t i = 0; i < nbytes; i += isz) std::reverse(v + i, v + i + isz);
  return Tensor::from_data(v, nbytes, ty->dt, Shape(dims.begin(), dims.end()), device).realize();
}

std::array<Tensor, 4> mnist(const std::string& dir, const std::string& device) {
  auto file = [&](const char* name) {
    std::string p = dir + "/" + name;
    // Debian ships the .gz files; a directory of inflated ones works too (stat, not open: opening a FIFO would block)
    struct stat st;
    return ::stat((p + ".gz").c_str(), &st) == 0 ? p + ".gz" : p;
  };
  Tensor xtr = load_idx(file("train-images-idx3-ubyte"), device), ytr = load_idx(file("train-labels-idx1-ubyte"), device);
  Tensor xte = load_idx(file("t10k-images-idx3-ubyte"), device), yte = load_idx(file("t10k-labels-idx1-ubyte"), device);
  for (const Tensor* x : {&xtr, &xte})
    TG_CHECK(x->ndim() == 3, TG_ERROR_IO, "mnist: images in '" + dir + "' are " + shape_str(x->shape()) + ", not (N, rows, cols)");
  TG_CHECK(ytr.ndim() == 1 && xtr.shape()[0] == ytr.shape()[0] && yte.ndim() == 1 && xte.shape()[0] == yte.shape()[0], TG_ERROR_IO,
           "mnist: the label files in '" + dir + "' don't match the image files");
  auto images = [](const Tensor& x) { return x.reshape({x.shape()[0], 1, x.shape()[1], x.shape()[2]}); };
  return {images(xtr), ytr, images(xte), yte};
}

}  // namespace tg::nn
