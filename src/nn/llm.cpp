#include "nn/llm.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_map>

#include "renderer/renderer.h"
#include "runtime/cpurates.h"
#include "runtime/device.h"
#include "runtime/threadpool.h"
#include "schedule/graph.h"
#include "tensor/jit.h"

namespace tg::nn {
namespace {

struct Meta {
  const GGUFFile& f;
  const std::string& file;
  const MetaEntry* find(const std::string& key) const {
    for (auto& e : f.kv)
      if (e.key == key) return &e;
    return nullptr;
  }
  std::string str(const std::string& key) const {
    const MetaEntry* e = find(key);
    TG_CHECK(e, TG_ERROR_IO, file + ": llm: the metadata has no '" + key + "'");
    return e->value;
  }
  double num(const std::string& key, std::optional<double> dflt = std::nullopt) const {
    const MetaEntry* e = find(key);
    if (!e && dflt) return *dflt;
    TG_CHECK(e, TG_ERROR_IO, file + ": llm: the metadata has no '" + key + "'");
    char* end = nullptr;
    double v = std::strtod(e->value.c_str(), &end);
    TG_CHECK(!e->value.empty() && end && *end == 0 && std::isfinite(v), TG_ERROR_IO,
             file + ": llm: '" + key + "' is " + e->value.substr(0, 40) + ", not a number");
    return v;
  }
  int64_t count(const std::string& key, int64_t lo, int64_t hi, std::optional<int64_t> dflt = std::nullopt) const {
    double v = num(key, dflt ? std::optional<double>(double(*dflt)) : std::nullopt);
    TG_CHECK(v == std::floor(v) && v >= double(lo) && v <= double(hi), TG_ERROR_IO,
             strformat("%s: llm: '%s' is %g, not a whole number in [%lld, %lld]", file.c_str(), key.c_str(), v, (long long)lo, (long long)hi));
    return int64_t(v);
  }
};

Tensor rms_norm(const Tensor& x, const Tensor& w, double eps) {
  Tensor ms = x.square().mean({-1}, true);
  return x.mul(ms.add(ms.scalar_like(eps)).rsqrt()).mul(w);
}

// x (..., cols) by the rows of w. A few rows of x (decoding) read the quantized blocks in the kernel, summed block by
// block, (rows, blocks, elements per block): the reduce keeps the block axis, so a block's scale and bytes are
// addressed without dividing the column index. Many rows (a prompt) reuse every weight many times: dequantized once
// into a float buffer, the product is a plain matmul with its register tiles, not a dequantization per use. That buffer
// is written transposed, (cols, rows): a matmul whose right side runs along its output columns vectorizes its loads and
// its register tile over them (5x faster here than reading the file's row-major weights along the reduce)
constexpr int64_t kDenseRows = 16;
// x (T rows of 32 * subs * nb) rounded to int8 per 32 as ggml's q8_0 does (step max|x| / 127, values rounded): the
// int8 values (T, 1, blocks, sub-blocks, 32) and each 32's step (T, 1, blocks, sub-blocks, 1), both realized
struct Q8Rows {
  Tensor q, step;
};
Q8Rows q8_rows(const Tensor& x, int64_t T, int64_t nb, int64_t subs) {
  Tensor xb = x.reshape({T, 1, nb, subs, 32});
  Tensor amax = xb.abs().max({-1}, true);
  Tensor inv = amax.gt(amax.scalar_like(0)).where(amax.scalar_like(127).div(amax), amax.scalar_like(0));
  return {xb.mul(inv).round().cast(dtypes::int8).contiguous(), amax.div(amax.scalar_like(127)).contiguous()};
}
// the weight's integer form, if its type has one (gguf_int8_form)
std::optional<GGUFIntForm> int8_form(const QWeight& w) {
  return gguf_int8_form(w.raw.reshape({w.rows * w.raw.shape()[1], w.raw.shape()[2]}), w.type, w.halves ? &*w.halves : nullptr);
}

// A few rows of x by the blocks of a type with an integer form (gguf_int8_form), as llama.cpp does it: x quantized per
// 32 as int8 (ggml's q8_0: step max|x| / 127, values rounded), each sub-block's dot product summed in int32 over the
// weight's uint8 codes (groups of 4 bytes: one DOT4 where the CPU has VNNI), then scaled. The min is taken as min * the
// sum of x's int8 values per group, so the kernel's float accumulators keep a lane per group of 4: a sub-block is 8
// int32 lanes converted and multiply-added, with no sum across lanes until the row's end
Tensor linear_int8(const Tensor& x, const QWeight& w, const GGUFIntForm& f) {
  // (T, rows, blocks of a row, sub-blocks, groups, bytes): a block's sub-blocks as an axis of their own, which the
  // heuristics unroll, so Q4_K's packed scales are unpacked once per block and not per sub-block
  int64_t subs = f.codes.shape()[1], nb = w.cols / (32 * subs), T = x.numel() / w.cols;
  auto [xq, dx] = q8_rows(x, T, nb, subs);
  if ((w.type == 2 || w.type == kGGMLQ4_0Decode) && nb % 4 == 0) {
    // Q4_0 four blocks a step, (T, rows, steps, block, group, nibble, byte): a block's two nibble halves are summed in
    // int32 before its scale, so the float work is 16 lanes (4 blocks x 4 groups) per 128 elements, not 32 per 64;
    // the heuristics unroll nibble, group and block, and one step is 4 runs of 16 bytes (x laid out to match): in the
    // decode order, one aligned cache line
    int64_t G = nb / 4;
    Tensor bytes = w.type == 2 ? w.raw.shrink({{0, w.rows}, {0, nb}, {2, 18}}) : gguf_decode_code_bytes(w.raw.reshape({w.rows * nb, 18}), w.type);
    Tensor codes = gguf_fields(bytes.reshape({1, w.rows, G, 4, 4, 4}), 4).cast(dtypes::int32);
    // x's element h * 16 + 4g + y of block 4s + b, stored (s, h, b, g, y) so each half is one 64-byte load
    Tensor xp = xq.reshape({T, 1, G, 4, 2, 4, 4}).permute({0, 1, 2, 4, 3, 5, 6}).contiguous().permute({0, 1, 2, 4, 5, 3, 6}).cast(dtypes::int32);
    Tensor dot = codes.mul(xp).sum({-1, -2}).cast(dtypes::float32);
    Tensor sx = xp.sum({-1, -2}).cast(dtypes::float32);
    sx = sx.mul(sx.scalar_like(double(f.offset))).contiguous();
    Tensor scale = f.scale.reshape({1, w.rows, G, 4, 1}).mul(dx.reshape({T, 1, G, 4, 1}));
    Shape out = x.shape();
    out.back() = w.rows;
    return dot.sub(sx).mul(scale).sum({-1, -2, -3}).reshape(out);
  }
  if (w.type == kGGMLQ4KDecode) {
    // Q4_K in the decode order (gguf_repack_decode: the codes first, each block's two aligned lines), (T, rows, blocks, h,
    // r, j, nibble, byte): lane 8r + j of each 64-byte run is 4 bytes of sub-block j, both nibbles summed in int32 (two
    // vpdpbusd), then scaled: 16 float lanes per 128 elements where the file's order takes 32. x's element 32j + 16r +
    // 8h + 4 nibble + y is stored (h, nibble, r, j, y), so each nibble's x is one 64-byte load
    Tensor bytes = gguf_decode_code_bytes(w.raw.reshape({w.rows * nb, 144}), w.type).reshape({1, w.rows, nb, 2, 2, 8, 4});
    Tensor codes = gguf_fields(bytes, 4).cast(dtypes::int32);
    Tensor xp = xq.reshape({T, 1, nb, 8, 2, 2, 2, 4}).permute({0, 1, 2, 5, 6, 4, 3, 7}).contiguous();
    xp = xp.permute({0, 1, 2, 3, 5, 6, 4, 7}).cast(dtypes::int32);
    Tensor dot = codes.mul(xp).sum({-1, -2}).cast(dtypes::float32);
    Tensor sx = xp.sum({-1, -2}).cast(dtypes::float32).contiguous();
    Tensor d8 = dx.reshape({T, 1, nb, 1, 1, 8});
    Tensor scale = f.scale.reshape({1, w.rows, nb, 1, 1, 8}).mul(d8), min = f.min.reshape({1, w.rows, nb, 1, 1, 8}).mul(d8);
    Shape out = x.shape();
    out.back() = w.rows;
    return dot.mul(scale).sub(sx.mul(min)).sum({-1, -2, -3, -4}).reshape(out);
  }
  xq = xq.reshape({T, 1, nb, subs, 8, 4});
  Tensor sx = xq.cast(dtypes::int32).sum({-1}).cast(dtypes::float32);
  sx = (f.offset ? sx.mul(sx.scalar_like(double(f.offset))) : sx).contiguous();
  Tensor dot = f.codes.reshape({1, w.rows, nb, subs, 8, 4}).cast(dtypes::int32).mul(xq.cast(dtypes::int32)).sum({-1});
  Tensor scale = f.scale.reshape({1, w.rows, nb, subs, f.groups}), min = f.min.reshape({1, w.rows, nb, subs, f.groups});
  Tensor fdot = dot.cast(dtypes::float32);
  if (f.groups > 1) {  // a scale per 8 / groups lanes (Q6_K's 16 elements: 4 lanes)
    fdot = fdot.reshape({T, w.rows, nb, subs, f.groups, 8 / f.groups}), sx = sx.reshape({T, 1, nb, subs, f.groups, 8 / f.groups});
    dx = dx.unsqueeze(-1), scale = scale.unsqueeze(-1), min = min.unsqueeze(-1);
  }
  scale = scale.mul(dx), min = min.mul(dx);
  Shape out = x.shape();
  out.back() = w.rows;
  // with an offset, (dot - offset * sum(x)) * scale: a subtraction and one multiply-add per 8 lanes, the min unused
  Tensor v = f.offset ? fdot.sub(sx).mul(scale) : fdot.mul(scale).sub(sx.mul(min));
  std::vector<int64_t> axes{-1, -2, -3};
  if (f.groups > 1) axes.push_back(-4);
  return v.sum(axes).reshape(out);
}

// The weight dequantized into a buffer of `dt` with its rows inner: transposed, (cols, rows), or with `pairs` as pairs
// of adjacent columns along the rows, (cols / 2, rows, 2). Written from the blocks' own structure, (blocks of a row,
// ..., rows) or (blocks of a row, ..., pairs, rows, 2) where a block's last axis holds whole pairs, so an axis of the
// kernel runs along each block's bytes and the heuristics tile it with the rows
Tensor dense_rows_inner(const QWeight& w, DType dt, bool pairs) {
  Shape out = pairs ? Shape{w.cols / 2, w.rows, 2} : Shape{w.cols, w.rows};
  if (w.raw.dtype() == dtypes::uint8 && w.raw.ndim() == 3) {
    int64_t nb = w.raw.shape()[1];
    Tensor bl = gguf_dequantize_blocked(w.raw.reshape({w.rows * nb, w.raw.shape()[2]}), w.type);
    Shape s{w.rows, nb};
    s.insert(s.end(), bl.shape().begin() + 1, bl.shape().end());
    if (!pairs || s.back() % 2 == 0) {
      if (pairs) s.back() /= 2, s.push_back(2);
      std::vector<int64_t> perm;
      for (int64_t i = 1; i < int64_t(s.size()) - (pairs ? 1 : 0); i++) perm.push_back(i);
      perm.push_back(0);
      if (pairs) perm.push_back(int64_t(s.size()) - 1);
      return bl.reshape(s).permute(perm).cast(dt).contiguous().reshape(out);
    }
  }
  if (!pairs) return w.dense().transpose().cast(dt).contiguous();
  return w.dense().reshape({w.rows, w.cols / 2, 2}).permute({1, 0, 2}).cast(dt).contiguous();
}

enum class PromptForm { Float32, BFloat16, Int8 };

// whether `device` multiplies and adds pairs of bfloats in one instruction (DOT2: x86's AVX512-BF16)
bool bf16_pairs(const std::string& device) {
  if (!getenv_int("TG_LLM_BF16", 1) || device.find(',') != std::string::npos) return false;
  return get_device(device).renderer().native_op(Ops::DOT2, dtypes::float32);
}

// The int8 prompt form pays where one core's vpdpbusd retires more than this many times the multiply-adds of its
// vdpbf16ps: about half of its instructions convert and scale each block's sums (64 products of bytes an instruction
// against 32 of bfloat pairs, so a CPU that runs both at one rate, 2x, keeps bfloat; an Intel Xeon measured 8.5x)
constexpr double kInt8OverBf16 = 4.0;

// How a prompt's products (kDenseRows rows or more) of a weight with an integer form of one scale per 32 (Q4_0, Q8_0,
// Q4_K) are computed on `device`: TG_LLM_PROMPT (auto, int8, bf16, f32) where the device can, else by the measured
// rates (cpu_dot_rates)
PromptForm prompt_form(const std::string& device) {
  bool multi = device.find(',') != std::string::npos;
  bool dot4 = !multi && get_device(device).renderer().native_op(Ops::DOT4, dtypes::int32), dot2 = bf16_pairs(device);
  std::string want = getenv_str("TG_LLM_PROMPT", "auto");
  if (want == "f32") return PromptForm::Float32;
  if (want == "bf16") return dot2 ? PromptForm::BFloat16 : PromptForm::Float32;
  if (dot4 && (want == "int8" || !dot2 || cpu_dot_rates().int8 > kInt8OverBf16 * cpu_dot_rates().bf16)) return PromptForm::Int8;
  return dot2 ? PromptForm::BFloat16 : PromptForm::Float32;
}
const char* prompt_form_name(PromptForm f) { return f == PromptForm::Int8 ? "int8" : f == PromptForm::BFloat16 ? "bfloat16" : "float32"; }

// A prompt's rows by the blocks of a type with an integer form of one scale per sub-block, where the CPU's byte dot
// products are fast (PromptForm::Int8): x rounded to int8 per 32 as the decode form does (llama.cpp rounds a prompt's
// the same way), the codes realized as uint8 with the rows inner, (blocks, sub-blocks, groups, rows, 4), so one 64-byte
// load is 16 rows' 4 bytes and a vpdpbusd multiplies them by 4 bytes of x broadcast. A sub-block's 8 groups are summed
// in int32 (exact), then converted, scaled by the weight's scale (rows inner too) and x's step, and summed in float.
Tensor linear_int8_rows(const Tensor& x, const QWeight& w, const GGUFIntForm& f) {
  int64_t subs = f.codes.shape()[1], nb = w.cols / (32 * subs), T = x.numel() / w.cols;
  auto [xq, step] = q8_rows(x, T, nb, subs);
  Tensor sx = xq.cast(dtypes::int32).sum({-1}).cast(dtypes::float32);
  sx = (f.offset ? sx.mul(sx.scalar_like(double(f.offset))) : sx).contiguous();
  Tensor dx = step.reshape({T, 1, nb, subs});
  // realized in the order `to` (the rows moved inner), then seen in the original order again
  auto rows_inner = [](const Tensor& t, const std::vector<int64_t>& to) {
    std::vector<int64_t> back(to.size());
    for (size_t i = 0; i < to.size(); i++) back[size_t(to[i])] = int64_t(i);
    return t.permute(to).contiguous().permute(back);
  };
  Tensor codes = rows_inner(f.codes.reshape({w.rows, nb, subs, 8, 4}), {1, 2, 3, 0, 4}).reshape({1, w.rows, nb, subs, 8, 4});
  auto per_sub = [&](const Tensor& t) { return rows_inner(t.reshape({w.rows, nb, subs}), {1, 2, 0}).reshape({1, w.rows, nb, subs}).mul(dx); };
  Tensor dot = codes.cast(dtypes::int32).mul(xq.reshape({T, 1, nb, subs, 8, 4}).cast(dtypes::int32)).sum({-1}).sum({-1});
  Tensor fdot = dot.cast(dtypes::float32), scale = per_sub(f.scale);
  Tensor v = f.offset ? fdot.sub(sx).mul(scale) : fdot.mul(scale).sub(sx.mul(per_sub(f.min)));
  Shape out = x.shape();
  out.back() = w.rows;
  return v.sum({-1, -2}).reshape(out);
}

// A prompt's rows by a quantized weight where the CPU multiplies bfloat pairs: the weight dequantized into bfloats laid
// out (cols / 2, rows, 2), x rounded to bfloat. Each step of the product's reduce then loads 16 rows' pairs as one
// vector and multiplies and adds them with a pair of x broadcast, twice the multiply-adds of a float32 instruction
// (512 x 2048 by 5632 x 2048 on two Zen 5 cores: 24 -> 12.6 ms), and the dequantized weight is half the bytes. Both
// sides keep 8 significant bits, as llama.cpp's prompt products keep 7 or 8 of x (rounded to int8 per block)
Tensor linear_bf16(const Tensor& x, const QWeight& w) {
  int64_t T = x.numel() / w.cols, h = w.cols / 2;
  Tensor xb = x.cast(dtypes::bfloat16).contiguous().reshape({T, 1, h, 2}).cast(dtypes::float32);
  Tensor wp = dense_rows_inner(w, dtypes::bfloat16, true);
  // the pair its own (inner) sum: its two products are added before the accumulator, the form DOT2 takes
  Tensor out = xb.mul(wp.permute({1, 0, 2}).reshape({1, w.rows, h, 2}).cast(dtypes::float32)).sum({-1}).sum({-1});
  Shape s = x.shape();
  s.back() = w.rows;
  return out.reshape(s);
}

Tensor linear(const Tensor& x, const QWeight& w) {
  bool quantized = w.raw.dtype() == dtypes::uint8 && w.raw.ndim() == 3;
  // its input realized too: an elementwise producer fused into the matmul (a norm, SwiGLU) would be redone per tile
  if (x.numel() / w.cols >= kDenseRows) {
    PromptForm form = quantized ? prompt_form(x.device()) : PromptForm::Float32;
    if (form == PromptForm::Int8)
      if (auto f = int8_form(w); f && f->groups == 1) return linear_int8_rows(x, w, *f);
    // a type without the int8 form takes bfloat pairs where the device has them
    if (form != PromptForm::Float32 && w.cols % 2 == 0 && bf16_pairs(x.device())) return linear_bf16(x, w);
    return x.contiguous().matmul(dense_rows_inner(w, dtypes::float32, false));
  }
  if (!quantized) return x.matmul(w.dense().transpose());
  int64_t nb = w.raw.shape()[1];
  Tensor blocks = w.raw.reshape({w.rows * nb, w.raw.shape()[2]});
  if (auto f = int8_form(w)) return linear_int8(x, w, *f);
  Tensor wb = gguf_dequantize_blocked(blocks, w.type);
  Shape inner(wb.shape().begin() + 1, wb.shape().end()), ws{w.rows, nb}, xs = x.shape();
  ws.insert(ws.end(), inner.begin(), inner.end());
  xs.back() = nb;
  xs.insert(xs.end() - 1, 1);
  xs.insert(xs.end(), inner.begin(), inner.end());
  std::vector<int64_t> axes;
  for (int64_t i = 0; i <= int64_t(inner.size()); i++) axes.push_back(-1 - i);
  return x.reshape(xs).mul(wb.reshape(ws)).sum(axes);
}

}  // namespace

Tensor QWeight::dense() const {
  if (raw.dtype() != dtypes::uint8 || raw.ndim() != 3) return raw.cast(dtypes::float32);
  int64_t nbpr = raw.shape()[1], bytes = raw.shape()[2];
  return gguf_dequantize(raw.reshape({rows * nbpr, bytes}), type).reshape({rows, cols});
}

Tensor QWeight::rows_of(const Tensor& idx) const {
  Shape out = idx.shape();
  int64_t n = idx.numel();
  Tensor flat = idx.reshape({n});
  out.push_back(cols);
  if (raw.dtype() != dtypes::uint8 || raw.ndim() != 3) return raw.gather(0, flat.reshape({n, 1}).expand({n, cols})).cast(dtypes::float32).reshape(out);
  int64_t nbpr = raw.shape()[1], bytes = raw.shape()[2];
  Tensor bl = raw.gather(0, flat.reshape({n, 1, 1}).expand({n, nbpr, bytes}));
  return gguf_dequantize(bl.reshape({n * nbpr, bytes}), type).reshape(out);
}

std::shared_ptr<LlmModel> LlmModel::load(const std::string& path, const LlmOptions& opts) {
  Bytes b = open_file(path, "llm_load");
  GGUFFile f = gguf_parse(b);
  Meta m{f, b.name};
  auto model = std::shared_ptr<LlmModel>(new LlmModel());
  LlmModel& M = *model;
  M.device_ = opts.device;
  M.threads_ = opts.threads, M.beam_ = opts.beam;
  LlmConfig& c = M.cfg_;
  c.arch = m.str("general.architecture");
  TG_CHECK(c.arch == "llama" || c.arch == "qwen2", TG_ERROR_UNSUPPORTED,
           b.name + ": llm: general.architecture '" + c.arch.substr(0, 40) + "' is not supported (llama, qwen2)");
  const std::string a = c.arch + ".";
  c.prompt_products = prompt_form_name(prompt_form(M.device_));
  constexpr int64_t kBig = int64_t(1) << 24;
  c.n_layer = m.count(a + "block_count", 1, 1024);
  c.dim = m.count(a + "embedding_length", 1, kBig);
  c.ffn = m.count(a + "feed_forward_length", 1, kBig);
  c.n_head = m.count(a + "attention.head_count", 1, 4096);
  c.n_kv_head = m.count(a + "attention.head_count_kv", 1, c.n_head, c.n_head);
  TG_CHECK(c.n_head % c.n_kv_head == 0, TG_ERROR_IO,
           strformat("%s: llm: %sattention.head_count (%lld heads) doesn't split into groups of %sattention.head_count_kv (%lld KV heads)",
                     b.name.c_str(), a.c_str(), (long long)c.n_head, a.c_str(), (long long)c.n_kv_head));
  // without a key length, a head is embedding_length / head_count wide (llama.cpp's default), which must be whole
  TG_CHECK(m.find(a + "attention.key_length") || c.dim % c.n_head == 0, TG_ERROR_IO,
           strformat("%s: llm: %sembedding_length %lld doesn't split into %sattention.head_count %lld heads", b.name.c_str(), a.c_str(),
                     (long long)c.dim, a.c_str(), (long long)c.n_head));
  c.head_dim = m.count(a + "attention.key_length", 1, kBig, c.dim / c.n_head);
  TG_CHECK(m.count(a + "attention.value_length", 1, kBig, c.head_dim) == c.head_dim, TG_ERROR_UNSUPPORTED,
           b.name + ": llm: " + a + "attention.value_length differs from the key length");
  c.rope_dim = m.count(a + "rope.dimension_count", 2, c.head_dim, c.head_dim);
  TG_CHECK(c.rope_dim % 2 == 0, TG_ERROR_IO, b.name + ": llm: " + a + "rope.dimension_count is odd");
  c.eps = m.num(a + "attention.layer_norm_rms_epsilon");
  TG_CHECK(c.eps > 0 && c.eps < 1, TG_ERROR_IO, b.name + ": llm: " + a + "attention.layer_norm_rms_epsilon is not in (0, 1)");
  c.rope_base = m.num(a + "rope.freq_base", 10000.0);
  TG_CHECK(c.rope_base > 1, TG_ERROR_IO, b.name + ": llm: " + a + "rope.freq_base is not above 1");
  c.rope_neox = c.arch == "qwen2";
  double rope_scale = 1.0;
  if (const MetaEntry* st = m.find(a + "rope.scaling.type"); st && st->value != "none") {
    TG_CHECK(st->value == "linear", TG_ERROR_UNSUPPORTED, b.name + ": llm: " + a + "rope.scaling.type '" + st->value.substr(0, 20) + "' is not supported (linear)");
    rope_scale = m.num(a + "rope.scaling.factor");
    TG_CHECK(rope_scale >= 1 && rope_scale < 1e6, TG_ERROR_IO, b.name + ": llm: " + a + "rope.scaling.factor is out of range");
  }
  int64_t file_ctx = m.count(a + "context_length", 1, kBig);
  c.context = opts.context > 0 ? std::min(opts.context, file_ctx) : std::min<int64_t>(file_ctx, 4096);
  for (auto& e : f.kv) M.meta_.push_back(e);
  M.file_ = b.name;
  if (m.find("tokenizer.ggml.model")) M.tok_.emplace(f, b.name);  // a bad vocabulary fails the load, by name

  std::unordered_map<std::string, const GGUFTensorInfo*> by_name;
  for (auto& ti : f.tensors) by_name[ti.name] = &ti;
  auto info = [&](const std::string& name, bool required) -> const GGUFTensorInfo* {
    auto it = by_name.find(name);
    TG_CHECK(it != by_name.end() || !required, TG_ERROR_IO, b.name + ": llm: the file has no tensor '" + name + "'");
    return it == by_name.end() ? nullptr : it->second;
  };
  auto shape = [](const GGUFTensorInfo& ti) {  // as the tensor's shape reads, outermost first
    return "(" + join_ints(Shape(ti.dims.rbegin(), ti.dims.rend()), ", ") + (ti.dims.size() == 1 ? ",)" : ")");
  };
  // Q4_0, Q8_0 and Q4_K weights in the decode order where the decode products take the integer form (a byte dot product
  // instruction): the GEMVs then load whole aligned lines of codes, and Q4_K's sums both nibbles of a byte in int32 and
  // unpacks the scales with a mask and a shift (TG_LLM_REPACK=0: the file's order)
  bool repack_decode = getenv_int("TG_LLM_REPACK", 1) && M.device_.find(',') == std::string::npos &&
                     get_device(M.device_).renderer().native_op(Ops::DOT4, dtypes::int32);
  auto weight = [&](const std::string& name, int64_t rows, int64_t cols, bool repack = true) {
    const GGUFTensorInfo* ti = info(name, true);
    int64_t elems, bytes;
    const char* tname;
    TG_CHECK(gguf_block(ti->type, &elems, &bytes, &tname), TG_ERROR_UNSUPPORTED, strformat("%s: llm: tensor '%s' has ggml type %u, which isn't read",
                                                                                            b.name.c_str(), name.c_str(), ti->type));
    TG_CHECK(ti->dims.size() == 2 && ti->dims[0] == cols && (rows < 0 || ti->dims[1] == rows), TG_ERROR_IO,
             strformat("%s: llm: tensor '%s' is %s; by the metadata it should be (%s, %lld)", b.name.c_str(), name.c_str(), shape(*ti).c_str(),
                       rows < 0 ? "rows" : std::to_string(rows).c_str(), (long long)cols));
    Tensor raw = gguf_raw(b, f, *ti, M.device_);
    QWeight w{elems == 1 ? raw : raw.reshape({ti->dims[1], cols / elems, bytes}), ti->type, ti->dims[1], cols};
    if (gguf_has_decode_order(ti->type) && repack_decode && repack) {  // rearranged once for the decode GEMV (linear_int8)
      w.raw = gguf_repack_decode(raw.reshape({raw.numel() / bytes, bytes}), ti->type).reshape(w.raw.shape());
      w.type = kGGMLDecode | ti->type;
    }
    w.raw.realize();
    if (elems > 1 && bytes % 2 == 0 && gguf_has_int8_form(w.type)) {
      // only where the blocks are a whole buffer (reshapes of it): a view inside a larger one starts elsewhere
      const UOp* u = w.raw.uop().get();
      while (u->op == Ops::RESHAPE) u = u->src[0].get();
      if (u->op == Ops::BUFFER && buffer_of(u)->nbytes() == ti->nbytes) {
        const std::shared_ptr<Buffer>& base = buffer_of(u);
        auto view = std::make_shared<Buffer>(base, 0, dtypes::uint16, int64_t(base->nbytes() / 2));
        w.halves = Tensor(buffer_uop(std::move(view)), M.device_).reshape({raw.shape()[0], bytes / 2});
      }
    }
    return w;
  };
  auto vec = [&](const std::string& name, int64_t n, bool required) -> std::optional<Tensor> {
    const GGUFTensorInfo* ti = info(name, required);
    if (!ti) return std::nullopt;
    TG_CHECK(ti->dims.size() == 1 && ti->dims[0] == n && (ti->type == 0 || ti->type == 1), TG_ERROR_IO,
             strformat("%s: llm: tensor '%s' is %s of ggml type %u; it should be (%lld,) float32 or float16", b.name.c_str(), name.c_str(),
                       shape(*ti).c_str(), ti->type, (long long)n));
    Tensor t = gguf_raw(b, f, *ti, M.device_).cast(dtypes::float32);
    t.realize();
    return t;
  };
  int64_t qdim = c.n_head * c.head_dim, kvdim = c.n_kv_head * c.head_dim;
  M.embed_ = weight("token_embd.weight", -1, c.dim, false);  // its rows are gathered (rows_of): kept in the file's blocks
  c.vocab = M.embed_->rows;
  TG_CHECK(c.vocab >= 1, TG_ERROR_IO, b.name + ": llm: token_embd.weight has no rows");
  // the tokenizer's ids index the embedding's rows (llama.cpp refuses another count too)
  TG_CHECK(!M.tok_ || M.tok_->n_vocab() == c.vocab, TG_ERROR_IO,
           strformat("%s: llm: token_embd.weight has %lld rows for the %d tokens of tokenizer.ggml.tokens", b.name.c_str(), (long long)c.vocab,
                     M.tok_ ? M.tok_->n_vocab() : 0));
  M.output_ = info("output.weight", false) ? weight("output.weight", c.vocab, c.dim) : *M.embed_;  // tied when the file has none
  M.output_norm_ = vec("output_norm.weight", c.dim, true);
  for (int64_t i = 0; i < c.n_layer; i++) {
    std::string p = "blk." + std::to_string(i) + ".";
    auto cache = [&] {
      Tensor t = Tensor::full({1, c.n_kv_head, c.context, c.head_dim}, 0.0, dtypes::float32, M.device_).contiguous();
      t.realize();
      return t;
    };
    M.layers_.push_back(Layer{weight(p + "attn_q.weight", qdim, c.dim), weight(p + "attn_k.weight", kvdim, c.dim), weight(p + "attn_v.weight", kvdim, c.dim),
                              weight(p + "attn_output.weight", c.dim, qdim), weight(p + "ffn_gate.weight", c.ffn, c.dim),
                              weight(p + "ffn_up.weight", c.ffn, c.dim), weight(p + "ffn_down.weight", c.dim, c.ffn),
                              *vec(p + "attn_norm.weight", c.dim, true), *vec(p + "ffn_norm.weight", c.dim, true), cache(), cache(),
                              vec(p + "attn_q.bias", qdim, false), vec(p + "attn_k.bias", kvdim, false), vec(p + "attn_v.bias", kvdim, false)});
  }
  // rope tables: angle(p, i) = p / scale * base^(-2i / rope_dim), computed in double on the host
  int64_t half = c.rope_dim / 2;
  std::vector<float> cs(size_t(c.context * half)), sn(cs.size());
  for (int64_t p = 0; p < c.context; p++)
    for (int64_t i = 0; i < half; i++) {
      double ang = double(p) / rope_scale * std::pow(c.rope_base, -2.0 * double(i) / double(c.rope_dim));
      cs[size_t(p * half + i)] = float(std::cos(ang)), sn[size_t(p * half + i)] = float(std::sin(ang));
    }
  M.start_pos_ = UOp::variable("start_pos", 0, c.context - 1);
  M.rope_cos_ = Tensor::from_data(cs.data(), cs.size() * 4, dtypes::float32, {c.context, half}, M.device_);
  M.rope_sin_ = Tensor::from_data(sn.data(), sn.size() * 4, dtypes::float32, {c.context, half}, M.device_);
  if (!c.rope_neox) {
    std::vector<float> a(cs.size() * 2), bt(a.size());
    for (size_t i = 0; i < cs.size(); i++) a[2 * i] = cs[i], a[2 * i + 1] = sn[i], bt[2 * i] = -sn[i], bt[2 * i + 1] = cs[i];
    M.rope_a_ = Tensor::from_data(a.data(), a.size() * 4, dtypes::float32, {c.context, half, 2}, M.device_);
    M.rope_b_ = Tensor::from_data(bt.data(), bt.size() * 4, dtypes::float32, {c.context, half, 2}, M.device_);
  }
  return model;
}

Tensor LlmModel::window(const Tensor& t, int64_t axis, int64_t start, int64_t size, bool sym) const {
  if (sym) return t.shrink_at(axis, start_pos_, start, size, {bound_var(start_pos_.get(), start)});
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d : t.shape()) b.emplace_back(0, d);
  b[size_t(axis)] = {start, start + size};
  return t.shrink(b);
}
Tensor LlmModel::prefix(const Tensor& t, int64_t axis, int64_t size, bool sym) const {
  if (sym) return t.shrink_var(axis, start_pos_ + UOp::const_int(start_pos_->dtype, size), pos_ + size, {bound_var(start_pos_.get(), pos_)});
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d : t.shape()) b.emplace_back(0, d);
  b[size_t(axis)] = {0, pos_ + size};
  return t.shrink(b);
}

