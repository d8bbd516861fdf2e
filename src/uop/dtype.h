// DType: scalar types, vectors, pointers, and tinygrad's promotion lattice.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg {

// Scalar kinds in priority order (tinygrad's DType.priority): least_upper_dtype breaks ties by this order.
enum class Scalar : uint8_t { Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float16, BFloat16, Float32, Float64, Void };
enum class AddrSpace : uint8_t { Global, Local, Reg };

struct DType {
  Scalar scalar = Scalar::Void;
  uint16_t count = 1;      // vector width; 1 for scalars
  bool ptr = false;        // pointer to `scalar.vec(count)`
  AddrSpace addrspace = AddrSpace::Global;
  int64_t size = -1;       // pointee element count for pointers, -1 unknown

  constexpr DType() = default;
  constexpr DType(Scalar s, uint16_t c = 1, bool p = false, AddrSpace as = AddrSpace::Global, int64_t sz = -1)
      : scalar(s), count(c), ptr(p), addrspace(as), size(sz) {}
  bool operator==(const DType&) const = default;

  DType vec(int n) const;                       // float.vec(4)
  DType base() const { return DType(scalar); }  // scalar element type, pointer and vector stripped
  DType scalar_of() const { return DType(scalar, 1); }
  DType ptr_to(int64_t sz = -1, AddrSpace as = AddrSpace::Global) const { return DType(scalar, count, true, as, sz); }
  DType deref() const { return DType(scalar, count); }
  int itemsize() const;   // bytes of one element (vector included); pointers are 8
  std::string name() const;
  size_t hash() const { return size_t(scalar) | size_t(count) << 8 | size_t(ptr) << 24 | size_t(addrspace) << 25 | size_t(size) << 28; }
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void}, bool_{Scalar::Bool}, int8{Scalar::Int8}, uint8{Scalar::UInt8}, int16{Scalar::Int16},
    uint16{Scalar::UInt16}, int32{Scalar::Int32}, uint32{Scalar::UInt32}, int64{Scalar::Int64}, uint64{Scalar::UInt64},
    float16{Scalar::Float16}, bfloat16{Scalar::BFloat16}, float32{Scalar::Float32}, float64{Scalar::Float64};
inline constexpr DType index = int64;  // index arithmetic is done in int64
inline constexpr DType default_float = float32, default_int = int32;

bool is_float(DType d);
bool is_int(DType d);       // signed or unsigned integer (bool excluded)
bool is_unsigned(DType d);
bool is_bool(DType d);
const std::vector<DType>& all();  // every scalar dtype, in priority order
double min(DType d);
double max(DType d);
std::optional<DType> from_name(const std::string& s);  // "float32", "half", "int", ...
}  // namespace dtypes

// The least upper bound in tinygrad's promotion lattice (bool < ints < floats, signed/unsigned meet one size up).
DType least_upper_dtype(DType a, DType b);
DType least_upper_float(DType d);  // d if float, else default float
DType sum_acc_dtype(DType d);      // accumulator dtype tinygrad uses for sum/prod

}  // namespace tg
