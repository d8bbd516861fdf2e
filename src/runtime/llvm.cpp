#include "runtime/llvm.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "helpers.h"

namespace tg {
namespace {

// ---- LLVM's failures as exceptions ----
// Without handlers LLVM aborts the process when it runs out of memory ("LLVM ERROR: out of memory") and exits it on a
// fatal error. Ours throw instead, std::bad_alloc (TG_ERROR_OUT_OF_MEMORY at the C API) and a TG_ERROR_COMPILE Error,
// while this thread is inside one of our LLVM calls (InLLVM); anywhere else (another library in the process sharing
// libLLVM) they do what LLVM would.
// Debian's libLLVM is built with -fno-exceptions but with unwind tables (.eh_frame, no .gcc_except_table): an
// exception passes through its frames, but none of their cleanups run: locks they took stay taken, objects they were
// changing stay half-changed. So whatever LLVM object a failed call was working on is abandoned, never used or
// destroyed again (destroying it could crash or deadlock): each compile's objects are its own (build), and the JIT is
// replaced by a fresh one (Jit::load). That leaks their memory, once per failure, which beats a crash.
thread_local int in_llvm = 0;
struct InLLVM {
  InLLVM() { in_llvm++; }
  ~InLLVM() { in_llvm--; }
};
[[noreturn]] void on_bad_alloc(void*, const char* reason, bool) {
  if (in_llvm) throw std::bad_alloc();
  const char* m = "LLVM ERROR: out of memory\n";  // LLVM's own words, without allocating
  (void)!::write(2, m, std::strlen(m));
  (void)!::write(2, reason, std::strlen(reason));
  (void)!::write(2, "\n", 1);
  std::abort();
}
void on_fatal(void*, const char* reason, bool) {
  if (in_llvm) throw Error(TG_ERROR_COMPILE, std::string("LLVM: ") + reason);
  std::fprintf(stderr, "LLVM ERROR: %s\n", reason);  // LLVM exits when this returns
}
void install_handlers() {
  static const bool once = [] {  // thread-safe, process-wide
    llvm::install_bad_alloc_error_handler(on_bad_alloc, nullptr);
    llvm::install_fatal_error_handler(on_fatal, nullptr);
    return true;
  }();
  (void)once;
}

// The host as LLVM sees it, found once: the code we emit uses every feature this CPU has (as clang -march=native does).
struct Host {
  std::string triple, cpu, features;
  const llvm::Target* target = nullptr;
  Host() {
    install_handlers();
    InLLVM in;
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    triple = llvm::sys::getProcessTriple();
    cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> on;
    for (auto& f : llvm::sys::getHostCPUFeatures()) on.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(on.begin(), on.end());  // a stable string: it is part of the cache key
    for (auto& f : on) features += (features.empty() ? "" : ",") + f;
    std::string err;
    target = llvm::TargetRegistry::lookupTarget(triple, err);
    TG_CHECK(target, TG_ERROR_COMPILE, "LLVM has no target for " + triple + ": " + err);
  }
  // one per compile: a TargetMachine is not meant to be shared by threads compiling at once
  std::unique_ptr<llvm::TargetMachine> machine() const {
    llvm::TargetOptions opt;
    opt.AllowFPOpFusion = llvm::FPOpFusion::Strict;  // no FMA contraction (-ffp-contract=off): results match numpy's roundings
    return std::unique_ptr<llvm::TargetMachine>(
        target->createTargetMachine(triple, cpu, features, opt, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  }
};
const Host& host() {
  static const Host h;
  return h;
}

// The process-wide JIT. Every kernel object goes into its own JITDylib, so kernels that share a name (and every
// kernel's tg_entry) coexist; libm and the C runtime resolve from the process.
struct Jit {
  std::mutex mu;
  llvm::orc::LLJIT* jit = nullptr;  // never destroyed: kernels may run during static destruction, or after an abandon
  uint64_t dylibs = 0;
  std::string session_error;  // what the session reported during the current load (under mu): a failed mapping says why here
  void start() {
    auto j = llvm::orc::LLJITBuilder().create();
    TG_CHECK(j, TG_ERROR_COMPILE, "can't start the LLVM JIT: " + llvm::toString(j.takeError()));
    jit = j->release();
    jit->getExecutionSession().setErrorReporter(
        [this](llvm::Error e) { session_error += (session_error.empty() ? "" : "; ") + llvm::toString(std::move(e)); });
    char prefix = jit->getDataLayout().getGlobalPrefix();
    auto& main = jit->getMainJITDylib();
    // libm by name as well: a process that loaded us with RTLD_LOCAL (Python's ctypes) may not have it in its global scope
    auto add = [&](auto g) {
      if (g) main.addGenerator(std::move(*g));
      else llvm::consumeError(g.takeError());
    };
    add(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix));
    add(llvm::orc::DynamicLibrarySearchGenerator::Load("libm.so.6", prefix));
  }
  // links the object and finds its tg_entry; "" on success, else why not
  std::string load(const std::string& name, std::unique_ptr<llvm::MemoryBuffer> obj, CPUProgram::Entry& entry) {
    std::lock_guard<std::mutex> lk(mu);
    InLLVM in;
    try {
      if (!jit) start();
      session_error.clear();
      auto jd = jit->createJITDylib(name + "#" + std::to_string(dylibs++));
      if (!jd) return llvm::toString(jd.takeError());
      llvm::Error err = jit->addObjectFile(*jd, std::move(obj));
      if (!err) {
        auto sym = jit->lookup(*jd, "tg_entry");
        if (sym) {
          entry = sym->toPtr<CPUProgram::Entry>();
          return "";
        }
        err = sym.takeError();
      }
      std::string why = llvm::toString(std::move(err));
      if (!session_error.empty()) why += " (" + session_error + ")";
      llvm::consumeError(jit->getExecutionSession().removeJITDylib(*jd));
      return why;
    } catch (...) {
      // out of memory (or a fatal error) inside ORC: its session may hold locks and half-made tables now. Abandoned,
      // not destroyed (see InLLVM): the kernels it loaded stay where they are, the next load starts another JIT.
      jit = nullptr;
      throw;
    }
  }
};
Jit& jit() {
  static Jit* j = new Jit();  // lives for the process: kernels may run during static destruction
  return *j;
}

// The passes a vectorized kernel gets before code generation. The renderer's IR is already upcast, vectorized and
// ordered, and most of O2's time went to re-deriving that (rounds of instcombine, GVN, LICM, SLP, the inliner); what
// kernels measurably gain from is kept: SROA (accumulators into registers), CSE, instcombine and CFG cleanup. The loop
// unroller (the int8 matmuls of LLM prefill, 5% faster with it) runs on small kernels only: a big unrolled body gives it
// nothing to unroll, and the loop passes' scalar-evolution analyses (rotation, the unroller, and induction-variable
// canonicalization, now dropped) took a fifth of a cold ResNet-18's time to its first output (435 -> 354 ms without
// them; its replays, LLM decode and prefill measured the same). A kernel the renderer left scalar (a gather, a copy with
// a gate per element) gets O2, whose loop vectorizer still finds work there (MobileNetV2's phase-split copy: 0.45 ms
// with this list, 0.3 with O2).
constexpr const char* kPasses =
    "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop(loop-rotate),loop-unroll<O2>,"
    "instcombine<no-verify-fixpoint>,simplifycfg)";
constexpr const char* kPassesBig = "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg)";
constexpr size_t kBigIR = 16384;  // bytes of IR text
// whether LLVM IR text uses a vector type (<4 x float>)
bool has_vectors(const std::string& ir) {
  for (size_t at = ir.find('<'); at != std::string::npos; at = ir.find('<', at + 1)) {
    size_t d = at + 1;
    while (d < ir.size() && ir[d] >= '0' && ir[d] <= '9') d++;
    if (d > at + 1 && ir.compare(d, 3, " x ") == 0) return true;
  }
  return false;
}

class LLVMCompiler : public Compiler {
 public:
  LLVMCompiler()
      : Compiler("llvm " LLVM_VERSION_STRING " " + std::string(kPasses) + ", from " + std::to_string(kBigIR) + " B " + kPassesBig +
                 ", scalar O2 " + host().triple + " " + host().cpu + " " +
                 host().features) {}

