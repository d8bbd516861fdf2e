#include "uop/dtype.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace tg {

static const char* scalar_names[] = {"bool",    "int8",     "uint8",   "int16",   "uint16",  "int32", "uint32",
                                     "int64",   "uint64",   "float16", "bfloat16", "float32", "float64", "void"};
static const int scalar_sizes[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8, 0};

DType DType::vec(int n) const { return n == 1 ? *this : DType(scalar, uint16_t(n), ptr, addrspace, size); }
int DType::itemsize() const { return ptr ? 8 : scalar_sizes[int(scalar)] * count; }

std::string DType::name() const {
  std::string s = scalar_names[int(scalar)];
  if (count > 1) s += ".vec(" + std::to_string(count) + ")";
  if (ptr) s += std::string(".ptr(") + (size >= 0 ? std::to_string(size) : "") + (addrspace == AddrSpace::Local ? ", local" : addrspace == AddrSpace::Reg ? ", reg" : "") + ")";
  return s;
}

namespace dtypes {
bool is_float(DType d) { return d.scalar >= Scalar::Float16 && d.scalar <= Scalar::Float64; }
bool is_int(DType d) { return d.scalar >= Scalar::Int8 && d.scalar <= Scalar::UInt64; }
bool is_unsigned(DType d) {
  return d.scalar == Scalar::UInt8 || d.scalar == Scalar::UInt16 || d.scalar == Scalar::UInt32 || d.scalar == Scalar::UInt64;
}
bool is_bool(DType d) { return d.scalar == Scalar::Bool; }
const std::vector<DType>& all() {
  static const std::vector<DType> v = {bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, float64};
  return v;
}
double min(DType d) {
  if (is_bool(d) || is_unsigned(d)) return 0;
  if (is_int(d)) return -std::ldexp(1.0, d.base().itemsize() * 8 - 1);
  return -std::numeric_limits<double>::infinity();
}
double max(DType d) {
  if (is_bool(d)) return 1;
  if (is_unsigned(d)) return std::ldexp(1.0, d.base().itemsize() * 8) - 1;
  if (is_int(d)) return std::ldexp(1.0, d.base().itemsize() * 8 - 1) - 1;
  return std::numeric_limits<double>::infinity();
}
std::optional<DType> from_name(const std::string& s) {
  static const std::map<std::string, DType> m = {
      {"bool", bool_},     {"int8", int8},       {"char", int8},         {"uint8", uint8},     {"uchar", uint8},     {"int16", int16},
      {"short", int16},    {"uint16", uint16},   {"int32", int32},       {"int", int32},       {"uint32", uint32},   {"uint", uint32},
      {"int64", int64},    {"long", int64},      {"uint64", uint64},     {"ulong", uint64},    {"float16", float16}, {"half", float16},
      {"bfloat16", bfloat16}, {"float32", float32}, {"float", float32}, {"float64", float64}, {"double", float64}};
  auto it = m.find(s);
  return it == m.end() ? std::nullopt : std::optional<DType>(it->second);
}
}  // namespace dtypes

// tinygrad's promo_lattice: each type's direct parents. float64 is the top.
static const std::vector<Scalar>& parents(Scalar s) {
  using S = Scalar;
  static const std::map<S, std::vector<S>> lattice = {
      {S::Bool, {S::Int8, S::UInt8}},     {S::Int8, {S::Int16}},           {S::Int16, {S::Int32}},
      {S::Int32, {S::Int64}},             {S::Int64, {S::Float16, S::BFloat16}}, {S::UInt8, {S::Int16, S::UInt16}},
      {S::UInt16, {S::Int32, S::UInt32}}, {S::UInt32, {S::Int64, S::UInt64}}, {S::UInt64, {S::Float16, S::BFloat16}},
      {S::Float16, {S::Float32}},         {S::BFloat16, {S::Float32}},      {S::Float32, {S::Float64}},
      {S::Float64, {}}};
  return lattice.at(s);
}
static void upper_set(Scalar s, std::set<Scalar>& out) {
  if (!out.insert(s).second) return;
  for (Scalar p : parents(s)) upper_set(p, out);
}

DType least_upper_dtype(DType a, DType b) {
  if (a.scalar == b.scalar) return a.base();
  std::set<Scalar> ua, ub;
  upper_set(a.scalar, ua), upper_set(b.scalar, ub);
  for (Scalar s : ua)  // std::set is ordered by priority, so the first common one is the least
    if (ub.count(s)) return DType(s);
  return dtypes::float64;
}
DType least_upper_float(DType d) { return dtypes::is_float(d) ? d.base() : dtypes::default_float; }
DType sum_acc_dtype(DType d) {
  if (dtypes::is_unsigned(d)) return least_upper_dtype(d, dtypes::uint32);
  if (dtypes::is_int(d) || dtypes::is_bool(d)) return least_upper_dtype(d, dtypes::int32);
  return least_upper_dtype(d, dtypes::float32);
}

}  // namespace tg
