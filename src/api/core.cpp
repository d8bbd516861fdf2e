// C API: version, errors, dtypes, symbolic expressions.
#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "api/handles.h"
#include "schedule/graph.h"
#include "uop/symbolic.h"

namespace tg::api {
static thread_local tg_status last_code = TG_OK;
// Plain buffers, not std::string: a thread_local with a destructor makes glibc allocate on the thread's first error,
// and when that allocation fails (an out-of-memory error being reported) glibc aborts the process.
static thread_local char last_msg[4096];
void set_error(tg_status code, const char* msg) noexcept {
  last_code = code;
  size_t n = std::min(std::strlen(msg), sizeof last_msg - 1);
  std::memcpy(last_msg, msg, n);
  last_msg[n] = 0;
}
tg_status status_from_current_exception() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    set_error(e.code, e.what());
  } catch (const std::bad_alloc&) {
    set_error(TG_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    try {
      set_error(TG_ERROR_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
      set_error(TG_ERROR_INTERNAL, "internal error");
    }
  } catch (...) {
    set_error(TG_ERROR_INTERNAL, "internal error: unknown exception");
  }
  return last_code;
}
}  // namespace tg::api

using namespace tg;

using Exprs = api::Handles<tg_expr>;
static tg_expr* new_expr(UOpRef u) { return Exprs::add(new tg_expr{std::move(u)}); }

static const ContextVar& option_named(const char* name, const char* what) {
  TG_ARG(name, std::string(what) + ": name is NULL");
  const ContextVar* v = find_option(name);
  TG_ARG(v, strformat("%s: unknown option '%.40s' (see tg_set_option in tinygrad.h for the names)", what, name));
  return *v;
}

