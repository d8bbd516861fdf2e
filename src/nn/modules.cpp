// tinygrad's nn modules: the same constructors, initialisation, parameter names and forward passes.
#include <cmath>
#include <set>

#include "nn/modules.h"

namespace tg::nn {

bool training() { return TRAINING.get() != 0; }

void Module::state(const std::string& prefix, StateDict& out) const {
  for (auto& s : slots_const())
    if (s.t) out.emplace_back(prefix + s.name, *s.t);
}
void Module::parameters(std::vector<Tensor>& out) const {
  for (auto& s : slots_const())
    if (s.t && s.param) out.push_back(*s.t);
}

void Module::set(const std::string& name, const std::optional<Tensor>& t, const char* what) {
  std::string names;
  for (auto& s : slots()) {
    if (s.name != name) {
      names += (names.empty() ? "" : ", ") + s.name;
      continue;
    }
    if (!t) {
      TG_CHECK(s.opt, TG_ERROR_INVALID_ARGUMENT,
               strformat("%s: the %s's '%s' is required; it can be replaced, not removed", what, kind().c_str(), name.c_str()));
      s.opt->reset();
      return;
    }
    const Shape& want = s.shape.empty() && s.t ? s.t->shape() : s.shape;
    bool shape_ok = s.counter ? t->shape() == Shape{} || t->shape() == Shape{1} : t->shape() == want;
    TG_CHECK(shape_ok, TG_ERROR_SHAPE,
             strformat("%s: the %s's '%s' is %s, got a tensor of shape %s", what, kind().c_str(), name.c_str(),
                       s.counter ? "one element, () or (1,)" : shape_str(want).c_str(), shape_str(t->shape()).c_str()));
    bool dtype_ok = s.counter ? t->dtype() != dtypes::bool_ : dtypes::is_float(t->dtype());
    TG_CHECK(dtype_ok, TG_ERROR_DTYPE,
             strformat("%s: the %s's '%s' must be %s, got %s", what, kind().c_str(), name.c_str(), s.counter ? "a number" : "a float tensor",
                       t->dtype().name().c_str()));
    if (s.opt) s.opt->emplace(*t);
    else *s.t = *t;
    return;
  }
  fail(TG_ERROR_INVALID_ARGUMENT, strformat("%s: the %s has no tensor named '%s' (it has: %s)", what, kind().c_str(), name.c_str(),
                                            names.empty() ? "none" : names.c_str()));
}

void Module::set_option(const std::string& name, double v, const char* what) {
  option(name, what);  // the name must be known
  TG_CHECK(std::isfinite(v), TG_ERROR_INVALID_ARGUMENT, strformat("%s: %s.%s must be finite, got %g", what, kind().c_str(), name.c_str(), v));
  apply_option(name, v);
}
double Module::option(const std::string& name, const char* what) const {
  std::string names;
  for (auto& o : options()) {
    if (name == o.name) return o.value;
    names += (names.empty() ? "" : ", ") + std::string(o.name);
  }
  fail(TG_ERROR_INVALID_ARGUMENT, strformat("%s: the %s has no option named '%s' (it has: %s)", what, kind().c_str(), name.c_str(),
                                            names.empty() ? "none" : names.c_str()));
}
void Module::apply_option(const std::string&, double) {}

namespace {

Tensor* opt_ptr(std::optional<Tensor>& t) { return t ? &*t : nullptr; }
Tensor uniform(const Shape& s, double bound, const std::string& dev) { return Tensor::uniform(s, -bound, bound, dtypes::float32, dev).realize(); }
Tensor filled(const Shape& s, double v, DType dt, const std::string& dev) { return Tensor::full(s, v, dt, dev).contiguous().realize(); }
// a per-channel (C,) tensor viewed as (1, C, 1, ...) against an input of rank n
Tensor channel(const Tensor& t, int64_t n) {
  Shape s(size_t(n), 1);
  s[1] = -1;
  return t.reshape(s);
}
Tensor affine(const Tensor& x, const std::optional<Tensor>& w, const std::optional<Tensor>& b) {
  if (!w || !b) return x;
  return x.mul(channel(*w, x.ndim())).add(channel(*b, x.ndim()));
}
double eps_ok(double eps, const char* what) {  // NaN or a negative eps would make every output NaN
  TG_CHECK(eps >= 0 && std::isfinite(eps), TG_ERROR_INVALID_ARGUMENT, strformat("%s: eps must be finite and >= 0, got %g", what, eps));
  return eps;
}
int64_t positive(int64_t v, const char* what) {
  TG_CHECK(v > 0, TG_ERROR_INVALID_ARGUMENT, strformat("%s: sizes must be positive, got %lld", what, (long long)v));
  return v;
}
void check_input(const Tensor& x, int64_t min_ndim, int64_t dim, int64_t size, const char* what) {
  TG_CHECK(x.ndim() >= min_ndim, TG_ERROR_SHAPE,
           strformat("%s: input of shape %s needs at least %lld dims", what, shape_str(x.shape()).c_str(), (long long)min_ndim));
  int64_t d = dim < 0 ? dim + x.ndim() : dim;
  TG_CHECK(x.shape()[size_t(d)] == size, TG_ERROR_SHAPE,
           strformat("%s: input of shape %s has %lld features in dim %lld, the module %lld", what, shape_str(x.shape()).c_str(),
                     (long long)x.shape()[size_t(d)], (long long)dim, (long long)size));
}

class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, const std::string& dev)
      : weight(uniform({positive(out, "Linear"), positive(in, "Linear")}, 1 / std::sqrt(double(in)), dev)), in_(in) {
    if (bias) this->bias = uniform({out}, 1 / std::sqrt(double(in)), dev);
  }
  Tensor forward(const Tensor& x) override {
    check_input(x, 1, -1, in_, "Linear");
    return x.linear(weight.transpose(), bias);
  }
  std::string kind() const override { return "Linear"; }
  Tensor weight;
  std::optional<Tensor> bias;

