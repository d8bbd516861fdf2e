#include "viz/data.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

namespace tg::viz {
namespace {
constexpr size_t kMaxNodes = 50000;  // per rewrite sent: past it the steps stop and the rest is counted as truncated
constexpr size_t kMaxArg = 160;

std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The nodes of a rewrite's steps, numbered as they first appear; the JSON of each new node is appended as it is named.
struct Nodes {
  std::unordered_map<const UOp*, int> ids;
  std::vector<UOpRef> alive;  // the rebuilt graphs stay alive while named: a freed node's address could come back as another
  std::string json;
  int add(const UOp* root) {
    if (auto it = ids.find(root); it != ids.end()) return it->second;
    alive.push_back(root->ref());
    std::vector<const UOp*> stack{root}, fresh;
    while (!stack.empty()) {  // iterative: a kernel's graph can be deep
      const UOp* u = stack.back();
      stack.pop_back();
      if (ids.count(u)) continue;
      ids[u] = int(ids.size());
      fresh.push_back(u);
      for (auto& s : u->src)
        if (!ids.count(s.get())) stack.push_back(s.get());
    }
    for (const UOp* u : fresh) {
      std::string arg = u->arg_repr();
      if (arg == "None") arg.clear();
      if (arg.size() > kMaxArg) arg = arg.substr(0, kMaxArg) + "...";
      json += (json.empty() ? "\"" : ",\"") + std::to_string(ids[u]) + "\":{\"op\":" + json_str(op_name(u->op)) + ",\"dtype\":" + json_str(u->dtype.name()) +
              ",\"arg\":" + json_str(arg) + ",\"src\":[";
      for (size_t i = 0; i < u->src.size(); i++) json += (i ? "," : "") + std::to_string(ids[u->src[i].get()]);
      json += "]}";
    }
    return ids[root];
  }
};

// One rewrite: its input, then the graph after each rule that fired (rebuilt by substituting the rule's result for
// the node it matched, as graph_rewrite did), then its output if the steps did not end there.
std::string rewrite_json(const Rewrite& r) {
  Nodes nodes;
  std::string steps;
  auto step = [&](const UOpRef& root, const std::string* rule, const std::string* loc, const UOp* before, const UOp* after) {
    steps += std::string(steps.empty() ? "" : ",") + "{\"root\":" + std::to_string(nodes.add(root.get())) + ",\"rule\":" + (rule ? json_str(*rule) : "null") +
             ",\"loc\":" + (loc && !loc->empty() ? json_str(*loc) : "null") + ",\"before\":" + (before ? std::to_string(nodes.add(before)) : "null") +
             ",\"after\":" + (after ? std::to_string(nodes.add(after)) : "null") + "}";
  };
  size_t truncated = r.dropped;
  UOpRef cur = r.input;
  UOpMap<UOpRef> m;
  if (cur) {
    step(cur, nullptr, nullptr, nullptr, nullptr);
    for (size_t i = 0; i < r.steps.size(); i++) {
      if (nodes.ids.size() > kMaxNodes) {
        truncated += r.steps.size() - i;
        break;
      }
      const Step& s = r.steps[i];
      m[s.before] = s.after;
      UOpRef shown;  // the rule's result as the graph holds it: rebuilt over the sources' own rewrites
      cur = replay(r.input, m, s.before.get(), &shown);
      step(cur, &s.rules->label[s.rule], &s.rules->loc[s.rule], s.before.get(), shown ? shown.get() : s.after.get());
    }
    if (r.output && r.output != cur) {
      static const std::string result = "the rewrite's result";
      step(r.output, &result, nullptr, nullptr, nullptr);
    }
  }
  return "{\"name\":" + json_str(r.name) + ",\"nodes\":{" + nodes.json + "},\"steps\":[" + steps + "],\"truncated\":" + std::to_string(truncated) + "}";
}

struct KernelTotals {
  size_t launches = 0;
  double time_us = 0;
};
std::unordered_map<int, KernelTotals> kernel_totals(const Snapshot& s) {
  std::unordered_map<int, KernelTotals> t;
  for (auto& r : s.realizes)
    for (auto& l : r->launches)
      if (l.kernel >= 0) t[l.kernel].launches++, t[l.kernel].time_us += l.en_us - l.st_us;
  return t;
}
const Kernel* find_kernel(const Snapshot& s, int id) {
  for (auto& r : s.realizes)
    for (auto& k : r->kernels)
      if (k->id == id) return k.get();
  return nullptr;
}
std::string strings(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); i++) o += (i ? "," : "") + json_str(v[i]);
  return o + "]";
}
std::string steps_count(const Rewrite& r) {  // what rewrite_json will send, without building it
  size_t n = r.input ? 1 + r.steps.size() : 0;
  return std::to_string(n);
}
}  // namespace

