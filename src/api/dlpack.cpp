// C API: DLPack exchange. Host memory is shared both ways: an imported DLManagedTensor becomes a Buffer that adopts its
// memory (its deleter runs when the last tensor using it is gone), and an export hands out a tensor's own buffer, kept
// alive by the DLManagedTensor until its deleter runs.
#include "api/dlpack.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>

#include "api/handles.h"

using namespace tg;

namespace {

struct DTypeCode {
  uint8_t code, bits;
  DType dt;
};
// one table for both directions: bool is kDLBool (DLPack 0.8), bfloat16 kDLBfloat
const DTypeCode kDTypes[] = {{kDLBool, 8, dtypes::bool_},     {kDLInt, 8, dtypes::int8},      {kDLUInt, 8, dtypes::uint8},     {kDLInt, 16, dtypes::int16},
                             {kDLUInt, 16, dtypes::uint16},   {kDLInt, 32, dtypes::int32},    {kDLUInt, 32, dtypes::uint32},   {kDLInt, 64, dtypes::int64},
                             {kDLUInt, 64, dtypes::uint64},   {kDLFloat, 16, dtypes::float16}, {kDLBfloat, 16, dtypes::bfloat16}, {kDLFloat, 32, dtypes::float32},
                             {kDLFloat, 64, dtypes::float64}};

const char* code_name(unsigned code) {
  static const char* names[] = {"int", "uint", "float", "opaque handle", "bfloat", "complex", "bool"};
  return code < std::size(names) ? names[code] : "unknown code";
}
const char* device_name(int type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    case kDLWebGPU: return "kDLWebGPU";
    case kDLHexagon: return "kDLHexagon";
    default: return "unknown";
  }
}

DType dtype_of(DLDataType t) {
  TG_CHECK(t.lanes == 1, TG_ERROR_DTYPE, strformat("from_dlpack: dtype with %u lanes; only scalar elements (lanes 1) are supported", unsigned(t.lanes)));
  for (auto& e : kDTypes)
    if (e.code == t.code && e.bits == t.bits) return e.dt;
  fail(TG_ERROR_DTYPE, strformat("from_dlpack: DLPack dtype %s%u (code %u) has no tinygrad dtype", code_name(t.code), unsigned(t.bits), unsigned(t.code)));
}
DLDataType dl_dtype(DType dt) {
  for (auto& e : kDTypes)
    if (e.dt == dt) return {e.code, e.bits, 1};
  fail(TG_ERROR_DTYPE, "to_dlpack: " + dt.name() + " has no DLPack dtype");
}

std::vector<int64_t> compact_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  for (int64_t i = int64_t(s.size()) - 1, acc = 1; i >= 0; i--) st[size_t(i)] = acc, acc *= std::max<int64_t>(s[size_t(i)], 1);
  return st;
}
// row-major: size-1 dims may have any stride, and an empty tensor has no layout to speak of
bool is_compact(const Shape& s, const int64_t* strides) {
  if (!strides || tg::prod(s) == 0) return true;
  auto cs = compact_strides(s);
  for (size_t i = 0; i < s.size(); i++)
    if (s[i] > 1 && strides[i] != cs[i]) return false;
  return true;
}

// The imported memory's owner: the producer's deleter runs once, when the last Buffer using the memory is gone, and
// only if the import succeeded (before that, a failure leaves `managed` to the caller).
struct Producer {
  DLManagedTensor* managed;
  bool taken = false;
  ~Producer() {
    if (taken && managed->deleter) managed->deleter(managed);
  }
};

// "CPU" unless the default device ($DEV) is another host-memory CPU device (CPU:CLANG), whose kernels then use it
std::string host_device() {
  std::string d = canonical_device(nullptr);
  if (d != "CPU" && d.rfind("CPU", 0) == 0) try {
      if (get_device(d).host_memory()) return d;
    } catch (const Error&) {
    }
  return "CPU";
}