Tensor LlmModel::rope(const Tensor& x, int64_t sp, bool sym) const {
  const Shape& s = x.shape();  // (1, heads, T, head dim)
  int64_t T = s[2], rd = cfg_.rope_dim, half = rd / 2, hd = cfg_.head_dim;
  Tensor xr = rd == hd ? x : x.shrink({{0, s[0]}, {0, s[1]}, {0, T}, {0, rd}});
  auto rotate = [&]() {
    if (cfg_.rope_neox) {  // (x1, x2) halves -> (x1 cos - x2 sin, x2 cos + x1 sin)
      Tensor cos = window(*rope_cos_, 0, sp, T, sym).reshape({1, 1, T, half});
      Tensor sin = window(*rope_sin_, 0, sp, T, sym).reshape({1, 1, T, half});
      Tensor x1 = xr.shrink({{0, s[0]}, {0, s[1]}, {0, T}, {0, half}}), x2 = xr.shrink({{0, s[0]}, {0, s[1]}, {0, T}, {half, rd}});
      return Tensor::cat({x1.mul(cos).sub(x2.mul(sin)), x2.mul(cos).add(x1.mul(sin))}, -1);
    }
    // adjacent pairs (x[2i], x[2i+1]), as ggml's llama rope: (x0 cos - x1 sin, x0 sin + x1 cos) as x0 * a + x1 * b
    // (the same roundings: a negation is exact, and a fused multiply-add takes the first product either way)
    Tensor p = xr.reshape({s[0], s[1], T, half, 2});
    Shape pairs{s[0], s[1], T, half, 2};
    Tensor x0 = p.shrink({{0, s[0]}, {0, s[1]}, {0, T}, {0, half}, {0, 1}}).expand(pairs);
    Tensor x1 = p.shrink({{0, s[0]}, {0, s[1]}, {0, T}, {0, half}, {1, 2}}).expand(pairs);
    Tensor a = window(*rope_a_, 0, sp, T, sym).reshape({1, 1, T, half, 2}), b = window(*rope_b_, 0, sp, T, sym).reshape({1, 1, T, half, 2});
    return x0.mul(a).add(x1.mul(b)).reshape({s[0], s[1], T, rd});
  };
  Tensor out = rotate();
  return rd == hd ? out : Tensor::cat({out, x.shrink({{0, s[0]}, {0, s[1]}, {0, T}, {rd, hd}})}, -1);
}