 protected:
  std::shared_ptr<Program> load(const std::string& name, const std::string& bin) override {
    auto p = std::make_shared<CPUProgram>();
    std::string why = jit().load(name, llvm::MemoryBuffer::getMemBufferCopy(bin, name), p->entry);
    // the JIT's memory mapper failing to map the code (an address-space limit) is memory running out, not a bad kernel
    bool oom = why.find("Cannot allocate memory") != std::string::npos;
    TG_CHECK(why.empty(), oom ? TG_ERROR_OUT_OF_MEMORY : TG_ERROR_COMPILE, "loading kernel " + name + " into the LLVM JIT failed: " + why);
    return p;
  }
  // IR text -> verified module -> kPasses (O2 for a scalar kernel) -> object file bytes for this CPU
  std::string build(const std::string& name, const std::string& src) override {
    const Host& h = host();
    InLLVM in;
    // every LLVM object of this compile, in one block that is abandoned if LLVM fails half-way (see InLLVM); members
    // go in reverse order: the passes before the module, the module before its context
    struct Work {
      llvm::LLVMContext ctx;
      std::unique_ptr<llvm::Module> mod;
      std::unique_ptr<llvm::TargetMachine> tm;
      std::string msg;
      llvm::raw_string_ostream os{msg};
      llvm::SmallVector<char, 0> obj;
      llvm::raw_svector_ostream out{obj};
      llvm::LoopAnalysisManager lam;
      llvm::FunctionAnalysisManager fam;
      llvm::CGSCCAnalysisManager cgam;
      llvm::ModuleAnalysisManager mam;
      std::unique_ptr<llvm::PassBuilder> pb;
      llvm::legacy::PassManager pm;
    };
    void* mem = ::operator new(sizeof(Work));
    Work* w = nullptr;
    std::string why;  // a compile error: LLVM returned normally, the objects are whole
    bool bad = false;
    try {
      w = new (mem) Work();
      llvm::SMDiagnostic diag;
      w->mod = llvm::parseIR(llvm::MemoryBufferRef(src, name), diag, w->ctx);
      if (!w->mod) diag.print(name.c_str(), w->os), why = w->msg, bad = true;
      else if (llvm::verifyModule(*w->mod, &w->os)) why = w->msg, bad = true;  // a malformed module would crash the passes below
      else if (!(w->tm = h.machine())) why = "LLVM can't make a target machine for " + h.cpu, bad = true;
      else {
        w->mod->setTargetTriple(h.triple);
        w->mod->setDataLayout(w->tm->createDataLayout());
        w->pb = std::make_unique<llvm::PassBuilder>(w->tm.get());
        w->pb->registerModuleAnalyses(w->mam), w->pb->registerCGSCCAnalyses(w->cgam), w->pb->registerFunctionAnalyses(w->fam),
            w->pb->registerLoopAnalyses(w->lam);
        w->pb->crossRegisterProxies(w->lam, w->fam, w->cgam, w->mam);
        llvm::ModulePassManager mpm;
        if (!has_vectors(src)) mpm = w->pb->buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
        else if (auto err = w->pb->parsePassPipeline(mpm, src.size() < kBigIR ? kPasses : kPassesBig))
          why = "the pass pipeline: " + llvm::toString(std::move(err)), bad = true;
        if (!bad) {
          mpm.run(*w->mod, w->mam);
          if (w->tm->addPassesToEmitFile(w->pm, w->out, nullptr, llvm::CodeGenFileType::ObjectFile))
            why = "the target can't emit object files", bad = true;
          else w->pm.run(*w->mod);
        }
      }
    } catch (...) {
      (void)w, (void)mem;  // deliberately leaked (see InLLVM): destroying what LLVM left half-done could crash
      throw;
    }
    std::unique_ptr<Work> done(w);
    if (bad) compile_failed(name, "LLVM " LLVM_VERSION_STRING, why, src);
    return std::string(w->obj.data(), w->obj.size());
  }
};
}  // namespace

std::unique_ptr<Compiler> make_llvm_compiler() { return std::make_unique<LLVMCompiler>(); }

}  // namespace tg