 protected:
  std::vector<Slot> slots() override { return {{"weight", &weight, true}, {"bias", opt_ptr(bias), true, &bias, {weight.shape()[0]}}}; }
  int64_t in_;
};

class Conv : public Module {
 public:
  Conv(const ConvArgs& a, bool transposed, const std::string& dev) : weight(make_weight(a, transposed, dev)), a_(a), transposed_(transposed) {
    if (a.bias) bias = uniform({a.out}, bound(a), dev);
  }
  Tensor forward(const Tensor& x) override {
    check_input(x, int64_t(a_.kernel.size()) + 2, 1, a_.in, kind().c_str());
    Tensor::PadPairs p = a_.pads;
    if (p.empty())
      for (size_t d = 0; d < a_.kernel.size(); d++) p.emplace_back(a_.padding[a_.padding.size() == 1 ? 0 : d], a_.padding[a_.padding.size() == 1 ? 0 : d]);
    if (transposed_) return x.conv_transpose(weight, bias, a_.groups, a_.stride, a_.dilation, p, a_.output_padding);
    return x.conv(weight, bias, a_.groups, a_.stride, a_.dilation, p);
  }
  std::string kind() const override { return transposed_ ? "ConvTranspose2d" : "Conv2d"; }
  Tensor weight;
  std::optional<Tensor> bias;