UOpRef replay(const UOpRef& input, const UOpMap<UOpRef>& m, const UOp* probe, UOpRef* probe_out) {
  std::unordered_map<const UOp*, UOpRef> done;
  std::unordered_set<const UOp*> open;  // being resolved: a replacement that leads back to its key stops there
  std::vector<UOpRef> keep;             // rebuilt nodes, alive while `done` names them
  struct Frame {
    const UOp* u;
    int stage;  // 0: first visit, 1: sources done, 2: replacement done
    const UOp* via;
  };
  std::vector<Frame> stack{{input.get(), 0, nullptr}};
  size_t budget = 64 * (m.size() + 1) * 1024;  // rules that never settle would loop here as they would in graph_rewrite
  while (!stack.empty()) {  // iterative: kernels are deep
    if (--budget == 0) return input;
    Frame f = stack.back();
    stack.pop_back();
    if (f.stage == 0) {
      if (done.count(f.u)) continue;
      auto it = m.find(f.u->ref());
      if (it != m.end() && it->second.get() != f.u && !open.count(f.u)) {
        open.insert(f.u);
        stack.push_back({f.u, 2, it->second.get()});
        stack.push_back({it->second.get(), 0, nullptr});
        continue;
      }
      stack.push_back({f.u, 1, nullptr});
      for (auto& s : f.u->src)
        if (!done.count(s.get())) stack.push_back({s.get(), 0, nullptr});
    } else if (f.stage == 1) {
      if (done.count(f.u)) continue;
      UOps src;
      bool same = true;
      for (auto& s : f.u->src) {
        auto d = done.find(s.get());
        src.push_back(d != done.end() ? d->second : s);
        same &= src.back() == s;
      }
      if (same) {
        done[f.u] = f.u->ref();
        continue;
      }
      // rebuilt with its sources' rewrites: graph_rewrite matches its rules on the rebuilt node next, so this does too
      keep.push_back(f.u->replace_src(std::move(src)));
      stack.push_back({f.u, 2, keep.back().get()});
      stack.push_back({keep.back().get(), 0, nullptr});
    } else {
      open.erase(f.u);
      auto d = done.find(f.via);
      done[f.u] = d != done.end() ? d->second : f.via->ref();
    }
  }
  if (probe_out) {
    auto p = done.find(probe);
    *probe_out = p != done.end() ? p->second : UOpRef();
  }
  return done.at(input.get());
}

std::string json_str(std::string_view s) {
  std::string o = "\"";
  for (size_t i = 0; i < s.size(); i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else if (c == '<') o += "\\u003c";  // data.js is a script: "</script>" inside a string must not end it
    else if (c < 0x80) o += char(c);
    else {  // keep valid UTF-8 sequences, replace anything else
      int n = c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xf0 && c < 0xf5 ? 3 : -1;
      bool ok = n > 0 && i + size_t(n) < s.size();
      for (int k = 1; ok && k <= n; k++) ok = (static_cast<unsigned char>(s[i + size_t(k)]) & 0xc0) == 0x80;
      if (ok) o.append(s.substr(i, size_t(n) + 1)), i += size_t(n);
      else o += "\\ufffd";
    }
  }
  return o + "\"";
}

std::string index_json(const Snapshot& s) {
  auto totals = kernel_totals(s);
  std::string rs, ks;
  for (auto& r : s.realizes) {
    double t = 0;
    for (auto& l : r->launches) t += l.en_us - l.st_us;
    std::string kid;
    for (auto& k : r->kernels) kid += (kid.empty() ? "" : ",") + std::to_string(k->id);
    rs += std::string(rs.empty() ? "" : ",") + "{\"id\":" + std::to_string(r->id) + ",\"name\":" + json_str(r->name) + ",\"t_us\":" + num(r->t_us) +
          ",\"kernels\":[" + kid + "],\"launches\":" + std::to_string(r->launches.size()) + ",\"time_us\":" + num(t) +
          ",\"graph\":" + (r->graph ? "true" : "false") + "}";
    for (auto& k : r->kernels) {
      auto& tot = totals[k->id];
      double per = tot.launches ? tot.time_us / double(tot.launches) : 0;  // one launch's mean time, for the rates
      std::string rw;
      for (auto& w : k->rewrites) rw += std::string(rw.empty() ? "" : ",") + "{\"name\":" + json_str(w.name) + ",\"steps\":" + steps_count(w) + "}";
      ks += std::string(ks.empty() ? "" : ",") + "{\"id\":" + std::to_string(k->id) + ",\"realize\":" + std::to_string(k->realize) + ",\"name\":" +
            json_str(k->name) + ",\"device\":" + json_str(k->device) + ",\"opts\":" + strings(k->opts) + ",\"launches\":" + std::to_string(tot.launches) +
            ",\"time_us\":" + num(tot.time_us) + ",\"flops\":" + std::to_string(k->flops) + ",\"bytes\":" + std::to_string(k->bytes) +
            ",\"gflops\":" + num(per > 0 ? double(k->flops) / per * 1e-3 : 0) + ",\"gbs\":" + num(per > 0 ? double(k->bytes) / per * 1e-3 : 0) +
            ",\"rewrites\":[" + rw + "]}";
    }
  }
  return "{\"version\":1,\"capacity\":" + std::to_string(s.capacity) + ",\"realizes\":[" + rs + "],\"kernels\":[" + ks + "]}";
}

