#include "uop/spec.h"

#include <algorithm>

namespace tg::spec {

[[noreturn]] static void bad(Ops op, const std::string& what) { fail(TG_ERROR_SPEC, "spec: " + std::string(op_name(op)) + ": " + what); }
static void nsrc(Ops op, const UOps& src, size_t lo, size_t hi) {
  if (src.size() < lo || src.size() > hi)
    bad(op, "expected " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + (hi == SIZE_MAX ? "" : std::to_string(hi))) +
                " sources, got " + std::to_string(src.size()));
}
static const std::vector<int64_t>& ints(Ops op, const Arg& arg) {
  if (auto v = std::get_if<std::vector<int64_t>>(&arg)) return *v;
  bad(op, "arg must be an int tuple, got " + arg_str(arg));
}

void check_node(Ops op, DType dtype, const UOps& src, const Arg& arg) {
  for (auto& s : src)
    if (!s) bad(op, "null source");
  if (GroupOp::alu(op)) {
    size_t n = size_t(GroupOp::alu_arity(op));
    nsrc(op, src, n, n);
    if (GroupOp::comparison(op)) {
      if (dtype.base() != dtypes::bool_) bad(op, "comparison must return bool, not " + dtype.name());
      if (src[0]->dtype != src[1]->dtype) bad(op, "operand dtypes differ: " + src[0]->dtype.name() + " vs " + src[1]->dtype.name());
      return;
    }
    if (op == Ops::WHERE) {
      if (src[0]->dtype.base() != dtypes::bool_) bad(op, "condition must be bool, not " + src[0]->dtype.name());
      if (src[1]->dtype != dtype || src[2]->dtype != dtype) bad(op, "branches must be " + dtype.name());
      return;
    }
    size_t first = (op == Ops::SHL || op == Ops::SHR) ? 1 : src.size();
    for (size_t i = 0; i < first; i++)
      if (src[i]->dtype != dtype) bad(op, "source " + std::to_string(i) + " is " + src[i]->dtype.name() + ", node is " + dtype.name());
    if ((op == Ops::IDIV || op == Ops::MOD || op == Ops::SHL || op == Ops::SHR) && !dtypes::is_int(dtype)) bad(op, "needs an int dtype, not " + dtype.name());
    if ((op == Ops::XOR || op == Ops::AND || op == Ops::OR) && dtypes::is_float(dtype)) bad(op, "needs an int or bool dtype, not " + dtype.name());
    if ((op == Ops::FDIV || GroupOp::unary(op)) && op != Ops::NEG && op != Ops::TRUNC && !dtypes::is_float(dtype))
      bad(op, "needs a float dtype, not " + dtype.name());
    return;
  }
  switch (op) {
    case Ops::CONST: {
      nsrc(op, src, 0, 0);
      bool ok = dtypes::is_bool(dtype) ? std::holds_alternative<bool>(arg)
                : dtypes::is_int(dtype) ? std::holds_alternative<int64_t>(arg)
                : dtypes::is_float(dtype) ? std::holds_alternative<double>(arg)
                                          : false;
      if (!ok) bad(op, "arg " + arg_str(arg) + " doesn't fit dtype " + dtype.name());
      break;
    }
    case Ops::DEFINE_VAR:
      nsrc(op, src, 0, 0);
      if (!std::holds_alternative<VarArg>(arg) || !dtypes::is_int(dtype)) bad(op, "needs a (name, min, max) arg and an int dtype");
      if (auto& v = std::get<VarArg>(arg); v.vmin > v.vmax)
        bad(op, strformat("'%s': min %lld > max %lld", v.name.c_str(), (long long)v.vmin, (long long)v.vmax));
      break;
    case Ops::RANGE:
      nsrc(op, src, 1, 1);
      if (!dtypes::is_int(dtype) || src[0]->dtype != dtype) bad(op, "end and range must share an int dtype");
      ints(op, arg);
      break;
    case Ops::CAST: nsrc(op, src, 1, 1); break;
    case Ops::BITCAST:
      nsrc(op, src, 1, 1);
      if (src[0]->dtype.itemsize() != dtype.itemsize()) bad(op, "itemsize differs: " + src[0]->dtype.name() + " -> " + dtype.name());
      break;
    case Ops::SINK:
      if (dtype != dtypes::void_) bad(op, "must be void");
      break;
    case Ops::INDEX:
      nsrc(op, src, 2, 3);
      if (!src[0]->dtype.ptr) bad(op, "first source must be a pointer, got " + src[0]->dtype.name());
      if (!dtypes::is_int(src[1]->dtype)) bad(op, "index must be an int");
      break;
    case Ops::LOAD: nsrc(op, src, 1, SIZE_MAX); break;
    case Ops::STORE: nsrc(op, src, 2, SIZE_MAX); break;
    case Ops::BUFFER:
      if (!std::holds_alternative<int64_t>(arg) || std::get<int64_t>(arg) < 0) bad(op, "arg must be a size >= 0");
      break;
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE:
    case Ops::PAD:
    case Ops::SHRINK:
    case Ops::FLIP: {
      // EXPAND, SHRINK and PAD may size dims symbolically: the extra sources are their sizes (the tag lists the dims), as
      // carriers (BIND) or, once unbound, integer expressions
      nsrc(op, src, 1, op == Ops::EXPAND || op == Ops::SHRINK || op == Ops::PAD ? SIZE_MAX : 1);
      for (size_t i = 1; i < src.size(); i++)
        if (src[i]->dtype.ptr || src[i]->dtype.count != 1 || !dtypes::is_int(src[i]->dtype)) bad(op, "extra sources must be integer sizes");
      auto& a = ints(op, arg);
      if (!src[0]->has_shape()) bad(op, "source has no shape");
      const Shape& s = src[0]->shape();
      for (auto x : a)
        if (x < 0 && op != Ops::FLIP) bad(op, "negative value in " + shape_str(a));
      if (op == Ops::RESHAPE && prod(a) != prod(s)) bad(op, "can't reshape " + shape_str(s) + " to " + shape_str(a));
      if (op == Ops::EXPAND) {
        if (a.size() != s.size()) bad(op, "rank differs: " + shape_str(s) + " -> " + shape_str(a));
        for (size_t i = 0; i < s.size(); i++)
          if (s[i] != a[i] && s[i] != 1) bad(op, "can't expand " + shape_str(s) + " to " + shape_str(a));
      }
      if (op == Ops::PERMUTE) {
        auto p = a;
        std::sort(p.begin(), p.end());
        for (size_t i = 0; i < p.size(); i++)
          if (p[i] != int64_t(i) || p.size() != s.size()) bad(op, shape_str(a) + " is not a permutation of " + std::to_string(s.size()) + " dims");
      }
      if ((op == Ops::PAD || op == Ops::SHRINK) && a.size() != 2 * s.size()) bad(op, "needs " + std::to_string(2 * s.size()) + " values");
      if (op == Ops::SHRINK)
        for (size_t i = 0; i < s.size(); i++)
          if (a[2 * i] > a[2 * i + 1] || a[2 * i + 1] > s[i]) bad(op, "bounds " + shape_str(a) + " outside " + shape_str(s));
      if (op == Ops::FLIP && a.size() != s.size()) bad(op, "needs one flag per dim");
      break;
    }
    case Ops::REDUCE_AXIS: {
      nsrc(op, src, 1, 1);
      auto& a = ints(op, arg);
      if (a.empty() || (Ops(a[0]) != Ops::ADD && Ops(a[0]) != Ops::MUL && Ops(a[0]) != Ops::MAX)) bad(op, "reduce op must be ADD, MUL or MAX");
      for (size_t i = 1; i < a.size(); i++)
        if (!src[0]->has_shape() || a[i] < 0 || a[i] >= int64_t(src[0]->shape().size())) bad(op, "axis out of range");
      break;
    }
    case Ops::SCATTER: {
      nsrc(op, src, 3, 3);
      auto* r = std::get_if<std::string>(&arg);
      if (!r || !scatter_reduce_known(*r)) bad(op, "arg must name a reduce, got " + arg_str(arg));
      if (src[0]->dtype != dtype || src[2]->dtype != dtype) bad(op, "target and values must be " + dtype.name());
      if (!dtypes::is_int(src[1]->dtype)) bad(op, "positions must be ints, not " + src[1]->dtype.name());
      break;
    }
    default: break;
  }
}

bool scatter_reduce_known(const std::string& r) { return r == "replace" || r == "sum" || r == "prod" || r == "amax" || r == "amin"; }

void verify(const UOpRef& root) {
  for (auto& u : root->toposort()) check_node(u->op, u->dtype, u->src, u->arg);
}

}  // namespace tg::spec