 protected:
  std::vector<Slot> slots() override { return {{"weight", &weight, true}, {"bias", opt_ptr(bias), true, &bias, {a_.out}}}; }
  static double bound(const ConvArgs& a) {
    double fan_in = double(a.in);  // in doubles: the sizes are checked, their product not yet
    for (int64_t k : a.kernel) fan_in *= double(k);
    return 1 / std::sqrt(fan_in);
  }
  static Tensor make_weight(const ConvArgs& a, bool transposed, const std::string& dev) {
    const char* what = transposed ? "ConvTranspose2d" : "Conv2d";
    positive(a.in, what), positive(a.out, what), positive(a.groups, what);
    TG_CHECK(!a.kernel.empty() && a.kernel.size() <= 16, TG_ERROR_INVALID_ARGUMENT, std::string(what) + ": kernel_size needs 1 to 16 dims");
    TG_CHECK(a.pads.empty() || a.pads.size() == a.kernel.size(), TG_ERROR_INVALID_ARGUMENT,
             strformat("%s: %zu padding pairs for %zu kernel dims", what, a.pads.size(), a.kernel.size()));
    for (int64_t k : a.kernel) positive(k, what);
    // refused here, not at the first call: a stride or dilation of 0 or a negative padding can never run
    auto each = [&](const Shape& v, const char* name, int64_t min) {
      TG_CHECK(v.size() == 1 || v.size() == a.kernel.size(), TG_ERROR_INVALID_ARGUMENT,
               strformat("%s: %s needs 1 or %zu values, got %zu", what, name, a.kernel.size(), v.size()));
      for (int64_t x : v)
        TG_CHECK(x >= min, TG_ERROR_INVALID_ARGUMENT, strformat("%s: %s must be %s, got %lld", what, name, min ? "positive" : ">= 0", (long long)x));
    };
    each(a.stride, "stride", 1), each(a.dilation, "dilation", 1), each(a.padding, "padding", 0), each(a.output_padding, "output_padding", 0);
    for (size_t d = 0; d < a.kernel.size(); d++) {
      auto at = [&](const Shape& v) { return v[v.size() == 1 ? 0 : d]; };
      int64_t op = at(a.output_padding), most = std::max(at(a.stride), at(a.dilation));
      TG_CHECK(op == 0 || (transposed && op < most), TG_ERROR_INVALID_ARGUMENT,
               transposed ? strformat("%s: output_padding %lld must be smaller than stride or dilation (%lld)", what, (long long)op, (long long)most)
                          : strformat("%s: output_padding is for transposed convolutions, got %lld", what, (long long)op));
    }
    TG_CHECK(a.in % a.groups == 0 && a.out % a.groups == 0, TG_ERROR_INVALID_ARGUMENT,
             strformat("%s: %lld in and %lld out channels must both divide into %lld groups", what, (long long)a.in, (long long)a.out,
                       (long long)a.groups));
    Shape ws = transposed ? Shape{a.in, a.out / a.groups} : Shape{a.out, a.in / a.groups};
    ws.insert(ws.end(), a.kernel.begin(), a.kernel.end());
    return uniform(ws, bound(a), dev);
  }
  ConvArgs a_;
  bool transposed_;
};

class BatchNorm : public Module {
 public:
  BatchNorm(int64_t sz, double eps, bool affine, bool track, double momentum, const std::string& dev)
      : num_batches_tracked(filled({}, 0, dtypes::int64, dev)), sz_(positive(sz, "BatchNorm")), eps_(eps_ok(eps, "BatchNorm")), momentum_(momentum), track_(track) {
    TG_CHECK(std::isfinite(momentum), TG_ERROR_INVALID_ARGUMENT, strformat("BatchNorm: momentum must be finite, got %g", momentum));
    if (affine) weight = filled({sz}, 1, dtypes::float32, dev), bias = filled({sz}, 0, dtypes::float32, dev);
    if (track) running_mean = filled({sz}, 0, dtypes::float32, dev), running_var = filled({sz}, 1, dtypes::float32, dev);
  }
  Tensor forward(const Tensor& x) override {
    check_input(x, 2, 1, sz_, "BatchNorm");
    auto [mean, var] = stats(x);
    if (track_ && training()) {
      TG_CHECK(running_mean && running_var, TG_ERROR_INVALID_ARGUMENT, "BatchNorm: track_running_stats is on, but running_mean or running_var is None");
      double m = momentum_, n = double(x.numel()), unbias = n / (n - double(x.shape()[1]));
      running_mean->assign(running_mean->mul(running_mean->scalar_like(1 - m)).add(mean.detach().mul(mean.scalar_like(m))));
      running_var->assign(running_var->mul(running_var->scalar_like(1 - m)).add(var.detach().mul(var.scalar_like(m * unbias))));
      num_batches_tracked.assign(num_batches_tracked.add(num_batches_tracked.scalar_like(1)));
    }
    return x.batchnorm(weight, bias, mean, var.add(var.scalar_like(eps_)).rsqrt());
  }
  std::string kind() const override { return "BatchNorm"; }
  std::pair<Tensor, Tensor> stats(const Tensor& x) const {
    if (track_ && !training()) {
      TG_CHECK(running_mean && running_var, TG_ERROR_INVALID_ARGUMENT, "BatchNorm: track_running_stats is on, but running_mean or running_var is None");
      return {*running_mean, *running_var};
    }
    // batch statistics; d(var)/d(mean) = 0, as tinygrad (two passes over x)
    std::vector<int64_t> axes{0};
    for (int64_t i = 2; i < x.ndim(); i++) axes.push_back(i);
    Tensor mean = x.mean(axes), y = x.sub(channel(mean.detach(), x.ndim()));
    return {mean, y.mul(y).mean(axes)};
  }
  std::optional<Tensor> weight, bias, running_mean, running_var;
  Tensor num_batches_tracked;