Tensor LlmModel::attention(Layer& l, const Tensor& x, int64_t sp, bool sym) {
  const LlmConfig& c = cfg_;
  int64_t T = x.shape()[1], H = c.n_head, KV = c.n_kv_head, hd = c.head_dim, L = sp + T;
  Tensor q = linear(x, l.q), k = linear(x, l.k), v = linear(x, l.v);
  if (l.q_bias) q = q.add(*l.q_bias);
  if (l.k_bias) k = k.add(*l.k_bias);
  if (l.v_bias) v = v.add(*l.v_bias);
  // realized before RoPE: its pairs read each row twice, and fused, every output would redo both rows' dot products.
  // Realized together with q, and before the cache's assigns (each realizes at once, being a view of the cache): on
  // their own, each would compute the norm and the int8 rounding of x again
  k = k.contiguous(), v = v.contiguous();
  if (T == 1) {
    q = q.contiguous();
    Tensor::realize_all({&q, &k, &v});
  }
  // a prompt's intermediates are realized once where the next reduce would redo them for every output: q before RoPE
  // (as k) and after it (the score kernel would rotate q again for every key), the keys transposed (the score matmul
  // then vectorizes along them), the masked scores and the probabilities (the softmax's exps), and their product with
  // V (else computed straight into the transposed layout the output projection reads)
  auto prompt_once = [T](const Tensor& t) { return T > 1 ? t.contiguous() : t; };
  q = prompt_once(rope(prompt_once(q).reshape({1, T, H, hd}).transpose(1, 2), sp, sym));
  k = rope(k.reshape({1, T, KV, hd}).transpose(1, 2), sp, sym);
  v = v.reshape({1, T, KV, hd}).transpose(1, 2);
  window(l.k_cache, 2, sp, T, sym).assign(k);
  window(l.v_cache, 2, sp, T, sym).assign(v);
  // grouped-query attention: the H/KV query heads that share a KV head are stacked as rows, (1, KV, H/KV * T, hd), so
  // the scores and the output are plain batched matmuls over the cache (read through a cache expanded to H heads,
  // the product with V ran 12x slower)
  int64_t G = H / KV;
  Tensor kc = prefix(l.k_cache, 2, T, sym), vc = prefix(l.v_cache, 2, T, sym);
  Tensor scores = q.reshape({1, KV, G * T, hd}).matmul(prompt_once(kc.transpose(2, 3))).mul(q.scalar_like(1.0 / std::sqrt(double(hd))));
  if (T > 1) {
    // the mask is added by the softmax's kernels, not by the score matmul: broadcast over the stacked heads, it would
    // cost the matmul its register tile (14 -> 3 ms a layer for a 512-token prompt)
    Tensor mask = Tensor::full({T, L}, -INFINITY, dtypes::float32, device_).triu(sp + 1).contiguous();
    scores = prompt_once(scores).reshape({1, KV, G, T, L}).add(mask).reshape({1, KV, G * T, L});
  }
  Tensor attn = prompt_once(prompt_once(scores.softmax(-1)).matmul(vc));
  return linear(attn.reshape({1, H, T, hd}).transpose(1, 2).reshape({1, T, H * hd}), l.o);
}