std::optional<std::string> kernel_json(const Snapshot& s, int id) {
  const Kernel* k = find_kernel(s, id);
  if (!k) return std::nullopt;
  std::string rw;
  for (auto& w : k->rewrites) rw += (rw.empty() ? "" : ",") + rewrite_json(w);
  return "{\"id\":" + std::to_string(k->id) + ",\"realize\":" + std::to_string(k->realize) + ",\"name\":" + json_str(k->name) + ",\"device\":" +
         json_str(k->device) + ",\"opts\":" + strings(k->opts) + ",\"src\":" + json_str(k->src) + ",\"rewrites\":[" + rw + "]}";
}

std::optional<std::string> realize_json(const Snapshot& s, int id) {
  for (auto& r : s.realizes) {
    if (r->id != id) continue;
    Rewrite g;
    g.name = "tensor graph", g.input = g.output = r->graph;
    std::string rw, kid;
    for (auto& w : r->rewrites) rw += (rw.empty() ? "" : ",") + rewrite_json(w);
    for (auto& k : r->kernels) kid += (kid.empty() ? "" : ",") + std::to_string(k->id);
    return "{\"id\":" + std::to_string(r->id) + ",\"name\":" + json_str(r->name) + ",\"graph\":" + rewrite_json(g) + ",\"rewrites\":[" + rw +
           "],\"kernels\":[" + kid + "]}";
  }
  return std::nullopt;
}

std::string timeline_json(const Snapshot& s) {
  std::vector<std::string> devices;
  auto dev = [&](const std::string& d) {
    if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  };
  double t0 = -1;
  std::string ls, ms;
  for (auto& r : s.realizes)
    for (auto& l : r->launches) {
      dev(l.device);
      if (t0 < 0 || l.st_us < t0) t0 = l.st_us;
      ls += std::string(ls.empty() ? "" : ",") + "{\"device\":" + json_str(l.device) + ",\"name\":" + json_str(l.name) + ",\"kernel\":" +
            std::to_string(l.kernel) + ",\"realize\":" + std::to_string(l.realize) + ",\"st_us\":" + num(l.st_us) + ",\"en_us\":" + num(l.en_us) +
            ",\"bytes\":" + std::to_string(l.bytes) + ",\"flops\":" + std::to_string(l.flops) + "}";
    }
  // memory from the oldest kept realize on (older events would draw a timeline of nothing)
  double from = s.realizes.empty() ? 0 : s.realizes.front()->t_us;
  for (auto& m : s.memory) {
    if (m.t_us < from) continue;
    dev(m.device);
    ms += std::string(ms.empty() ? "" : ",") + "{\"device\":" + json_str(m.device) + ",\"t_us\":" + num(m.t_us) + ",\"bytes\":" + std::to_string(m.bytes) + "}";
  }
  return "{\"t0_us\":" + num(t0 < 0 ? 0 : t0) + ",\"devices\":" + strings(devices) + ",\"launches\":[" + ls + "],\"memory\":[" + ms + "]}";
}

std::string data_js(const Snapshot& s) {
  std::string ks, rs;
  for (auto& r : s.realizes) {
    if (auto j = realize_json(s, r->id)) rs += (rs.empty() ? "\"" : ",\"") + std::to_string(r->id) + "\":" + *j;
    for (auto& k : r->kernels)
      if (auto j = kernel_json(s, k->id)) ks += (ks.empty() ? "\"" : ",\"") + std::to_string(k->id) + "\":" + *j;
  }
  return "window.TG_VIZ_DATA = {\"index\":" + index_json(s) + ",\"kernels\":{" + ks + "},\"realizes\":{" + rs + "},\"timeline\":" + timeline_json(s) +
         "};\n";
}

}  // namespace tg::viz