 protected:
  // tinygrad's attribute order: weight, bias, num_batches_tracked, running_mean, running_var
  std::vector<Slot> slots() override {
    return {{"weight", opt_ptr(weight), true, &weight, {sz_}},
            {"bias", opt_ptr(bias), true, &bias, {sz_}},
            {"num_batches_tracked", &num_batches_tracked, false, nullptr, {}, true},
            {"running_mean", opt_ptr(running_mean), false, &running_mean, {sz_}},
            {"running_var", opt_ptr(running_var), false, &running_var, {sz_}}};
  }
  std::vector<Option> options() const override { return {{"eps", eps_}, {"momentum", momentum_}, {"track_running_stats", track_ ? 1.0 : 0.0}}; }
  void apply_option(const std::string& name, double v) override {
    if (name == "eps") eps_ = eps_ok(v, "BatchNorm");
    else if (name == "momentum") momentum_ = v;
    else track_ = v != 0;
  }
  int64_t sz_;
  double eps_, momentum_;
  bool track_;
};

// LayerNorm over the trailing normalized dims; GroupNorm and InstanceNorm normalize (N, G, -1) then scale channels
class LayerNorm : public Module {
 public:
  LayerNorm(Shape normalized, double eps, bool affine, const std::string& dev) : shape_(std::move(normalized)), eps_(eps_ok(eps, "LayerNorm")) {
    TG_CHECK(!shape_.empty(), TG_ERROR_INVALID_ARGUMENT, "LayerNorm: normalized_shape is empty");
    for (int64_t d : shape_) positive(d, "LayerNorm");
    if (affine) weight = filled(shape_, 1, dtypes::float32, dev), bias = filled(shape_, 0, dtypes::float32, dev);
  }
  Tensor forward(const Tensor& x) override {
    size_t k = shape_.size();
    TG_CHECK(size_t(x.ndim()) >= k && Shape(x.shape().end() - long(k), x.shape().end()) == shape_, TG_ERROR_SHAPE,
             "LayerNorm: last dimensions of " + shape_str(x.shape()) + " must match " + shape_str(shape_));
    std::vector<int64_t> axes;
    for (size_t i = 0; i < k; i++) axes.push_back(-1 - int64_t(i));
    Tensor y = x.layernorm(axes, eps_);
    return weight && bias ? y.mul(*weight).add(*bias) : y;
  }
  std::string kind() const override { return "LayerNorm"; }
  std::optional<Tensor> weight, bias;

 protected:
  std::vector<Slot> slots() override { return {{"weight", opt_ptr(weight), true, &weight, shape_}, {"bias", opt_ptr(bias), true, &bias, shape_}}; }
  std::vector<Option> options() const override { return {{"eps", eps_}}; }
  void apply_option(const std::string&, double v) override { eps_ = eps_ok(v, "LayerNorm"); }
  Shape shape_;
  double eps_;
};

class GroupNorm : public Module {
 public:
  GroupNorm(int64_t groups, int64_t channels, double eps, bool affine, const char* name, const std::string& dev)
      : groups_(groups), channels_(channels), eps_(eps_ok(eps, name)), name_(name) {
    positive(groups, name), positive(channels, name);
    TG_CHECK(channels % groups == 0, TG_ERROR_INVALID_ARGUMENT,
             strformat("%s: %lld channels don't divide into %lld groups", name, (long long)channels, (long long)groups));
    if (affine) weight = filled({channels}, 1, dtypes::float32, dev), bias = filled({channels}, 0, dtypes::float32, dev);
  }
  Tensor forward(const Tensor& x) override {
    check_input(x, 2, 1, channels_, name_);
    Tensor y = x.reshape({x.shape()[0], groups_, -1}).layernorm({-1}, eps_).reshape(x.shape());
    return affine(y, weight, bias);
  }
  std::string kind() const override { return name_; }
  std::optional<Tensor> weight, bias;

