// DLPack exchange through the C API: imports of hand-built DLManagedTensors (every dtype, 0-d, empty, zero copy,
// strided, negative strides, unaligned), each producer deleter counted; exports of realized, lazy and view tensors,
// writes through the shared memory seen on the other side, lifetimes past tg_tensor_release, and the errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/dlpack.h"
#include "capi_handles.h"

namespace {

using Shape = std::vector<int64_t>;

// A producer's tensor: exactly the bytes it describes (malloc'ed, so a sanitizer sees any read past them), its shape and
// strides, and a deleter that counts into `deletes` and frees it all.
struct Source {
  DLManagedTensor m{};
  char* mem = nullptr;
  Shape shape, strides;
  int* deletes;
};
void source_deleter(DLManagedTensor* m) {
  auto* s = static_cast<Source*>(m->manager_ctx);
  ++*s->deletes;
  std::free(s->mem);
  delete s;
}
// `nbytes` of memory with the first element `data_off` bytes in; strides nullopt: NULL (compact)
DLManagedTensor* source(DLDataType dt, Shape shape, std::optional<Shape> strides, size_t nbytes, size_t data_off, int* deletes) {
  auto* s = new Source;
  s->mem = static_cast<char*>(std::malloc(std::max<size_t>(nbytes, 1)));
  s->shape = std::move(shape), s->strides = strides.value_or(Shape{}), s->deletes = deletes;
  s->m.dl_tensor = DLTensor{s->mem + data_off, DLDevice{kDLCPU, 0}, int32_t(s->shape.size()), dt, s->shape.empty() ? nullptr : s->shape.data(),
                            strides ? s->strides.data() : nullptr, 0};
  s->m.manager_ctx = s, s->m.deleter = source_deleter;
  return &s->m;
}
template <class V>
V* data_of(DLManagedTensor* m) {
  return reinterpret_cast<V*>(static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset);
}

Shape shape_of(tg_tensor* t) {
  Shape s(size_t(std::max<int64_t>(tg_tensor_ndim(t), 0)));
  EXPECT_EQ(tg_tensor_shape(t, s.data(), s.size()), TG_OK) << tg_last_error_message();
  return s;
}
template <class V>
std::vector<V> values(tg_tensor* t) {
  std::vector<V> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * sizeof(V)), TG_OK) << tg_last_error_message();
  return v;
}
T from_f32(const std::vector<float>& v, Shape s) { return T(tg_tensor_from_data(v.data(), v.size() * 4, TG_FLOAT32, s.data(), s.size(), nullptr)); }

const DLDataType kF32{kDLFloat, 32, 1}, kI32{kDLInt, 32, 1};
struct Pair {
  tg_dtype tg;
  DLDataType dl;
};
const Pair kPairs[] = {{TG_BOOL, {kDLBool, 8, 1}},    {TG_INT8, {kDLInt, 8, 1}},      {TG_UINT8, {kDLUInt, 8, 1}},      {TG_INT16, {kDLInt, 16, 1}},
                       {TG_UINT16, {kDLUInt, 16, 1}}, {TG_INT32, {kDLInt, 32, 1}},    {TG_UINT32, {kDLUInt, 32, 1}},    {TG_INT64, {kDLInt, 64, 1}},
                       {TG_UINT64, {kDLUInt, 64, 1}}, {TG_FLOAT16, {kDLFloat, 16, 1}}, {TG_BFLOAT16, {kDLBfloat, 16, 1}}, {TG_FLOAT32, {kDLFloat, 32, 1}},
                       {TG_FLOAT64, {kDLFloat, 64, 1}}};

// every test ends with the handles it started with
class DLPack : public ::testing::Test {
 protected:
  int64_t live0 = tg_live_handles();
  void TearDown() override { EXPECT_EQ(tg_live_handles(), live0) << "handles leaked"; }
};

