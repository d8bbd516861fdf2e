// TinyJit::export_c: a captured JIT as C a device compiles with nothing but its C compiler and libm. Every kernel is
// rendered again by the C renderer for the export's target (its vector width; THREAD's split only when `threads` asks),
// in one file with an entry point that calls them in the captured order; the weights (buffers no kernel writes) become
// const arrays in a second file, and the intermediates live in an arena the caller provides, laid out as the memory
// planner shared them.
#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "codegen/codegen.h"
#include "codegen/linearize.h"
#include "renderer/cstyle.h"
#include "schedule/graph.h"
#include "tensor/jit.h"

namespace tg {

namespace {

constexpr size_t kArenaAlign = 64;
constexpr int kMaxExportThreads = 256;

// the C type a buffer of `d` holds (16-bit floats as their bits, as the C renderer stores them)
std::string c_storage(DType d) {
  switch (d.scalar) {
    case Scalar::Bool: return "_Bool";
    case Scalar::Int8: return "int8_t";
    case Scalar::UInt8: return "uint8_t";
    case Scalar::Int16: return "int16_t";
    case Scalar::UInt16: return "uint16_t";
    case Scalar::Int32: return "int32_t";
    case Scalar::UInt32: return "uint32_t";
    case Scalar::Int64: return "int64_t";
    case Scalar::UInt64: return "uint64_t";
    case Scalar::Float16:
    case Scalar::BFloat16: return "uint16_t";
    case Scalar::Float32: return "float";
    case Scalar::Float64: return "double";
    default: fail(TG_ERROR_UNSUPPORTED, "export: a buffer of " + d.name() + " has no C type");
  }
}

// the export's targets: the vector width the heuristics and the renderer aim at (0: plain ISO C, no vector extensions;
// -1: this machine's, as the library's own CPU devices use)
int64_t target_vector_bytes(const std::string& target) {
  if (target == "generic") return 0;
  if (target == "native") return -1;
  if (target == "x86-64-v3") return 32;
  if (target == "x86-64-v4") return 64;
  if (target == "aarch64" || target == "armv7") return 16;  // NEON's 128-bit registers
  fail(TG_ERROR_INVALID_ARGUMENT, "export: unknown target '" + target + "' (generic, native, x86-64-v3, x86-64-v4, aarch64, armv7)");
}

bool c_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

void write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  TG_CHECK(f, TG_ERROR_IO, "export: can't create '" + path + "': " + std::strerror(errno));
  size_t n = std::fwrite(text.data(), 1, text.size(), f);
  int err = n == text.size() ? 0 : errno;
  if (std::fclose(f) != 0 && !err) err = errno;
  if (err || n != text.size()) {
    std::remove(path.c_str());
    fail(TG_ERROR_IO, "export: writing '" + path + "' failed: " + std::strerror(err ? err : EIO));
  }
}

// the buffer indices a kernel stores to (the C renderer makes buffer 0 the output; a check, not an assumption)
std::unordered_set<int64_t> stored_buffers(const UOpRef& ast) {
  std::unordered_set<int64_t> out;
  for (auto& u : ast->toposort())
    if (u->op == Ops::STORE)
      for (auto& v : u->src[0]->toposort())
        if (v->op == Ops::DEFINE_GLOBAL) out.insert(std::get<int64_t>(v->arg));
  return out;
}

// a symbolic shape at its Variables' largest values
Shape max_shape(Shape s, const std::vector<const UOp*>& sym) {
  for (size_t i = 0; i < sym.size() && i < s.size(); i++)
    if (sym[i]) s[i] = sym_largest(sym[i]);
  return s;
}

// The pool a THREAD export runs its kernels on: the caller is core 0, workers 1..W the rest. A worker spins a while on
// the kernel counter, then sleeps on a condition variable, so back-to-back kernels start without a syscall and an idle
// program uses no CPU. GCC/Clang __atomic builtins order the hand-off; pthreads is the only dependency. The C below is
// written once, with NAME and CORES filled in.
std::string pool_source(const std::string& N, int64_t cores) {
  static const char* kPool = R"(
/* the worker pool (THREADS-1 workers, started by the first run) */
typedef void (*NAME_task_fn)(const NAME_inputs*, NAME_outputs*, unsigned char*, long long);
static struct {
  pthread_mutex_t run, mu;
  pthread_cond_t go, done;
  NAME_task_fn fn;
  const NAME_inputs* in;
  NAME_outputs* out;
  unsigned char* a;
  long long n;    /* cores of the current kernel */
  unsigned gen;    /* one more for every kernel handed out */
  int left;       /* workers still in it */
  int workers;    /* started */
} NAME_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                  PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0};
static pthread_once_t NAME_once = PTHREAD_ONCE_INIT;
#define NAME_SPIN 20000
static void* NAME_worker(void* arg) {
  long long core = (long long)(intptr_t)arg;
  unsigned seen = 0;
  for (;;) {
    unsigned g;
    int spin = 0;
    while ((g = __atomic_load_n(&NAME_pool.gen, __ATOMIC_ACQUIRE)) == seen && spin < NAME_SPIN) spin++;
    if (g == seen) {
      pthread_mutex_lock(&NAME_pool.mu);
      while ((g = __atomic_load_n(&NAME_pool.gen, __ATOMIC_ACQUIRE)) == seen) pthread_cond_wait(&NAME_pool.go, &NAME_pool.mu);
      pthread_mutex_unlock(&NAME_pool.mu);
    }
    seen = g;
    if (core < NAME_pool.n) NAME_pool.fn(NAME_pool.in, NAME_pool.out, NAME_pool.a, core);
    if (__atomic_sub_fetch(&NAME_pool.left, 1, __ATOMIC_ACQ_REL) == 0) {
      pthread_mutex_lock(&NAME_pool.mu);
      pthread_cond_signal(&NAME_pool.done);
      pthread_mutex_unlock(&NAME_pool.mu);
    }
  }
  return 0;
}
static void NAME_start_once(void) {
  int w;
  for (w = 1; w < CORES; w++) {
    pthread_t t;
    pthread_attr_t at;
    if (pthread_attr_init(&at)) break;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, NAME_worker, (void*)(intptr_t)w)) w = CORES; /* fewer workers: the caller runs their cores */
    else NAME_pool.workers++;
    pthread_attr_destroy(&at);
  }
}
void NAME_start(void) { pthread_once(&NAME_once, NAME_start_once); }
static void NAME_parallel(NAME_task_fn fn, const NAME_inputs* in, NAME_outputs* out, unsigned char* a, long long n) {
  long long c;
  int spin = 0, w = NAME_pool.workers;
  if (w == 0) {
    for (c = 0; c < n; c++) fn(in, out, a, c);
    return;
  }
  NAME_pool.fn = fn, NAME_pool.in = in, NAME_pool.out = out, NAME_pool.a = a, NAME_pool.n = n;
  __atomic_store_n(&NAME_pool.left, w, __ATOMIC_RELAXED);
  pthread_mutex_lock(&NAME_pool.mu);
  __atomic_add_fetch(&NAME_pool.gen, 1u, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&NAME_pool.go);
  pthread_mutex_unlock(&NAME_pool.mu);
  fn(in, out, a, 0);
  for (c = w + 1; c < n; c++) fn(in, out, a, c);
  while (__atomic_load_n(&NAME_pool.left, __ATOMIC_ACQUIRE) != 0 && spin < NAME_SPIN) spin++;
  if (__atomic_load_n(&NAME_pool.left, __ATOMIC_ACQUIRE) != 0) {
    pthread_mutex_lock(&NAME_pool.mu);
    while (__atomic_load_n(&NAME_pool.left, __ATOMIC_ACQUIRE) != 0) pthread_cond_wait(&NAME_pool.done, &NAME_pool.mu);
    pthread_mutex_unlock(&NAME_pool.mu);
  }
}

)";
  std::string s;
  for (const char* p = kPool; *p;)  // every NAME and CORES in the text is a placeholder: the C uses neither word otherwise
    if (!std::strncmp(p, "NAME", 4)) s += N, p += 4;
    else if (!std::strncmp(p, "CORES", 5)) s += std::to_string(cores), p += 5;
    else s += *p++;
  return s;
}

}  // namespace