 protected:
  std::vector<Slot> slots() override {
    return {{"weight", opt_ptr(weight), true, &weight, {channels_}}, {"bias", opt_ptr(bias), true, &bias, {channels_}}};
  }
  // InstanceNorm is GroupNorm with a group per channel: its group count is its num_features, not an option
  std::vector<Option> options() const override {
    if (std::string(name_) == "InstanceNorm") return {{"eps", eps_}};
    return {{"eps", eps_}, {"num_groups", double(groups_)}};
  }
  void apply_option(const std::string& name, double v) override {
    if (name == "eps") {
      eps_ = eps_ok(v, name_);
      return;
    }
    TG_CHECK(v >= 1 && v == std::floor(v) && int64_t(v) <= channels_ && channels_ % int64_t(v) == 0, TG_ERROR_INVALID_ARGUMENT,
             strformat("%s: num_groups %g must be a whole number that divides the %lld channels", name_, v, (long long)channels_));
    groups_ = int64_t(v);
  }
  int64_t groups_, channels_;
  double eps_;
  const char* name_;
};

class RMSNorm : public Module {
 public:
  RMSNorm(int64_t dim, double eps, bool affine, const std::string& dev) : dim_(dim), eps_(eps_ok(eps, "RMSNorm")) {
    positive(dim, "RMSNorm");
    if (affine) weight = filled({dim}, 1, dtypes::float32, dev);
  }
  Tensor forward(const Tensor& x) override {
    check_input(x, 1, -1, dim_, "RMSNorm");
    Tensor f = x.cast(least_upper_float(x.dtype()) == dtypes::float64 ? dtypes::float64 : dtypes::float32);
    Tensor y = f.mul(f.square().mean({-1}, true).add(f.scalar_like(eps_)).rsqrt()).cast(x.dtype());
    return weight ? y.mul(*weight) : y;
  }
  std::string kind() const override { return "RMSNorm"; }
  std::optional<Tensor> weight;

 protected:
  std::vector<Slot> slots() override { return {{"weight", opt_ptr(weight), true, &weight, {dim_}}}; }
  std::vector<Option> options() const override { return {{"eps", eps_}}; }
  void apply_option(const std::string&, double v) override { eps_ = eps_ok(v, "RMSNorm"); }
  int64_t dim_;
  double eps_;
};

// a one-hot compare summed over the vocabulary, as tinygrad: the codegen turns it into a gather
class Embedding : public Module {
 public:
  Embedding(int64_t vocab, int64_t embed, const std::string& dev)
      : weight(Tensor::glorot_uniform({positive(vocab, "Embedding"), positive(embed, "Embedding")}, dtypes::float32, dev).realize()), vocab_(vocab) {}
  Tensor forward(const Tensor& idx) override {
    TG_CHECK(dtypes::is_int(idx.dtype()), TG_ERROR_DTYPE, "Embedding: expected an int index tensor, got " + idx.dtype().name());
    Tensor ar = Tensor::arange(0, double(vocab_), 1, idx.dtype(), idx.device());
    Tensor hit = ar.eq(idx.unsqueeze(-1)).unsqueeze(-1);  // (..., vocab, 1)
    return hit.where(weight, weight.full_like(0)).sum({-2});
  }
  std::string kind() const override { return "Embedding"; }
  Tensor weight;

 protected:
  std::vector<Slot> slots() override { return {{"weight", &weight, true}}; }
  int64_t vocab_;
};

class Function : public Module {
 public:
  explicit Function(std::string name) : name_(std::move(name)) {
    TG_CHECK(apply(nullptr), TG_ERROR_INVALID_ARGUMENT, "nn function: unknown name '" + name_ + "' (known: " + known() + ")");
  }
  Tensor forward(const Tensor& x) override {
    std::optional<Tensor> y;
    apply(&x, &y);
    return *y;
  }
  std::string kind() const override { return name_; }

