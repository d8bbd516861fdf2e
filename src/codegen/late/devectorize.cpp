// The devectorizer.
#include <algorithm>
#include <unordered_map>

#include "codegen/late/late.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
// scalars as one vector: lanes picked from one vector are a GEP of it, anything else a VECTORIZE
UOpRef vectorize(const UOps& s) {
  if (s.size() == 1) return s[0];
  const UOp* from = s[0]->op == Ops::GEP ? s[0]->src[0].get() : nullptr;
  std::vector<int64_t> lanes;
  for (auto& x : s) {
    if (!from || x->op != Ops::GEP || x->src[0].get() != from) return UOp::make(Ops::VECTORIZE, s[0]->dtype.vec(int(s.size())), s);
    lanes.push_back(x->arg_ints()[0]);
  }
  return gep(from->ref(), lanes);
}

// One memory access of a lane: buffer, gate, and address as root + constant offset.
struct Access {
  UOpRef buf, root, valid;
  int64_t off;
  size_t lane;
};
Access access_of(const UOpRef& idx, size_t lane) {
  int64_t c = 0;
  UOpRef root = idx->src[1]->pop_const(&c);
  return {idx->src[0], root, idx->src.size() > 2 ? idx->src[2] : UOpRef(), c, lane};
}
// runs of consecutive addresses on one buffer, cut to at most `maxw` lanes (powers of two). Lanes of a run share their
// gate, unless `masked`: then a run's lanes may differ in gates (a vector of gates, a masked access)
std::vector<std::vector<Access>> runs(std::vector<Access> acc, int64_t maxw, bool masked) {
  auto gate_key = [&](const Access& a) -> size_t { return masked ? 0 : a.valid ? a.valid->hash() : 0; };
  std::stable_sort(acc.begin(), acc.end(), [&](const Access& a, const Access& b) {
    if (a.buf != b.buf) return a.buf->hash() < b.buf->hash();
    if (a.root != b.root) return a.root->hash() < b.root->hash();
    if (gate_key(a) != gate_key(b)) return gate_key(a) < gate_key(b);
    return a.off < b.off;
  });
  std::vector<std::vector<Access>> out;
  for (size_t i = 0; i < acc.size();) {
    size_t j = i + 1;
    while (j < acc.size() && acc[j].buf == acc[i].buf && acc[j].root == acc[i].root && (masked || acc[j].valid == acc[i].valid) &&
           acc[j].off == acc[j - 1].off + 1 && int64_t(j - i) < maxw)
      j++;
    size_t w = 1;
    while (w * 2 <= j - i) w *= 2;
    out.emplace_back(acc.begin() + long(i), acc.begin() + long(i + w));
    i += w;
  }
  return out;
}
// the INDEX of a run: its first address, gated by the run's gate (one gate, or a vector of the lanes' gates)
UOpRef index_at(const std::vector<Access>& r) {
  const Access& a = r[0];
  UOps s{a.buf, a.off ? a.root + a.off : a.root};
  bool same = std::all_of(r.begin(), r.end(), [&](const Access& x) { return x.valid == a.valid; });
  if (same && a.valid) s.push_back(a.valid);
  if (!same) {
    UOps g;
    for (auto& x : r) g.push_back(x.valid ? x.valid : UOp::const_(dtypes::bool_, 1));
    s.push_back(UOp::make(Ops::VECTORIZE, dtypes::bool_.vec(int(g.size())), g));
  }
  return UOp::make(Ops::INDEX, a.buf->dtype, s);
}