Tensor LlmModel::forward(const Tensor& tokens, int64_t sp, bool sym) {
  const LlmConfig& c = cfg_;
  int64_t T = tokens.shape()[1];
  // a prompt's embedding is realized: the first layer reads it from memory as every later one reads its input (with the
  // gather fused in, its FFN down projection got a 30x slower kernel)
  Tensor x = embed_->rows_of(tokens.reshape({T})).reshape({1, T, c.dim});
  if (T > 1) x = x.contiguous();
  for (auto& l : layers_) {
    Tensor h = x.add(attention(l, rms_norm(x, l.attn_norm, c.eps), sp, sym));
    Tensor f = rms_norm(h, l.ffn_norm, c.eps);
    x = h.add(linear(linear(f, l.gate).silu().mul(linear(f, l.up)), l.down));
    x.realize();
  }
  Tensor last = T == 1 ? x : x.shrink({{0, 1}, {T - 1, T}, {0, c.dim}});
  return linear(rms_norm(last, *output_norm_, c.eps), *output_).reshape({c.vocab});
}

const Tokenizer& LlmModel::tokenizer() const {
  TG_CHECK(tok_, TG_ERROR_UNSUPPORTED, file_ + ": llm: the file has no tokenizer (tokenizer.ggml.model)");
  return *tok_;
}