TEST_F(DLPack, FromEveryDTypeIsZeroCopy) {
  for (auto [tg, dl] : kPairs) {
    SCOPED_TRACE(tg_dtype_name(tg));
    int deletes = 0;
    size_t isz = tg_dtype_size(tg), nbytes = 6 * isz;
    DLManagedTensor* m = source(dl, {2, 3}, std::nullopt, nbytes, 0, &deletes);
    auto* bytes = data_of<uint8_t>(m);
    for (size_t i = 0; i < nbytes; i++) bytes[i] = tg == TG_BOOL ? uint8_t(i % 2) : uint8_t(i * 7 + 1);
    {
      T t(tg_tensor_from_dlpack(m));
      ASSERT_NE(t.p, nullptr) << tg_last_error_message();
      tg_dtype d;
      EXPECT_EQ(tg_tensor_dtype(t, &d), TG_OK);
      EXPECT_EQ(d, tg);
      EXPECT_EQ(shape_of(t), (Shape{2, 3}));
      EXPECT_EQ(std::string(tg_tensor_device(t)).rfind("CPU", 0), 0u);
      std::vector<uint8_t> got(nbytes);
      EXPECT_EQ(tg_tensor_to_data(t, got.data(), nbytes), TG_OK);
      EXPECT_EQ(0, std::memcmp(got.data(), bytes, nbytes));
      EXPECT_EQ(deletes, 0) << "zero copy: the producer's memory is in use";
    }
    EXPECT_EQ(deletes, 1);
  }
}