// dst[k] = the k-th element in row-major order of a view with these byte strides (any sign)
template <size_t S>
void gather(char* dst, const char* src, const Shape& shape, const std::vector<int64_t>& bstrides, int64_t n) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; k++) {
    std::memcpy(dst + size_t(k) * S, src + off, S);  // memcpy: the source may be unaligned
    for (size_t i = shape.size(); i-- > 0;) {
      if (++idx[i] < shape[i]) {
        off += bstrides[i];
        break;
      }
      off -= bstrides[i] * (shape[i] - 1), idx[i] = 0;
    }
  }
}

// An export: the DLManagedTensor, the buffer it shares and its shape and strides, freed together by the deleter.
struct Export {
  DLManagedTensor m{};
  std::shared_ptr<Buffer> buf;
  std::vector<int64_t> dims;  // shape, then strides
};
void free_export(DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); }

// Where a movement-op view over a BUFFER finds its elements: shape, element strides and offset into the buffer.
// RESHAPE, SHRINK and PERMUTE are followed (a RESHAPE only of a compact view); anything else is not a plain view.
struct Strided {
  const UOp* buffer;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};
std::optional<Strided> strided(const UOp* u) {
  std::vector<const UOp*> chain;
  for (; u->op == Ops::RESHAPE || u->op == Ops::SHRINK || u->op == Ops::PERMUTE; u = u->src[0].get()) chain.push_back(u);
  if (u->op != Ops::BUFFER) return std::nullopt;
  Strided v{u, u->shape(), {1}, 0};
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const UOp* m = *it;
    if (!m->sym().empty()) return std::nullopt;
    const auto& a = m->arg_ints();
    if (m->op == Ops::RESHAPE) {
      if (!is_compact(v.shape, v.strides.data())) return std::nullopt;
      v.shape = m->shape(), v.strides = compact_strides(v.shape);
    } else if (m->op == Ops::SHRINK) {
      for (size_t i = 0; i < v.shape.size(); i++) v.offset += a[2 * i] * v.strides[i], v.shape[i] = a[2 * i + 1] - a[2 * i];
    } else {
      Strided p{v.buffer, {}, {}, v.offset};
      for (auto o : a) p.shape.push_back(v.shape[size_t(o)]), p.strides.push_back(v.strides[size_t(o)]);
      v = std::move(p);
    }
  }
  return v;
}

}  // namespace