extern "C" {

const char* tg_version(void) { return TG_VERSION_STRING; }
int tg_version_number(void) { return TG_VERSION_NUMBER; }
tg_status tg_last_error(void) { return api::last_code; }
const char* tg_last_error_message(void) { return api::last_msg; }
void tg_clear_error(void) { api::set_error(TG_OK, ""); }
const char* tg_status_name(tg_status s) {
  static const char* names[] = {"TG_OK",           "TG_ERROR_INVALID_ARGUMENT", "TG_ERROR_SHAPE",   "TG_ERROR_DTYPE",
                                "TG_ERROR_DEVICE", "TG_ERROR_OUT_OF_MEMORY",    "TG_ERROR_COMPILE", "TG_ERROR_RUNTIME",
                                "TG_ERROR_IO",     "TG_ERROR_UNSUPPORTED",      "TG_ERROR_SPEC",    "TG_ERROR_INTERNAL"};
  return unsigned(s) < sizeof(names) / sizeof(*names) ? names[s] : "TG_UNKNOWN_STATUS";
}

// the dtype of an int a caller passes as a tg_dtype; any other int is TG_ERROR_INVALID_ARGUMENT naming `fn`
static DType dtype_arg(tg_dtype d, const char* fn) {
  TG_ARG(unsigned(d) <= TG_FLOAT64, strformat("%s: unknown dtype %d", fn, int(d)));
  return dtypes::all()[size_t(d)];
}
size_t tg_dtype_size(tg_dtype d) {
  size_t n = 0;
  api::call([&] { n = size_t(dtype_arg(d, "dtype_size").itemsize()); });
  return n;
}
const char* tg_dtype_name(tg_dtype d) {
  static const char* names[] = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
  return api::make([&]() -> const char* {
    dtype_arg(d, "dtype_name");
    return names[d];
  });
}
tg_status tg_dtype_promote(tg_dtype a, tg_dtype b, tg_dtype* out) {
  return api::call([&] {
    DType da = dtype_arg(a, "dtype_promote"), db = dtype_arg(b, "dtype_promote");
    TG_ARG(out, "dtype_promote: out is NULL");
    *out = tg_dtype(least_upper_dtype(da, db).scalar);
  });
}

// the devices found when first asked, for the process: their names stay valid
static const std::vector<std::pair<std::string, std::string>>& devices() {
  static const auto* d = new std::vector<std::pair<std::string, std::string>>(list_devices());
  return *d;
}
// the i-th listed device's name or description, NULL with an error for an index out of range
static const char* device_field(int64_t i, const char* fn, bool description) {
  const char* r = nullptr;
  api::call([&] {
    TG_ARG(i >= 0 && size_t(i) < devices().size(), strformat("%s: index %lld out of range [0, %zu)", fn, (long long)i, devices().size()));
    r = description ? devices()[size_t(i)].second.c_str() : devices()[size_t(i)].first.c_str();
  });
  return r;
}
int64_t tg_device_count(void) {
  int64_t n = -1;
  api::call([&] { n = int64_t(devices().size()); });
  return n;
}
const char* tg_device_name(int64_t i) { return device_field(i, "device_name", false); }
const char* tg_device_description(int64_t i) { return device_field(i, "device_description", true); }
tg_status tg_device_open(const char* name) {
  return api::call([&] {
    TG_ARG(name, "device_open: name is NULL");
    get_device(canonical_device(name));
  });
}
tg_status tg_device_synchronize(const char* name) {
  return api::call([&] {
    TG_ARG(name, "device_synchronize: name is NULL");
    get_device(canonical_device(name)).synchronize();
  });
}

tg_status tg_set_option(const char* name, const char* value) {
  return api::call([&] { set_option(option_named(name, "set_option"), value); });
}
tg_status tg_get_option(const char* name, double* value) {
  return api::call([&] {
    const ContextVar& v = option_named(name, "get_option");
    TG_ARG(value, "get_option: value is NULL");
    *value = v.value();
  });
}
tg_status tg_option_push(const char* name, const char* value) {
  return api::call([&] { push_option(option_named(name, "option_push"), value); });
}
tg_status tg_option_pop(void) {
  return api::call([&] { TG_ARG(pop_option(), "option_pop: this thread has no tg_option_push left to undo"); });
}

tg_expr* tg_expr_variable(const char* name, int64_t min, int64_t max) {
  return api::make([&] {
    TG_ARG(name && *name, "expr_variable: name is NULL or empty");
    TG_ARG(min <= max, strformat("expr_variable '%s': min %lld > max %lld", name, (long long)min, (long long)max));
    return new_expr(UOp::variable(name, min, max));
  });
}
tg_expr* tg_expr_const(int64_t v) {
  return api::make([&] { return new_expr(UOp::const_int(dtypes::index, v)); });
}
tg_expr* tg_expr_binary(tg_binop op, const tg_expr* a, const tg_expr* b) {
  return api::make([&] {
    const UOpRef& x = Exprs::get(a, "expr_binary", "a").u;
    const UOpRef& y = Exprs::get(b, "expr_binary", "b").u;
    UOpRef r;
    switch (op) {
      case TG_ADD: r = x + y; break;
      case TG_SUB: r = x - y; break;
      case TG_MUL: r = x * y; break;
      case TG_IDIV:
      case TG_MOD:
        TG_ARG(!y->is_const(0), std::string("expr_binary: ") + (op == TG_IDIV ? "division" : "modulo") + " by zero");
        r = op == TG_IDIV ? x / y : x % y;
        break;
      case TG_MAX: r = x->maximum(y); break;
      case TG_MIN: r = x->minimum(y); break;
      case TG_LT: r = (x < y)->cast(dtypes::index); break;
      default: fail(TG_ERROR_INVALID_ARGUMENT, strformat("expr_binary: unknown op %d", int(op)));
    }
    return new_expr(r);
  });
}
tg_expr* tg_expr_simplify(const tg_expr* e) {
  return api::make([&] { return new_expr(Exprs::get(e, "expr_simplify").u->simplify()); });
}
int64_t tg_expr_render(const tg_expr* e, char* buf, size_t size) {
  return api::text_result(buf, size, "expr_render", [&] { return Exprs::get(e, "expr_render").u->render(); });
}
// each Variable of `u` replaced by make(var, its value) from names/values (every one bound, within its range)
static UOpRef bind_vars(const UOpRef& u, const char* const* names, const int64_t* values, size_t n, const char* fn,
                        const std::function<UOpRef(const UOp*, int64_t)>& make) {
  TG_ARG(n == 0 || (names && values), std::string(fn) + ": names/values are NULL");
  UOpMap<UOpRef> bind;
  for (auto& x : u->toposort()) {
    if (x->op != Ops::DEFINE_VAR) continue;
    auto& va = x->argv<VarArg>();
    size_t i = 0;
    while (i < n && (!names[i] || va.name != names[i])) i++;
    TG_ARG(i < n, std::string(fn) + ": Variable '" + va.name + "' is unbound");
    TG_ARG(values[i] >= va.vmin && values[i] <= va.vmax,
           strformat("%s: %s=%lld is outside [%lld, %lld]", fn, va.name.c_str(), (long long)values[i], (long long)va.vmin, (long long)va.vmax));
    bind[x] = make(x.get(), values[i]);
  }
  return u->substitute(bind);
}
tg_status tg_expr_eval(const tg_expr* e, const char* const* names, const int64_t* values, size_t n, int64_t* out) {
  return api::call([&] {
    const UOpRef& u = Exprs::get(e, "expr_eval").u;
    TG_ARG(out, "expr_eval: out is NULL");
    // the variables as constants, folded exactly in integers (no trip through double)
    UOpRef r = graph_rewrite(bind_vars(u, names, values, n, "expr_eval", [](const UOp* x, int64_t v) { return UOp::const_int(x->dtype, v); }),
                             symbolic_simple());
    TG_CHECK(r->op == Ops::CONST, TG_ERROR_INTERNAL, "expr_eval: the expression did not fold to a constant");
    *out = dtypes::is_int(r->dtype) ? std::get<int64_t>(r->arg) : int64_t(r->const_value());
  });
}
tg_status tg_expr_bounds(const tg_expr* e, int64_t* min, int64_t* max) {
  return api::call([&] {
    const UOpRef& u = Exprs::get(e, "expr_bounds").u;
    TG_ARG(min && max, "expr_bounds: min/max is NULL");
    *min = u->vmin(), *max = u->vmax();
  });
}
tg_tensor* tg_tensor_from_expr(const tg_expr* e, const char* const* names, const int64_t* values, size_t n, tg_dtype dtype, const char* device) {
  return api::make([&] {
    const UOpRef& u = Exprs::get(e, "tensor_from_expr", "e").u;
    DType dt = dtype_arg(dtype, "tensor_from_expr");
    // each Variable becomes BIND(var, value): a value kernels take as an argument, unbound again at realize
    UOpRef v = bind_vars(u, names, values, n, "tensor_from_expr", [](const UOp* x, int64_t val) { return bound_var(x, val); });
    return api::wrap(Tensor(v, canonical_device(device)).cast(dt));
  });
}
// An expression's Variables bound beside it (the tensor's graph need not bind them) as BINDs in `inner`; its value at
// those bindings
static int64_t bind_beside(const UOpRef& u, const char* const* names, const int64_t* values, size_t n, const char* fn, UOps& inner) {
  std::unordered_map<const UOp*, int64_t> vals;
  bind_vars(u, names, values, n, fn, [&](const UOp* v, int64_t val) {
    vals[v] = val, inner.push_back(bound_var(v, val));
    return inner.back();
  });
  return sym_eval(u.get(), [&](const UOp* v) { return vals.at(v); });
}
tg_tensor* tg_tensor_shrink_expr(tg_tensor* t, int64_t axis, const tg_expr* e, const char* const* names, const int64_t* values, size_t n) {
  return api::make([&] {
    const Tensor& x = api::get(t, "shrink_expr");
    const UOpRef& u = Exprs::get(e, "shrink_expr", "e").u;
    UOps inner;
    int64_t value = bind_beside(u, names, values, n, "shrink_expr", inner);
    return api::wrap(x.shrink_var(axis, u, value, std::move(inner)));
  });
}
tg_tensor* tg_tensor_shrink_at(tg_tensor* t, int64_t axis, const tg_expr* start, const char* const* names, const int64_t* values, size_t n,
                               int64_t size) {
  return api::make([&] {
    const Tensor& x = api::get(t, "shrink_at");
    const UOpRef& u = Exprs::get(start, "shrink_at", "start").u;
    UOps inner;
    int64_t value = bind_beside(u, names, values, n, "shrink_at", inner);
    return api::wrap(x.shrink_at(axis, u, value, size, std::move(inner)));
  });
}
tg_expr* tg_expr_retain(tg_expr* e) {
  return api::make([&] { return Exprs::retain(e, "tg_expr_retain"); });
}
void tg_expr_release(tg_expr* e) { Exprs::release(e, "tg_expr_release"); }

}  // extern "C"