 private:
  using Fn = Tensor (*)(const Tensor&);
  static const std::vector<std::pair<const char*, Fn>>& table() {
    static const std::vector<std::pair<const char*, Fn>> t = {
        {"relu", [](const Tensor& x) { return x.relu(); }},
        {"relu6", [](const Tensor& x) { return x.relu6(); }},
        {"leaky_relu", [](const Tensor& x) { return x.leaky_relu(); }},
        {"gelu", [](const Tensor& x) { return x.gelu(); }},
        {"quick_gelu", [](const Tensor& x) { return x.quick_gelu(); }},
        {"silu", [](const Tensor& x) { return x.silu(); }},
        {"swish", [](const Tensor& x) { return x.silu(); }},
        {"elu", [](const Tensor& x) { return x.elu(); }},
        {"selu", [](const Tensor& x) { return x.selu(); }},
        {"mish", [](const Tensor& x) { return x.mish(); }},
        {"softplus", [](const Tensor& x) { return x.softplus(); }},
        {"hardswish", [](const Tensor& x) { return x.hardswish(); }},
        {"hardsigmoid", [](const Tensor& x) { return x.hardsigmoid(); }},
        {"hardtanh", [](const Tensor& x) { return x.hardtanh(); }},
        {"tanh", [](const Tensor& x) { return x.tanh(); }},
        {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
        {"softmax", [](const Tensor& x) { return x.softmax(-1); }},
        {"log_softmax", [](const Tensor& x) { return x.log_softmax(-1); }},
        {"flatten", [](const Tensor& x) { return x.flatten(1); }},  // keeps the batch dim, as tinygrad's `lambda x: x.flatten(1)`
        {"max_pool2d", [](const Tensor& x) { return x.max_pool2d({2, 2}); }},
        {"avg_pool2d", [](const Tensor& x) { return x.avg_pool2d({2, 2}); }},
        {"dropout", [](const Tensor& x) { return training() ? x.dropout(0.5) : x; }},
    };
    return t;
  }
  bool apply(const Tensor* x, std::optional<Tensor>* y = nullptr) const {
    for (auto& [n, f] : table())
      if (name_ == n) {
        if (x) y->emplace(f(*x));
        return true;
      }
    return false;
  }
  static std::string known() {
    std::string s;
    for (auto& [n, f] : table()) s += (s.empty() ? "" : ", ") + std::string(n);
    return s;
  }
  std::string name_;
};

// Sequentials nest (a layer may be a Sequential) as deep as a caller builds them: 300k levels is a few calls in a loop.
// Every walk over the nesting is an explicit stack and the destructor unlinks iteratively, so no depth overflows the
// C stack. A Sequential takes only modules that already exist, so the nesting can't have a cycle.
class Sequential : public Module {
 public:
  explicit Sequential(std::vector<ModuleRef> layers) : layers_(std::move(layers)) {
    for (auto& l : layers_) TG_CHECK(l != nullptr, TG_ERROR_INVALID_ARGUMENT, "Sequential: a layer is NULL");
  }
  ~Sequential() override {
    // a chain of Sequentials each owning the next would destroy recursively: take over the children of every
    // Sequential we hold the last reference to, so each dies with no layers left
    std::vector<ModuleRef> pending = std::move(layers_);
    while (!pending.empty()) {
      ModuleRef m = std::move(pending.back());
      pending.pop_back();
      if (auto* s = dynamic_cast<Sequential*>(m.get()); s && m.use_count() == 1) {
        for (auto& l : s->layers_) pending.push_back(std::move(l));
        s->layers_.clear();
      }
    }
  }
  // nested Sequentials call their layers in order, so the whole tree is its non-Sequential layers in order
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    walk(nullptr, [&](Module& m, const std::string&) { y = m.forward(y); });
    return y;
  }
  // "0.weight", "1.bias", ... as tinygrad names a list attribute's entries (layers.0.weight under a `layers` attribute)
  void state(const std::string& prefix, StateDict& out) const override {
    walk(&prefix, [&](Module& m, const std::string& p) { m.state(p, out); });
  }
  void parameters(std::vector<Tensor>& out) const override {
    walk(nullptr, [&](Module& m, const std::string&) { m.parameters(out); });
  }
  std::string kind() const override { return "Sequential"; }
  // "1.weight", "0.2.bias": the layer at that position (nested Sequentials descended in a loop), then its own name
  void set(const std::string& name, const std::optional<Tensor>& t, const char* what) override {
    auto [m, rest] = layer_of(name, what);
    m->set(rest, t, what);
  }
  void set_option(const std::string& name, double v, const char* what) override {
    auto [m, rest] = layer_of(name, what);
    m->set_option(rest, v, what);
  }
  double option(const std::string& name, const char* what) const override {
    auto [m, rest] = layer_of(name, what);
    return m->option(rest, what);
  }