struct Devec {
  const Renderer& ren;
  int64_t width(DType t) const {
    int64_t w = std::max<int64_t>(1, ren.target().vector_bytes / std::max(1, t.itemsize()));
    while (w > 1 && !ren.holds_vector(Ops::LOAD, t.vec(int(w)))) w /= 2;
    return w;
  }
  // masked vector loads/stores: lanes of a run gated one by one (the renderer holds a vector of gates on an INDEX)
  bool masked(DType t) const { return ren.holds_vector(Ops::INDEX, dtypes::bool_.vec(2)) && ren.holds_vector(Ops::LOAD, t.vec(2)); }
  UOpRef load(const UOp* n) const {
    const UOpRef& v = n->src[0];
    if (v->op != Ops::VECTORIZE) return {};
    DType t = n->dtype.scalar_of();
    // a lane that repeats another's address (each of a byte's two nibbles) reads that lane's value: left in, the
    // repeat would cut every run of consecutive addresses after one lane
    std::vector<Access> acc;
    std::vector<size_t> first(v->src.size());
    std::unordered_map<const UOp*, size_t> seen;
    for (size_t l = 0; l < v->src.size(); l++)
      if (auto [it, fresh] = seen.emplace(v->src[l].get(), l); fresh) acc.push_back(access_of(v->src[l], l)), first[l] = l;
      else first[l] = it->second;
    UOps lanes(v->src.size());
    auto emit = [&](const std::vector<Access>& r, const UOpRef& index) {
      UOps src{index};
      src.insert(src.end(), n->src.begin() + 1, n->src.end());  // what orders the load (a BARRIER) stays
      return UOp::make(Ops::LOAD, t.vec(int(r.size())), src);
    };
    std::vector<Access> single;
    for (auto& r : runs(acc, width(t), masked(t))) {
      if (r.size() == 1) single.push_back(r[0]);
      UOpRef ld = emit(r, index_at(r));
      for (size_t k = 0; k < r.size(); k++) lanes[r[k].lane] = lane_of(ld, int64_t(k));
    }
    strided(single, t, lanes, emit);
    for (size_t l = 0; l < lanes.size(); l++) lanes[l] = lanes[first[l]];
    return vectorize(lanes);
  }
  // Lanes left alone that read every 2nd, 3rd or 4th element under one gate (a stride-2 conv's window): at least 4 of
  // them, read as whole vectors from the first to the last, the elements between masked off (never read, so never
  // out of bounds), and picked out by shuffles: two masked loads and a shuffle for 16 lanes, where each lane was a
  // scalar load and an insert. Needs masked accesses (AVX-512's). Lanes of different gates stay scalar loads: their
  // vector of gates costs an insert per lane (a max pool's padded windows ran 2x slower)
  template <class Emit>
  void strided(std::vector<Access> acc, DType t, UOps& lanes, const Emit& emit) const {
    int64_t w = width(t);
    if (acc.size() < 4 || w < 4 || !masked(t)) return;
    std::stable_sort(acc.begin(), acc.end(), [](const Access& a, const Access& b) {
      if (a.buf != b.buf) return a.buf->hash() < b.buf->hash();
      if (a.root != b.root) return a.root->hash() < b.root->hash();
      return a.off < b.off;
    });
    for (size_t i = 0; i < acc.size();) {
      int64_t s = i + 1 < acc.size() ? acc[i + 1].off - acc[i].off : 0;
      size_t j = i + 1;
      while (j < acc.size() && acc[j].buf == acc[i].buf && acc[j].root == acc[i].root && acc[j].off - acc[j - 1].off == s &&
             acc[j].valid == acc[i].valid)
        j++;
      if (s < 2 || s > 4 || j - i < 4) {
        i++;
        continue;
      }
      for (int64_t base = acc[i].off; base <= acc[j - 1].off; base += w) {
        std::vector<Access> chunk;
        std::vector<const Access*> hit(size_t(w), nullptr);  // the lane's access at each element of the chunk, or none
        for (int64_t p = 0; p < w; p++) {
          int64_t off = base + p;
          if ((off - acc[i].off) % s == 0 && off <= acc[j - 1].off) hit[size_t(p)] = &acc[i + size_t((off - acc[i].off) / s)];
          const Access* a = hit[size_t(p)];
          UOpRef gate = a ? (a->valid ? a->valid : UOp::const_(dtypes::bool_, 1)) : UOp::const_(dtypes::bool_, 0);
          chunk.push_back({acc[i].buf, acc[i].root, gate, off, 0});
        }
        UOpRef ld = emit(chunk, index_at(chunk));
        for (int64_t p = 0; p < w; p++)
          if (hit[size_t(p)]) lanes[hit[size_t(p)]->lane] = lane_of(ld, p);
      }
      i = j;
    }
  }
  UOpRef stores(const UOp* n) const {
    std::vector<Access> acc;
    for (size_t l = 0; l < n->src.size(); l++) {
      if (n->src[l]->op != Ops::STORE || n->src[l]->src[1]->dtype.count != 1) return {};
      acc.push_back(access_of(n->src[l]->src[0], l));
    }
    if (acc.empty()) return {};
    UOps out;
    DType t = n->src[0]->src[1]->dtype;
    for (auto& r : runs(acc, width(t), masked(t))) {
      UOps vals;
      for (auto& a : r) vals.push_back(n->src[a.lane]->src[1]);
      out.push_back(UOp::make(Ops::STORE, dtypes::void_, {index_at(r), vectorize(vals)}));
    }
    if (out.size() == n->src.size()) return {};
    return UOp::make(Ops::GROUP, dtypes::void_, out);
  }
};
}  // namespace

UOpRef split_lanes(const UOp* n, const Renderer& ren) {
  if (n->dtype.count == 1 || !(GroupOp::alu(n->op) || n->op == Ops::CAST || n->op == Ops::BITCAST)) return {};
  if (ren.holds_vector(n->op, n->dtype) && std::all_of(n->src.begin(), n->src.end(), [&](auto& s) { return ren.holds_vector(s->op, s->dtype) || s->dtype.count == 1; }))
    return {};
  UOps lanes;
  for (int64_t l = 0; l < n->dtype.count; l++) {
    UOps s;
    for (auto& x : n->src) s.push_back(lane_of(x, l));
    lanes.push_back(UOp::make(n->op, n->dtype.scalar_of(), s, n->arg));
  }
  return UOp::make(Ops::VECTORIZE, n->dtype, lanes);
}

UOpRef devectorize(const UOpRef& ast, const Renderer& ren) {
  Devec d{ren};
  static const PatternMatcher pm(
      {
          {UPat(Ops::LOAD).any_len(), [](const Match& m) { return m.ctx<Devec>().load(m.root); }},
          {UPat(Ops::GROUP).any_len(), [](const Match& m) { return m.ctx<Devec>().stores(m.root); }},
          {UPat(Ops::GEP).any_len(), [](const Match& m) -> UOpRef {
             const UOpRef& s = m.root->src[0];
             if (s->op != Ops::VECTORIZE && s->op != Ops::GEP && s->op != Ops::CONST) return {};
             return gep(s, m.root->arg_ints());
           }},
          {UPat(), [](const Match& m) { return split_lanes(m.root, m.ctx<Devec>().ren); }},
      },
      "devectorizer");
  static const PatternMatcher with_sym = pm + symbolic();
  return graph_rewrite(ast, with_sym, &d, false, "devectorize");
}

}  // namespace tg