// the model's thread count and BEAM width, for what runs and compiles while it lives
struct LlmModel::Settings {
  CpuThreadCap cap;
  std::optional<Context> beam;
  explicit Settings(const LlmModel& m) : cap(m.threads_) {
    if (m.beam_ > 0) beam.emplace(std::initializer_list<std::pair<const char*, int64_t>>{{"BEAM", m.beam_}});
  }
};

int32_t LlmModel::sample(const Tensor& logits, const Sampling& s, const std::vector<int32_t>& history) const {
  Settings scope(*this);
  int64_t V = cfg_.vocab;
  TG_CHECK(logits.ndim() == 1 && logits.shape()[0] == V, TG_ERROR_SHAPE, strformat("llm_sample: logits must be (%lld,)", (long long)V));
  TG_CHECK(std::isfinite(s.temperature) && std::isfinite(s.top_p) && std::isfinite(s.repeat_penalty) && s.top_k >= 0 && s.repeat_last_n >= 0 &&
               s.repeat_penalty > 0,
           TG_ERROR_INVALID_ARGUMENT, "llm_sample: a sampling setting is out of range (temperature, top_p finite; top_k, repeat_last_n >= 0; repeat_penalty > 0)");
  Tensor l = logits.to(device_).cast(dtypes::float32);
  size_t n = std::min<size_t>(history.size(), size_t(s.repeat_last_n));
  if (s.repeat_penalty != 1.0 && n > 0) {
    for (size_t i = history.size() - n; i < history.size(); i++)
      TG_CHECK(history[i] >= 0 && history[i] < V, TG_ERROR_INVALID_ARGUMENT, strformat("llm_sample: history token %d is not in the vocabulary", history[i]));
    Tensor h = Tensor::from_data(history.data() + (history.size() - n), n * sizeof(int32_t), dtypes::int32, {int64_t(n)}, device_);
    Tensor seen = h.one_hot(V).sum({0}).gt(l.scalar_like(0));
    Tensor pen = l.gt(l.scalar_like(0)).where(l.div(l.scalar_like(s.repeat_penalty)), l.mul(l.scalar_like(s.repeat_penalty)));
    l = seen.where(pen, l);
  }
  Tensor pick = [&] {
    if (s.temperature <= 0) return l.argmax(0);
    int64_t k = std::min<int64_t>(s.top_k > 0 ? s.top_k : 1024, V);
    auto [vals, idx] = l.topk(k);  // largest first
    Tensor x = vals.div(vals.scalar_like(s.temperature));
    if (s.top_p < 1.0) {  // keep a token while the tokens before it hold less than top_p: at least the first
      Tensor p = x.softmax(0), before = p.cumsum(0).sub(p);
      x = before.lt(p.scalar_like(s.top_p)).where(x, x.scalar_like(-INFINITY));
    }
    Tensor u = Tensor::rand({k}, dtypes::float32, device_).maximum(x.scalar_like(1e-20));
    Tensor choice = x.add(u.log().neg().log().neg()).argmax(0);  // Gumbel-max: a draw from softmax(x)
    return idx.mul(choice.one_hot(k).cast(idx.dtype())).sum();
  }();
  int64_t tok = 0;
  Tensor t = pick.cast(dtypes::int64).to("CPU");
  t.to_data(&tok, sizeof tok);
  return int32_t(tok);
}