 private:
  std::pair<Module*, std::string> layer_of(const std::string& name, const char* what) const {
    const Sequential* s = this;
    size_t at = 0;
    while (true) {
      size_t dot = name.find('.', at);
      std::string idx = name.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
      bool digits = !idx.empty() && idx.size() < 19 && idx.find_first_not_of("0123456789") == std::string::npos;
      TG_CHECK(dot != std::string::npos && digits && std::stoull(idx) < s->layers_.size(), TG_ERROR_INVALID_ARGUMENT,
               strformat("%s: the Sequential has no tensor or option named '%s' (names are '<layer index>.<name>', %zu layers)", what,
                         name.c_str(), s->layers_.size()));
      Module* m = s->layers_[std::stoull(idx)].get();
      at = dot + 1;
      if (auto* inner = dynamic_cast<const Sequential*>(m)) s = inner;
      else return {m, name.substr(at)};
    }
  }
  // calls f(layer, its state-dict prefix) on every non-Sequential layer under this one, depth first in call order; the
  // prefixes are built only when `prefix` is given (one string, extended and cut back as the walk goes)
  template <class F>
  void walk(const std::string* prefix, F&& f) const {
    struct Frame {
      const Sequential* s;
      size_t next, len;  // next layer; the prefix's length at this level
    };
    std::string path = prefix ? *prefix : std::string();
    std::vector<Frame> stack{{this, 0, path.size()}};
    while (!stack.empty()) {
      Frame& fr = stack.back();
      if (fr.next == fr.s->layers_.size()) {
        stack.pop_back();
        continue;
      }
      size_t i = fr.next++;
      Module* layer = fr.s->layers_[i].get();
      if (prefix) path.resize(fr.len), path += std::to_string(i), path += '.';
      if (auto* s = dynamic_cast<const Sequential*>(layer)) stack.push_back({s, 0, path.size()});  // fr is stale from here
      else f(*layer, path);
    }
  }
  std::vector<ModuleRef> layers_;
};

}  // namespace

namespace {
int64_t gates_size(int64_t hidden) {  // the four gates' rows, 4 * hidden, must not wrap
  positive(hidden, "LSTMCell");
  TG_CHECK(hidden <= INT64_MAX / 4, TG_ERROR_INVALID_ARGUMENT, strformat("LSTMCell: hidden_size %lld is too large", (long long)hidden));
  return hidden;
}
}  // namespace

std::pair<Tensor, Tensor> LSTMCell::step(const Tensor& x, const std::optional<std::pair<Tensor, Tensor>>& hc) {
  check_input(x, 2, 1, in_, "LSTMCell");
  TG_CHECK(x.ndim() == 2, TG_ERROR_SHAPE, "LSTMCell: input must be (batch, input_size), got " + shape_str(x.shape()));
  Shape hs{x.shape()[0], hidden_};
  Tensor h = hc ? hc->first : Tensor::full(hs, 0, x.dtype(), x.device()), c = hc ? hc->second : h;
  TG_CHECK(h.shape() == hs && c.shape() == hs, TG_ERROR_SHAPE,
           "LSTMCell: h and c must be " + shape_str(hs) + ", got " + shape_str(h.shape()) + " and " + shape_str(c.shape()));
  Tensor gates = x.linear(weight_ih.transpose(), bias_ih).add(h.linear(weight_hh.transpose(), bias_hh));
  auto chunk = [&](int64_t k) { return gates.shrink({{0, hs[0]}, {k * hidden_, (k + 1) * hidden_}}); };
  Tensor i = chunk(0).sigmoid(), f = chunk(1).sigmoid(), g = chunk(2).tanh(), o = chunk(3).sigmoid();
  Tensor nc = f.mul(c).add(i.mul(g));
  return {o.mul(nc.tanh()), nc};
}
LSTMCell::LSTMCell(int64_t in, int64_t hidden, bool bias, const std::string& dev)
    : weight_ih(uniform({4 * gates_size(hidden), positive(in, "LSTMCell")}, 1 / std::sqrt(double(hidden)), dev)),
      weight_hh(uniform({4 * hidden, hidden}, 1 / std::sqrt(double(hidden)), dev)), in_(in), hidden_(hidden) {
  if (bias) bias_ih = filled({4 * hidden}, 0, dtypes::float32, dev), bias_hh = filled({4 * hidden}, 0, dtypes::float32, dev);
}
std::vector<Module::Slot> LSTMCell::slots() {
  return {{"weight_ih", &weight_ih, true},
          {"weight_hh", &weight_hh, true},
          {"bias_ih", opt_ptr(bias_ih), true, &bias_ih, {4 * hidden_}},
          {"bias_hh", opt_ptr(bias_hh), true, &bias_hh, {4 * hidden_}}};
}

