// include/tinygrad.hpp over the shared library's C ABI: values against hand-computed ones, errors as exceptions,
// reference counts through copies and moves, and the mlp program's loss bits against the C example's.
#include <tinygrad.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

using namespace tinygrad;
using F = std::vector<float>;
using I = std::vector<int32_t>;

namespace {
// Every test starts and ends with the same number of live handles: nothing the wrapper made outlives its scope.
class Hpp : public ::testing::Test {
 protected:
  void SetUp() override { start_ = live_handles(); }
  void TearDown() override { EXPECT_EQ(live_handles(), start_) << "handles leaked"; }
  int64_t start_ = 0;
};

template <class F>
Error error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no tinygrad::Error thrown";
  return Error(TG_OK, "");
}

std::string run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p.get())) > 0;) out.append(buf, n);
  return out;
}
}  // namespace

TEST_F(Hpp, CreationAndProperties) {
  Tensor a = Tensor::from_vector({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(a.dtype(), DType::Float32);
  EXPECT_EQ(a.device(), "CPU");
  EXPECT_EQ(Tensor::from_vector(I{1, 2, 3}).shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(Tensor::scalar(2.5).dtype(), DType::Float64);
  EXPECT_EQ(Tensor::scalar(2.5).item<double>(), 2.5);
  EXPECT_EQ(Tensor::zeros({2}).to_vector<float>(), (F{0, 0}));
  EXPECT_EQ(Tensor::ones({2}, DType::Int64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Tensor::full({3}, 7, DType::Int16).to_vector<int16_t>(), (std::vector<int16_t>{7, 7, 7}));
  EXPECT_EQ(Tensor::arange(1, 7, 2).to_vector<int32_t>(), (I{1, 3, 5}));
  EXPECT_EQ(Tensor::eye(2).to_vector<float>(), (F{1, 0, 0, 1}));
  EXPECT_EQ(Tensor::linspace(0, 1, 3).to_vector<float>(), (F{0, 0.5f, 1}));
  EXPECT_EQ(Tensor::from_vector(std::vector<bool>{true, false, true}).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(dtype_name(DType::BFloat16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::Float16), 2u);
  EXPECT_EQ(promote(DType::Int32, DType::Float16), DType::Float16);
  EXPECT_EQ(version(), TG_VERSION_STRING);
  EXPECT_EQ(version_number(), TG_VERSION_NUMBER);
  EXPECT_GE(device_count(), 1);
  EXPECT_EQ(device_name(0), "CPU");
}

TEST_F(Hpp, Arithmetic) {
  Tensor a = Tensor::from_vector({1.f, 2.f, 4.f}), b = Tensor::from_vector({2.f, 4.f, 8.f});
  EXPECT_EQ((a + b).to_vector<float>(), (F{3, 6, 12}));
  EXPECT_EQ((a - b).to_vector<float>(), (F{-1, -2, -4}));
  EXPECT_EQ((a * b).to_vector<float>(), (F{2, 8, 32}));
  EXPECT_EQ((a / b).to_vector<float>(), (F{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ((a + 1.0).to_vector<float>(), (F{2, 3, 5}));
  EXPECT_EQ((a - 1.0).to_vector<float>(), (F{0, 1, 3}));
  EXPECT_EQ((a * 3.0).to_vector<float>(), (F{3, 6, 12}));
  EXPECT_EQ((a / 2.0).to_vector<float>(), (F{0.5f, 1, 2}));
  EXPECT_EQ((10.0 - a).to_vector<float>(), (F{9, 8, 6}));
  EXPECT_EQ((8.0 / a).to_vector<float>(), (F{8, 4, 2}));
  EXPECT_EQ((2.0 * a + 1.0).to_vector<float>(), (F{3, 5, 9}));
  EXPECT_EQ((-a).to_vector<float>(), (F{-1, -2, -4}));
  EXPECT_EQ(a.pow(2.0).to_vector<float>(), (F{1, 4, 16}));
  EXPECT_EQ(a.maximum(b - 2.0).to_vector<float>(), (F{1, 2, 6}));
  EXPECT_EQ(b.square().sqrt().to_vector<float>(), (F{2, 4, 8}));
  EXPECT_EQ((a - 2.0).relu().to_vector<float>(), (F{0, 0, 2}));
  EXPECT_EQ((a - 2.0).abs().to_vector<float>(), (F{1, 0, 2}));
  EXPECT_EQ(a.log2().to_vector<float>(), (F{0, 1, 2}));
  EXPECT_EQ(a.clamp(1.5, 3).to_vector<float>(), (F{1.5f, 2, 3}));
  EXPECT_FLOAT_EQ(Tensor::scalar(0.f).exp().item<float>(), 1.f);
  EXPECT_FLOAT_EQ(Tensor::scalar(0.f).sigmoid().item<float>(), 0.5f);
  // int tensors: integer division, Python's %, bit ops, shifts; a fractional scalar promotes to float
  Tensor i = Tensor::from_vector(I{7, -7, 12});
  EXPECT_EQ(i.idiv(Tensor::from_vector(I{2, 2, 5})).to_vector<int32_t>(), (I{3, -3, 2}));
  EXPECT_EQ((i % Tensor::from_vector(I{3, 3, 5})).to_vector<int32_t>(), (I{1, 2, 2}));
  EXPECT_EQ((i & Tensor::from_vector(I{3, 3, 4})).to_vector<int32_t>(), (I{3, 1, 4}));
  EXPECT_EQ((i << 1).to_vector<int32_t>(), (I{14, -14, 24}));
  EXPECT_EQ((~Tensor::from_vector(I{0})).to_vector<int32_t>(), (I{-1}));
  EXPECT_EQ((i + 1.0).dtype(), DType::Int32);
  EXPECT_EQ((i * 0.5).to_vector<float>(), (F{3.5f, -3.5f, 6}));
  EXPECT_EQ((1.5 - i).to_vector<float>(), (F{-5.5f, 8.5f, -10.5f}));
  EXPECT_EQ(i.cast(DType::Float64).to_vector<double>(), (std::vector<double>{7, -7, 12}));
}

TEST_F(Hpp, ComparisonsAreTensors) {
  Tensor a = Tensor::from_vector({1.f, 2.f, 3.f}), b = Tensor::from_vector({3.f, 2.f, 1.f});
  Tensor lt = a < b;
  EXPECT_EQ(lt.dtype(), DType::Bool);
  EXPECT_EQ(lt.to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((a <= b).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ((a == b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((a != 2.0).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ((a >= 2.0).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((2.0 > a).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((Tensor::from_vector(I{1, 2}) < 1.5).to_vector<bool>(), (std::vector<bool>{true, false}));  // not 1 < 1
  EXPECT_EQ(where(a > 1.5, a, b * 10.0).to_vector<float>(), (F{30, 2, 3}));
}

TEST_F(Hpp, ReductionsAndMovement) {
  Tensor a = Tensor::from_vector({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  EXPECT_EQ(a.sum().item<float>(), 21);
  EXPECT_EQ(a.sum({0}).to_vector<float>(), (F{5, 7, 9}));
  EXPECT_EQ(a.sum({1}, true).shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(a.max({1}).to_vector<float>(), (F{3, 6}));
  EXPECT_EQ(a.mean({-1}).to_vector<float>(), (F{2, 5}));
  EXPECT_EQ(a.argmax(1).to_vector<int32_t>(), (I{2, 2}));
  EXPECT_EQ(a.argmax().item<int32_t>(), 5);
  EXPECT_EQ(a.cumsum(1).to_vector<float>(), (F{1, 3, 6, 4, 9, 15}));
  auto [sd, mean] = a.std_mean({1});
  EXPECT_EQ(mean.to_vector<float>(), (F{2, 5}));
  EXPECT_EQ(sd.to_vector<float>(), (F{1, 1}));
  EXPECT_EQ(a.transpose().to_vector<float>(), (F{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(a.permute({1, 0}).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.reshape({3, -1}).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.flatten().shape(), (std::vector<int64_t>{6}));
  EXPECT_EQ(a.unsqueeze(0).shape(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(a.unsqueeze(0).squeeze().shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.flip({1}).to_vector<float>(), (F{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(a.shrink({0, 1, 1, 3}).to_vector<float>(), (F{2, 3}));
  EXPECT_EQ(a.pad({0, 0, 1, 0}).to_vector<float>(), (F{0, 1, 2, 3, 0, 4, 5, 6}));
  EXPECT_EQ(a.pad({0, 0, 1, 0}, Tensor::Replicate).to_vector<float>(), (F{1, 1, 2, 3, 4, 4, 5, 6}));
  EXPECT_EQ(Tensor::from_vector({1.f, 2.f}).expand({2, 2}).to_vector<float>(), (F{1, 2, 1, 2}));
  EXPECT_EQ(Tensor::cat({a, a}, 0).shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(Tensor::stack({a, a}, 0).shape(), (std::vector<int64_t>{2, 2, 3}));
  auto parts = a.split({1, 2}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].to_vector<float>(), (F{2, 3, 5, 6}));
  EXPECT_EQ(a.chunk(3, 1).size(), 3u);
  auto [vals, idx] = Tensor::from_vector({3.f, 1.f, 2.f}).sort();
  EXPECT_EQ(vals.to_vector<float>(), (F{1, 2, 3}));
  EXPECT_EQ(idx.to_vector<int32_t>(), (I{1, 2, 0}));
  auto [top, top_i] = Tensor::from_vector({3.f, 1.f, 2.f}).topk(2);
  EXPECT_EQ(top.to_vector<float>(), (F{3, 2}));
  EXPECT_EQ(top_i.to_vector<int32_t>(), (I{0, 2}));
}

TEST_F(Hpp, AllreduceBetweenDevices) {
  std::vector<Tensor> ts;
  const char* devs[] = {"CPU", "CPU:1", "CPU:2"};
  for (int k = 0; k < 3; k++) ts.push_back(Tensor::from_vector({1.f * k, 2.f * k, 3.f * k}, {3}, devs[k]));
  auto out = allreduce(ts);
  ASSERT_EQ(out.size(), 3u);
  for (int k = 0; k < 3; k++) {
    EXPECT_EQ(out[size_t(k)].device(), devs[k]);
    EXPECT_EQ(out[size_t(k)].to_vector<float>(), (F{3, 6, 9}));
  }
  EXPECT_EQ(allreduce(ts, TG_REDUCE_MAX)[0].to_vector<float>(), (F{2, 4, 6}));
  EXPECT_THROW(allreduce({ts[0], ts[0]}), Error);
}

TEST_F(Hpp, ShardedTensor) {
  // 5 rows over 3 devices: 2, 2, 1; a reduce over the split axis is an allreduce, whole on each device
  Tensor a = Tensor::from_vector({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f}, {5, 2});
  Tensor s = a.shard({"CPU", "CPU:1", "CPU:2"}, 0);
  EXPECT_EQ(s.device(), "CPU,CPU:1,CPU:2");
  EXPECT_EQ(s.devices(), (std::vector<std::string>{"CPU", "CPU:1", "CPU:2"}));
  EXPECT_EQ(s.shard_axis(), 0);
  EXPECT_EQ(s.shard_bounds(), (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(s.shard_get(2).to_vector<float>(), (F{8, 9}));
  EXPECT_EQ((s * 2.0).to_vector<float>(), (F{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
  Tensor col = s.sum({0});
  EXPECT_EQ(col.shard_axis(), -1);
  EXPECT_EQ(col.to_vector<float>(), (F{20, 25}));
  Tensor w = Tensor::from_vector({1.f, 1.f}, {2, 1}).shard_like(col.reshape({2, 1}));
  EXPECT_EQ(s.matmul(w).to("CPU:1").to_vector<float>(), (F{1, 5, 9, 13, 17}));
  Tensor t = Tensor::from_vector({1.f, 2.f});
  Tensor alias = t;
  t.replace(Tensor::from_vector({1.f, 2.f}).shard({"CPU", "CPU:1"}));
  EXPECT_EQ(alias.device(), "CPU,CPU:1");  // every handle sees it
  EXPECT_THROW(a.shard({"CPU", "CPU"}, 0), Error);
  EXPECT_THROW(s.add(a), Error);
}

TEST_F(Hpp, QrAndSvd) {
  // [[3, 0], [4, 5]]: Q @ R and U @ diag(S) @ Vh give it back; its singular values are sqrt(45) and sqrt(5)
  Tensor a = Tensor::from_vector({3.f, 0.f, 4.f, 5.f}, {2, 2});
  auto [q, r] = a.qr();
  auto qr = q.matmul(r).to_vector<float>(), rv = r.to_vector<float>();
  for (size_t i = 0; i < 4; i++) EXPECT_NEAR(qr[i], (F{3, 0, 4, 5})[i], 1e-5);
  EXPECT_EQ(rv[2], 0.f);  // below the diagonal
  auto [u, s, vh] = a.svd(false);
  auto sv = s.to_vector<float>();
  EXPECT_NEAR(sv[0], std::sqrt(45.0), 1e-5);
  EXPECT_NEAR(sv[1], std::sqrt(5.0), 1e-5);
  auto back = (u * s.unsqueeze(0)).matmul(vh).to_vector<float>();
  for (size_t i = 0; i < 4; i++) EXPECT_NEAR(back[i], (F{3, 0, 4, 5})[i], 1e-5);
  EXPECT_THROW(Tensor::from_vector({1.f, 2.f}).qr(), Error);
}

TEST_F(Hpp, MatmulAndIndexing) {
  Tensor a = Tensor::from_vector({1.f, 2.f, 3.f, 4.f}, {2, 2}), b = Tensor::from_vector({5.f, 6.f, 7.f, 8.f}, {2, 2});
  EXPECT_EQ(a.matmul(b).to_vector<float>(), (F{19, 22, 43, 50}));
  EXPECT_EQ(a.linear(b, Tensor::from_vector({1.f, -1.f})).to_vector<float>(), (F{20, 21, 44, 49}));
  EXPECT_EQ(Tensor::einsum("ij,jk->ik", {a, b}).to_vector<float>(), (F{19, 22, 43, 50}));
  EXPECT_EQ(a[1].to_vector<float>(), (F{3, 4}));
  EXPECT_EQ((a[{slice_all(), 1}]).to_vector<float>(), (F{2, 4}));
  EXPECT_EQ((a[{Index::newaxis(), slice_from(1)}]).shape(), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ((a[{Index::ellipsis(), 0}]).to_vector<float>(), (F{1, 3}));
  EXPECT_EQ((a[{Tensor::from_vector(I{1, 0, 1})}]).to_vector<float>(), (F{3, 4, 1, 2, 3, 4}));
  Tensor c = Tensor::zeros({2, 2}).contiguous();
  c.setitem({0, slice(0, 2)}, Tensor::scalar(9.f));
  EXPECT_EQ(c.to_vector<float>(), (F{9, 9, 0, 0}));
  EXPECT_EQ(a.gather(1, Tensor::from_vector(I{1, 0}, {2, 1})).to_vector<float>(), (F{2, 3}));
  EXPECT_EQ(a.masked_fill(a > 2.0, Tensor::scalar(0.f)).to_vector<float>(), (F{1, 2, 0, 0}));
  EXPECT_EQ(Tensor::from_vector(I{0, 2}).one_hot(3).to_vector<int32_t>(), (I{1, 0, 0, 0, 0, 1}));
}

TEST_F(Hpp, ErrorsCarryStatusAndMessage) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  Error e = error_of([&] { a.matmul(b); });
  EXPECT_EQ(e.status(), TG_ERROR_SHAPE);
  EXPECT_STREQ(e.code_name(), "TG_ERROR_SHAPE");
  EXPECT_STREQ(e.what(), "matmul: shapes (2,3) and (4,5) don't match");
  EXPECT_THROW(a.reshape({4, 2}), std::runtime_error);
  EXPECT_EQ(error_of([&] { a.reshape({4, 2}); }).status(), TG_ERROR_SHAPE);
  EXPECT_EQ(error_of([&] { a.sum({5}); }).status(), TG_ERROR_SHAPE);
  // an empty handle is a NULL argument: the library refuses it, nothing crashes
  EXPECT_EQ(error_of([&] { Tensor().exp(); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error_of([&] { a + Tensor(); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error_of([] { set_option("NO_SUCH_OPTION", 1); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error_of([] { Tensor::from_vector(F{1, 2, 3}, {2, 2}); }).status(), TG_ERROR_SHAPE);
  Error d = error_of([&] { a.to_vector<int32_t>(); });
  EXPECT_EQ(d.status(), TG_ERROR_DTYPE);
  EXPECT_STREQ(d.what(), "to_vector<int32>: the tensor is float32");
  EXPECT_EQ(error_of([] { nn::function("no_such_layer"); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error_of([] { State::load("/nonexistent/x.safetensors"); }).status(), TG_ERROR_IO);
  EXPECT_EQ(error_of([] { open_device("NO_SUCH_DEVICE"); }).status(), TG_ERROR_DEVICE);
  // the wrapper's own checks also speak tinygrad::Error
  EXPECT_EQ(error_of([&] { a.item<float>(); }).status(), TG_ERROR_SHAPE);
}

TEST_F(Hpp, CopiesRetainMovesTransfer) {
  int64_t before = live_handles();
  {
    Tensor a = Tensor::from_vector({1.f, 2.f});
    EXPECT_EQ(live_handles(), before + 1);
    Tensor b = a;  // a copy: another reference to the same tensor
    EXPECT_EQ(b.raw(), a.raw());
    Tensor c = std::move(a);  // a move: the reference changes hands
    EXPECT_EQ(a.raw(), nullptr);
    EXPECT_FALSE(a);
    EXPECT_EQ(c.raw(), b.raw());
    b = Tensor();  // drops one reference; c still holds the tensor
    EXPECT_EQ(c.to_vector<float>(), (F{1, 2}));
    c = c;  // self-assignment keeps it
    c = std::move(c);
    EXPECT_EQ(c.to_vector<float>(), (F{1, 2}));
    Tensor d = c + 1.0;
    d = c;  // the old d is released, c shared
    EXPECT_EQ(d.raw(), c.raw());
    std::vector<Tensor> v(3, c);  // three more references
    v.erase(v.begin());
    Tensor raw_owner(tg_tensor_retain(c.raw()));  // adopting a C reference
    tg_tensor* handed = raw_owner.into_raw();       // and handing it back
    tg_tensor_release(handed);
  }
  EXPECT_EQ(live_handles(), before);
  {
    Module m = nn::linear(2, 2);
    Module m2 = m;
    Optimizer o = Optimizer::sgd(m.parameters());
    Optimizer o2 = std::move(o);
    State s = m2.state();
    State s2 = s;
    Expr e = Expr::variable("i", 0, 9);
    Expr e2 = e;
  }
  EXPECT_EQ(live_handles(), before);
}

TEST_F(Hpp, NdConvPoolAndUnpool) {
  Tensor x = Tensor::from_vector({1.f, 2.f, 3.f, 4.f}, {1, 1, 4}), w = Tensor::from_vector({1.f, 1.f}, {1, 1, 2});
  EXPECT_EQ(x.conv(w).to_vector<float>(), (F{3, 5, 7}));
  EXPECT_EQ(x.conv(w, Tensor(), 1, {}, {}, {{1, 0}}).to_vector<float>(), (F{1, 3, 5, 7}));
  EXPECT_EQ(x.conv(w, Tensor::from_vector({10.f}), 1, {2}).to_vector<float>(), (F{13, 17}));
  EXPECT_EQ(x.conv(w, Tensor(), 1, {}, {}, {{0, -1}}).to_vector<float>(), (F{3, 5}));  // a negative pad crops
  EXPECT_EQ(Tensor::from_vector({1.f, 2.f}, {1, 1, 2}).conv_transpose(w).to_vector<float>(), (F{1, 3, 2}));
  Tensor p = Tensor::from_vector({1.f, 3.f, 2.f, 4.f}, {1, 1, 4});
  EXPECT_EQ(p.max_pool({2}).to_vector<float>(), (F{3, 4}));
  EXPECT_EQ(p.avg_pool({2}).to_vector<float>(), (F{2, 3}));
  EXPECT_EQ(p.avg_pool({2}, {}, {}, {{1, 1}}, false, false).to_vector<float>(), (F{1, 2.5f, 4}));
  auto [m, idx] = p.max_pool_indices({2});
  EXPECT_EQ(idx.to_vector<int32_t>(), (I{1, 3}));
  EXPECT_EQ(m.max_unpool(idx, {2}).to_vector<float>(), (F{0, 3, 0, 4}));
  Module c3 = nn::conv(1, 2, {1, 1, 1});
  EXPECT_EQ(c3(Tensor::ones({1, 1, 2, 3, 4})).shape(), (std::vector<int64_t>{1, 2, 2, 3, 4}));
  EXPECT_EQ(error_of([&] { x.conv(w, Tensor(), 1, {1, 1, 1}); }).status(), TG_ERROR_SHAPE);
}

TEST_F(Hpp, ModulesStateAndOptimizers) {
  manual_seed(7);
  Module model = nn::sequential({nn::linear(3, 4), nn::function("relu"), nn::linear(4, 1, false)});
  EXPECT_EQ(model.kind(), "Sequential");
  auto params = model.parameters();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].shape(), (std::vector<int64_t>{4, 3}));
  State st = model.state();
  EXPECT_EQ(st.names(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight"}));
  EXPECT_EQ(st.info("2.weight").second, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(st.get("0.bias").shape(), (std::vector<int64_t>{4}));

  // save, perturb, load back: the module's tensors are the state's
  std::string path = ::testing::TempDir() + "tg_hpp_state.safetensors";
  st.set_metadata("who", "test_hpp");
  st.save(path);
  auto w0 = model.get("0.weight").to_vector<float>();
  model.get("0.weight").assign(Tensor::zeros({4, 3})).realize();
  EXPECT_EQ(model.get("0.weight").to_vector<float>(), F(12, 0.f));
  State loaded = State::load(path);
  EXPECT_EQ(loaded.metadata(), (std::vector<std::pair<std::string, std::string>>{{"who", "test_hpp"}}));
  model.load_state(loaded);
  EXPECT_EQ(model.get("0.weight").to_vector<float>(), w0);
  std::remove(path.c_str());

  // a few SGD steps make the loss go down; optimizer options round-trip
  set_option("TRAINING", 1);
  EXPECT_EQ(get_option("TRAINING"), 1);
  Tensor x = Tensor::from_vector({1.f, 0.f, -1.f, 0.5f, 0.5f, 0.5f}, {2, 3}), y = Tensor::from_vector({1.f, -1.f}, {2, 1});
  OptimizerOptions o = optimizer_defaults(Optim::SGD);
  EXPECT_EQ(o.lr, 0.001);
  o.lr = 0.05, o.momentum = 0.9;
  Optimizer opt = Optimizer::sgd(model.parameters(), o);
  EXPECT_EQ(opt.params().size(), 3u);
  float first = 0, last = 0;
  for (int i = 0; i < 5; i++) {
    opt.zero_grad();
    Tensor loss = (model(x) - y).square().mean();
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, first);
  opt.set_lr(0.25);
  EXPECT_EQ(opt.lr().to_vector<float>(), (F{0.25f}));
  EXPECT_EQ(error_of([] { Optimizer::adam({Tensor::from_vector(I{1})}); }).status(), TG_ERROR_DTYPE);
  unset_option("TRAINING");
}

TEST_F(Hpp, Autograd) {
  Tensor x = Tensor::from_vector({1.f, 2.f, 3.f});
  x.requires_grad(true);
  EXPECT_TRUE(x.requires_grad());
  Tensor loss = (x * x).sum();
  loss.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (F{2, 4, 6}));
  auto g = (x * 3.0).sum().gradient({x});
  EXPECT_EQ(g[0].to_vector<float>(), (F{3, 3, 3}));
  x.set_grad(Tensor());
  EXPECT_EQ(error_of([&] { x.grad(); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_FALSE(x.detach().requires_grad());
}

TEST_F(Hpp, Expressions) {
  Expr i = Expr::variable("i", 0, 9), j = Expr::variable("j", 0, 3);
  Expr e = i * 4 + j;
  EXPECT_EQ(e.bounds(), (std::pair<int64_t, int64_t>{0, 39}));
  EXPECT_EQ(e.eval({{"i", 2}, {"j", 3}}), 11);
  EXPECT_EQ((e / Expr(4)).simplify().render(), "i");
  EXPECT_EQ(error_of([&] { e.eval({{"i", 2}}); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error_of([&] { i / Expr(0); }).status(), TG_ERROR_INVALID_ARGUMENT);
  // a symbolic dim: shape reports the bound value
  Expr n = Expr::variable("n", 1, 4);
  Tensor t = Tensor::arange(4, DType::Float32).shrink(0, n, 3);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(t.sum().item<float>(), 3);
  EXPECT_EQ(t.rebind(n, 2).sum().item<float>(), 1);
}

TEST_F(Hpp, JitAndPlan) {
  int calls = 0;
  Jit jit([&](const std::vector<Tensor>& in) {
    calls++;
    return std::vector<Tensor>{in[0] * 2.0 + 1.0};
  });
  for (float v : {1.f, 2.f, 3.f, 4.f}) {
    auto out = jit({Tensor::from_vector({v, -v})});
    EXPECT_EQ(out[0].to_vector<float>(), (F{2 * v + 1, -2 * v + 1}));
  }
  EXPECT_EQ(calls, 2);  // run, capture, then replays
  EXPECT_EQ(jit.call_count(), 4);
  EXPECT_GE(jit.plan().size(), 1u);
  EXPECT_EQ(error_of([&] { jit({Tensor::from_vector({1.f, 2.f, 3.f})}); }).status(), TG_ERROR_SHAPE);
  jit.reset();
  EXPECT_EQ(jit.call_count(), 0);
  // an exception inside the function is the call's error
  Jit bad([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].matmul(in[0])}; });
  EXPECT_EQ(error_of([&] { bad({Tensor::zeros({2, 3})}); }).status(), TG_ERROR_SHAPE);
  Jit short_fn([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; });
  EXPECT_EQ(error_of([&] { short_fn({Tensor::zeros({1})}); }).status(), TG_ERROR_INVALID_ARGUMENT);

  Tensor a = Tensor::from_vector({1.f, 2.f}), r = (a + 1.0).exp2();
  reset_counters();
  Plan plan = Plan::create({r});
  ASSERT_GE(plan.size(), 1u);
  KernelInfo k = plan.kernels().back();
  EXPECT_FALSE(k.name.empty());
  EXPECT_FALSE(k.source.empty());
  EXPECT_EQ(k.buffer_nbytes.front(), 8);
  plan.run();
  EXPECT_GE(counters().kernel_count, 1u);
  EXPECT_EQ(error_of([&] { plan.run(); }).status(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(r.to_vector<float>(), (F{4, 8}));
}

// The mlp program through the wrapper, in this process, against the C example's lines; then the C++ example binary's
// whole output against the C one's.
TEST_F(Hpp, MlpLossBitsMatchC) {
  std::string c = run(TG_BUILD_DIR "/example_mlp_sgd");
  ASSERT_NE(c.find("live handles: 0\n"), std::string::npos) << c;
  manual_seed(1337);
  set_option("TRAINING", 1);
  std::string ours;
  {
    std::vector<float> xs(32 * 8);
    std::vector<int32_t> ys(32);
    for (int i = 0; i < 32; i++) {
      for (int j = 0; j < 8; j++) xs[i * 8 + j] = static_cast<float>(static_cast<double>((7 * i + 3 * j) % 11 - 5) / 5.0);
      ys[i] = (7 * i % 11) % 4;
    }
    Tensor x = Tensor::from_vector(xs, {32, 8}), y = Tensor::from_vector(ys);
    Module model = nn::sequential({nn::linear(8, 16), nn::function("relu"), nn::linear(16, 4)});
    OptimizerOptions o = optimizer_defaults(Optim::SGD);
    o.lr = 0.1;
    Optimizer opt = Optimizer::sgd(model.parameters(), o);
    for (int step = 1; step <= 20; step++) {
      opt.zero_grad();
      Tensor loss = model(x).sparse_categorical_crossentropy(y);
      loss.backward();
      auto all = opt.schedule_step();
      all.insert(all.begin(), loss);
      realize(all);
      float v = loss.item<float>();
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      char line[64];
      std::snprintf(line, sizeof line, "step %d loss %08x %.6f\n", step, bits, static_cast<double>(v));
      ours += line;
    }
  }
  unset_option("TRAINING");
  EXPECT_EQ(ours, c.substr(0, ours.size()));
  EXPECT_EQ(run(TG_BUILD_DIR "/example_cpp_mlp"), c);
}