TEST_F(DLPack, ZeroDimAndEmpty) {
  int deletes = 0;
  DLManagedTensor* m = source(kF32, {}, std::nullopt, 4, 0, &deletes);
  *data_of<float>(m) = 3.5f;
  {
    T t(tg_tensor_from_dlpack(m));
    ASSERT_NE(t.p, nullptr) << tg_last_error_message();
    EXPECT_EQ(tg_tensor_ndim(t), 0);
    T y(tg_tensor_mul_scalar(t, 2));
    EXPECT_EQ(values<float>(y), std::vector<float>{7.0f});
  }
  EXPECT_EQ(deletes, 1);
  // no elements: nothing to share, let go at once (its data may even be NULL)
  m = source(kI32, {0, 3}, std::nullopt, 0, 0, &deletes);
  m->dl_tensor.data = nullptr;
  T e(tg_tensor_from_dlpack(m));
  ASSERT_NE(e.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(shape_of(e), (Shape{0, 3}));
  EXPECT_EQ(deletes, 2);
}

// The tensor reads the producer's memory at every realize: a write there shows in an op run after it, and an assign
// into the tensor lands there.
TEST_F(DLPack, ZeroCopySharesMemoryBothWays) {
  int deletes = 0;
  // explicit compact strides, with any stride on the size-1 dim
  DLManagedTensor* m = source(kF32, {2, 1, 3}, Shape{3, 99, 1}, 24, 0, &deletes);
  float* src = data_of<float>(m);
  for (int i = 0; i < 6; i++) src[i] = float(i);
  T t(tg_tensor_from_dlpack(m));
  ASSERT_NE(t.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(values<float>(T(tg_tensor_mul_scalar(t, 2))), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  src[0] = 100, src[5] = -1;
  EXPECT_EQ(values<float>(T(tg_tensor_mul_scalar(t, 2))), (std::vector<float>{200, 2, 4, 6, 8, -2}));
  T s(tg_tensor_sum(t, nullptr, 0, 0));
  EXPECT_EQ(values<float>(s), std::vector<float>{109});
  T ones(tg_tensor_ones(std::vector<int64_t>{2, 1, 3}.data(), 3, TG_FLOAT32, nullptr));
  ASSERT_EQ(tg_tensor_assign(t, ones), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_tensor_realize(t), TG_OK) << tg_last_error_message();
  for (int i = 0; i < 6; i++) EXPECT_EQ(src[i], 1.0f) << i;
  EXPECT_EQ(deletes, 0);
  // a tensor computed from it and realized holds its own buffer: the producer's memory goes with the last user
  T y(tg_tensor_add_scalar(t, 1));
  ASSERT_EQ(tg_tensor_realize(y), TG_OK);
  tg_tensor_release(t.take());
  EXPECT_EQ(deletes, 1);
  EXPECT_EQ(values<float>(y), std::vector<float>(6, 2.0f));
}

TEST_F(DLPack, StridedIsCopied) {
  int deletes = 0;
  // the transpose of a row-major 3x4: shape (4, 3), strides (1, 4)
  DLManagedTensor* m = source(kI32, {4, 3}, Shape{1, 4}, 48, 0, &deletes);
  int32_t* src = data_of<int32_t>(m);
  for (int i = 0; i < 12; i++) src[i] = i;
  T t(tg_tensor_from_dlpack(m));
  ASSERT_NE(t.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(deletes, 1) << "copied: the producer's memory is let go at once";
  EXPECT_EQ(shape_of(t), (Shape{4, 3}));
  EXPECT_EQ(values<int32_t>(t), (std::vector<int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // every other element of a 1-d array, and a broadcast (stride 0) row
  m = source(kI32, {3}, Shape{2}, 20, 0, &deletes);
  for (int i = 0; i < 5; i++) data_of<int32_t>(m)[i] = 10 + i;
  T u(tg_tensor_from_dlpack(m));
  EXPECT_EQ(values<int32_t>(u), (std::vector<int32_t>{10, 12, 14}));
  m = source(kI32, {2, 3}, Shape{0, 1}, 12, 0, &deletes);
  for (int i = 0; i < 3; i++) data_of<int32_t>(m)[i] = i + 1;
  T b(tg_tensor_from_dlpack(m));
  EXPECT_EQ(values<int32_t>(b), (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(deletes, 3);
}

TEST_F(DLPack, NegativeStrides) {
  int deletes = 0;
  // a reversed 1-d view: data points at the last element
  DLManagedTensor* m = source(kF32, {5}, Shape{-1}, 20, 16, &deletes);
  float* base = reinterpret_cast<float*>(static_cast<Source*>(m->manager_ctx)->mem);
  for (int i = 0; i < 5; i++) base[i] = float(i);
  T r(tg_tensor_from_dlpack(m));
  ASSERT_NE(r.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(values<float>(r), (std::vector<float>{4, 3, 2, 1, 0}));
  // rows reversed of a 3x2 (numpy's a[::-1]), with a byte_offset to the last row
  m = source(kF32, {3, 2}, Shape{-2, 1}, 24, 0, &deletes);
  m->dl_tensor.byte_offset = 16;
  base = reinterpret_cast<float*>(static_cast<Source*>(m->manager_ctx)->mem);
  for (int i = 0; i < 6; i++) base[i] = float(i);
  T f(tg_tensor_from_dlpack(m));
  ASSERT_NE(f.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(values<float>(f), (std::vector<float>{4, 5, 2, 3, 0, 1}));
  EXPECT_EQ(deletes, 2);
}

TEST_F(DLPack, UnalignedIsCopied) {
  for (auto [tg, dl] : kPairs) {
    size_t isz = tg_dtype_size(tg);
    if (isz == 1) continue;
    SCOPED_TRACE(tg_dtype_name(tg));
    int deletes = 0;
    DLManagedTensor* m = source(dl, {3}, std::nullopt, 3 * isz + 1, 1, &deletes);  // data one byte past an aligned address
    std::vector<uint8_t> want(3 * isz);
    for (size_t i = 0; i < want.size(); i++) want[i] = uint8_t(i + 3);
    std::memcpy(data_of<uint8_t>(m), want.data(), want.size());
    T t(tg_tensor_from_dlpack(m));
    ASSERT_NE(t.p, nullptr) << tg_last_error_message();
    EXPECT_EQ(deletes, 1);
    std::vector<uint8_t> got(want.size());
    EXPECT_EQ(tg_tensor_to_data(t, got.data(), got.size()), TG_OK);
    EXPECT_EQ(got, want);
  }
  // the same through byte_offset
  int deletes = 0;
  DLManagedTensor* m = source(kF32, {2}, std::nullopt, 10, 0, &deletes);
  m->dl_tensor.byte_offset = 2;
  float v[2] = {1.5f, -2.25f};
  std::memcpy(data_of<char>(m), v, 8);
  T t(tg_tensor_from_dlpack(m));
  EXPECT_EQ(values<float>(t), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(deletes, 1);
}

// Refused input: the status and a message naming the problem, and the DLManagedTensor still the caller's (no deleter).
TEST_F(DLPack, FromErrorsTakeNothing) {
  EXPECT_EQ(tg_tensor_from_dlpack(nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  struct Bad {
    const char* what;
    tg_status want;
    const char* says;
    void (*spoil)(DLTensor&);
  };
  const Bad bad[] = {
      {"CUDA device", TG_ERROR_DEVICE, "kDLCUDA", [](DLTensor& d) { d.device.device_type = kDLCUDA; }},
      {"unknown device", TG_ERROR_DEVICE, "device_type 77", [](DLTensor& d) { d.device.device_type = 77; }},
      {"complex", TG_ERROR_DTYPE, "complex64", [](DLTensor& d) { d.dtype = {kDLComplex, 64, 1}; }},
      {"float8", TG_ERROR_DTYPE, "float8", [](DLTensor& d) { d.dtype = {kDLFloat, 8, 1}; }},
      {"lanes", TG_ERROR_DTYPE, "lanes", [](DLTensor& d) { d.dtype.lanes = 4; }},
      {"negative ndim", TG_ERROR_INVALID_ARGUMENT, "ndim", [](DLTensor& d) { d.ndim = -1; }},
      {"NULL shape", TG_ERROR_INVALID_ARGUMENT, "shape", [](DLTensor& d) { d.shape = nullptr; }},
      {"negative dim", TG_ERROR_SHAPE, "negative", [](DLTensor& d) { d.shape[1] = -3; }},
      {"NULL data", TG_ERROR_INVALID_ARGUMENT, "data", [](DLTensor& d) { d.data = nullptr; }},
  };
  for (auto& b : bad) {
    SCOPED_TRACE(b.what);
    int deletes = 0;
    DLManagedTensor* m = source(kF32, {2, 2}, std::nullopt, 16, 0, &deletes);
    int64_t* shape = m->dl_tensor.shape;
    b.spoil(m->dl_tensor);
    tg_clear_error();
    EXPECT_EQ(tg_tensor_from_dlpack(m), nullptr);
    EXPECT_EQ(tg_last_error(), b.want);
    EXPECT_NE(std::string(tg_last_error_message()).find(b.says), std::string::npos) << tg_last_error_message();
    EXPECT_EQ(deletes, 0) << "a failed import must leave the tensor to the caller";
    m->dl_tensor.shape = shape;
    m->deleter(m);
    EXPECT_EQ(deletes, 1);
  }
  tg_clear_error();
}

// A producer with nothing to free passes a NULL deleter.
TEST_F(DLPack, NullDeleter) {
  std::vector<float> mem{1, 2, 3, 4};
  int64_t shape[1] = {2}, strides[1] = {2};
  DLManagedTensor m{};
  m.dl_tensor = DLTensor{mem.data(), DLDevice{kDLCPU, 0}, 1, kF32, shape, strides, 0};
  T t(tg_tensor_from_dlpack(&m));
  ASSERT_NE(t.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(values<float>(t), (std::vector<float>{1, 3}));
  m.dl_tensor.strides = nullptr;
  T z(tg_tensor_from_dlpack(&m));
  EXPECT_EQ(values<float>(z), (std::vector<float>{1, 2}));
}

// ---- export ----
void expect_row_major(DLManagedTensor* m, const Shape& shape, DLDataType dt) {
  const DLTensor& d = m->dl_tensor;
  EXPECT_EQ(d.device.device_type, kDLCPU);
  EXPECT_EQ(d.device.device_id, 0);
  EXPECT_EQ(d.dtype.code, dt.code);
  EXPECT_EQ(d.dtype.bits, dt.bits);
  EXPECT_EQ(d.dtype.lanes, 1);
  ASSERT_EQ(d.ndim, int32_t(shape.size()));
  ASSERT_NE(d.shape, nullptr);
  ASSERT_NE(d.strides, nullptr);
  int64_t st = 1;
  for (int64_t i = d.ndim - 1; i >= 0; i--) {
    EXPECT_EQ(d.shape[i], shape[size_t(i)]);
    EXPECT_EQ(d.strides[i], st);
    st *= shape[size_t(i)];
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data_of<char>(m)) % (dt.bits / 8), 0u);
}

TEST_F(DLPack, ToEveryDType) {
  for (auto [tg, dl] : kPairs) {
    SCOPED_TRACE(tg_dtype_name(tg));
    size_t isz = tg_dtype_size(tg);
    std::vector<uint8_t> bytes(6 * isz);
    for (size_t i = 0; i < bytes.size(); i++) bytes[i] = tg == TG_BOOL ? uint8_t(i % 2) : uint8_t(i * 5 + 2);
    T t(tg_tensor_from_data(bytes.data(), bytes.size(), tg, std::vector<int64_t>{3, 2}.data(), 2, nullptr));
    DLManagedTensor* m = tg_tensor_to_dlpack(t);
    ASSERT_NE(m, nullptr) << tg_last_error_message();
    expect_row_major(m, {3, 2}, dl);
    EXPECT_EQ(0, std::memcmp(data_of<uint8_t>(m), bytes.data(), bytes.size()));
    m->deleter(m);
  }
}

// A realized tensor is exported in place: writes through the export are seen by the tensor and by ops run later, and
// the memory outlives the tensor's handle until the deleter.
TEST_F(DLPack, ToRealizedSharesMemory) {
  T t = from_f32({1, 2, 3, 4, 5, 6}, {2, 3});
  DLManagedTensor* m = tg_tensor_to_dlpack(t);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  expect_row_major(m, {2, 3}, kF32);
  float* p = data_of<float>(m);
  EXPECT_EQ(p[5], 6.0f);
  DLManagedTensor* again = tg_tensor_to_dlpack(t);
  EXPECT_EQ(data_of<float>(again), p) << "a realized buffer is exported without a copy";
  again->deleter(again);
  p[0] = 42;
  EXPECT_EQ(values<float>(t)[0], 42.0f);
  EXPECT_EQ(values<float>(T(tg_tensor_add_scalar(t, 1)))[0], 43.0f);
  // the tensor's writes are seen through the export
  ASSERT_EQ(tg_tensor_assign(t, T(tg_tensor_mul_scalar(t, 10))), TG_OK);
  ASSERT_EQ(tg_tensor_realize(t), TG_OK) << tg_last_error_message();
  EXPECT_EQ(p[1], 20.0f);
  tg_tensor_release(t.take());
  EXPECT_EQ(p[5], 60.0f) << "the buffer lives until the deleter";
  p[5] = 7;
  m->deleter(m);
}

TEST_F(DLPack, ToLazyRealizesIntoTheTensor) {
  T a(tg_tensor_arange(0, 6, 1, TG_FLOAT32, nullptr));
  T r(tg_tensor_reshape(a, std::vector<int64_t>{2, 3}.data(), 2));
  T t(tg_tensor_add_scalar(r, 1));
  DLManagedTensor* m = tg_tensor_to_dlpack(t);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  expect_row_major(m, {2, 3}, kF32);
  float* p = data_of<float>(m);
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  p[2] = -5;  // t now is the exported buffer
  EXPECT_EQ(values<float>(t), (std::vector<float>{1, 2, -5, 4, 5, 6}));
  EXPECT_EQ(values<float>(T(tg_tensor_sum(t, nullptr, 0, 0))), std::vector<float>{13});
  m->deleter(m);
  // a strided view (a transpose) is made row-major first; the tensor then refers to the copy
  T b = from_f32({1, 2, 3, 4, 5, 6}, {2, 3});
  T tr(tg_tensor_permute(b, std::vector<int64_t>{1, 0}.data(), 2));
  m = tg_tensor_to_dlpack(tr);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  expect_row_major(m, {3, 2}, kF32);
  p = data_of<float>(m);
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  p[0] = 9;
  EXPECT_EQ(values<float>(tr)[0], 9.0f);
  EXPECT_EQ(values<float>(b)[0], 1.0f) << "the transpose was copied";
  m->deleter(m);
  // a 0-d tensor
  T c(tg_tensor_full(nullptr, 0, 2.5, TG_FLOAT64, nullptr));
  m = tg_tensor_to_dlpack(c);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  EXPECT_EQ(m->dl_tensor.ndim, 0);
  EXPECT_EQ(*data_of<double>(m), 2.5);
  m->deleter(m);
}

// A row-major view into a buffer (rows of a matrix, a reshape of them) is exported at its offset, sharing the memory.
TEST_F(DLPack, ToViewAtAnOffset) {
  T b = from_f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3});
  DLManagedTensor* whole = tg_tensor_to_dlpack(b);
  ASSERT_NE(whole, nullptr) << tg_last_error_message();
  T rows(tg_tensor_shrink(b, std::vector<int64_t>{1, 3, 0, 3}.data(), 2));
  T flat(tg_tensor_reshape(rows, std::vector<int64_t>{6}.data(), 1));
  DLManagedTensor* m = tg_tensor_to_dlpack(flat);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  expect_row_major(m, {6}, kF32);
  EXPECT_EQ(data_of<float>(m), data_of<float>(whole) + 3);
  data_of<float>(m)[0] = -1;
  EXPECT_EQ(values<float>(b)[3], -1.0f);
  m->deleter(m);
  whole->deleter(whole);
}

// to_dlpack then from_dlpack: the same memory, and the export freed once no tensor uses it.
TEST_F(DLPack, RoundTrip) {
  T t = from_f32({1, 2, 3, 4}, {2, 2});
  DLManagedTensor* m = tg_tensor_to_dlpack(t);
  ASSERT_NE(m, nullptr) << tg_last_error_message();
  float* p = data_of<float>(m);
  T u(tg_tensor_from_dlpack(m));
  ASSERT_NE(u.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(values<float>(u), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_EQ(tg_tensor_assign(u, T(tg_tensor_neg(u))), TG_OK);
  ASSERT_EQ(tg_tensor_realize(u), TG_OK) << tg_last_error_message();
  EXPECT_EQ(values<float>(t), (std::vector<float>{-1, -2, -3, -4}));
  DLManagedTensor* m2 = tg_tensor_to_dlpack(u);
  ASSERT_NE(m2, nullptr) << tg_last_error_message();
  EXPECT_EQ(data_of<float>(m2), p);
  m2->deleter(m2);
  tg_tensor_release(t.take());
  EXPECT_EQ(values<float>(u)[3], -4.0f);
}

TEST_F(DLPack, ToErrors) {
  EXPECT_EQ(tg_tensor_to_dlpack(nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  tg_tensor* dead = from_f32({1}, {1}).take();
  tg_tensor_release(dead);
  EXPECT_EQ(tg_tensor_to_dlpack(dead), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  // a GPU tensor where the machine has one
  for (const char* dev : {"CL", "CUDA"}) {
    if (tg_device_open(dev) != TG_OK) continue;
    T g(tg_tensor_full(std::vector<int64_t>{2}.data(), 1, 1, TG_FLOAT32, dev));
    EXPECT_EQ(tg_tensor_to_dlpack(g), nullptr);
    EXPECT_EQ(tg_last_error(), TG_ERROR_DEVICE);
    EXPECT_NE(std::string(tg_last_error_message()).find(dev), std::string::npos) << tg_last_error_message();
  }
  tg_clear_error();
}

}  // namespace
