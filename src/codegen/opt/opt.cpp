#include "codegen/opt/opt.h"

#include <cctype>
#include <cstdlib>

namespace tg {

AxisType range_kind(const UOp* r) { return AxisType(r->arg_ints().back()); }
std::vector<int64_t> range_path(const UOp* r) {
  auto& a = r->arg_ints();
  return {a.begin(), a.end() - 1};
}
char axis_letter(AxisType t) {
  static const char letters[] = "gRurlGtw";
  return letters[int(t)];
}

static const char* const kOptNames[] = {"TC", "UPCAST", "UNROLL", "LOCAL", "THREAD", "GROUP", "GROUPTOP", "NOLOCALS", "PADTO", "SWAP", "MERGE", "PACK"};
std::string_view optops_name(OptOps op) { return kOptNames[int(op)]; }

std::string Opt::str() const {
  std::string a = op == OptOps::TC ? strformat("(%lld, %lld, %lld)", (long long)tc[0], (long long)tc[1], (long long)tc[2])
                  : op == OptOps::NOLOCALS ? "None"
                                           : std::to_string(arg);
  return "Opt(op=OptOps." + std::string(optops_name(op)) + ", axis=" + (axis < 0 ? "None" : std::to_string(axis)) + ", arg=" + a + ")";
}

std::string opts_str(const std::vector<Opt>& opts) {
  std::string s = "[";
  for (size_t i = 0; i < opts.size(); i++) s += (i ? ", " : "") + opts[i].str();
  return s + "]";
}

namespace {
// A small recursive-descent reader for the text opts_str writes (whitespace-tolerant).
struct Reader {
  const std::string& s;
  size_t i = 0;
  [[noreturn]] void bad(const std::string& what) {
    fail(TG_ERROR_INVALID_ARGUMENT, "parse_opts: " + what + " at offset " + std::to_string(i) + " in '" + s + "'");
  }
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) i++;
  }
  bool eat(const std::string& t) {
    ws();
    if (s.compare(i, t.size(), t) != 0) return false;
    i += t.size();
    return true;
  }
  void expect(const std::string& t) {
    if (!eat(t)) bad("expected '" + t + "'");
  }
  int64_t integer() {
    ws();
    const char* b = s.c_str() + i;
    char* e = nullptr;
    errno = 0;
    long long v = std::strtoll(b, &e, 10);
    if (e == b || errno == ERANGE) bad("expected an integer");
    i += size_t(e - b);
    return v;
  }
  Opt opt() {
    expect("Opt(");
    expect("op=");
    eat("OptOps.");
    ws();
    size_t j = i;
    while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) j++;
    std::string name = s.substr(i, j - i);
    Opt o{OptOps::TC};
    size_t k = 0;
    for (; k < std::size(kOptNames) && name != kOptNames[k]; k++) {
    }
    if (k == std::size(kOptNames)) bad("unknown OptOps '" + name + "'");
    o.op = OptOps(k), i = j;
    expect(",");
    expect("axis=");
    o.axis = eat("None") ? -1 : integer();
    expect(",");
    expect("arg=");
    if (eat("None")) {
    } else if (eat("(")) {
      for (int t = 0; t < 3; t++) {
        o.tc[size_t(t)] = integer();
        if (t < 2) expect(",");
      }
      expect(")");
    } else {
      o.arg = integer();
    }
    expect(")");
    return o;
  }
};
}  // namespace

std::vector<Opt> parse_opts(const std::string& s) {
  Reader r{s};
  std::vector<Opt> out;
  r.expect("[");
  if (!r.eat("]")) {
    do out.push_back(r.opt());
    while (r.eat(","));
    r.expect("]");
  }
  r.ws();
  if (r.i != s.size()) r.bad("trailing text");
  return out;
}

}  // namespace tg
