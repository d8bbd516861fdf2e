// IDX files (the MNIST family's format), plain or gzip-compressed, and tinygrad's nn.datasets.mnist over them.
#include <zlib.h>

#include <cstring>
#include <memory>

#include "nn/datasets.h"

namespace tg::nn {

namespace {

// the whole file, inflated if it is gzip (zlib reads plain files through the same calls); at most `limit` bytes
std::vector<uint8_t> read_all(const std::string& path, size_t limit) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  TG_CHECK(f, TG_ERROR_IO, "idx: cannot open '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> data;
  uint8_t chunk[1 << 16];
  for (;;) {
    int n = gzread(f.get(), chunk, sizeof chunk);
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(f.get(), &err);
      fail(TG_ERROR_IO, "idx: '" + path + "' is not readable: " + (msg ? msg : "read error"));
    }
    if (n == 0) break;
    TG_CHECK(data.size() + size_t(n) <= limit, TG_ERROR_IO, strformat("idx: '%s' inflates to more than %zu bytes", path.c_str(), limit));
    data.insert(data.end(), chunk, chunk + n);
  }
  // zlib reports a gzip stream that ends early (even one missing only its CRC trailer) as a non-fatal Z_BUF_ERROR
  int err = Z_OK;
  gzerror(f.get(), &err);
  TG_CHECK(err != Z_BUF_ERROR, TG_ERROR_IO, "idx: '" + path + "' is truncated: its gzip stream ends early");
  return data;
}

struct IdxType {
  uint8_t code;
  DType dt;
};
const IdxType kTypes[] = {{0x08, dtypes::uint8}, {0x09, dtypes::int8},    {0x0B, dtypes::int16},
                          {0x0C, dtypes::int32}, {0x0D, dtypes::float32}, {0x0E, dtypes::float64}};

}  // namespace

Tensor load_idx(const std::string& path, const std::string& device) {
  // IDX: 0, 0, type, ndim, then ndim big-endian uint32 dims, then the values big-endian, row-major
  std::vector<uint8_t> d = read_all(path, size_t(1) << 34);
  TG_CHECK(d.size() >= 4 && d[0] == 0 && d[1] == 0, TG_ERROR_IO, "idx: '" + path + "' does not start with an IDX magic number");
  const IdxType* ty = nullptr;
  for (auto& t : kTypes)
    if (t.code == d[2]) ty = &t;
  TG_CHECK(ty, TG_ERROR_IO, strformat("idx: '%s' has unknown element type 0x%02x", path.c_str(), d[2]));
  size_t ndim = d[3], off = 4 + 4 * ndim;
  TG_CHECK(ndim >= 1 && d.size() >= off, TG_ERROR_IO, strformat("idx: '%s' is truncated in its %zu dims", path.c_str(), ndim));
  Shape shape;
  uint64_t n = 1;
  for (size_t i = 0; i < ndim; i++) {
    const uint8_t* p = &d[4 + 4 * i];
    uint64_t v = uint64_t(p[0]) << 24 | uint64_t(p[1]) << 16 | uint64_t(p[2]) << 8 | p[3];
    shape.push_back(int64_t(v));
    TG_CHECK(v == 0 || n <= (uint64_t(1) << 40) / v, TG_ERROR_IO, "idx: '" + path + "' has dims whose product is too large");
    n *= v;
  }
  size_t isz = size_t(ty->dt.itemsize());
  TG_CHECK(d.size() - off == n * isz, TG_ERROR_IO,
           strformat("idx: '%s' holds %zu data bytes, its dims %s of %s need %llu", path.c_str(), d.size() - off, shape_str(shape).c_str(),
                     ty->dt.name().c_str(), (unsigned long long)(n * isz)));
  uint8_t* v = d.data() + off;
  if (isz > 1)  // big-endian on disk
    for (size_t i = 0; i < n; i++) std::reverse(v + i * isz, v + (i + 1) * isz);
  return Tensor::from_data(v, n * isz, ty->dt, shape, device).realize();
}

std::array<Tensor, 4> mnist(const std::string& dir, const std::string& device) {
  auto file = [&](const char* name) {
    std::string p = dir + "/" + name;
    // Debian ships the .gz files; a directory of inflated ones works too
    if (FILE* f = std::fopen((p + ".gz").c_str(), "rb")) return std::fclose(f), p + ".gz";
    return p;
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