TinyJit::ExportInfo TinyJit::export_c(const ExportOptions& o) {
  TG_CHECK(!in_own_function(), TG_ERROR_INVALID_ARGUMENT, "export: called from inside the jit's own function");
  // as reset: inside another JIT's function this thread may not wait for a JIT lock (jit.h)
  std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
  if (in_function()) TG_CHECK(lk.try_lock(), TG_ERROR_INVALID_ARGUMENT, "export: called from inside another JIT's function while a call runs");
  else lk.lock();
  TG_CHECK(c_identifier(o.name), TG_ERROR_INVALID_ARGUMENT,
           "export: the name '" + o.name.substr(0, 80) + "' is not a C identifier of at most 64 characters");
  TG_CHECK(!o.dir.empty(), TG_ERROR_INVALID_ARGUMENT, "export: no directory given");
  TG_CHECK(o.threads >= 0 && o.threads <= kMaxExportThreads, TG_ERROR_INVALID_ARGUMENT,
           strformat("export: threads=%d; 0 or 1 for none, at most %d", o.threads, kMaxExportThreads));
  TG_CHECK(cnt_ >= 2, TG_ERROR_INVALID_ARGUMENT, "export: the JIT has not captured yet (call it twice: a warm-up, then the capture)");
  // the Variables the inputs' dims are bound to: fields of NAME_inputs, passed to the kernels that take them
  std::map<std::string, VarArg> vars;
  for (auto& s : in_specs_)
    for (const UOp* v : s.sym)
      if (v) {
        const VarArg& a = v->argv<VarArg>();
        bool is_in = a.name.size() > 2 && a.name.rfind("in", 0) == 0 && a.name.find_first_not_of("0123456789", 2) == std::string::npos;
        TG_CHECK(c_identifier(a.name) && !is_in, TG_ERROR_UNSUPPORTED,
                 "export: the Variable '" + a.name.substr(0, 80) + "' needs a name that is a C identifier (and not in0, in1, ...)");
        vars.emplace(a.name, a);
      }
  int64_t vbytes = target_vector_bytes(o.target);
  for (auto& e : items_)
    TG_CHECK(!e.prg->host, TG_ERROR_UNSUPPORTED, "export: the capture runs " + e.prg->name + " on the host between kernels (a collective); an export can't");
  for (auto& e : items_)
    TG_CHECK(get_device(e.bufs[0]->device()).host_memory() && e.prg->ast, TG_ERROR_UNSUPPORTED,
             "export: kernel " + e.prg->name + " runs on " + e.bufs[0]->device() + "; export captures made on the CPU");

  // what every buffer of the items is: an input, an output, a weight (no kernel writes it), state (written, and held
  // outside the capture: a running mean assigned in place, which the next run reads), or scratch in the arena
  enum class Role { Input, Output, Weight, State, Arena };
  struct Slot {
    Role role;
    size_t index = 0;   // the input's or output's position, the weight's number
    size_t offset = 0;  // into the arena
  };
  std::unordered_map<const Buffer*, Slot> slots;
  std::unordered_set<const Buffer*> written;
  for (auto& e : items_)
    for (int64_t k : stored_buffers(e.prg->ast)) written.insert(e.bufs[size_t(k)].get());
  for (auto& u : input_uses_) {
    const Buffer* b = items_[u.item].bufs[u.buf].get();
    TG_CHECK(!written.count(b), TG_ERROR_UNSUPPORTED, strformat("export: a kernel writes input %zu in place", u.input));
    slots[b] = {Role::Input, u.input};
  }
  std::vector<const Buffer*> out_bufs;
  for (size_t i = 0; i < outputs_.size(); i++) {
    const UOp* o_u = outputs_[i].get();
    TG_CHECK(whole_buffer(o_u), TG_ERROR_UNSUPPORTED, strformat("export: output %zu is a view of its buffer (return it .contiguous())", i));
    const UOp* bn = whole_buffer(o_u);
    const Buffer* b = buffer_of(bn).get();
    auto seen = std::find(out_bufs.begin(), out_bufs.end(), b);
    TG_CHECK(seen == out_bufs.end(), TG_ERROR_UNSUPPORTED,
             strformat("export: output %zu is output %zu again (return each tensor once)", i, size_t(seen - out_bufs.begin())));
    TG_CHECK(written.count(b) && !slots.count(b), TG_ERROR_UNSUPPORTED,
             strformat("export: output %zu is not computed by the captured kernels (an input or a constant returned as is)", i));
    slots[b] = {Role::Output, i};
    out_bufs.push_back(b);
  }
  // scratch: the views the memory planner put in one arena keep their places in it
  std::unordered_map<const Buffer*, size_t> base_at;
  size_t arena = 0;
  auto place = [&](size_t bytes) {
    size_t at = arena;
    arena += (bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    return at;
  };
  std::vector<const Buffer*> weights, states;
  for (auto& e : items_)
    for (auto& sb : e.bufs) {
      const Buffer* b = sb.get();
      if (slots.count(b)) continue;
      if (!written.count(b)) {
        TG_CHECK(!b->base(), TG_ERROR_INTERNAL, "export: a planned buffer no kernel writes");
        slots[b] = {Role::Weight, weights.size()};
        weights.push_back(b);
      } else if (const Buffer* base = b->base().get()) {
        auto it = base_at.find(base);
        if (it == base_at.end()) it = base_at.emplace(base, place(base->nbytes())).first;
        slots[b] = {Role::Arena, 0, it->second + b->offset()};
      } else {
        slots[b] = {Role::State, states.size()};
        states.push_back(b);
      }
    }

  // the kernels, rendered for the target: each distinct program once, as a static function
  Target t = get_device("CPU:CLANG").renderer().target();
  t.has_threads = o.threads > 1;  // THREAD splits a kernel as the library does for that many cores
  t.global_max = {std::max(o.threads, 1), 0, 0};
  if (vbytes > 0) t.vector_bytes = int(vbytes);
  if (vbytes < 0) vbytes = t.vector_bytes;
  // a*b+c fused (C99's fma) where the library fuses it, so the host's outputs match bit for bit; armv7's NEON (VFPv3)
  // has no fused multiply-add, and fmaf there would be a call into libm for every one
  if (o.target == "armv7") t.fma = false;
  CStyleRenderer ren(t, Dialect::C, vbytes > 0);
  std::string head;
  std::map<std::string, std::string> typedefs, helpers;
  std::string kernels;
  std::unordered_map<const CompiledRunner*, std::string> fn_of;
  std::unordered_map<const CompiledRunner*, UOps> var_order;  // the rendered kernel's variable parameters, in order
  std::unordered_map<const CompiledRunner*, int64_t> cores_of;  // THREAD: how many core_id values it runs for
  for (auto& e : items_) {
    if (fn_of.count(e.prg.get())) continue;
    LinearProgram lp;
    get_program(e.prg->ast, e.prg->name, ren, nullptr, &lp);
    for (auto& v : lp.vars)
      TG_CHECK(vars.count(v->argv<VarArg>().name) || (v->argv<VarArg>().name == "core_id" && lp.threads > 1), TG_ERROR_INTERNAL,
               "export: kernel " + lp.name + " takes " + v->argv<VarArg>().name);
    var_order[e.prg.get()] = lp.vars;
    cores_of[e.prg.get()] = lp.threads;
    CSourceParts parts = ren.render_parts(lp);
    std::string fn = strformat("k%zu_%s", fn_of.size(), lp.name.c_str()), decl = "void " + lp.name + "(";
    TG_CHECK(parts.kernel.rfind(decl, 0) == 0, TG_ERROR_INTERNAL, "export: unexpected kernel text for " + lp.name);
    kernels += "static void " + fn + "(" + parts.kernel.substr(decl.size()) + "\n";
    head = parts.head;
    typedefs.insert(parts.typedefs.begin(), parts.typedefs.end());
    helpers.insert(parts.helpers.begin(), parts.helpers.end());
    fn_of[e.prg.get()] = fn;
  }

  const std::string& N = o.name;
  std::string target_note = o.target + (vbytes ? strformat(" (%lld-byte vectors)", (long long)vbytes) : " (ISO C, no vectors)");
  // NAME.h: the I/O structs, sizes in elements and bytes
  size_t weight_bytes = 0;
  for (auto* w : weights) weight_bytes += w->nbytes();
  std::string h = "/* " + N + ".h: a model exported by libtinygrad (tg_jit_export), target " + target_note + ".\n" +
                  " * " + N + "_run computes the outputs from the inputs with no allocation: the caller provides the arena, " + N +
                  "_ARENA_BYTES\n * bytes aligned to " + N + "_ARENA_ALIGN, for the intermediates. The weights are const arrays in " + N +
                  "_weights.c. */\n";
  std::string guard = N + "_H";
  for (auto& c : guard) c = char(std::toupper(static_cast<unsigned char>(c)));
  h += "#ifndef " + guard + "\n#define " + guard + "\n#include <stdint.h>\n\n";
  h += strformat("#define %s_ARENA_BYTES %zu\n#define %s_ARENA_ALIGN %zu\n#define %s_WEIGHT_BYTES %zu\n", N.c_str(), arena, N.c_str(), kArenaAlign,
                 N.c_str(), weight_bytes);
  int64_t most_cores = 1;
  for (auto& [k, n] : cores_of) most_cores = std::max(most_cores, n);
  bool pool = most_cores > 1;
  h += strformat("#define %s_THREADS %lld /* %s */\n", N.c_str(), (long long)most_cores,
                 pool ? "the caller and THREADS-1 pthreads the first run starts; runs are serialized; link with -pthread"
                      : "the caller's thread only");
  std::string in_fields, out_fields;
  for (size_t i = 0; i < in_specs_.size(); i++) {
    const InputSpec& s = in_specs_[i];
    h += strformat("#define %s_IN%zu_ELEMENTS %lld /* %s %s */\n", N.c_str(), i, (long long)s.buffer_size, s.dtype.name().c_str(),
                   sym_shape_str(max_shape(s.shape, s.sym), s.sym).c_str());
    in_fields += strformat("  const %s* in%zu;\n", c_storage(s.dtype).c_str(), i);
  }
  for (size_t i = 0; i < outputs_.size(); i++) {
    const UOp* u = outputs_[i].get();
    long long n = (long long)buffer_of(whole_buffer(u))->size();
    h += strformat("#define %s_OUT%zu_ELEMENTS %lld /* %s %s */\n", N.c_str(), i, n, u->dtype.name().c_str(),
                   sym_shape_str(max_shape(u->shape(), u->sym()), u->sym()).c_str());
    out_fields += strformat("  %s* out%zu;\n", c_storage(u->dtype).c_str(), i);
  }
  for (auto& [nm, a] : vars)
    in_fields += strformat("  int64_t %s; /* a Variable: %lld..%lld */\n", nm.c_str(), (long long)a.vmin, (long long)a.vmax);
  h += "\ntypedef struct {\n" + (in_fields.empty() ? std::string("  char unused;\n") : in_fields) + "} " + N + "_inputs;\n";
  h += "typedef struct {\n" + out_fields + "} " + N + "_outputs;\n\n";
  h += pool ? "/* 0 on success, -1 when an argument is NULL (or a Variable out of its range). Thread-safe: concurrent calls take turns. */\n"
              : "/* 0 on success, -1 when an argument is NULL (or a Variable out of its range) */\n";
  h += "int " + N + "_run(const " + N + "_inputs* in, " + N + "_outputs* out, void* arena);\n";
  if (pool) h += "/* starts the worker threads (the first run does it otherwise; pthread_create may allocate) */\nvoid " + N + "_start(void);\n";
  h += "\n#endif\n";

  // NAME.c: the prelude, the kernels, the entry point
  std::string c = "/* " + N + ".c: exported by libtinygrad (tg_jit_export), target " + target_note + ". */\n";
  if (pool) c += "#define _POSIX_C_SOURCE 200809L\n#include <pthread.h>\n";
  c += head + "#include \"" + N + ".h\"\n";
  for (auto& [k, v] : typedefs) c += v + "\n";
  for (auto& [k, v] : helpers) c += v;
  // an array's declaration: ISO C has no zero-length arrays, so an empty buffer is one element no kernel reads
  auto array_decl = [&](const Buffer* b, char kind, size_t i) {
    return strformat("%s %s_%c%zu[%lld]", c_storage(b->dtype()).c_str(), N.c_str(), kind, i, (long long)std::max<int64_t>(b->size(), 1));
  };
  for (size_t i = 0; i < weights.size(); i++) c += "extern const " + array_decl(weights[i], 'w', i) + ";\n";
  for (size_t i = 0; i < states.size(); i++) c += "extern " + array_decl(states[i], 's', i) + ";\n";
  c += kernels;
  std::string tasks;  // THREAD kernels: one function per call, run for each core_id by the pool
  std::string body;
  auto arg_list = [&](const ExecItem& e, const std::string& core) {
    std::string call;
    for (size_t j = 0; j < e.bufs.size(); j++) {
      const Slot& s = slots.at(e.bufs[j].get());
      std::string p;
      switch (s.role) {
        case Role::Input: p = strformat("(void*)in->in%zu", s.index); break;
        case Role::Output: p = strformat("(void*)out->out%zu", s.index); break;  // int64_t may be long, the kernel's long long
        case Role::Weight: p = strformat("(void*)%s_w%zu", N.c_str(), s.index); break;
        case Role::State: p = strformat("%s_s%zu", N.c_str(), s.index); break;
        case Role::Arena: p = strformat("(void*)(a + %zu)", s.offset); break;
      }
      call += (j ? ", " : "") + p;
    }
    for (auto& v : var_order.at(e.prg.get())) call += ", " + (v->argv<VarArg>().name == "core_id" ? core : "in->" + v->argv<VarArg>().name);
    return call;
  };
  for (size_t i = 0; i < items_.size(); i++) {
    const ExecItem& e = items_[i];
    const std::string& fn = fn_of.at(e.prg.get());
    if (int64_t n = cores_of.at(e.prg.get()); n > 1) {
      std::string task = strformat("%s_task%zu", N.c_str(), i);
      tasks += "static void " + task + "(const " + N + "_inputs* in, " + N + "_outputs* out, unsigned char* a, long long core) {\n  (void)in, (void)out, (void)a;\n  " + fn +
               "(" + arg_list(e, "core") + ");\n}\n";
      body += strformat("  %s_parallel(%s, in, out, a, %lld);\n", N.c_str(), task.c_str(), (long long)n);
    } else {
      body += "  " + fn + "(" + arg_list(e, "0") + ");\n";
    }
  }
  if (pool) c += pool_source(N, most_cores) + tasks;
  c += "int " + N + "_run(const " + N + "_inputs* in, " + N + "_outputs* out, void* arena) {\n";
  c += "  unsigned char* a = (unsigned char*)arena;\n";
  c += arena ? "  if (!in || !out || !a) return -1;\n" : "  (void)a;\n  if (!in || !out) return -1;\n";
  for (auto& [nm, a] : vars)
    c += strformat("  if (in->%s < %lldLL || in->%s > %lldLL) return -1;\n", nm.c_str(), (long long)a.vmin, nm.c_str(), (long long)a.vmax);
  if (in_specs_.empty()) c += "  (void)in;\n";
  if (pool) c += "  " + N + "_start();\n  pthread_mutex_lock(&" + N + "_pool.run);\n";
  c += body;
  if (pool) c += "  pthread_mutex_unlock(&" + N + "_pool.run);\n";
  c += "  return 0;\n}\n";

  // NAME_weights.c: every weight's values, read from the device now
  std::string w = "/* " + N + "_weights.c: the weights of " + N + ".c, exported by libtinygrad (tg_jit_export). */\n";
  w += "#include <math.h>\n#include <stdint.h>\n";
  std::vector<uint8_t> bytes;
  auto array = [&](const Buffer* cb, const std::string& decl) {
    Buffer& b = const_cast<Buffer&>(*cb);
    bytes.resize(b.nbytes());
    if (!bytes.empty()) b.copyout(bytes.data(), bytes.size());
    size_t isz = size_t(b.dtype().itemsize());
    w += decl + " = {";
    for (int64_t k = 0; k < b.size(); k++) w += (k % 8 ? " " : "\n  ") + c_literal(b.dtype(), bytes.data() + size_t(k) * isz) + ",";
    w += b.size() ? "\n};\n" : "0};\n";
  };
  for (size_t i = 0; i < weights.size(); i++)
    array(weights[i], "const " + array_decl(weights[i], 'w', i));
  // state the kernels update in place: initialized with its values now, changed by every run (as the JIT's replays do)
  for (size_t i = 0; i < states.size(); i++)
    array(states[i], array_decl(states[i], 's', i));
  if (weights.empty() && states.empty()) w += "typedef int " + N + "_no_weights; /* ISO C wants a declaration in every file */\n";

  std::string base = o.dir + "/" + N;
  write_file(base + ".h", h);
  write_file(base + ".c", c);
  write_file(base + "_weights.c", w);
  return {arena, weight_bytes, fn_of.size()};
}

}  // namespace tg