std::vector<int32_t> LlmModel::generate(const std::vector<int32_t>& prompt, int64_t max_tokens, const Sampling& s,
                                        const std::function<bool(int32_t)>& on_token) {
  TG_CHECK(max_tokens >= 0, TG_ERROR_INVALID_ARGUMENT, "llm_generate: max_tokens is negative");
  Settings scope(*this);
  Tensor::manual_seed(s.seed);
  std::vector<int32_t> history = prompt, out;
  Tensor logits = eval(prompt);
  while (int64_t(out.size()) < max_tokens) {
    int32_t tok = sample(logits, s, history);
    if (tok_ && tok_->is_eog(tok)) break;
    out.push_back(tok), history.push_back(tok);
    if (on_token && !on_token(tok)) break;
    if (pos_ >= cfg_.context || int64_t(out.size()) == max_tokens) break;
    logits = eval({tok});
  }
  return out;
}

Tensor LlmModel::eval(const std::vector<int32_t>& tokens) {
  TG_CHECK(!tokens.empty(), TG_ERROR_INVALID_ARGUMENT, "llm_eval: no tokens");
  Settings scope(*this);
  TG_CHECK(pos_ + int64_t(tokens.size()) <= cfg_.context, TG_ERROR_INVALID_ARGUMENT,
           strformat("llm_eval: %zu tokens at position %lld pass the context of %lld", tokens.size(), (long long)pos_, (long long)cfg_.context));
  for (size_t i = 0; i < tokens.size(); i++)
    TG_CHECK(tokens[i] >= 0 && tokens[i] < cfg_.vocab, TG_ERROR_INVALID_ARGUMENT,
             strformat("llm_eval: token %d (at %zu) is not in the vocabulary [0, %lld)", tokens[i], i, (long long)cfg_.vocab));
  Tensor t = Tensor::from_data(tokens.data(), tokens.size() * sizeof(int32_t), dtypes::int32, {1, int64_t(tokens.size())}, device_);
  if (tokens.size() > 1 || getenv_int("JIT", 1) == 0) {
    Tensor logits = forward(t, pos_, false);
    logits.realize();
    pos_ += int64_t(tokens.size());
    return logits;
  }
  // a decode step: the JIT's capture takes start_pos as a kernel argument, so every position replays it
  if (!decode_) decode_ = std::make_unique<TinyJit>([this](const std::vector<Tensor>& in) { return std::vector<Tensor>{forward(in[0], pos_, true)}; });
  Tensor out = (*decode_)({t}, {{"start_pos", pos_}})[0];
  // the JIT's output buffer is rewritten by the next step: the caller's logits are a copy of their own
  std::vector<float> host(size_t(cfg_.vocab));
  out.to_data(host.data(), host.size() * sizeof(float));
  pos_ += 1;
  return Tensor::from_data(host.data(), host.size() * sizeof(float), dtypes::float32, {cfg_.vocab}, device_);
}

}  // namespace tg::nn
