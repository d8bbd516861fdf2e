// Codegen: kernel AST -> source for a renderer, through the optimizer and the named late-lowering stages.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "codegen/opt/opt.h"
#include "renderer/renderer.h"

namespace tg {

struct ProgramSpec {
  std::string name, src;
  UOps vars;            // DEFINE_VARs, in the order of the entry's vars array
  int64_t threads = 1;  // THREAD: one call per core_id
  size_t nbufs = 0;     // buffer parameters (DEFINE_GLOBALs)
  std::array<UOpRef, 3> global_size, local_size;  // GPU targets: the launch grid (gpudims), expressions of `vars`
  uint64_t ops = 0, mem = 0;
  size_t uops = 0;        // linearized UOps (BEAM_UOPS_MAX)
  std::vector<Opt> opts;  // the actions applied
};

// `opts`: apply exactly these; null: the heuristics (or nothing under NOOPT=1). DEBUG>=6 prints every stage.
// `lp_out`: where to leave the linearized program too (the C export renders it in pieces)
ProgramSpec get_program(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts = nullptr,
                        LinearProgram* lp_out = nullptr);
// get_program for a device's kernels: the rendered program is kept on disk (program_cache_get) by its optimized AST, its
// name and what else decides the source (`ident`: the device's compiler; the renderer and its target), so another
// process of the same build skips late lowering, linearizing and rendering. VIZ and DEBUG>=6, which show those stages,
// render every time.
ProgramSpec get_program_cached(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts,
                               const std::string& ident);

}  // namespace tg