extern "C" {

tg_tensor* tg_tensor_from_dlpack(DLManagedTensor* managed) {
  return api::make([&]() -> tg_tensor* {
    TG_ARG(managed, "from_dlpack: managed is NULL");
    const DLTensor& d = managed->dl_tensor;
    int type = int(d.device.device_type);
    TG_CHECK(type == kDLCPU, TG_ERROR_DEVICE,
             strformat("from_dlpack: the tensor is on DLPack device %s (device_type %d, id %d); only host memory (kDLCPU) is shared", device_name(type), type,
                       int(d.device.device_id)));
    DType dt = dtype_of(d.dtype);
    TG_ARG(d.ndim >= 0 && d.ndim <= 64, strformat("from_dlpack: ndim %d (0 to 64 supported)", int(d.ndim)));
    TG_ARG(d.shape || d.ndim == 0, "from_dlpack: shape is NULL");
    Shape shape(d.shape, d.shape + d.ndim);
    check_shape(shape, dt, "from_dlpack");
    int64_t n = tg::prod(shape);
    TG_ARG(d.data || n == 0, "from_dlpack: data is NULL");
    size_t isz = size_t(dt.itemsize());
    std::string dev = host_device();
    const char* first = n ? static_cast<const char*>(d.data) + d.byte_offset : nullptr;
    bool compact = n && is_compact(shape, d.strides);
    // bools other than 0 and 1 (a uint8 array viewed as bool) would read as themselves under CPU:CLANG's _Bool: such
    // memory is copied with every nonzero byte stored as 1 rather than shared (refusing it would fail imports that
    // numpy and torch accept; sharing it would keep the bad bytes). A producer that writes such bytes after a shared
    // import breaks its own dtype's contract.
    if (compact && dt == dtypes::bool_) {
      auto* b = reinterpret_cast<const uint8_t*>(first);
      compact = std::all_of(b, b + n, [](uint8_t v) { return v <= 1; });
    }
    if (compact && reinterpret_cast<uintptr_t>(first) % isz == 0) {
      auto owner = std::make_shared<Producer>(Producer{managed});
      auto buf = std::make_shared<Buffer>(dev, dt, n, const_cast<char*>(first), owner);
      tg_tensor* h = api::wrap(Tensor(buffer_uop(std::move(buf)), dev).reshape(shape));
      owner->taken = true;  // nothing can fail from here on
      return h;
    }
    // strided, unaligned or non-canonical bools: copied element by element now, then the producer's memory is let go
    std::vector<int64_t> bstrides = d.strides ? std::vector<int64_t>(d.strides, d.strides + d.ndim) : compact_strides(shape);
    int64_t reach = 0;
    for (size_t i = 0; n && i < shape.size(); i++) {
      bool ok = !__builtin_mul_overflow(bstrides[i], int64_t(isz), &bstrides[i]);
      int64_t r;
      ok = ok && !__builtin_mul_overflow(bstrides[i] < 0 ? -bstrides[i] : bstrides[i], shape[i] - 1, &r) && !__builtin_add_overflow(reach, r, &reach);
      TG_ARG(ok, "from_dlpack: strides " + shape_str(Shape(d.strides, d.strides + d.ndim)) + " reach past the int64 range");
    }
    auto buf = std::make_shared<Buffer>(dev, dt, n);
    if (n) {
      char* dst = static_cast<char*>(buf->ptr());
      switch (isz) {
        case 1: gather<1>(dst, first, shape, bstrides, n); break;
        case 2: gather<2>(dst, first, shape, bstrides, n); break;
        case 4: gather<4>(dst, first, shape, bstrides, n); break;
        default: gather<8>(dst, first, shape, bstrides, n);
      }
      if (dt == dtypes::bool_)
        for (int64_t i = 0; i < n; i++) dst[i] = dst[i] != 0;
    }
    tg_tensor* h = api::wrap(Tensor(buffer_uop(std::move(buf)), dev).reshape(shape));
    if (managed->deleter) managed->deleter(managed);
    return h;
  });
}

DLManagedTensor* tg_tensor_to_dlpack(tg_tensor* t) {
  return api::make([&]() -> DLManagedTensor* {
    Tensor& x = api::get(t, "to_dlpack");
    TG_CHECK(get_device(x.device()).host_memory(), TG_ERROR_DEVICE,
             "to_dlpack: the tensor is on " + x.device() + "; only host memory (CPU devices) is shared: move it with tg_tensor_to(t, \"CPU\")");
    TG_CHECK(x.uop()->sym().empty(), TG_ERROR_UNSUPPORTED, "to_dlpack: a tensor with Variable dims can't be exported; bind them first");
    DLDataType dl = dl_dtype(x.dtype());
    auto v = strided(x.uop().get());
    if (!v || !is_compact(v->shape, v->strides.data())) {  // computed (or a strided view): realized into its own buffer
      Tensor c = x.contiguous();
      c.realize();
      if (c.uop() != x.uop()) x.became(c.uop());
      v = strided(x.uop().get());
      TG_CHECK(v && is_compact(v->shape, v->strides.data()), TG_ERROR_INTERNAL, "to_dlpack: the realized tensor is not a row-major buffer");
    }
    get_device(x.device()).synchronize();  // kernels still writing it
    auto e = std::make_unique<Export>();
    e->buf = buffer_of(v->buffer);
    e->dims = x.shape();
    auto st = compact_strides(x.shape());
    e->dims.insert(e->dims.end(), st.begin(), st.end());
    e->dims.push_back(0);  // never an empty vector: shape and strides are non-NULL even for a 0-d tensor
    int32_t nd = int32_t(x.ndim());
    // the offset goes into `data`, not byte_offset: some consumers (PyTorch before 2.0) ignore byte_offset
    char* data = static_cast<char*>(e->buf->ptr()) + (tg::prod(v->shape) ? v->offset * x.dtype().itemsize() : 0);
    e->m.dl_tensor = DLTensor{data, DLDevice{kDLCPU, 0}, nd, dl, e->dims.data(), e->dims.data() + nd, 0};
    e->m.manager_ctx = e.get();
    e->m.deleter = free_export;
    return &e.release()->m;
  });
}

}  // extern "C"