ModuleRef linear(int64_t in, int64_t out, bool bias, const std::string& dev) { return std::make_shared<Linear>(in, out, bias, dev); }
ModuleRef conv(const ConvArgs& a, const std::string& dev) { return std::make_shared<Conv>(a, false, dev); }
ModuleRef conv_transpose(const ConvArgs& a, const std::string& dev) { return std::make_shared<Conv>(a, true, dev); }
ModuleRef batchnorm(int64_t sz, double eps, bool affine, bool track, double momentum, const std::string& dev) {
  return std::make_shared<BatchNorm>(sz, eps, affine, track, momentum, dev);
}
ModuleRef layernorm(const Shape& normalized, double eps, bool affine, const std::string& dev) {
  return std::make_shared<LayerNorm>(normalized, eps, affine, dev);
}
ModuleRef rmsnorm(int64_t dim, double eps, bool affine, const std::string& dev) { return std::make_shared<RMSNorm>(dim, eps, affine, dev); }
ModuleRef groupnorm(int64_t groups, int64_t channels, double eps, bool affine, const std::string& dev) {
  return std::make_shared<GroupNorm>(groups, channels, eps, affine, "GroupNorm", dev);
}
ModuleRef instancenorm(int64_t features, double eps, bool affine, const std::string& dev) {
  return std::make_shared<GroupNorm>(features, features, eps, affine, "InstanceNorm", dev);
}
ModuleRef embedding(int64_t vocab, int64_t embed, const std::string& dev) { return std::make_shared<Embedding>(vocab, embed, dev); }
ModuleRef lstm_cell(int64_t in, int64_t hidden, bool bias, const std::string& dev) { return std::make_shared<LSTMCell>(in, hidden, bias, dev); }
ModuleRef function(const std::string& name) { return std::make_shared<Function>(name); }
ModuleRef sequential(std::vector<ModuleRef> layers) { return std::make_shared<Sequential>(std::move(layers)); }

StateDict get_state_dict(const Module& m) {
  StateDict sd;
  m.state("", sd);
  return sd;
}
std::vector<Tensor> get_parameters(const Module& m) {
  std::vector<Tensor> ps;
  m.parameters(ps);
  return ps;
}

void load_state_dict(Module& m, const StateDict& sd, bool strict) {
  StateDict mine = get_state_dict(m);
  std::set<std::string> have;
  std::string missing, unexpected, mismatched;
  auto add = [](std::string& list, const std::string& s) { list += (list.empty() ? "" : ", ") + s; };
  for (auto& [k, v] : sd) {
    TG_CHECK(have.insert(k).second, TG_ERROR_INVALID_ARGUMENT, "load_state_dict: '" + k + "' appears twice");
    auto it = std::find_if(mine.begin(), mine.end(), [&](auto& e) { return e.first == k; });
    if (it == mine.end()) add(unexpected, k);
    else if (it->second.shape() != v.shape()) add(mismatched, k + " (" + shape_str(v.shape()) + " for " + shape_str(it->second.shape()) + ")");
  }
  for (auto& [k, v] : mine)
    if (!have.count(k)) add(missing, k);
  TG_CHECK(mismatched.empty(), TG_ERROR_SHAPE, "load_state_dict: shape mismatch: " + mismatched);
  TG_CHECK(!strict || (missing.empty() && unexpected.empty()), TG_ERROR_INVALID_ARGUMENT,
           "load_state_dict:" + (missing.empty() ? "" : " missing " + missing + ";") + (unexpected.empty() ? "" : " unexpected " + unexpected + ";"));
  std::vector<Tensor*> targets;
  for (auto& [k, v] : sd)
    for (auto& e : mine)
      if (e.first == k) {
        TG_CHECK(v.device() == e.second.device(), TG_ERROR_DEVICE,
                 "load_state_dict: '" + k + "' is on " + v.device() + ", the module on " + e.second.device());
        e.second.assign(v);
        targets.push_back(&e.second);
      }
  if (!targets.empty()) Tensor::realize_all(targets);
}

}  // namespace tg::nn
