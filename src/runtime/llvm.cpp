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
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>

#include "helpers.h"

namespace tg {
namespace {

// The host as LLVM sees it, found once: the code we emit uses every feature this CPU has (as clang -march=native does).
struct Host {
  std::string triple, cpu, features;
  const llvm::Target* target = nullptr;
  Host() {
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
  std::unique_ptr<llvm::orc::LLJIT> jit;
  uint64_t dylibs = 0;
  Jit() {
    host();
    auto j = llvm::orc::LLJITBuilder().create();
    TG_CHECK(j, TG_ERROR_COMPILE, "can't start the LLVM JIT: " + llvm::toString(j.takeError()));
    jit = std::move(*j);
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
    llvm::consumeError(jit->getExecutionSession().removeJITDylib(*jd));
    return why;
  }
};
Jit& jit() {
  static Jit* j = new Jit();  // lives for the process: kernels may run during static destruction
  return *j;
}

class LLVMCompiler : public Compiler {
 public:
  LLVMCompiler() : Compiler("llvm " LLVM_VERSION_STRING " O2 " + host().triple + " " + host().cpu + " " + host().features) {}

 protected:
  std::shared_ptr<Program> load(const std::string& name, const std::string& bin) override {
    auto p = std::make_shared<CPUProgram>();
    std::string why = jit().load(name, llvm::MemoryBuffer::getMemBufferCopy(bin, name), p->entry);
    TG_CHECK(why.empty(), TG_ERROR_COMPILE, "loading kernel " + name + " into the LLVM JIT failed: " + why);
    return p;
  }
  // IR text -> verified module -> the O2 pipeline for this CPU -> object file bytes
  std::string build(const std::string& name, const std::string& src) override {
    auto bad = [&](const std::string& why) { compile_failed(name, "LLVM " LLVM_VERSION_STRING, why, src); };
    llvm::LLVMContext ctx;
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> mod = llvm::parseIR(llvm::MemoryBufferRef(src, name), diag, ctx);
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (!mod) diag.print(name.c_str(), os), bad(msg);
    if (llvm::verifyModule(*mod, &os)) bad(msg);  // a malformed module would crash the passes below
    auto tm = host().machine();
    TG_CHECK(tm, TG_ERROR_COMPILE, "LLVM can't make a target machine for " + host().cpu);
    mod->setTargetTriple(host().triple);
    mod->setDataLayout(tm->createDataLayout());
    {
      llvm::LoopAnalysisManager lam;
      llvm::FunctionAnalysisManager fam;
      llvm::CGSCCAnalysisManager cgam;
      llvm::ModuleAnalysisManager mam;
      llvm::PassBuilder pb(tm.get());
      pb.registerModuleAnalyses(mam), pb.registerCGSCCAnalyses(cgam), pb.registerFunctionAnalyses(fam), pb.registerLoopAnalyses(lam);
      pb.crossRegisterProxies(lam, fam, cgam, mam);
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(*mod, mam);
    }
    llvm::SmallVector<char, 0> obj;
    llvm::raw_svector_ostream out(obj);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile)) bad("the target can't emit object files");
    pm.run(*mod);
    return std::string(obj.data(), obj.size());
  }
};
}  // namespace

std::unique_ptr<Compiler> make_llvm_compiler() { return std::make_unique<LLVMCompiler>(); }

}  // namespace tg
