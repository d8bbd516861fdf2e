// Spec: malformed nodes are rejected under SPEC=1 with TG_ERROR_SPEC and a message naming the op; good graphs pass.
#include <gtest/gtest.h>

#include <functional>

#include "uop/spec.h"
#include "uop/symbolic.h"

using namespace tg;

namespace {
UOpRef i32(int64_t v) { return UOp::const_int(dtypes::int32, v); }
UOpRef f32(double v) { return UOp::const_(dtypes::float32, v); }
UOpRef buf(int64_t n) { return UOp::make(Ops::BUFFER, dtypes::float32, {}, n); }
UOpRef mov(Ops op, const UOpRef& src, std::vector<int64_t> arg) { return UOp::make(op, src->dtype, {src}, std::move(arg)); }
UOpRef reduce(Ops op, int64_t axis) { return mov(Ops::REDUCE_AXIS, buf(12), {int64_t(op), axis}); }
// the spec error a builder throws, or nullopt when it builds
std::optional<Error> spec_error(const std::function<UOpRef()>& build) {
  Context ctx({{"SPEC", 1}});
  try {
    build();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}
}  // namespace

TEST(Spec, RejectsMalformedNodes) {
  auto x = UOp::variable("x", 0, 10);
  auto b = UOp::const_(dtypes::bool_, 1);
  struct C {
    const char* what;
    std::function<UOpRef()> build;
    const char* op;    // the op the message must name
    const char* hint;  // and a word about what is wrong
  } cases[] = {
      {"ADD with one source", [&] { return UOp::make(Ops::ADD, dtypes::index, {x}); }, "ADD", "sources"},
      {"ADD with three sources", [&] { return UOp::make(Ops::ADD, dtypes::index, {x, x, x}); }, "ADD", "sources"},
      {"ADD int32 + float32", [] { return UOp::make(Ops::ADD, dtypes::int32, {i32(1), f32(1)}); }, "ADD", "float32"},
      {"ADD node dtype differs", [] { return UOp::make(Ops::ADD, dtypes::int64, {i32(1), i32(2)}); }, "ADD", "int32"},
      {"CMPLT returning int", [] { return UOp::make(Ops::CMPLT, dtypes::int32, {i32(1), i32(2)}); }, "CMPLT", "bool"},
      {"CMPLT mixed operands", [] { return UOp::make(Ops::CMPLT, dtypes::bool_, {i32(1), f32(2)}); }, "CMPLT", "differ"},
      {"WHERE int condition", [] { return UOp::make(Ops::WHERE, dtypes::int32, {i32(1), i32(2), i32(3)}); }, "WHERE", "bool"},
      {"WHERE branch dtype", [&] { return UOp::make(Ops::WHERE, dtypes::int32, {b, i32(2), f32(3)}); }, "WHERE", "branches"},
      {"IDIV on floats", [] { return UOp::make(Ops::IDIV, dtypes::float32, {f32(1), f32(2)}); }, "IDIV", "int"},
      {"XOR on floats", [] { return UOp::make(Ops::XOR, dtypes::float32, {f32(1), f32(2)}); }, "XOR", "float32"},
      {"SQRT on int", [] { return UOp::make(Ops::SQRT, dtypes::int32, {i32(4)}); }, "SQRT", "float"},
      {"CONST int with double arg", [] { return UOp::make(Ops::CONST, dtypes::int32, {}, 1.5); }, "CONST", "int32"},
      {"CONST float with int arg", [] { return UOp::make(Ops::CONST, dtypes::float32, {}, int64_t(1)); }, "CONST", "float32"},
      {"CONST bool with int arg", [] { return UOp::make(Ops::CONST, dtypes::bool_, {}, int64_t(1)); }, "CONST", "bool"},
      {"CONST with a source", [&] { return UOp::make(Ops::CONST, dtypes::index, {x}, int64_t(1)); }, "CONST", "sources"},
      {"DEFINE_VAR float", [] { return UOp::make(Ops::DEFINE_VAR, dtypes::float32, {}, VarArg{"v", 0, 1}); }, "DEFINE_VAR", "int"},
      {"DEFINE_VAR min > max", [] { return UOp::make(Ops::DEFINE_VAR, dtypes::index, {}, VarArg{"v", 5, 1}); }, "DEFINE_VAR", "min"},
      {"RANGE end dtype", [] { return UOp::make(Ops::RANGE, dtypes::index, {i32(4)}, std::vector<int64_t>{0, 0}); }, "RANGE", "dtype"},
      {"BITCAST size", [] { return UOp::make(Ops::BITCAST, dtypes::int64, {f32(1)}); }, "BITCAST", "itemsize"},
      {"SINK non-void", [&] { return UOp::make(Ops::SINK, dtypes::index, {x}); }, "SINK", "void"},
      {"BUFFER negative size", [] { return buf(-1); }, "BUFFER", "size"},
      {"RESHAPE bad product", [] { return mov(Ops::RESHAPE, buf(12), {5, 5}); }, "RESHAPE", "(5,5)"},
      {"RESHAPE negative", [] { return mov(Ops::RESHAPE, buf(12), {-3, -4}); }, "RESHAPE", "negative"},
      {"RESHAPE arg kind", [] { return UOp::make(Ops::RESHAPE, dtypes::float32, {buf(12)}, int64_t(12)); }, "RESHAPE", "int tuple"},
      {"RESHAPE no shape", [] { return mov(Ops::RESHAPE, UOp::range(4, 0), {4}); }, "RESHAPE", "shape"},
      {"EXPAND non-1 dim", [] { return mov(Ops::EXPAND, mov(Ops::RESHAPE, buf(12), {3, 4}), {6, 4}); }, "EXPAND", "expand"},
      {"PERMUTE not a permutation", [] { return mov(Ops::PERMUTE, mov(Ops::RESHAPE, buf(12), {3, 4}), {0, 0}); }, "PERMUTE", "permutation"},
      {"PERMUTE wrong rank", [] { return mov(Ops::PERMUTE, buf(12), {1, 0}); }, "PERMUTE", "permutation"},
      {"PAD wrong count", [] { return mov(Ops::PAD, buf(12), {1}); }, "PAD", "2"},
      {"SHRINK out of bounds", [] { return mov(Ops::SHRINK, buf(12), {2, 13}); }, "SHRINK", "outside"},
      {"SHRINK reversed", [] { return mov(Ops::SHRINK, buf(12), {5, 2}); }, "SHRINK", "outside"},
      {"REDUCE_AXIS bad op", [] { return reduce(Ops::SUB, 0); }, "REDUCE_AXIS", "ADD"},
      {"REDUCE_AXIS bad axis", [] { return reduce(Ops::ADD, 1); }, "REDUCE_AXIS", "axis"},
      {"INDEX of a non-pointer", [&] { return UOp::make(Ops::INDEX, dtypes::float32, {f32(1), x}); }, "INDEX", "pointer"},
      {"null source", [&] { return UOp::make(Ops::ADD, dtypes::index, {x, UOpRef()}); }, "ADD", "null"},
  };
  for (auto& c : cases) {
    auto e = spec_error(c.build);
    if (!e) {
      ADD_FAILURE() << c.what << ": accepted";
      continue;
    }
    EXPECT_EQ(e->code, TG_ERROR_SPEC) << c.what << ": " << e->what();
    std::string msg = e->what();
    EXPECT_NE(msg.find(c.op), std::string::npos) << c.what << ": message doesn't name the op: " << msg;
    EXPECT_NE(msg.find(c.hint), std::string::npos) << c.what << ": message doesn't say what is wrong: " << msg;
  }
}

TEST(Spec, AcceptsWellFormedGraphs) {
  std::function<UOpRef()> good[] = {
      [] { return UOp::variable("x", 0, 10) * 4 + UOp::variable("y", 0, 3); },
      [] { return UOp::make(Ops::CMPLT, dtypes::bool_, {i32(1), i32(2)})->where(f32(1), f32(2)); },
      [] { return UOp::make(Ops::SHL, dtypes::int32, {i32(1), UOp::const_int(dtypes::uint8, 3)}); },
      [] { return UOp::make(Ops::BITCAST, dtypes::int32, {f32(1)}); },
      [] { return UOp::make(Ops::SQRT, dtypes::float32, {f32(2)}); },
      [] { return mov(Ops::PERMUTE, mov(Ops::RESHAPE, buf(12), {3, 4}), {1, 0}); },
      [] { return mov(Ops::EXPAND, mov(Ops::RESHAPE, buf(4), {1, 4}), {3, 4}); },
      [] { return mov(Ops::SHRINK, mov(Ops::PAD, buf(4), {1, 2}), {0, 7}); },
      [] { return mov(Ops::REDUCE_AXIS, mov(Ops::RESHAPE, buf(12), {3, 4}), {int64_t(Ops::ADD), 1}); },
      [] { return UOp::sink({UOp::range(8, 0) + 1, UOp::const_(dtypes::bool_, 0)}); },
  };
  for (size_t i = 0; i < std::size(good); i++) {
    auto e = spec_error(good[i]);
    EXPECT_FALSE(e.has_value()) << "graph " << i << ": " << e->what();
    UOpRef g = good[i]();
    EXPECT_NO_THROW(spec::verify(g)) << "graph " << i;
  }
  // the simplifier's output is well-formed too (graph_rewrite verifies it under SPEC=1)
  Context ctx({{"SPEC", 1}});
  auto x = UOp::variable("x", 0, 15);
  EXPECT_NO_THROW((((x * 4 + 3) / 4) % 3 < 2)->where(x, x * 2)->simplify());
}

TEST(Spec, VerifyCatchesNodesBuiltWithoutSpec) {
  Context off({{"SPEC", 0}});
  // built while the checks were off, then verified as a graph
  UOpRef bad_const = UOp::make(Ops::CONST, dtypes::float32, {}, int64_t(1));
  UOpRef bad_reshape = mov(Ops::RESHAPE, buf(12), {5, 5});
  for (auto& root : {UOp::sink({f32(1), bad_const}), UOp::sink({bad_reshape})}) {
    try {
      spec::verify(root);
      ADD_FAILURE() << "verify passed a malformed graph";
    } catch (const Error& e) {
      EXPECT_EQ(e.code, TG_ERROR_SPEC);
    }
  }
  EXPECT_NO_THROW(spec::verify(UOp::sink({f32(1), mov(Ops::RESHAPE, buf(12), {3, 4})})));
}

TEST(Spec, OffByDefaultInScope) {
  // SPEC=0 in a scope: the builder does not check (a CONST with a mismatched arg kind is just a node)
  Context off({{"SPEC", 0}});
  EXPECT_NO_THROW(UOp::make(Ops::CONST, dtypes::float32, {}, int64_t(1)));
  {
    Context on({{"SPEC", 1}});  // contexts nest; the inner one wins
    EXPECT_THROW(UOp::make(Ops::CONST, dtypes::float32, {}, int64_t(2)), Error);
  }
  EXPECT_NO_THROW(UOp::make(Ops::CONST, dtypes::float32, {}, int64_t(2)));
}
