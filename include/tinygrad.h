/*
 * libtinygrad: tinygrad's lazy tensors, kernel fusion and code generation as a C library.
 *
 * Conventions (apply to every function below unless its comment says otherwise):
 *  - Objects are opaque, reference-counted handles. A function that makes an object returns a new reference the
 *    caller owns (release it with the matching *_release) or NULL on failure. *_release(NULL) is a no-op.
 *  - Functions that do not make an object return a tg_status. On failure the code and a message naming the problem
 *    are also kept per thread: tg_last_error() / tg_last_error_message(). A successful call does not clear them.
 *  - Nothing aborts the process because of bad input: NULL handles, wrong shapes, out-of-range axes, wrong byte
 *    sizes and released handles (where detectable) are reported as errors before anything runs.
 *  - Data buffers are owned by the caller and passed with explicit byte sizes; the library copies what it keeps.
 *  - Thread safety (checked under ThreadSanitizer by `make tsan`, tests/test_threads.cpp). The library's global state
 *    (graph interning, the schedule, program, kernel-disk and BEAM caches, the device registry, the CPU worker pool,
 *    options, counters, handle bookkeeping) may be used from any number of threads at once. Per handle type:
 *    tg_tensor: one thread at a time per handle; distinct tensors from distinct threads, on any devices, also while
 *    they train (backward and optimizer steps on separate models run side by side). tg_expr, tg_uop: immutable, any thread.
 *    tg_jit: calls, reset and plan from any thread are serialized per JIT; a JIT may be released on one thread while
 *    others call it (a call that got in first finishes; later ones get TG_ERROR_INVALID_ARGUMENT); nesting: see
 *    tg_jit_create. tg_module, tg_optimizer (and its params during a step), tg_state, tg_plan: one thread at a time
 *    per handle, distinct handles from distinct threads. Devices and options (tg_set_option, tg_get_option,
 *    tg_manual_seed, tg_counters_*): any thread, any time; an option changed during another thread's realize applies
 *    to what is compiled after. Errors: tg_last_error / tg_last_error_message are per thread. Retaining and releasing
 *    any handle is thread-safe; using a handle after its last release is not detectable in general.
 *  - Strings returned by the library are UTF-8 and stay valid as stated per function.
 *
 * Ownership, in the fixed form scripts/api_manifest.py reads to generate the language bindings (bindings/):
 *  - A returned handle is a new reference (release it); a returned string is borrowed (copy it before the stated
 *    lifetime ends). A handle argument is borrowed (the library takes its own reference if it keeps the object) and
 *    must not be NULL; the first argument of a *_release function is taken, and may be NULL.
 *  - `tg_x* const*` with a size_t count after it: a borrowed array of handles. `tg_x**`: caller-owned slots that receive
 *    new references; their number is the size_t argument after them or the @len tag.
 *  - A pointer followed by a size_t count is a caller-owned array of that many elements (`const`: read; else written),
 *    and may be NULL when the count is 0. A pointer to one value, `tg_dtype*` or `int64_t*`, receives one result.
 *  - A `const char* device` argument may be NULL (the default device); other arguments may be NULL only where tagged.
 *  - An `int` argument is a flag (0 or nonzero) unless tagged @int(name): then it is a small number (a mode).
 *  - Errors: a handle, string or pointer result is NULL on failure; a tg_status result is the status; a numeric result
 *    states its error value with @errors.
 *  Tags in a declaration's comment state the exceptions, and apply to every declaration the comment covers (up to the
 *  next comment): @nullable(a, b) arguments that may be NULL; @int(a) an `int` that is a number, not a flag;
 *  @len(out=2), @len(out=nsizes) slot counts; @takes(a) an argument whose ownership the call takes; @errors(-1),
 *  @errors(0, last_error) (0 is also a valid result: clear the error first and read tg_last_error() after),
 *  @errors(none) (cannot fail), @errors(NULL).
 */
#ifndef TINYGRAD_H
#define TINYGRAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TG_API __declspec(dllexport)
#else
#define TG_API __attribute__((visibility("default")))
#endif

/* ---- version ---------------------------------------------------------------------------------------------------- */
#define TG_VERSION_MAJOR 0
#define TG_VERSION_MINOR 1
#define TG_VERSION_PATCH 0
#define TG_VERSION_STRING "0.1.0"
#define TG_VERSION_NUMBER (TG_VERSION_MAJOR * 10000 + TG_VERSION_MINOR * 100 + TG_VERSION_PATCH)

/* The library's version at run time, "MAJOR.MINOR.PATCH" (static storage). Compare with TG_VERSION_STRING. @errors(none) */
TG_API const char* tg_version(void);
/* The same as a number, MAJOR*10000 + MINOR*100 + PATCH, to compare with TG_VERSION_NUMBER. @errors(none) */
TG_API int tg_version_number(void);

/* ---- errors ----------------------------------------------------------------------------------------------------- */
typedef enum tg_status {
  TG_STATUS_INVALID = -1, /* never returned */
  TG_OK = 0,
  TG_ERROR_INVALID_ARGUMENT = 1, /* NULL or released handle, bad pointer/size argument, unknown name */
  TG_ERROR_SHAPE = 2,            /* shapes that don't match or don't broadcast, bad axis, bad reshape */
  TG_ERROR_DTYPE = 3,            /* dtype not allowed for the operation */
  TG_ERROR_DEVICE = 4,           /* device unknown or not available on this machine */
  TG_ERROR_OUT_OF_MEMORY = 5,    /* an allocation failed */
  TG_ERROR_COMPILE = 6,          /* a generated kernel failed to compile */
  TG_ERROR_RUNTIME = 7,          /* a kernel or a copy failed to run */
  TG_ERROR_IO = 8,               /* a file could not be read or written */
  TG_ERROR_UNSUPPORTED = 9,      /* valid request the library cannot do yet */
  TG_ERROR_SPEC = 10,            /* a malformed graph rejected by the verifier (SPEC=1) */
  TG_ERROR_INTERNAL = 11,        /* a bug in the library; the message says where */
  TG_STATUS_MAX_ENUM = 0x7fffffff /* forces a 32-bit enum so any int a caller passes is a valid value */
} tg_status;

/* The code of the last error on this thread (TG_OK if none yet). @errors(none) */
TG_API tg_status tg_last_error(void);
/* The message of the last error on this thread ("" if none). Valid until the next failing call on this thread. @errors(none) */
TG_API const char* tg_last_error_message(void);
/* Reset this thread's last error to TG_OK / "". */
TG_API void tg_clear_error(void);
/* A constant name for a status code, e.g. "TG_ERROR_SHAPE". @errors(none) */
TG_API const char* tg_status_name(tg_status status);

/* ---- dtypes ----------------------------------------------------------------------------------------------------- */
typedef enum tg_dtype {
  TG_DTYPE_INVALID = -1, /* never valid; with TG_DTYPE_MAX_ENUM it makes every int a representable value */
  TG_BOOL = 0,
  TG_INT8 = 1,
  TG_UINT8 = 2,
  TG_INT16 = 3,
  TG_UINT16 = 4,
  TG_INT32 = 5,
  TG_UINT32 = 6,
  TG_INT64 = 7,
  TG_UINT64 = 8,
  TG_FLOAT16 = 9,  /* IEEE half, stored as 16-bit patterns */
  TG_BFLOAT16 = 10,
  TG_FLOAT32 = 11,
  TG_FLOAT64 = 12,
  TG_DTYPE_MAX_ENUM = 0x7fffffff
} tg_dtype;

/* Bytes per element of `dtype`; 0 if dtype is not a tg_dtype. @errors(0) */
TG_API size_t tg_dtype_size(tg_dtype dtype);
/* tinygrad's name of `dtype` ("float32", ...); NULL if dtype is not a tg_dtype. Static storage. */
TG_API const char* tg_dtype_name(tg_dtype dtype);
/* The dtype two operands promote to (tinygrad's least_upper_dtype). */
TG_API tg_status tg_dtype_promote(tg_dtype a, tg_dtype b, tg_dtype* out);

/* ---- opaque handles --------------------------------------------------------------------------------------------- */
typedef struct tg_tensor tg_tensor; /* a lazy tensor */
typedef struct tg_expr tg_expr;     /* a symbolic integer expression (index arithmetic, shapes) */
typedef struct tg_jit tg_jit;       /* a captured function (TinyJit) */
typedef struct tg_plan tg_plan;     /* the kernels a realize runs, as data */
typedef struct tg_uop tg_uop;       /* a read-only node of a graph: a tensor's, or a kernel's AST */
typedef struct tg_module tg_module;       /* an nn module (a layer, or layers in sequence) holding its tensors */
typedef struct tg_optimizer tg_optimizer; /* an optimizer over a set of parameter tensors */
typedef struct tg_state tg_state;         /* an ordered set of named tensors: a state dict, a safetensors or GGUF file */
typedef struct tg_onnx_model tg_onnx_model; /* an ONNX model loaded for running */
typedef struct tg_llm tg_llm;       /* a language model from a GGUF file (tg_llm_*) */
typedef struct tg_comm tg_comm;     /* a communicator: the processes of an MPI job, or a group of them (tg_comm_*) */

/* ---- devices --------------------------------------------------------------------------------------------------- */
/* Device names: "CPU" (kernels compiled in process by LLVM), "CPU:CLANG" (by the system C compiler), "CUDA", "CUDA:1",
 * ... (NVIDIA GPUs: the driver's libcuda.so.1 and the toolkit's libnvrtc.so, loaded at run time), "CL", "CL:1", ...
 * (every OpenCL device of every platform, in order, through libOpenCL.so.1). Names are case-insensitive; ":0" may be
 * left out; "GPU" means "CL" and "NV" means "CUDA", as in tinygrad. A NULL device argument anywhere means $DEV, else
 * "CPU". Tensors of one op must be on one device (TG_ERROR_DEVICE otherwise): move them with tg_tensor_to. */
/* The number of devices that open on this machine (found once, on first call), or -1 on error. @errors(-1) */
TG_API int64_t tg_device_count(void);
/* The i-th device's name ("CPU", "CL", "CUDA"), for use as a device argument; static storage. NULL on error. */
TG_API const char* tg_device_name(int64_t i);
/* The i-th device's description from its driver ("NVIDIA H100 80GB HBM3 (sm_90)"); static storage. NULL on error. */
TG_API const char* tg_device_description(int64_t i);
/* Opens the device `name`: TG_OK if it is usable, else TG_ERROR_DEVICE with a message saying why (no driver, no such
 * device number, unknown name). */
TG_API tg_status tg_device_open(const char* name);
/* Waits until every kernel and copy queued on the device `name` has finished (a TinyJit replay queues GPU kernels without
 * waiting; a realize or a read waits itself). TG_ERROR_DEVICE as tg_device_open. */
TG_API tg_status tg_device_synchronize(const char* name);

/* ---- symbolic expressions --------------------------------------------------------------------------------------- */
/* Integer expressions over bounded variables, simplified with the same rules kernels use for index arithmetic.
 * Division and modulo truncate toward zero, like C; a divisor that is 0 when evaluated gives x//0 == 0 and x%0 == x, as
 * in kernels (a literal constant 0 divisor is rejected when the expression is built). Handles are immutable; any
 * thread may use them. */
typedef enum tg_binop { TG_BINOP_INVALID = -1, TG_ADD = 0, TG_SUB, TG_MUL, TG_IDIV, TG_MOD, TG_MAX, TG_MIN, TG_LT, TG_BINOP_MAX_ENUM = 0x7fffffff } tg_binop;

/* A variable named `name` (copied) taking values in [min, max]. NULL if min > max or name is empty. */
TG_API tg_expr* tg_expr_variable(const char* name, int64_t min, int64_t max);
/* The constant `value`. */
TG_API tg_expr* tg_expr_const(int64_t value);
/* a <op> b. Fails with TG_ERROR_INVALID_ARGUMENT on a NULL operand and on division/modulo by constant zero. */
TG_API tg_expr* tg_expr_binary(tg_binop op, const tg_expr* a, const tg_expr* b);
/* The simplified expression (a new reference). */
TG_API tg_expr* tg_expr_simplify(const tg_expr* e);
/* Render `e` as infix text into buf (NUL-terminated, truncated to size). Returns the full length, or -1 on error. @errors(-1) */
TG_API int64_t tg_expr_render(const tg_expr* e, char* buf, size_t size);
/* Evaluate with variables bound by name (names[i] = values[i]); every variable in `e` must be bound. @len(names=n, values=n) */
TG_API tg_status tg_expr_eval(const tg_expr* e, const char* const* names, const int64_t* values, size_t n, int64_t* out);
/* Smallest and largest value `e` can take given its variables' bounds. */
TG_API tg_status tg_expr_bounds(const tg_expr* e, int64_t* min, int64_t* max);
/* Another reference to the same expression. */
TG_API tg_expr* tg_expr_retain(tg_expr* e);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_expr_release(tg_expr* e);

/* ---- graphs in hand ---------------------------------------------------------------------------------------------- */
/* Read-only handles on the engine's graph nodes (UOps), to inspect what a tensor is made of and what kernels it becomes,
 * as tinygrad's Tensor.uop. A handle keeps its node and everything under it alive; nothing through it changes a graph.
 * Nodes are hash-consed: two handles on equal nodes have the same tg_uop_id. Handles are immutable; any thread may use
 * them. Text results go into buf (NUL-terminated, truncated to size) and return the full length, or -1 on error. */

/* The node of `t`'s graph that is its value now (a BUFFER once realized, the lazy graph before). */
TG_API tg_uop* tg_tensor_uop(const tg_tensor* t);
/* The op's name ("ADD", "REDUCE_AXIS", "BUFFER", ...); static storage. NULL on error. */
TG_API const char* tg_uop_op(const tg_uop* u);
/* The dtype as the Python binding prints it ("float32", "int64", "float32.ptr(16)", "float32.vec(4)", "void"). @errors(-1) */
TG_API int64_t tg_uop_dtype(const tg_uop* u, char* buf, size_t size);
/* The arg as a Python literal ("None", "3", "2.5", "(0, 2)", "'name'", "('n', 1, 8)"). @errors(-1) */
TG_API int64_t tg_uop_arg(const tg_uop* u, char* buf, size_t size);
/* A numeric arg (a CONST's value, an int arg) as a double; TG_ERROR_INVALID_ARGUMENT when the arg is not one number. */
TG_API tg_status tg_uop_arg_number(const tg_uop* u, double* out);
/* The shape, for a node that has one: writes min(ndim, capacity) sizes, returns ndim; -1 for a node without a shape
 * (kernel AST nodes, constants' sources) with TG_ERROR_INVALID_ARGUMENT. @errors(-1) @len(out=capacity) */
TG_API int64_t tg_uop_shape(const tg_uop* u, int64_t* out, size_t capacity);
/* The sources: writes new references to the first min(count, capacity) into out, returns the count. @errors(-1) */
TG_API int64_t tg_uop_srcs(const tg_uop* u, tg_uop** out, size_t capacity);
/* Every node under `u` and `u` itself, each once, sources before their users (tinygrad's toposort order): new
 * references to the first min(count, capacity) into out; returns the count. @errors(-1) */
TG_API int64_t tg_uop_toposort(const tg_uop* u, tg_uop** out, size_t capacity);
/* The graph as tinygrad prints a UOp: UOp(Ops.ADD, dtypes.float32, arg=None, src=(...)), a node used twice named
 * xN:= once and xN after. At most 10000 levels deep (TG_ERROR_UNSUPPORTED). @errors(-1) */
TG_API int64_t tg_uop_print(const tg_uop* u, char* buf, size_t size);
/* An identity: equal for handles on the same node, different otherwise; 0 on error. @errors(0) */
TG_API uint64_t tg_uop_id(const tg_uop* u);
/* The kernels realizing `tensors` would run, as their ASTs (SINKs of STOREs), in order; nothing is run or compiled.
 * Writes new references to the first min(count, capacity) into out; returns the count (0: nothing to compute).
 * @errors(-1) @len(tensors=n) */
TG_API int64_t tg_tensor_schedule(tg_tensor* const* tensors, size_t n, tg_uop** out, size_t capacity);
/* Another reference to the same node. */
TG_API tg_uop* tg_uop_retain(tg_uop* u);
/* Drops the caller's reference; NULL is a no-op. */
TG_API void tg_uop_release(tg_uop* u);

/* ---- VIZ: how graphs became kernels, in a browser ---------------------------------------------------------------- */
/* The recorder keeps, for the last `capacity` realizes, every named graph rewrite (its input, each rule that fired and
 * what it made, its output), every kernel compiled (AST, the Opt actions applied, each lowering stage, the linearized
 * program, the source) and every launch and buffer allocation (a timeline and the memory in use). It is off unless
 * VIZ=1 is in the environment (then the viewer is served when the process exits, until it is stopped) or
 * tg_viz_enable turns it on. Off, it costs nothing measurable. The viewer is a web page the library serves on
 * 127.0.0.1 only, or writes as a folder that opens from disk. docs/viz.md. */

/* Start (nonzero) or stop (0) recording. What was recorded is kept until tg_viz_clear. */
TG_API tg_status tg_viz_enable(int on);
/* 1 while recording, else 0. @errors(none) */
TG_API int tg_viz_enabled(void);
/* Keep the last `realizes` realizes (and JIT replays) with their kernels and launches; at least 1 (default 64, or
 * VIZ_CAPACITY). */
TG_API tg_status tg_viz_set_capacity(size_t realizes);
/* Forget everything recorded. */
TG_API tg_status tg_viz_clear(void);
/* Serve the viewer at http://127.0.0.1:port/ from a thread of the library, until tg_viz_stop or the process ends;
 * port 0 picks a free one. The port bound goes to *bound_port (may be NULL). TG_ERROR_IO naming the port when it is
 * taken. Serving again on another port moves the server. @int(port) @nullable(bound_port) */
TG_API tg_status tg_viz_serve(int port, int* bound_port);
/* Stop serving (nothing when not serving). */
TG_API tg_status tg_viz_stop(void);
/* Write the viewer with everything recorded into the folder `dir` (made if missing): open dir/index.html in a
 * browser, no server needed. */
TG_API tg_status tg_viz_dump(const char* dir);
/* The viewer's data as the server answers it, for the route "/api/index", "/api/kernel/3", "/api/realize/0" or
 * "/api/timeline" (JSON, docs/viz.md), without a server: into buf (NUL-terminated, truncated to size); returns the full
 * length, or -1 with TG_ERROR_INVALID_ARGUMENT for a route the server would answer 404. @errors(-1) */
TG_API int64_t tg_viz_json(const char* route, char* buf, size_t size);

/* ---- tensors: creation ------------------------------------------------------------------------------------------ */
/* `device` may be NULL for the default device ($DEV, else $DEVICE, else "CPU"). Devices: "CPU" (kernels compiled in the process
 * by LLVM) and "CPU:CLANG" (kernels compiled by the system C compiler). Shapes are `ndim` int64 sizes (>= 0) whose
 * nonzero sizes multiply, times the dtype size, to a number that fits in int64 (a 0 dim does not excuse huge others:
 * a permute or a reduction would make them a real shape); any function that would make a larger shape (creation,
 * movement, broadcasting, cast, reduction, arange, eye) fails with TG_ERROR_SHAPE naming it. A shape that fits but can't be allocated fails at
 * realize with TG_ERROR_OUT_OF_MEMORY. */

/* A tensor holding a copy of `data` (`nbytes` must equal numel * dtype size; row-major). */
TG_API tg_tensor* tg_tensor_from_data(const void* data, size_t nbytes, tg_dtype dtype, const int64_t* shape, size_t ndim,
                                      const char* device);
/* Uninitialized storage of the given shape. */
TG_API tg_tensor* tg_tensor_empty(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* Filled with 0. */
TG_API tg_tensor* tg_tensor_zeros(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* Filled with 1. */
TG_API tg_tensor* tg_tensor_ones(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* Filled with `value`. NaN or +-inf into an integer dtype is TG_ERROR_INVALID_ARGUMENT (tinygrad raises too); other
 * values convert like a C cast, wrapping to the dtype's width. */
TG_API tg_tensor* tg_tensor_full(const int64_t* shape, size_t ndim, double value, tg_dtype dtype, const char* device);
/* [start, start+step, ...) up to stop, like tinygrad's Tensor.arange. step must be non-zero. */
TG_API tg_tensor* tg_tensor_arange(double start, double stop, double step, tg_dtype dtype, const char* device);
/* The n x n identity. */
TG_API tg_tensor* tg_tensor_eye(int64_t n, tg_dtype dtype, const char* device);
/* `steps` values from start to stop inclusive, evenly spaced. */
TG_API tg_tensor* tg_tensor_linspace(double start, double stop, int64_t steps, tg_dtype dtype, const char* device);

/* ---- tensors: properties ---------------------------------------------------------------------------------------- */
/* Number of dims, or -1 on error. @errors(-1) */
TG_API int64_t tg_tensor_ndim(const tg_tensor* t);
/* Number of elements, or -1 on error. @errors(-1) */
TG_API int64_t tg_tensor_numel(const tg_tensor* t);
/* Copy the shape into out[0..ndim); `capacity` is out's length and must be >= ndim. */
TG_API tg_status tg_tensor_shape(const tg_tensor* t, int64_t* out, size_t capacity);
/* The dtype into *out. */
TG_API tg_status tg_tensor_dtype(const tg_tensor* t, tg_dtype* out);
/* The device name ("CPU"; "CPU,CPU:1" for a tensor sharded over two devices); valid while `t` is alive and not
 * replaced (tg_tensor_replace). NULL on error. */
TG_API const char* tg_tensor_device(const tg_tensor* t);
/* A new tensor holding t's values on `device` ("CL", "CUDA:1", ...): t is realized and copied now (through host memory
 * between two GPUs). The copy starts a new graph: gradients don't flow back into t. Inside a tg_jit function the copy
 * is captured and runs again at every replay. TG_ERROR_DEVICE names an unknown or unavailable device. */
TG_API tg_tensor* tg_tensor_to(tg_tensor* t, const char* device);
/* t takes x's graph, dtype and device in place (tinygrad's Tensor.replace; its to_ and shard_ are a replace): every
 * handle on t sees the change, a module's parameter included. t keeps its requires_grad; its grad is dropped. The
 * shapes must match (TG_ERROR_SHAPE). */
TG_API tg_status tg_tensor_replace(tg_tensor* t, tg_tensor* x);

/* ---- tensors: elementwise --------------------------------------------------------------------------------------- */
/* Binary ops broadcast like numpy/tinygrad and promote dtypes with tg_dtype_promote. */
/* a + b. */
TG_API tg_tensor* tg_tensor_add(tg_tensor* a, tg_tensor* b);
/* a - b, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_sub(tg_tensor* a, tg_tensor* b);
/* a * b, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_mul(tg_tensor* a, tg_tensor* b);
/* a / b, true division: int operands promote to float; broadcast as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_div(tg_tensor* a, tg_tensor* b);
/* a / b as integer division truncating toward zero, broadcast and promoted as tg_tensor_add; defined for every input
 * as in tinygrad: x idiv 0 == 0, and MIN idiv -1 wraps to MIN (never a trap). */
TG_API tg_tensor* tg_tensor_idiv(tg_tensor* a, tg_tensor* b);
/* The larger of a and b, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_maximum(tg_tensor* a, tg_tensor* b);
/* The smaller of a and b, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_minimum(tg_tensor* a, tg_tensor* b);
/* a to the power b, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_pow(tg_tensor* a, tg_tensor* b);
/* a < b as a TG_BOOL tensor, a and b broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_lt(tg_tensor* a, tg_tensor* b);
/* a <= b as a TG_BOOL tensor, a and b broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_le(tg_tensor* a, tg_tensor* b);
/* a > b as a TG_BOOL tensor, a and b broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_gt(tg_tensor* a, tg_tensor* b);
/* a >= b as a TG_BOOL tensor, a and b broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_ge(tg_tensor* a, tg_tensor* b);
/* a == b as a TG_BOOL tensor, a and b broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_eq(tg_tensor* a, tg_tensor* b);
/* a != b as a TG_BOOL tensor, a and b broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_ne(tg_tensor* a, tg_tensor* b);
/* a <op> scalar, the scalar taking a's dtype (an int tensor with a fractional scalar promotes to float). */
TG_API tg_tensor* tg_tensor_add_scalar(tg_tensor* a, double b);
TG_API tg_tensor* tg_tensor_sub_scalar(tg_tensor* a, double b);
TG_API tg_tensor* tg_tensor_mul_scalar(tg_tensor* a, double b);
TG_API tg_tensor* tg_tensor_div_scalar(tg_tensor* a, double b);
TG_API tg_tensor* tg_tensor_pow_scalar(tg_tensor* a, double b);
/* cond ? x : y, broadcast together; cond is cast to bool. */
TG_API tg_tensor* tg_tensor_where(tg_tensor* cond, tg_tensor* x, tg_tensor* y);
/* The values converted to `dtype`. */
TG_API tg_tensor* tg_tensor_cast(tg_tensor* t, tg_dtype dtype);
/* Unary math; exp, log, sqrt, sin, ... of an int tensor is computed in float32 (tinygrad's rule). */
TG_API tg_tensor* tg_tensor_neg(tg_tensor* t);
TG_API tg_tensor* tg_tensor_exp(tg_tensor* t);
TG_API tg_tensor* tg_tensor_exp2(tg_tensor* t);
TG_API tg_tensor* tg_tensor_log(tg_tensor* t);
TG_API tg_tensor* tg_tensor_log2(tg_tensor* t);
TG_API tg_tensor* tg_tensor_sqrt(tg_tensor* t);
TG_API tg_tensor* tg_tensor_reciprocal(tg_tensor* t);
TG_API tg_tensor* tg_tensor_sin(tg_tensor* t);
TG_API tg_tensor* tg_tensor_cos(tg_tensor* t);
TG_API tg_tensor* tg_tensor_abs(tg_tensor* t);
TG_API tg_tensor* tg_tensor_relu(tg_tensor* t);
TG_API tg_tensor* tg_tensor_sigmoid(tg_tensor* t);
TG_API tg_tensor* tg_tensor_tanh(tg_tensor* t);
TG_API tg_tensor* tg_tensor_rsqrt(tg_tensor* t);
TG_API tg_tensor* tg_tensor_square(tg_tensor* t);
TG_API tg_tensor* tg_tensor_tan(tg_tensor* t);
TG_API tg_tensor* tg_tensor_asin(tg_tensor* t);
TG_API tg_tensor* tg_tensor_acos(tg_tensor* t);
TG_API tg_tensor* tg_tensor_atan(tg_tensor* t);
TG_API tg_tensor* tg_tensor_sinh(tg_tensor* t);
TG_API tg_tensor* tg_tensor_cosh(tg_tensor* t);
TG_API tg_tensor* tg_tensor_asinh(tg_tensor* t);
TG_API tg_tensor* tg_tensor_acosh(tg_tensor* t);
TG_API tg_tensor* tg_tensor_atanh(tg_tensor* t);
TG_API tg_tensor* tg_tensor_erf(tg_tensor* t);
/* -1, 0 or 1 in t's dtype, NaN for NaN (as numpy and tinygrad). */
TG_API tg_tensor* tg_tensor_sign(tg_tensor* t);
/* Rounded toward zero, in t's dtype. */
TG_API tg_tensor* tg_tensor_trunc(tg_tensor* t);
/* Rounded down, in t's dtype. */
TG_API tg_tensor* tg_tensor_floor(tg_tensor* t);
/* Rounded up, in t's dtype. */
TG_API tg_tensor* tg_tensor_ceil(tg_tensor* t);
/* Rounded to the nearest integer, half to even, in t's dtype. */
TG_API tg_tensor* tg_tensor_round(tg_tensor* t);
/* TG_BOOL: true where t is NaN. */
TG_API tg_tensor* tg_tensor_isnan(tg_tensor* t);
/* TG_BOOL: true where t is +-inf. */
TG_API tg_tensor* tg_tensor_isinf(tg_tensor* t);
/* TG_BOOL: true where t is neither NaN nor +-inf. */
TG_API tg_tensor* tg_tensor_isfinite(tg_tensor* t);
/* TG_BOOL: true where t is 0. */
TG_API tg_tensor* tg_tensor_logical_not(tg_tensor* t);
/* Activations, with tinygrad's formulas and defaults where a parameter is taken. */
TG_API tg_tensor* tg_tensor_relu6(tg_tensor* t);
TG_API tg_tensor* tg_tensor_leaky_relu(tg_tensor* t, double neg_slope);
TG_API tg_tensor* tg_tensor_elu(tg_tensor* t, double alpha);
TG_API tg_tensor* tg_tensor_celu(tg_tensor* t, double alpha);
TG_API tg_tensor* tg_tensor_selu(tg_tensor* t);
TG_API tg_tensor* tg_tensor_gelu(tg_tensor* t);
TG_API tg_tensor* tg_tensor_quick_gelu(tg_tensor* t);
TG_API tg_tensor* tg_tensor_silu(tg_tensor* t);
TG_API tg_tensor* tg_tensor_mish(tg_tensor* t);
TG_API tg_tensor* tg_tensor_hardsigmoid(tg_tensor* t);
TG_API tg_tensor* tg_tensor_logsigmoid(tg_tensor* t);
TG_API tg_tensor* tg_tensor_softplus(tg_tensor* t, double beta);
TG_API tg_tensor* tg_tensor_softsign(tg_tensor* t);
TG_API tg_tensor* tg_tensor_hardswish(tg_tensor* t);
TG_API tg_tensor* tg_tensor_hardtanh(tg_tensor* t, double min_val, double max_val);
/* clamp to [min_val, max_val] (NaN bounds are not allowed: use maximum/minimum for one side). */
TG_API tg_tensor* tg_tensor_clamp(tg_tensor* t, double min_val, double max_val);
/* Python's a % b for ints and floats: the result takes the divisor's sign. Broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_mod(tg_tensor* a, tg_tensor* b);
/* C's fmod(a, b): the result takes the dividend's sign. Broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_fmod(tg_tensor* a, tg_tensor* b);
/* a & b of int or bool tensors, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_bitwise_and(tg_tensor* a, tg_tensor* b);
/* a | b of int or bool tensors, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_bitwise_or(tg_tensor* a, tg_tensor* b);
/* a ^ b of int or bool tensors, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_bitwise_xor(tg_tensor* a, tg_tensor* b);
/* ~t of an int or bool tensor. */
TG_API tg_tensor* tg_tensor_bitwise_not(tg_tensor* t);
/* t << bits of an int tensor. */
TG_API tg_tensor* tg_tensor_lshift(tg_tensor* t, int64_t bits);
/* t >> bits of an int tensor. */
TG_API tg_tensor* tg_tensor_rshift(tg_tensor* t, int64_t bits);
/* a << b elementwise, int tensors broadcast and promoted as tg_tensor_add (TG_ERROR_DTYPE otherwise); a count outside
 * 0..bits-1 of the dtype gives what the device's shift gives. */
TG_API tg_tensor* tg_tensor_lshift_tensor(tg_tensor* a, tg_tensor* b);
/* a >> b elementwise (arithmetic for signed ints), as tg_tensor_lshift_tensor. */
TG_API tg_tensor* tg_tensor_rshift_tensor(tg_tensor* a, tg_tensor* b);
/* |a| with b's sign, broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_copysign(tg_tensor* a, tg_tensor* b);
/* log(exp(a) + exp(b)), computed stably; broadcast and promoted as tg_tensor_add. */
TG_API tg_tensor* tg_tensor_logaddexp(tg_tensor* a, tg_tensor* b);
/* a + (b - a) * weight. */
TG_API tg_tensor* tg_tensor_lerp(tg_tensor* a, tg_tensor* b, tg_tensor* weight);
/* |a - b| <= atol + rtol * |b|, NaNs equal when equal_nan != 0. */
TG_API tg_tensor* tg_tensor_isclose(tg_tensor* a, tg_tensor* b, double rtol, double atol, int equal_nan);

/* ---- tensors: reductions ---------------------------------------------------------------------------------------- */
/* Reductions over `axes` (negative counts from the end; naxes == 0 means every axis); keepdim != 0 keeps reduced dims as
 * size 1. */
/* The sum; ints accumulate in at least int32 (uint32 for unsigned). */
TG_API tg_tensor* tg_tensor_sum(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* The product, reduced as tg_tensor_sum; ints accumulate in at least int32 (uint32 for unsigned). */
TG_API tg_tensor* tg_tensor_prod(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* The largest value, reduced as tg_tensor_sum, in t's dtype. */
TG_API tg_tensor* tg_tensor_max(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* The smallest value, reduced as tg_tensor_sum, in t's dtype. */
TG_API tg_tensor* tg_tensor_min(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* The mean, reduced as tg_tensor_sum; the result is float. */
TG_API tg_tensor* tg_tensor_mean(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* The standard deviation with Bessel's `correction` (1 is the unbiased estimate), reduced as tg_tensor_sum; the result is
 * float. */
TG_API tg_tensor* tg_tensor_std(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim, double correction);
/* The variance with Bessel's `correction` (1 is the unbiased estimate), reduced as tg_tensor_sum; the result is float. */
TG_API tg_tensor* tg_tensor_var(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim, double correction);
/* std and mean together: new references to out[0] (std, as tg_tensor_std) and out[1] (the mean). @len(out=2) */
TG_API tg_status tg_tensor_std_mean(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim, double correction, tg_tensor** out);
/* var and mean together: new references to out[0] (var, as tg_tensor_var) and out[1] (the mean). @len(out=2) */
TG_API tg_status tg_tensor_var_mean(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim, double correction, tg_tensor** out);
/* TG_BOOL: whether every element is nonzero, reduced as tg_tensor_sum. */
TG_API tg_tensor* tg_tensor_all(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* TG_BOOL: whether some element is nonzero, reduced as tg_tensor_sum. */
TG_API tg_tensor* tg_tensor_any(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* log(sum(exp(t))) computed stably, reduced as tg_tensor_sum; the result is float. */
TG_API tg_tensor* tg_tensor_logsumexp(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim);
/* Index (TG_INT32) of the first max along `axis`; flatten != 0 ignores axis and searches the flattened tensor. */
TG_API tg_tensor* tg_tensor_argmax(tg_tensor* t, int64_t axis, int keepdim, int flatten);
/* Index (TG_INT32) of the first min along `axis`; flatten != 0 ignores axis and searches the flattened tensor. */
TG_API tg_tensor* tg_tensor_argmin(tg_tensor* t, int64_t axis, int keepdim, int flatten);
/* Inclusive running sum along `axis`; ints accumulate as in tg_tensor_sum. */
TG_API tg_tensor* tg_tensor_cumsum(tg_tensor* t, int64_t axis);
/* Inclusive running product along `axis`; ints accumulate as in tg_tensor_prod. */
TG_API tg_tensor* tg_tensor_cumprod(tg_tensor* t, int64_t axis);
/* Inclusive running maximum along `axis`, in t's dtype. */
TG_API tg_tensor* tg_tensor_cummax(tg_tensor* t, int64_t axis);
/* Inclusive running minimum along `axis`, in t's dtype. */
TG_API tg_tensor* tg_tensor_cummin(tg_tensor* t, int64_t axis);
/* exp(t) / sum(exp(t)) along `axis`, computed stably. */
TG_API tg_tensor* tg_tensor_softmax(tg_tensor* t, int64_t axis);
/* log(softmax(t)) along `axis`, computed stably. */
TG_API tg_tensor* tg_tensor_log_softmax(tg_tensor* t, int64_t axis);

/* ---- tensors: movement (views: no data is copied) --------------------------------------------------------------- */
/* New shape with the same numel; one dim may be -1. */
TG_API tg_tensor* tg_tensor_reshape(tg_tensor* t, const int64_t* shape, size_t ndim);
/* order is a permutation of 0..ndim-1. */
TG_API tg_tensor* tg_tensor_permute(tg_tensor* t, const int64_t* order, size_t ndim);
/* Broadcast size-1 dims to `shape` (-1 keeps a dim); new leading dims may be added. */
TG_API tg_tensor* tg_tensor_expand(tg_tensor* t, const int64_t* shape, size_t ndim);
/* pads: ndim (before, after) pairs; padded area holds `value`. A negative entry crops that many elements from that
 * side, as tinygrad (more than the dim holds is TG_ERROR_SHAPE). */
TG_API tg_tensor* tg_tensor_pad(tg_tensor* t, const int64_t* pads, size_t npairs, double value);
/* Dim `axis` (negative counts from the end) with `before` elements of `value` in front and as many after as make it
 * `size`. On a dim bound to a Variable (tg_tensor_shrink_var) the result is a plain dim of `size` at every binding:
 * tinygrad's x.pad((0, N - x.shape[0])), a KV cache padded to its capacity; a tg_jit replays it for any binding. The
 * Variable's largest value plus `before` must fit in `size` (TG_ERROR_SHAPE otherwise). */
TG_API tg_tensor* tg_tensor_pad_to(tg_tensor* t, int64_t axis, int64_t before, int64_t size, double value);
/* bounds: ndim (start, end) pairs with 0 <= start <= end <= size. */
TG_API tg_tensor* tg_tensor_shrink(tg_tensor* t, const int64_t* bounds, size_t npairs);
/* Symbolic shapes: t[..., 0:var, ...] along `axis` (negative counts from the end), that dim's size being the Variable
 * `var` (borrowed; a tg_expr_variable with min >= 0) bound to `value` (min <= value <= max, value <= the dim's size; max
 * may pass the dim, as tinygrad: the buffer such a view is copied to is padded to max).
 * Ops over the result keep the dim symbolic: elementwise ops and broadcasting (against the same Variable or a 1),
 * reductions (over it too: a sum loops to the value, a mean divides by it), matmul, softmax, permutes, and reshapes that
 * keep the dim on its own. Graphs that differ only in the bound value schedule and compile once: the kernels take the
 * value as an argument, and a tg_jit captured with such an input replays for any binding. tg_tensor_shape gives the
 * bound value. Padding the dim by plain amounts and concatenating along it (tg_tensor_pad, tg_tensor_cat) keep it
 * symbolic: its size becomes an expression of the Variables (i+2, i+j), as in tinygrad, and still schedules and compiles
 * once. A view that would move the dim's start or reverse it (shrink from a start > 0, flip, a reshape merging it) is
 * TG_ERROR_UNSUPPORTED, as is the gradient of a cat along it for its pieces after the first; the dim meeting a plain
 * dim of the same size in a broadcast is TG_ERROR_SHAPE. */
TG_API tg_tensor* tg_tensor_shrink_var(tg_tensor* t, int64_t axis, const tg_expr* var, int64_t value);
/* tg_tensor_shrink_var with the size an expression `e` (borrowed) of Variables, each bound here (names[i] = values[i],
 * within its range; one left unbound is TG_ERROR_INVALID_ARGUMENT): t[..., 0:e, ...], the dim's size being e at those
 * values, as tinygrad's Tensor.empty(t, p + t). The expression must be a sum or product that grows with each of its
 * Variables (TG_ERROR_UNSUPPORTED otherwise: the buffer is laid out at their largest values), never negative, and
 * its value at most the dim's size. @len(names=n, values=n) */
TG_API tg_tensor* tg_tensor_shrink_expr(tg_tensor* t, int64_t axis, const tg_expr* e, const char* const* names, const int64_t* values, size_t n);
/* t[..., s:s+size, ...] along axis, where the start s is the expression `start` (borrowed) of the Variables named in
 * names, bound to values (as tg_tensor_shrink_expr). The dim keeps the plain size `size`; the offset is a kernel
 * argument, so one graph (and one captured tg_jit) serves every binding: a KV cache read or written at a position. s
 * must stay within [0, the dim's size] over its Variables' ranges and the window must fit at the bound values
 * (TG_ERROR_SHAPE); at a binding where it passes the end, those elements read 0 and an assign through the view writes
 * nothing there. @len(names=n, values=n) */
TG_API tg_tensor* tg_tensor_shrink_at(tg_tensor* t, int64_t axis, const tg_expr* start, const char* const* names, const int64_t* values, size_t n,
                                      int64_t size);
/* The same graph with `var` (borrowed) bound to `value` instead: shapes follow, nothing is recomputed until realized.
 * Rebinding an already realized tensor views another part of its buffer (laid out for the Variable's largest value):
 * only the part computed at the binding it was realized with holds its values, so rebind the lazy graph instead.
 * TG_ERROR_INVALID_ARGUMENT if no dim of `t` is bound to `var` or the value is outside its range. */
TG_API tg_tensor* tg_tensor_rebind(tg_tensor* t, const tg_expr* var, int64_t value);
/* The size of each symbolic dim of `t`: out[i] receives a new reference (release it) to the Variable the dim is bound
 * to, or to the expression of Variables it grew to (i+2 after a pad, i+j after a cat), or NULL for a plain dim; `capacity` is out's length and must be >= ndim. Together with tg_tensor_shape (the bound values)
 * this is the symbolic shape, as tinygrad's Tensor.shape holds a bound Variable for such a dim. */
TG_API tg_status tg_tensor_shape_vars(const tg_tensor* t, tg_expr** out, size_t capacity);
/* A 0-d tensor of `dtype` whose value is the expression `e` with its Variables bound (names[i] = values[i]; each within
 * its range): tinygrad's Tensor(v.bind(3) + 1). The value stays symbolic: kernels read it as an argument, so graphs that
 * differ only in the values schedule and compile once, and a tg_jit replays it with the values the call passes
 * (tg_jit_call_vars). A Variable of `e` left unbound is TG_ERROR_INVALID_ARGUMENT. @len(names=n, values=n) */
TG_API tg_tensor* tg_tensor_from_expr(const tg_expr* e, const char* const* names, const int64_t* values, size_t n, tg_dtype dtype,
                                      const char* device);
/* The same values with every Variable dim replaced by its bound value: a plain-shaped graph, for ops that change a
 * bound dim's start or order (shrink, flip), which tg_tensor_shrink_var's dims refuse. Nothing is computed
 * until realized; a tensor without Variable dims is returned as is. Inside a tg_jit function it is
 * TG_ERROR_UNSUPPORTED for a tensor with Variable dims: the capture's replays would keep this binding's value. */
TG_API tg_tensor* tg_tensor_at_binding(tg_tensor* t);
/* Reverse the listed axes (negative counts from the end; each at most once). A 0-d tensor accepts axis 0 or -1 and is
 * returned unchanged, as in torch; so does transpose(t, 0, 0). */
TG_API tg_tensor* tg_tensor_flip(tg_tensor* t, const int64_t* axes, size_t naxes);
/* Swap dims dim0 and dim1 (negative counts from the end). */
TG_API tg_tensor* tg_tensor_transpose(tg_tensor* t, int64_t dim0, int64_t dim1);
/* Merge dims start_dim..end_dim (inclusive, negative counts from the end) into one. */
TG_API tg_tensor* tg_tensor_flatten(tg_tensor* t, int64_t start_dim, int64_t end_dim);
/* Split dim into `sizes` (one may be -1). */
TG_API tg_tensor* tg_tensor_unflatten(tg_tensor* t, int64_t dim, const int64_t* sizes, size_t nsizes);
/* Remove dim if its size is 1 (a no-op otherwise). */
TG_API tg_tensor* tg_tensor_squeeze(tg_tensor* t, int64_t dim);
/* Remove every size-1 dim. */
TG_API tg_tensor* tg_tensor_squeeze_all(tg_tensor* t);
/* Insert a size-1 dim at `dim` (in -ndim-1..ndim). */
TG_API tg_tensor* tg_tensor_unsqueeze(tg_tensor* t, int64_t dim);
/* Tile `repeats` times along each dim (nrepeats >= ndim; extra leading entries add dims), as torch's repeat. */
TG_API tg_tensor* tg_tensor_repeat(tg_tensor* t, const int64_t* repeats, size_t nrepeats);
/* Each element `repeats` times along `dim`. */
TG_API tg_tensor* tg_tensor_repeat_interleave(tg_tensor* t, int64_t repeats, int64_t dim);
/* Rotate by shifts[i] along dims[i]. @len(shifts=n, dims=n) */
TG_API tg_tensor* tg_tensor_roll(tg_tensor* t, const int64_t* shifts, const int64_t* dims, size_t n);
/* ts[0..n) (borrowed) concatenated along `dim`: shapes equal elsewhere, dtypes promote; 0-d tensors are TG_ERROR_SHAPE. */
TG_API tg_tensor* tg_tensor_cat(tg_tensor* const* ts, size_t n, int64_t dim);
/* ts[0..n) (borrowed) stacked along a new dim `dim`: shapes equal (TG_ERROR_SHAPE otherwise), dtypes promote. */
TG_API tg_tensor* tg_tensor_stack(tg_tensor* const* ts, size_t n, int64_t dim);
/* The lower triangle of the last two dims: diagonals <= k kept, the rest 0. */
TG_API tg_tensor* tg_tensor_tril(tg_tensor* t, int64_t k);
/* The upper triangle of the last two dims: diagonals >= k kept, the rest 0. */
TG_API tg_tensor* tg_tensor_triu(tg_tensor* t, int64_t k);
/* tril and triu with the diagonal a 0-d integer tensor `k` (borrowed), such as a bound expression
 * (tg_tensor_from_expr): tinygrad's attention mask full((1, 1, t, p+t), -inf).triu(p+1) at every binding of p and t. */
TG_API tg_tensor* tg_tensor_tril_tensor(tg_tensor* t, tg_tensor* k);
TG_API tg_tensor* tg_tensor_triu_tensor(tg_tensor* t, tg_tensor* k);
/* pad with a mode: 0 constant (value), 1 reflect, 2 replicate, 3 circular (torch's semantics). Negative entries crop as
 * tinygrad: constant and circular crop first, reflect and replicate pad first and crop after. @int(mode) */
TG_API tg_tensor* tg_tensor_pad_mode(tg_tensor* t, const int64_t* pads, size_t npairs, int mode, double value);

/* ---- tensors: linear algebra ------------------------------------------------------------------------------------ */
/* Matrix product with numpy's rules for 1-D and batched operands. */
TG_API tg_tensor* tg_tensor_matmul(tg_tensor* a, tg_tensor* b);

/* ---- tensors: indexing ------------------------------------------------------------------------------------------ */
/* One entry of a Python-style index, t[1, 2:8:2, None, ..., idx]. The layout is fixed for this major version. */
typedef enum tg_index_kind {
  TG_INDEX_INVALID = -1, /* never valid; makes every int a representable value (a caller's bad kind is an error, not UB) */
  TG_INDEX_INT = 0,      /* `start` is the index (negative counts from the end) */
  TG_INDEX_SLICE = 1,    /* start:stop:step, each used only when its has_* flag is set (Python's None otherwise) */
  TG_INDEX_NEWAXIS = 2,  /* None: a new size-1 dim */
  TG_INDEX_ELLIPSIS = 3, /* ...: as many full slices as the other entries leave dims */
  TG_INDEX_TENSOR = 4,   /* an int tensor (borrowed): numpy's advanced indexing, out-of-range entries give 0 */
  TG_INDEX_KIND_MAX_ENUM = 0x7fffffff
} tg_index_kind;
typedef struct tg_index {
  tg_index_kind kind;
  int64_t start, stop, step;
  int has_start, has_stop, has_step;
  tg_tensor* tensor;
} tg_index;
/* t[idx[0], ..., idx[n-1]]: basic indices give a view; tensor indices gather. */
TG_API tg_tensor* tg_tensor_getitem(tg_tensor* t, const tg_index* idx, size_t n);
/* t[idx...] = value (broadcast to the selection, cast to t's dtype), then t refers to the result, as assign does. Every
 * entry kind; with tensor entries an element selected twice takes the last value, as numpy, and an out-of-range entry
 * selects nothing (nothing is written for it), as tinygrad. */
TG_API tg_status tg_tensor_setitem(tg_tensor* t, const tg_index* idx, size_t n, tg_tensor* value);

/* More shape and index ops. Functions that write several tensors write new references to out[0..] (out must have
 * room for them: 2 for sort/topk, nsizes for split, capacity for chunk, n for meshgrid). @len(out=nsizes) */
TG_API tg_status tg_tensor_split(tg_tensor* t, const int64_t* sizes, size_t nsizes, int64_t dim, tg_tensor** out);
/* ceil(size / chunks) per piece as torch; returns the number of pieces (<= chunks), -1 on error or if over capacity. @errors(-1) */
TG_API int64_t tg_tensor_chunk(tg_tensor* t, int64_t chunks, int64_t dim, tg_tensor** out, size_t capacity);
/* Coordinate grids of the n 1-d tensors into out[0..n) (xy_indexing != 0: numpy's 'xy', else 'ij'). @len(out=n) */
TG_API tg_status tg_tensor_meshgrid(tg_tensor* const* ts, size_t n, int xy_indexing, tg_tensor** out);
/* A 1-d tensor as the diagonal of a square matrix, 0 elsewhere. */
TG_API tg_tensor* tg_tensor_diag(tg_tensor* t);
/* The main diagonal of the last two dims. */
TG_API tg_tensor* tg_tensor_diagonal(tg_tensor* t);
/* Windows of `size` every `step` along dim, as a new last dim (torch's unfold). */
TG_API tg_tensor* tg_tensor_unfold(tg_tensor* t, int64_t dim, int64_t size, int64_t step);
/* Stable sort along dim: new references to out[0] (the values) and out[1] (TG_INT32 indices). n^2 work per row,
 * fused. @len(out=2) */
TG_API tg_status tg_tensor_sort(tg_tensor* t, int64_t dim, int descending, tg_tensor** out);
/* The TG_INT32 indices of tg_tensor_sort's result (out[1]) alone. */
TG_API tg_tensor* tg_tensor_argsort(tg_tensor* t, int64_t dim, int descending);
/* The k largest (or smallest) along dim, sorted as tg_tensor_sort: new references to out[0] (the values) and out[1]
 * (TG_INT32 indices). @len(out=2) */
TG_API tg_status tg_tensor_topk(tg_tensor* t, int64_t k, int64_t dim, int largest, tg_tensor** out);
/* t with src's elements written at `index` along dim; src has t's dtype (else TG_ERROR_DTYPE: nothing is cast, as
 * tinygrad). */
TG_API tg_tensor* tg_tensor_scatter(tg_tensor* t, int64_t dim, tg_tensor* index, tg_tensor* src);
/* t with everything src sends to one place (by `index` along dim) combined by `reduce` (borrowed: "sum", "prod",
 * "mean", "amax" or "amin"; another name is TG_ERROR_INVALID_ARGUMENT), with t's own value when include_self != 0.
 * src has t's dtype (else TG_ERROR_DTYPE). */
TG_API tg_tensor* tg_tensor_scatter_reduce(tg_tensor* t, int64_t dim, tg_tensor* index, tg_tensor* src, const char* reduce, int include_self);
/* mask ? value : t. */
TG_API tg_tensor* tg_tensor_masked_fill(tg_tensor* t, tg_tensor* mask, tg_tensor* value);
/* (count, ndim) TG_INT64 coordinates of the nonzero elements in row-major order (at most 2^24 elements). The shape
 * depends on the data: the count is realized and read back first. */
TG_API tg_tensor* tg_tensor_nonzero(tg_tensor* t);
/* The 1-d elements of t where mask (broadcast with t) is nonzero. The shape depends on the data: the count is realized
 * and read back first. */
TG_API tg_tensor* tg_tensor_masked_select(tg_tensor* t, tg_tensor* mask);
/* tinygrad's nonzero(size=, fill_value=): (size, ndim) TG_INT32 coordinates of the first `size` nonzero elements in
 * row-major order, rows past the count filled with fill_value (truncated to an int). Nothing is read back, so the graph
 * stays lazy (and a TinyJit can capture it). size < 0: the count, realized and read back first, as tg_tensor_nonzero
 * but TG_INT32 (tinygrad's index dtype). At most 2^24 elements and 2^24 rows. */
TG_API tg_tensor* tg_tensor_nonzero_sized(tg_tensor* t, int64_t size, double fill_value);
/* tinygrad's masked_select(mask, size=, fill_value=): the first `size` elements of t (row-major) where mask (TG_BOOL,
 * else TG_ERROR_DTYPE; broadcast to t's shape) is true, then fill_value (cast to t's dtype); t's dtype. Lazy as
 * tg_tensor_nonzero_sized; size < 0 reads the count back. */
TG_API tg_tensor* tg_tensor_masked_select_sized(tg_tensor* t, tg_tensor* mask, int64_t size, double fill_value);
/* tinygrad's clone: t's values in a new buffer of their own (computed when realized); gradients flow through to t. */
TG_API tg_tensor* tg_tensor_clone(tg_tensor* t);
/* The same bits viewed as another dtype of the same size. */
TG_API tg_tensor* tg_tensor_bitcast(tg_tensor* t, tg_dtype dtype);

/* ---- tensors: nn functional ------------------------------------------------------------------------------------ */
/* tinygrad's Tensor methods of the same names. Optional tensors (bias, weight, mask) may be NULL. `reduction` is 0
 * none, 1 mean, 2 sum. */
/* x @ weight + bias with weight (in, out), as Tensor.linear (nn.Linear keeps (out, in) and passes its transpose). @nullable(bias) */
TG_API tg_tensor* tg_tensor_linear(tg_tensor* x, tg_tensor* weight, tg_tensor* bias);
/* a @ b as tg_tensor_matmul (tinygrad's Tensor.dot). */
TG_API tg_tensor* tg_tensor_dot(tg_tensor* a, tg_tensor* b);
/* Einstein summation over letters ("ij,jk->ik"; without "->" the output is the letters used once, sorted). */
TG_API tg_tensor* tg_tensor_einsum(const char* formula, tg_tensor* const* ts, size_t n);
/* Householder QR of the last two dims (m, n), batched over the others: new references to out[0] = Q (m, m), orthogonal,
 * and out[1] = R (m, n), upper triangular, Q @ R = t (tinygrad's Tensor.qr, its signs). t must have rank >= 2
 * (TG_ERROR_SHAPE) and a float dtype (TG_ERROR_DTYPE). Lazy tensor ops: gradients flow through. @len(out=2) */
TG_API tg_status tg_tensor_qr(tg_tensor* t, tg_tensor** out);
/* Singular value decomposition of the last two dims (m, n), k = min(m, n), batched over the others (tinygrad's
 * Tensor.svd): new references to out[0] = U, out[1] = S (k,) descending, out[2] = Vh with U @ diag(S) @ Vh = t; U is
 * (m, m) and Vh (n, n) when full_matrices != 0, else (m, k) and (k, n). QR, then one-sided Jacobi sweeps (a fixed
 * number, so the graph doesn't depend on the values). A zero singular value's column of U is zero, as tinygrad's.
 * Errors as tg_tensor_qr. @len(out=3) */
TG_API tg_status tg_tensor_svd(tg_tensor* t, int full_matrices, tg_tensor** out);
/* Convolution of (N, Cin, H, W) by (Cout, Cin/groups, kH, kW) with zero padding, plus bias (Cout). @nullable(bias) */
TG_API tg_tensor* tg_tensor_conv2d(tg_tensor* x, tg_tensor* weight, tg_tensor* bias, int64_t groups, int64_t stride_h, int64_t stride_w,
                                   int64_t dilation_h, int64_t dilation_w, int64_t pad_h, int64_t pad_w);
/* The transposed convolution: weight (Cin, Cout/groups, kH, kW). @nullable(bias) */
TG_API tg_tensor* tg_tensor_conv_transpose2d(tg_tensor* x, tg_tensor* weight, tg_tensor* bias, int64_t groups, int64_t stride_h, int64_t stride_w,
                                             int64_t dilation_h, int64_t dilation_w, int64_t pad_h, int64_t pad_w, int64_t output_pad_h,
                                             int64_t output_pad_w);
/* Resize the last nsize dims to `size` ("linear", "nearest" or "nearest-exact"). */
TG_API tg_tensor* tg_tensor_interpolate(tg_tensor* t, const int64_t* size, size_t nsize, const char* mode, int align_corners);
/* The max over kernel windows of the last two dims; padding is -inf. */
TG_API tg_tensor* tg_tensor_max_pool2d(tg_tensor* t, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                                       int64_t dilation_w, int64_t pad_h, int64_t pad_w);
/* The average over kernel windows of the last two dims; padding is 0, counted in the mean when count_include_pad != 0. */
TG_API tg_tensor* tg_tensor_avg_pool2d(tg_tensor* t, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                       int64_t pad_w, int count_include_pad);
/* N-d forms, tinygrad's conv2d / conv_transpose2d / max_pool2d / avg_pool2d / max_unpool2d over any number of spatial
 * dims. Per-dim arguments (stride, dilation, output_padding, kernel) hold one value for every spatial dim or one each;
 * padding holds npairs (before, after) pairs, one per spatial dim in order (npairs 0: none), and a negative pair
 * crops. */
/* Convolution of (N, Cin, d1..dn) by weight (Cout, Cin/groups, k1..kn): n = the weight's rank - 2 spatial dims, plus
 * bias (Cout). @nullable(bias) */
TG_API tg_tensor* tg_tensor_conv(tg_tensor* x, tg_tensor* weight, tg_tensor* bias, int64_t groups, const int64_t* stride, size_t nstride,
                                 const int64_t* dilation, size_t ndilation, const int64_t* padding, size_t npairs);
/* The transposed convolution, weight (Cin, Cout/groups, k1..kn); the output grows by output_padding after each spatial
 * dim (noutput_padding 0: none). @nullable(bias) */
TG_API tg_tensor* tg_tensor_conv_transpose(tg_tensor* x, tg_tensor* weight, tg_tensor* bias, int64_t groups, const int64_t* stride, size_t nstride,
                                           const int64_t* dilation, size_t ndilation, const int64_t* padding, size_t npairs,
                                           const int64_t* output_padding, size_t noutput_padding);
/* Pooling of the last nkernel dims: kind 0 max (padding is the dtype's lowest value), 1 average (padding is 0, counted
 * in the mean when count_include_pad != 0). nstride 0: stride = kernel; ndilation 0: 1. ceil_mode != 0: the output
 * size rounds up, as torch's (a window must start inside the input or its left padding). @int(kind) */
TG_API tg_tensor* tg_tensor_pool(tg_tensor* t, int kind, const int64_t* kernel, size_t nkernel, const int64_t* stride, size_t nstride,
                                 const int64_t* dilation, size_t ndilation, const int64_t* padding, size_t npairs, int ceil_mode, int count_include_pad);
/* Max pooling as tg_tensor_pool (kind 0) with the argmax: new references to out[0] (the maxima) and out[1] (TG_INT32,
 * each max's row-major index within its input's pooled plane; the first max on ties). @len(out=2) */
TG_API tg_status tg_tensor_max_pool_indices(tg_tensor* t, const int64_t* kernel, size_t nkernel, const int64_t* stride, size_t nstride,
                                            const int64_t* dilation, size_t ndilation, const int64_t* padding, size_t npairs, int ceil_mode,
                                            tg_tensor** out);
/* The partial inverse of max pooling: t (N, C, o1..on) placed at `indices` (tg_tensor_max_pool_indices' out[1]) in a
 * zero (N, C, s1..sn) tensor. s is output_size's last n values or, when noutput_size is 0, what the pool's kernel,
 * stride, dilation and padding give ((o-1)*stride - before - after + dilation*(kernel-1) + 1). */
TG_API tg_tensor* tg_tensor_max_unpool(tg_tensor* t, tg_tensor* indices, const int64_t* kernel, size_t nkernel, const int64_t* stride, size_t nstride,
                                       const int64_t* dilation, size_t ndilation, const int64_t* padding, size_t npairs, const int64_t* output_size,
                                       size_t noutput_size);
/* (x - mean) / sqrt(var + eps) over `axes` (naxes == 0: the last dim), no affine part. */
TG_API tg_tensor* tg_tensor_layernorm(tg_tensor* t, const int64_t* axes, size_t naxes, double eps);
/* (x - mean) * weight * invstd + bias, the per-channel tensors broadcast along dim 1. @nullable(weight, bias) */
TG_API tg_tensor* tg_tensor_batchnorm(tg_tensor* x, tg_tensor* weight, tg_tensor* bias, tg_tensor* mean, tg_tensor* invstd);
/* Zeroes each element with probability p and scales the rest by 1/(1-p) (call it in training only). */
TG_API tg_tensor* tg_tensor_dropout(tg_tensor* t, double p);
/* softmax(q k^T / sqrt(d) + mask) v; a bool mask keeps where true; is_causal masks the upper triangle. @nullable(mask) */
TG_API tg_tensor* tg_tensor_scaled_dot_product_attention(tg_tensor* q, tg_tensor* k, tg_tensor* v, tg_tensor* mask, int is_causal);
/* tg_tensor_scaled_dot_product_attention; enable_gqa != 0 repeats k's and v's heads (dim -3) to q's, which must be a
 * multiple of them (TG_ERROR_SHAPE otherwise). A mask with is_causal is TG_ERROR_INVALID_ARGUMENT. @nullable(mask) */
TG_API tg_tensor* tg_tensor_scaled_dot_product_attention_gqa(tg_tensor* q, tg_tensor* k, tg_tensor* v, tg_tensor* mask, int is_causal,
                                                             int enable_gqa);
/* TG_INT32 one-hot along a new last dim. */
TG_API tg_tensor* tg_tensor_one_hot(tg_tensor* t, int64_t num_classes);
/* Loss of logits (N, C, ...) against class indices (N, ...) or probabilities (N, C, ...), with label smoothing.
 * @int(reduction) */
TG_API tg_tensor* tg_tensor_cross_entropy(tg_tensor* logits, tg_tensor* target, double label_smoothing, int reduction);
/* Loss of logits (..., C) against int labels (...; any shape whose one-hot broadcasts with the logits), skipping labels
 * equal to ignore_index; as tinygrad, ignore_index -1 skips nothing (a -1 label adds only its smoothing term and counts
 * in the mean). @int(reduction) */
TG_API tg_tensor* tg_tensor_sparse_categorical_crossentropy(tg_tensor* logits, tg_tensor* labels, int64_t ignore_index, double label_smoothing,
                                                            int reduction);
/* Negative log-likelihood of log-probabilities (N, C, ...) against class indices. @int(reduction) */
TG_API tg_tensor* tg_tensor_nll_loss(tg_tensor* logprobs, tg_tensor* target, int reduction);
/* tg_tensor_nll_loss with a per-class weight (C,) and, when use_ignore_index != 0, targets equal to ignore_index
 * skipped; the mean divides by the total weight of the targets kept, as torch. @nullable(weight) @int(reduction) */
TG_API tg_tensor* tg_tensor_nll_loss_weighted(tg_tensor* logprobs, tg_tensor* target, tg_tensor* weight, int use_ignore_index,
                                              int64_t ignore_index, int reduction);
/* Binary cross-entropy of probabilities p against targets y. @int(reduction) */
TG_API tg_tensor* tg_tensor_binary_crossentropy(tg_tensor* p, tg_tensor* y, int reduction);
/* Binary cross-entropy of logits x (sigmoid applied inside, stably) against targets y. @int(reduction) */
TG_API tg_tensor* tg_tensor_binary_crossentropy_logits(tg_tensor* x, tg_tensor* y, int reduction);
/* tg_tensor_binary_crossentropy_logits with the positive targets' term scaled by pos_weight (broadcast, as torch).
 * @nullable(pos_weight) @int(reduction) */
TG_API tg_tensor* tg_tensor_binary_crossentropy_logits_weighted(tg_tensor* x, tg_tensor* y, tg_tensor* pos_weight, int reduction);
/* out[..i..] = t[.. index[..i..] ..] along dim (index: an int tensor of t's rank). */
TG_API tg_tensor* tg_tensor_gather(tg_tensor* t, int64_t dim, tg_tensor* index);
/* t takes value's contents (same shape; cast to t's dtype). On a realized tensor the write is in place, when t is
 * realized. A view of a realized buffer (t[1:3], a transpose, a flip, a reshape; not an expand) writes its elements of
 * that buffer at once, so every holder of the buffer sees them. On a lazy tensor, tensors made from t before keep the
 * old contents. */
TG_API tg_status tg_tensor_assign(tg_tensor* t, tg_tensor* value);

/* ---- tensors: random numbers ------------------------------------------------------------------------------------- */
/* Counter-based (threefry2x32, as tinygrad): the numbers are a function of the seed and of how many random numbers were
 * drawn on the device since it was set, so a program gives the same numbers on every run; they are generated inside the
 * kernels that use them. A one-element counter buffer per device is read and advanced by each tensor's size when the
 * tensor is made (two tiny kernels), so a tg_jit replay draws new numbers at every call. */
/* Set the seed of every device's numbers and restart their counters. Process-wide and thread-safe. */
TG_API void tg_manual_seed(uint64_t seed);
/* Uniform in [0, 1). A dtype that is not float is TG_ERROR_DTYPE. */
TG_API tg_tensor* tg_tensor_rand(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* Standard normal (Box-Muller). A dtype that is not float is TG_ERROR_DTYPE. */
TG_API tg_tensor* tg_tensor_randn(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* Uniform in [low, high). Bounds that are not finite are TG_ERROR_INVALID_ARGUMENT, a dtype that is not float
 * TG_ERROR_DTYPE. */
TG_API tg_tensor* tg_tensor_uniform(const int64_t* shape, size_t ndim, double low, double high, tg_dtype dtype, const char* device);
/* mean + std * randn. A mean or std that is not finite is TG_ERROR_INVALID_ARGUMENT, a dtype that is not float
 * TG_ERROR_DTYPE. */
TG_API tg_tensor* tg_tensor_normal(const int64_t* shape, size_t ndim, double mean, double std, tg_dtype dtype, const char* device);
/* Ints in [low, high). A dtype that is not an int is TG_ERROR_DTYPE; low >= high, or a range the dtype can't hold,
 * TG_ERROR_INVALID_ARGUMENT. */
TG_API tg_tensor* tg_tensor_randint(const int64_t* shape, size_t ndim, int64_t low, int64_t high, tg_dtype dtype, const char* device);
/* tinygrad's initializers, float dtypes only (fan_in below: the product of the dims after the first). */
/* U(-1, 1) / sqrt(numel). */
TG_API tg_tensor* tg_tensor_scaled_uniform(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* U(-b, b) with b = sqrt(6 / (shape[0] + fan_in)); a 0-d shape is TG_ERROR_SHAPE. */
TG_API tg_tensor* tg_tensor_glorot_uniform(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device);
/* U(-b, b) with b = sqrt(3) * sqrt(2 / (1 + a^2)) / sqrt(fan_in), for a leaky slope a. */
TG_API tg_tensor* tg_tensor_kaiming_uniform(const int64_t* shape, size_t ndim, double a, tg_dtype dtype, const char* device);
/* Normal with mean 0 and std sqrt(2 / (1 + a^2)) / sqrt(fan_in), for a leaky slope a. */
TG_API tg_tensor* tg_tensor_kaiming_normal(const int64_t* shape, size_t ndim, double a, tg_dtype dtype, const char* device);
/* A random permutation of 0..n-1 in an int dtype (another is TG_ERROR_DTYPE). */
TG_API tg_tensor* tg_tensor_randperm(int64_t n, tg_dtype dtype, const char* device);
/* num_samples (> 0) indices drawn from the categorical distribution of each row of `weights` (1-d or 2-d).
 * Without replacement only one sample is drawn: more is TG_ERROR_UNSUPPORTED. */
TG_API tg_tensor* tg_tensor_multinomial(tg_tensor* weights, int64_t num_samples, int replacement);
/* tg_tensor_rand with t's shape, dtype (float only) and device. */
TG_API tg_tensor* tg_tensor_rand_like(tg_tensor* t);
/* tg_tensor_randn with t's shape, dtype (float only) and device. */
TG_API tg_tensor* tg_tensor_randn_like(tg_tensor* t);
/* tg_tensor_full with t's shape, dtype and device. */
TG_API tg_tensor* tg_tensor_full_like(tg_tensor* t, double value);
/* Zeros with t's shape, dtype and device. */
TG_API tg_tensor* tg_tensor_zeros_like(tg_tensor* t);
/* Ones with t's shape, dtype and device. */
TG_API tg_tensor* tg_tensor_ones_like(tg_tensor* t);

/* ---- tensors: autograd ------------------------------------------------------------------------------------------ */
/* Reverse-mode gradients, derived by rewriting the op graph (no op is run while deriving). A tensor takes part when
 * its requires_grad flag is set (tensors start without it). backward(loss) needs a 0-d (or one-element) loss; it adds
 * d loss / d t to t's grad for every tensor t with requires_grad that loss depends on (a tensor loss does not depend
 * on gets no grad). The gradients are lazy tensors: realize them together with the loss for the fewest kernels. */
TG_API tg_status tg_tensor_set_requires_grad(tg_tensor* t, int requires_grad);
/* 1 or 0; -1 on error. @errors(-1) */
TG_API int tg_tensor_requires_grad(const tg_tensor* t);
/* Adds d loss / d t into the grad of every tensor t with requires_grad that `loss` (0-d or one element) depends on. */
TG_API tg_status tg_tensor_backward(tg_tensor* loss);
/* tg_tensor_backward, and also into the grad of each also[i] that `loss` depends on, whatever its requires_grad: current
 * tinygrad's backward fills every float tensor of the graph, and a binding passes the live ones it has (a tensor loss
 * does not depend on, or one that is not float, gets nothing). @nullable(also) */
TG_API tg_status tg_tensor_backward_also(tg_tensor* loss, tg_tensor* const* also, size_t n);
/* A new reference to t's accumulated gradient; NULL with TG_ERROR_INVALID_ARGUMENT if it has none. */
TG_API tg_tensor* tg_tensor_grad(tg_tensor* t);
/* Replace t's gradient by `grad` (same shape; NULL clears it, as zero_grad does). @nullable(grad) */
TG_API tg_status tg_tensor_set_grad(tg_tensor* t, tg_tensor* grad);
/* d target / d wrt[i] for a 0-d (or one-element) target into out[i] (new references), whatever the requires_grad
 * flags; a wrt target does not depend on gets zeros. @len(out=n) */
TG_API tg_status tg_tensor_gradient(tg_tensor* target, tg_tensor* const* wrt, size_t n, tg_tensor** out);
/* The same values with no gradient flowing back through them. */
TG_API tg_tensor* tg_tensor_detach(tg_tensor* t);
/* The same values; the gradient flowing back through it is made contiguous (its own buffer), as tinygrad's. */
TG_API tg_tensor* tg_tensor_contiguous_backward(tg_tensor* t);

/* ---- tensors: realization and data ------------------------------------------------------------------------------ */
/* A tensor that is its own buffer when realized (forces a kernel boundary). */
TG_API tg_tensor* tg_tensor_contiguous(tg_tensor* t);
/* Run every kernel `t` needs; afterwards `t` refers to its computed buffer. */
TG_API tg_status tg_tensor_realize(tg_tensor* t);
/* Realize `n` tensors together (one schedule per device, shared work is done once). */
TG_API tg_status tg_tensor_realize_many(tg_tensor* const* ts, size_t n);
/* Realize and copy the row-major contents into `out`; nbytes must equal numel * dtype size. */
TG_API tg_status tg_tensor_to_data(tg_tensor* t, void* out, size_t nbytes);
/* Another reference to the same tensor. */
TG_API tg_tensor* tg_tensor_retain(tg_tensor* t);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_tensor_release(tg_tensor* t);

/* ---- DLPack ----------------------------------------------------------------------------------------------------- */
/* Tensors shared with other libraries (numpy, PyTorch, JAX, CuPy) without copies, through DLPack's C ABI: the
 * `DLManagedTensor` of dlpack.h (versions 0.5 to 0.8, the struct behind Python's "dltensor" capsules). Declare it by
 * including dlpack.h; this header names the struct only. Host memory (kDLCPU) is shared; other DLPack devices are
 * TG_ERROR_DEVICE. Thread safety: the exported memory may be read from any thread; writes race with kernels as any
 * shared memory does. */
struct DLManagedTensor;
/* A tensor over the memory of `managed` (dtype bool, int8..uint64, float16, bfloat16, float32, float64; lanes 1), on the
 * default device if that is a CPU device (DEV=CPU:CLANG), else on CPU: no copy when the data is row-major contiguous
 * (strides NULL or compact, size-1 dims' strides aside) and aligned to its element size, so writes through either side
 * are seen by the other; otherwise (any strides, negative too, or unaligned) a copy is made at once. Errors: a device
 * other than kDLCPU is TG_ERROR_DEVICE, lanes != 1 or another dtype TG_ERROR_DTYPE, a negative dim TG_ERROR_SHAPE,
 * NULL `managed`, shape or data (with elements) TG_ERROR_INVALID_ARGUMENT. On success the library owns
 * `managed` and calls its deleter exactly once, when the memory is no longer used (after the copy, or when the last
 * tensor and buffer using it are gone). On failure nothing is taken: the caller still owns `managed`. @takes(managed)
 * A new reference. */
TG_API tg_tensor* tg_tensor_from_dlpack(struct DLManagedTensor* managed);
/* `t` realized into its own row-major buffer (t then refers to it, as tg_tensor_realize does) and exported as a new
 * DLManagedTensor sharing that buffer: writes through the DLPack tensor are seen by `t` and tensors made from it later.
 * The caller owns the result and must call its `deleter` exactly once (a DLPack consumer such as numpy or
 * torch.from_dlpack does it); the buffer stays alive until then, even after `t` is released. t must be on a CPU device
 * (TG_ERROR_DEVICE otherwise; move it with tg_tensor_to). A realized buffer, or a row-major view of one at an offset, is
 * exported as it is, without a copy. The result has kDLCPU, explicit row-major strides and byte_offset 0. @errors(NULL) */
TG_API struct DLManagedTensor* tg_tensor_to_dlpack(tg_tensor* t);

/* ---- TinyJit ---------------------------------------------------------------------------------------------------- */
/* A function to capture: reads `n_inputs` borrowed input tensors and writes `n_outputs` new references into
 * `outputs` (caller-owned array). Returns TG_OK, or an error status (its message set through the library's calls or not at
 * all); on an error it must write no references. `userdata` is what tg_jit_create was given. */
typedef tg_status (*tg_jit_fn)(void* userdata, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs);
/* A JIT around `fn` (tinygrad's TinyJit). The first call runs `fn` and realizes its outputs; the second runs it while
 * capturing every kernel its realizes launch; later calls replay the captured kernels with the new inputs' buffers and
 * do not call `fn` (no scheduling, no lowering, no compiling: see tg_counters). Every tensor `fn` assigns in place
 * (tg_tensor_assign on a realized tensor) is realized with the outputs at each call, so its update is captured and
 * replays even when `fn` does not return it (running statistics, optimizer state); DEBUG>=1 lists those tensors.
 * Inputs are realized first (made contiguous where needed). Outputs of a replay are the buffers of the capture: a later
 * call overwrites them, so copy out (tg_tensor_to_data) or use them before the next call. Intermediate buffers of the
 * captured kernels share memory (the memory planner). With the option JIT=0 every call runs `fn` as the first does
 * (its outputs and assigns realized). `userdata` is borrowed and must outlive the JIT. NULL if `fn` is NULL. Calls
 * from several threads are serialized. `fn` may not call, reset or plan its own JIT (TG_ERROR_INVALID_ARGUMENT);
 * releasing it from inside `fn` is safe (the JIT lives until the call returns).
 * Nesting: a JIT called from inside another JIT's `fn` (on the same thread) runs its own `fn` at once, as under JIT=0,
 * and neither counts the call nor captures nor replays: the enclosing capture records the kernels it realizes, so the
 * outer JIT replays them (outer(x) = inner(x) * 2 is right at every call). Such a nested call takes no lock, so its
 * `fn` may run at the same time as an outermost call of the same JIT on another thread. Locking is deadlock-free: a
 * thread holds at most one JIT's lock, and waits for one only when it holds none (JITs whose functions call each other
 * from two threads run); reset or plan of another JIT from inside `fn` only tries that JIT's lock and is
 * TG_ERROR_INVALID_ARGUMENT while a call of it runs on another thread. An input that is a buffer a captured kernel writes (a replay's own output fed back) is copied first. */
TG_API tg_jit* tg_jit_create(tg_jit_fn fn, void* userdata);
/* Call the JIT: `inputs` are borrowed, `outputs` (caller-owned array of `n_outputs`) receives new references. On a
 * replay every input must have the shape, dtype and device it had at the capture, and n_inputs and n_outputs the counts
 * of the capture: a mismatch is TG_ERROR_SHAPE / TG_ERROR_DTYPE / TG_ERROR_DEVICE / TG_ERROR_INVALID_ARGUMENT naming
 * the input, and nothing runs. The first call may pass any n_outputs (extra outputs of `fn` are realized and dropped).
 * An error from `fn` is returned as is; a failed capture leaves the JIT to capture again at the next call. */
TG_API tg_status tg_jit_call(tg_jit* jit, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs);
/* tg_jit_call with the values of Variables `fn` uses besides its inputs' dims (var_names[i] = var_values[i]; a tensor
 * made with tg_tensor_from_expr, a shrink_var inside fn): a replay gives the kernels these values. A capture in which a
 * kernel takes a Variable that neither an input's dims nor these bind is TG_ERROR_UNSUPPORTED (a replay would keep the
 * captured value), and a replay that leaves out a Variable the capture was given is TG_ERROR_INVALID_ARGUMENT.
 * @len(var_names=n_vars, var_values=n_vars) */
TG_API tg_status tg_jit_call_vars(tg_jit* jit, tg_tensor* const* inputs, size_t n_inputs, const char* const* var_names,
                                  const int64_t* var_values, size_t n_vars, tg_tensor** outputs, size_t n_outputs);
/* Calls so far (0, 1: warmed up, >= 2: captured and replaying). -1 for a bad handle, with the error set. @errors(-1) */
TG_API int64_t tg_jit_call_count(const tg_jit* jit);
/* Forget the capture: the next call runs `fn` again as the first call did. */
TG_API tg_status tg_jit_reset(tg_jit* jit);
/* The captured kernels, as a plan (see tg_plan_*: its kernel list and times of the last replay); NULL before a capture.
 * A new reference; it does not keep the JIT alive for replays (tg_plan_run is refused on it). */
TG_API tg_plan* tg_jit_plan(tg_jit* jit);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_jit_release(tg_jit* jit);
/* Export (docs/export.md): a captured JIT as C that needs only a C compiler and libm. Three files in `dir`: NAME.h (the
 * I/O structs, element counts, NAME_ARENA_BYTES and NAME_WEIGHT_BYTES), NAME.c (every kernel, rendered again by the C
 * renderer for `target`, and `int NAME_run(const NAME_inputs*, NAME_outputs*, void* arena)` calling them in the captured
 * order; no allocation, no threads unless `threads` asks) and NAME_weights.c (the weights as const arrays of their element type, read now).
 * Targets: "native" (NULL: this machine's vector width), "generic" (ISO C99, no vector extensions), "x86-64-v3",
 * "x86-64-v4", "aarch64", "armv7" (GCC/clang vector extensions of that width). */
typedef struct tg_export_options {
  size_t struct_size; /* sizeof(tg_export_options) as the caller knows it */
  const char* dir;    /* an existing directory; the files in it are replaced */
  const char* name;   /* a C identifier of at most 64 characters: the files' and the entry point's prefix */
  const char* target; /* NULL: "native" */
  int threads;        /* 0 or 1: the caller's thread only; n > 1 (at most 256): kernels split as the library's THREAD
                       * does for n cores, run on the caller and n-1 pthreads the first NAME_run starts (link with
                       * -pthread); concurrent NAME_run calls take turns */
} tg_export_options;
/* A Variable an input's dims are bound to becomes an int64_t field of NAME_inputs, checked against its range, with
 * buffers laid out for its largest value. Before the JIT captured (fewer than two calls), with an output that is a view
 * (return it contiguous) or not computed by the captured kernels, or with kernels on a GPU, nothing is written and the
 * error says which. A file that can't be written is TG_ERROR_IO. */
TG_API tg_status tg_jit_export(tg_jit* jit, const tg_export_options* opts);

/* ---- nn: modules ----------------------------------------------------------------------------------------------- */
/* tinygrad's nn classes, with its constructors, initialisation, parameter names and forward passes, so state dicts match
 * tinygrad's and PyTorch's. A module holds its tensors (realized buffers); tg_module_get, tg_module_parameters and
 * tg_module_state return tensors that share them: assigning into one (an optimizer step, tg_module_load_state) changes
 * the module. Constructors return a new reference or NULL (sizes that are not positive, channels that don't divide into
 * groups: TG_ERROR_INVALID_ARGUMENT). `device` NULL is the default device (DEV). Flags are 0/1 ints. Thread safety: a module may be used
 * by one thread at a time. */
/* Linear: weight (out, in), bias (out), both U(-1/sqrt(in), 1/sqrt(in)). */
TG_API tg_module* tg_nn_linear(int64_t in_features, int64_t out_features, int bias, const char* device);
/* Conv2d: weight (out, in/groups, kernel_h, kernel_w), bias (out), both U(+-1/sqrt(in * kernel_h * kernel_w)). */
TG_API tg_module* tg_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride, int64_t padding,
                               int64_t dilation, int64_t groups, int bias, const char* device);
/* Conv1d: weight (out, in/groups, kernel_size), bias (out), both U(+-1/sqrt(in * kernel_size)). */
TG_API tg_module* tg_nn_conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding, int64_t dilation,
                               int64_t groups, int bias, const char* device);
/* ConvTranspose2d: weight (in, out/groups, kernel_h, kernel_w), bias (out), initialized as Conv2d. */
TG_API tg_module* tg_nn_conv_transpose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride,
                                         int64_t padding, int64_t output_padding, int64_t dilation, int64_t groups, int bias, const char* device);
/* ConvTranspose1d: weight (in, out/groups, kernel_size), bias (out), initialized as Conv1d.
 * Every conv constructor refuses, with TG_ERROR_INVALID_ARGUMENT naming the parameter, a stride or dilation < 1, a
 * padding or output_padding < 0, and (transposed) an output_padding not smaller than stride or dilation, as PyTorch. */
TG_API tg_module* tg_nn_conv_transpose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding,
                                         int64_t output_padding, int64_t dilation, int64_t groups, int bias, const char* device);
/* tinygrad's Conv2d / ConvTranspose2d over any number of spatial dims (nkernel, 1 to 16): weight (out, in/groups, k...)
 * or, transposed != 0, (in, out/groups, k...), initialized as Conv2d. stride, dilation and output_padding: one value for
 * every dim or one each (count 0: 1, 1 and 0); padding: npairs (before, after) pairs, one per spatial dim in order
 * (npairs 0: none; negative pairs crop). The checks are the other conv constructors' except the padding's sign. */
TG_API tg_module* tg_nn_conv(int64_t in_channels, int64_t out_channels, const int64_t* kernel_size, size_t nkernel, const int64_t* stride, size_t nstride,
                             const int64_t* padding, size_t npairs, const int64_t* dilation, size_t ndilation, int64_t groups, int bias, int transposed,
                             const int64_t* output_padding, size_t noutput_padding, const char* device);
/* BatchNorm (1d/2d/3d): weight, bias, num_batches_tracked (int64), running_mean, running_var. In training (option
 * TRAINING=1) it normalizes by the batch's statistics and assigns the running ones in place (momentum; the variance
 * unbiased), in eval by the running ones. tinygrad's defaults: eps 1e-5, momentum 0.1, affine 1, track_running_stats 1. */
TG_API tg_module* tg_nn_batchnorm(int64_t num_features, double eps, double momentum, int affine, int track_running_stats, const char* device);
/* LayerNorm over the trailing `normalized_shape` (borrowed, ndim >= 1 dims); weight starts at 1, bias at 0. */
TG_API tg_module* tg_nn_layernorm(const int64_t* normalized_shape, size_t ndim, double eps, int elementwise_affine, const char* device);
/* RMSNorm over the last dim (`dim` long); weight starts at 1. The norms refuse an eps that is negative or not finite
 * (and BatchNorm a momentum that is not finite): TG_ERROR_INVALID_ARGUMENT. */
TG_API tg_module* tg_nn_rmsnorm(int64_t dim, double eps, int elementwise_affine, const char* device);
/* GroupNorm over `num_groups` groups of the channels; weight starts at 1, bias at 0. */
TG_API tg_module* tg_nn_groupnorm(int64_t num_groups, int64_t num_channels, double eps, int affine, const char* device);
/* InstanceNorm over each channel; weight starts at 1, bias at 0. */
TG_API tg_module* tg_nn_instancenorm(int64_t num_features, double eps, int affine, const char* device);
/* Embedding: weight (vocab, embed), glorot uniform; called on an int tensor of indices. */
TG_API tg_module* tg_nn_embedding(int64_t vocab_size, int64_t embed_size, const char* device);
/* LSTMCell: weight_ih (4h, in), weight_hh (4h, h), bias_ih, bias_hh; see tg_lstm_cell_step. */
TG_API tg_module* tg_nn_lstm_cell(int64_t input_size, int64_t hidden_size, int bias, const char* device);
/* A layer without parameters, by the name of the Tensor method it calls: relu, relu6, leaky_relu, gelu, quick_gelu,
 * silu, swish, elu, selu, mish, softplus, hardswish, hardsigmoid, hardtanh, tanh, sigmoid, softmax and log_softmax (last
 * dim), flatten (from dim 1), max_pool2d and avg_pool2d (2x2), dropout (p = 0.5, in training only). `name` borrowed. */
TG_API tg_module* tg_nn_function(const char* name);
/* The layers called in order (tinygrad's x.sequential(layers)); their tensors are named "0.weight", "1.bias", ... by
 * position. `layers` borrowed: the sequence takes its own references (release yours when done). A layer may be a
 * Sequential, nested to any depth: calling, listing and releasing walk the nesting without recursion (a 300k-deep chain
 * works on a 256 KiB stack). Only existing modules can be layers, so a module can't contain itself. */
TG_API tg_module* tg_nn_sequential(tg_module* const* layers, size_t n);
/* The module called on x (borrowed): a new reference to the lazy result. Shape mismatches are TG_ERROR_SHAPE naming
 * the module. An LSTMCell called this way starts from a zero state and returns h. */
TG_API tg_tensor* tg_module_call(tg_module* m, tg_tensor* x);
/* One LSTMCell step from state (h, c) (borrowed; both NULL: zeros) into *h_out, *c_out (new references). @nullable(h, c) @len(h_out=1, c_out=1) */
TG_API tg_status tg_lstm_cell_step(tg_module* m, tg_tensor* x, tg_tensor* h, tg_tensor* c, tg_tensor** h_out, tg_tensor** c_out);
/* "Linear", "Conv2d", "BatchNorm", ..., or the function's name (thread-local storage, valid until the next call on the
 * thread); NULL for a bad handle. */
TG_API const char* tg_module_kind(const tg_module* m);
/* The module's tensor of that name (a state dict key, e.g. "weight" or "0.bias"): a new reference sharing it. */
TG_API tg_tensor* tg_module_get(tg_module* m, const char* name);
/* Puts `t` (borrowed; the module shares it, as a tinygrad module attribute holds a Tensor) in the place of the module's
 * tensor `name` (a state dict key, e.g. "weight" or "0.bias"): later calls, tg_module_get, tg_module_state and
 * tg_module_parameters use it. t NULL removes an optional tensor (a bias, a norm's weight or bias, BatchNorm's running
 * statistics; the call then runs without it, as tinygrad's `if self.bias is not None`); a required one (Linear's
 * weight) is TG_ERROR_INVALID_ARGUMENT. Setting a removed or never-made optional tensor (a Linear made without bias)
 * adds it. The shape must be the module's (TG_ERROR_SHAPE) and the dtype float (TG_ERROR_DTYPE); BatchNorm's
 * num_batches_tracked takes any one-element number tensor, () or (1,). An unknown name is TG_ERROR_INVALID_ARGUMENT
 * listing the module's names. @nullable(t) */
TG_API tg_status tg_module_set(tg_module* m, const char* name, tg_tensor* t);
/* A module's numeric attribute by tinygrad's name, into *value: BatchNorm's eps, momentum and track_running_stats (0 or
 * 1); eps of LayerNorm, RMSNorm, GroupNorm and InstanceNorm; GroupNorm's num_groups. In a Sequential, "1.eps". An
 * unknown name is TG_ERROR_INVALID_ARGUMENT listing the module's options. */
TG_API tg_status tg_module_get_option(const tg_module* m, const char* name, double* value);
/* Changes that attribute; the next call uses it. A value that is not finite, a negative eps, or a num_groups that does
 * not divide the channels is TG_ERROR_INVALID_ARGUMENT, and the module keeps the old value. */
TG_API tg_status tg_module_set_option(tg_module* m, const char* name, double value);
/* The state dict (parameters and buffers such as running statistics, tinygrad's names and order): a new tg_state whose
 * tensors share the module's, to save (tg_state_save) or list (tg_state_count, tg_state_name, ...). */
TG_API tg_state* tg_module_state(tg_module* m);
/* The number of parameters an optimizer updates (the state dict without buffers). @errors(0, last_error) */
TG_API size_t tg_module_parameter_count(const tg_module* m);
/* Those parameters as `n` new references into `out` (caller-owned array; n must equal the count). */
TG_API tg_status tg_module_parameters(tg_module* m, tg_tensor** out, size_t n);
/* Assigns every entry of `state` (borrowed) into the module's tensor of that name and realizes them (values cast to
 * the module's dtypes). A shape mismatch is TG_ERROR_SHAPE; with strict, names the module lacks or doesn't find are
 * TG_ERROR_INVALID_ARGUMENT; the message names every offending entry, and nothing is assigned. */
TG_API tg_status tg_module_load_state(tg_module* m, const tg_state* state, int strict);
/* Another reference to the same module. */
TG_API tg_module* tg_module_retain(tg_module* m);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_module_release(tg_module* m);

/* ---- nn: data sets ---------------------------------------------------------------------------------------------- */
/* An IDX file (the MNIST family's format; plain or gzip-compressed) as a new realized tensor of its dims and element
 * type (uint8, int8, int16, int32, float32, float64). A missing, truncated or malformed file is TG_ERROR_IO naming the
 * problem. `path` borrowed. */
TG_API tg_tensor* tg_tensor_from_idx(const char* path, const char* device);
/* tinygrad's nn.datasets.mnist: the four files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
 * and t10k-labels-idx1-ubyte (each plain or .gz) of `dir` (NULL: /usr/share/datasets/fashion-mnist, Debian's
 * dataset-fashion-mnist) as new references: images (N, 1, 28, 28) uint8 and labels (N,) uint8.
 * @nullable(dir) @len(x_train=1, y_train=1, x_test=1, y_test=1) */
TG_API tg_status tg_dataset_mnist(const char* dir, const char* device, tg_tensor** x_train, tg_tensor** y_train, tg_tensor** x_test,
                                  tg_tensor** y_test);

/* ---- nn: optimizers -------------------------------------------------------------------------------------------- */
/* tinygrad's nn.optim with its defaults and update rules: SGD and Muon are LARS settings, Adam and AdamW are LAMB
 * settings. An optimizer holds its params (deduplicated, requires_grad set, float and on one device), its lr as a
 * shape (1,) float32 tensor, and its state (momentum buffers, Adam's m and v, the bias corrections b1^t and b2^t) as
 * realized float32 buffers, so each step assigns in place and a tg_jit function that steps is captured and replays.
 * A step needs the option TRAINING=1 (tinygrad raises otherwise) and a grad on every param; failing either is
 * TG_ERROR_INVALID_ARGUMENT naming it, and nothing is assigned. One difference from tinygrad: Muon's decoupled weight
 * decay (t * (1 - weight_decay * lr) - update) is applied; tinygrad computes it and then drops it.
 * Thread safety: a tg_optimizer handle may be used by one thread at a time, and its params not by another thread
 * during a step. Releasing it leaves the params and their values alone. */
typedef enum tg_optimizer_kind {
  TG_OPTIM_INVALID = -1,
  TG_OPTIM_SGD = 0,
  TG_OPTIM_ADAM = 1,
  TG_OPTIM_ADAMW = 2,
  TG_OPTIM_LARS = 3,
  TG_OPTIM_LAMB = 4,
  TG_OPTIM_MUON = 5,
  TG_OPTIM_MAX_ENUM = 0x7fffffff
} tg_optimizer_kind;
#define TG_OPTIM_MAX_NS_COEFFICIENTS 8
/* tinygrad's arguments of every optimizer class. Each constructor reads the fields its class takes (listed per field);
 * every other field must keep the value tg_optimizer_options_default gives for that class (it is fixed there: SGD's
 * tcoef is 0), else TG_ERROR_INVALID_ARGUMENT names it, so options filled for another class are caught. Flags are 0 or
 * nonzero. Defaults (tinygrad's):
 *            lr     momentum weight_decay nesterov classic pre_wd tcoef  b1  b2    eps   adam ns_steps ns_coefficients
 *   SGD      0.001  0        0            0        0       (1)    (0)
 *   Adam     0.001           (0)                                         0.9 0.999 1e-8  (1)
 *   AdamW    0.001           0.01                                        0.9 0.999 1e-8  (1)
 *   LARS     0.001  0.9      1e-4         0        1       1      0.001                        0        (none)
 *   LAMB     0.001           0                                           0.9 0.999 1e-6  0
 *   Muon     0.001  0.95     0.1          1        (0)     (0)    (0)                          5        3.4445, -4.775, 2.0315
 * (parenthesized: fixed by the class; blank: not used by it, 0). */
typedef struct tg_optimizer_options {
  size_t struct_size;       /* sizeof(tg_optimizer_options) as the caller knows it */
  double lr;                /* all; >= 0 */
  double momentum;          /* SGD, LARS, Muon; >= 0 */
  double weight_decay;      /* SGD, AdamW, LARS, LAMB, Muon; >= 0 */
  int nesterov;             /* SGD, LARS, Muon: Nesterov momentum */
  int classic;              /* SGD, LARS: the lr scales the grad before momentum (else the update after it) */
  int pre_wd;               /* LARS: weight decay added to the grad before momentum (else decoupled, after it) */
  double tcoef;             /* LARS: trust coefficient (0: no trust ratio) */
  double b1, b2, eps;       /* Adam, AdamW, LAMB */
  int adam;                 /* LAMB: no trust ratio (LAMB is then AdamW) */
  int64_t ns_steps;         /* LARS, Muon: Newton-Schulz iterations, 0..100 (tinygrad's Muon takes 5) */
  size_t n_ns_coefficients; /* LARS, Muon: entries of ns_coefficients used, <= TG_OPTIM_MAX_NS_COEFFICIENTS; 0: no Newton-Schulz */
  double ns_coefficients[TG_OPTIM_MAX_NS_COEFFICIENTS]; /* the odd polynomial's coefficients */
} tg_optimizer_options;
/* tinygrad's defaults for `kind` into *out (caller-owned; set out->struct_size first: a caller built against a smaller
 * struct gets its prefix, and out->struct_size is set to the size written). */
TG_API tg_status tg_optimizer_options_default(tg_optimizer_kind kind, tg_optimizer_options* out);
/* The constructors make an optimizer over params[0..n_params) (borrowed; the optimizer keeps its own references).
 * `opts` is borrowed and may be NULL for tinygrad's defaults; an opts->struct_size smaller than this header's takes the
 * caller's prefix and the defaults for the rest, a larger one is TG_ERROR_INVALID_ARGUMENT. No params, a non-float param
 * (TG_ERROR_DTYPE), params on several devices (TG_ERROR_DEVICE), and a negative lr, momentum or weight decay are
 * refused. A new reference. */
/* SGD: LARS without the trust ratio. @nullable(opts) */
TG_API tg_optimizer* tg_optim_sgd(tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts);
/* Adam: LAMB without the trust ratio. Params, opts and errors as tg_optim_sgd. @nullable(opts) */
TG_API tg_optimizer* tg_optim_adam(tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts);
/* AdamW: Adam with decoupled weight decay. Params, opts and errors as tg_optim_sgd. @nullable(opts) */
TG_API tg_optimizer* tg_optim_adamw(tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts);
/* LARS. Params, opts and errors as tg_optim_sgd; with Newton-Schulz coefficients (n_ns_coefficients > 0) a 0-d param is also
 * TG_ERROR_SHAPE. @nullable(opts) */
TG_API tg_optimizer* tg_optim_lars(tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts);
/* LAMB. Params, opts and errors as tg_optim_sgd. @nullable(opts) */
TG_API tg_optimizer* tg_optim_lamb(tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts);
/* Muon: LARS with Newton-Schulz steps. Params, opts and errors as tg_optim_sgd; with Newton-Schulz coefficients (the default)
 * a 0-d param is also TG_ERROR_SHAPE. @nullable(opts) */
TG_API tg_optimizer* tg_optim_muon(tg_tensor* const* params, size_t n_params, const tg_optimizer_options* opts);
/* Clear every param's grad (tinygrad's zero_grad sets them to None; the next backward starts them afresh). */
TG_API tg_status tg_optimizer_zero_grad(tg_optimizer* opt);
/* One step: tg_optimizer_schedule_step's tensors realized together. */
TG_API tg_status tg_optimizer_step(tg_optimizer* opt);
/* tinygrad's schedule_step: assigns one step into every param and piece of state, lazily, and writes new references
 * to the tensors to realize (the state, then the params) into out[0..count) (caller-owned array of `capacity`).
 * Returns the count (fixed for an optimizer), or -1 on error. Realize them with the loss in one
 * tg_tensor_realize_many for the fewest kernels, then release them. Inside a tg_jit function they need not be returned:
 * in-place assigns are captured. out NULL: only the count is returned, nothing is assigned. A capacity below the count
 * is TG_ERROR_INVALID_ARGUMENT and nothing is assigned. @errors(-1) @nullable(out) */
TG_API int64_t tg_optimizer_schedule_step(tg_optimizer* opt, tg_tensor** out, size_t capacity);
/* The params as the optimizer holds them (deduplicated) as new references into out[0..count); returns the count, or -1
 * on error. out NULL: the count only. A capacity below the count is TG_ERROR_INVALID_ARGUMENT. @errors(-1) @nullable(out) */
TG_API int64_t tg_optimizer_params(const tg_optimizer* opt, tg_tensor** out, size_t capacity);
/* One of the optimizer's state lists by tinygrad's attribute name, as new references into out[0..count) (the state
 * itself: a step assigns into these tensors); returns the count, or -1 on error. Names: "b" (SGD, LARS, Muon: the
 * momentum buffers, one per param, none without momentum); "m", "v" (one per param), "b1_t", "b2_t" (one each) for
 * Adam, AdamW and LAMB. Another name is TG_ERROR_INVALID_ARGUMENT listing the optimizer's names. out NULL: the count only;
 * a capacity below the count is TG_ERROR_INVALID_ARGUMENT. @errors(-1) @nullable(out) */
TG_API int64_t tg_optimizer_state(const tg_optimizer* opt, const char* name, tg_tensor** out, size_t capacity);
/* A new reference to the lr tensor (shape (1,), float32). Read it with tg_tensor_to_data; assigning into it
 * (tg_tensor_assign, then realize) changes the lr of later steps, also inside a tg_jit function, where a replay then
 * reads the new value: tinygrad's lr schedulers do this. */
TG_API tg_tensor* tg_optimizer_lr(tg_optimizer* opt);
/* Assign `lr` (>= 0) into the lr tensor and realize it: later steps, captured ones included, use it. */
TG_API tg_status tg_optimizer_set_lr(tg_optimizer* opt, double lr);
/* Another reference to the same optimizer. */
TG_API tg_optimizer* tg_optimizer_retain(tg_optimizer* opt);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_optimizer_release(tg_optimizer* opt);

/* ---- nn: state (safetensors, GGUF, state dicts) ---------------------------------------------------------------- */
/* A tg_state is an ordered list of (name, tensor) entries, names unique, plus metadata key/values (a safetensors file's
 * __metadata__ or a GGUF file's key/values). Its tensors are shared, not copied: tg_state_get returns the tensor
 * itself, so assigning into it assigns into the state's (and a module's, for a state taken from one).
 * Files are untrusted input: a truncated or malformed file (offsets past the end, overlapping data, sizes or dims that
 * overflow, unknown dtypes or GGUF types, duplicate names, bad JSON, non-UTF-8 text, absurd lengths) is TG_ERROR_IO
 * with a message naming the file and the problem; reading allocates no more than the file's size implies.
 * Thread safety: a tg_state handle may be used by one thread at a time; distinct handles from distinct threads. */
/* The tensors of a safetensors or GGUF file (told apart by the file's magic) on `device` (NULL: the default), in the
 * file's order. safetensors: every dtype here but nothing else (F8 types are TG_ERROR_IO). GGUF versions 2 and 3:
 * F32, F16, BF16, F64, I8..I64 load as their dtype (F16 stays float16, as tinygrad's); Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q4_K, Q5_K, Q6_K are dequantized to float32 by generated kernels when the tensors are realized. `path` is borrowed.
 * A new reference. */
TG_API tg_state* tg_state_load(const char* path, const char* device);
/* The same from `nbytes` bytes at `data` (borrowed: the tensors hold copies); `name` (borrowed, may be NULL) is what
 * error messages call the bytes. @nullable(name) */
TG_API tg_state* tg_state_load_memory(const void* data, size_t nbytes, const char* name, const char* device);
/* An empty state. A new reference. */
TG_API tg_state* tg_state_create(void);
/* Number of entries, or -1 on error. @errors(-1) */
TG_API int64_t tg_state_count(const tg_state* s);
/* The name of entry `i` (borrowed from the state: valid until it is changed or released); NULL if i >= count. */
TG_API const char* tg_state_name(const tg_state* s, size_t i);
/* The dtype and shape of the entry named `name` (borrowed) without realizing it: *ndim gets the number of dims, shape
 * (caller-owned, `capacity` long) the dims. shape may be NULL with capacity 0 to ask for ndim; a capacity below ndim is
 * TG_ERROR_INVALID_ARGUMENT with *ndim written. dtype and ndim may be NULL. An unknown name is TG_ERROR_INVALID_ARGUMENT.
 * @nullable(dtype, shape, ndim) */
TG_API tg_status tg_state_info(const tg_state* s, const char* name, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim);
/* The tensor named `name` (borrowed): a new reference to the state's tensor itself. NULL for an unknown name. */
TG_API tg_tensor* tg_state_get(const tg_state* s, const char* name);
/* Set the entry `name` (copied; non-empty) to `tensor` (borrowed; the state keeps its own reference): replaces the entry
 * of that name in place, else appends one. */
TG_API tg_status tg_state_set(tg_state* s, const char* name, tg_tensor* tensor);
/* Write the state as a safetensors file at `path` (borrowed): tensors in the state's order, each realized and copied
 * out, the metadata as __metadata__ (every value as its text). Atomic: the file is written beside `path` and renamed
 * over it, so readers see the old file or the whole new one; a `path` that exists and isn't a regular file (/dev/null,
 * a FIFO) is written in place; a directory, or a FIFO with no reader, is TG_ERROR_IO. Names and metadata must be
 * UTF-8; a dtype safetensors lacks is TG_ERROR_DTYPE; a failed write is TG_ERROR_IO and leaves a regular file at `path`
 * as it was. */
TG_API tg_status tg_state_save(const tg_state* s, const char* path);
/* Number of metadata entries, or -1 on error. @errors(-1) */
TG_API int64_t tg_state_metadata_count(const tg_state* s);
/* Metadata entry `i`'s key. Borrowed from the state, valid until it is changed or released; NULL if i >= count. */
TG_API const char* tg_state_metadata_key(const tg_state* s, size_t i);
/* Metadata entry `i`'s value as text: a string as is; numbers, bools and arrays as JSON. Borrowed from the state,
 * valid until it is changed or released; NULL if i >= count. */
TG_API const char* tg_state_metadata_value(const tg_state* s, size_t i);
/* Metadata entry `i`'s value as JSON text: strings quoted; NaN and infinities as NaN, Infinity, -Infinity, as
 * Python's json reads them. Borrowed from the state, valid until it is changed or released; NULL if i >= count. */
TG_API const char* tg_state_metadata_json(const tg_state* s, size_t i);
/* Set metadata `key` to the string `value` (both copied, UTF-8): replaces the entry of that key in place, else appends. */
TG_API tg_status tg_state_metadata_set(tg_state* s, const char* key, const char* value);
/* Another reference to the same state. */
TG_API tg_state* tg_state_retain(tg_state* s);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_state_release(tg_state* s);

/* ---- onnx: models from other tools ----------------------------------------------------------------------------- */
/* An ONNX model (opsets 1 to 17 of the ai.onnx domain; docs/onnx.md lists the operators) loaded for running: every node
 * lowers to tensor ops, so a run is lazy tensor graphs that fuse and compile like any other, and its kernels land in the
 * caches. Model files are untrusted input: a malformed file (truncated messages, lengths past the end, nesting more than
 * 64 graphs deep, tensors whose data doesn't fit their shape, external data outside the model's directory) is
 * TG_ERROR_IO naming the file and the problem; an operator, attribute or element type the library lacks is
 * TG_ERROR_UNSUPPORTED naming the node and the missing piece, at load where it can be known then.
 * Thread safety: a model may be used by one thread at a time. */
typedef struct tg_onnx_options {
  size_t struct_size;           /* sizeof(tg_onnx_options) as the caller knows it */
  const char* device;           /* NULL: the default device */
  const char* dims;             /* symbolic dims fixed to sizes, "batch=1,sequence=128" (NULL: none): inputs are checked
                                 * against them and tg_onnx_input_info reports them as numbers */
  const char* base_dir;         /* tg_onnx_load_buffer only: the directory external data is read from (NULL: refused) */
} tg_onnx_options;
/* The model at `path` (borrowed); its external data files are read relative to its directory and must stay inside it.
 * Initializers are read into device buffers now. `opts` may be NULL (all defaults). A new reference. @nullable(opts) */
TG_API tg_onnx_model* tg_onnx_load(const char* path, const tg_onnx_options* opts);
/* The same from `nbytes` bytes at `data` (borrowed: the model keeps copies of what it needs). @nullable(opts) */
TG_API tg_onnx_model* tg_onnx_load_buffer(const void* data, size_t nbytes, const tg_onnx_options* opts);
/* The number of inputs a run takes (the graph's inputs that no initializer fills), or -1 on error. @errors(-1) */
TG_API int64_t tg_onnx_input_count(const tg_onnx_model* m);
/* The number of outputs a run gives, or -1 on error. @errors(-1) */
TG_API int64_t tg_onnx_output_count(const tg_onnx_model* m);
/* The name of input `i` (borrowed from the model, valid while it lives); NULL if i >= count. */
TG_API const char* tg_onnx_input_name(const tg_onnx_model* m, size_t i);
/* The name of output `i` (borrowed from the model, valid while it lives); NULL if i >= count. */
TG_API const char* tg_onnx_output_name(const tg_onnx_model* m, size_t i);
/* Input `i`'s declared dtype and shape: *ndim gets the rank, shape (caller-owned, `capacity` long) the dims, -1 for a
 * symbolic or unknown dim (tg_onnx_input_dim_name names it). shape may be NULL with capacity 0 to ask for ndim; a
 * capacity below ndim is TG_ERROR_INVALID_ARGUMENT with *ndim written. A model that declares no shape gives *ndim = -1;
 * an element type without a tg_dtype (strings) is TG_ERROR_UNSUPPORTED. @nullable(dtype, shape, ndim) */
TG_API tg_status tg_onnx_input_info(const tg_onnx_model* m, size_t i, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim);
/* Output `i`'s declared dtype and shape, as tg_onnx_input_info. @nullable(dtype, shape, ndim) */
TG_API tg_status tg_onnx_output_info(const tg_onnx_model* m, size_t i, tg_dtype* dtype, int64_t* shape, size_t capacity, int64_t* ndim);
/* The name of dim `d` of input `i` where it is symbolic ("batch"), "" where it is a number or unknown (borrowed from the
 * model, valid while it lives); NULL if i or d is out of range. */
TG_API const char* tg_onnx_input_dim_name(const tg_onnx_model* m, size_t i, size_t d);
/* The name of dim `d` of output `i`, as tg_onnx_input_dim_name. */
TG_API const char* tg_onnx_output_dim_name(const tg_onnx_model* m, size_t i, size_t d);
/* The model's ai.onnx opset version, or -1 on error. @errors(-1) */
TG_API int64_t tg_onnx_opset(const tg_onnx_model* m);
/* The producer the file names ("pytorch 1.13.1": producer_name and producer_version; "" if none). Borrowed from the
 * model, valid while it lives; NULL on error. */
TG_API const char* tg_onnx_producer(const tg_onnx_model* m);
/* Run the model: `inputs` (borrowed, n_inputs = tg_onnx_input_count, in the model's order, on the model's device) are
 * checked against the declared dtypes and shapes (a symbolic dim takes one size throughout a call) and `outputs`
 * (caller-owned array of n_outputs = tg_onnx_output_count) receives new references to the realized outputs. A mismatch is
 * TG_ERROR_INVALID_ARGUMENT / TG_ERROR_DTYPE / TG_ERROR_SHAPE / TG_ERROR_DEVICE naming the input; on error no output is
 * written. Models whose inputs or outputs are sequences can't be run through this function (TG_ERROR_UNSUPPORTED). */
TG_API tg_status tg_onnx_run(tg_onnx_model* m, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs);
/* tg_onnx_run with the inputs given by name (names borrowed, each once, every input named): names[i] is inputs[i]'s.
 * @len(names=n_inputs) */
TG_API tg_status tg_onnx_run_named(tg_onnx_model* m, const char* const* names, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs,
                                   size_t n_outputs);
/* The tensor in a file holding one serialized TensorProto (the .pb files of ONNX's test data and of onnx_test_runner's
 * test sets) on `device` (NULL: the default), realized. `path` is borrowed. A new reference. */
TG_API tg_tensor* tg_onnx_load_tensor(const char* path, const char* device);
/* What input `i` takes: 0 a tensor, 1 a sequence of tensors, 2 an optional tensor, 3 an optional sequence; -1 on error.
 * @errors(-1) */
TG_API int tg_onnx_input_kind(const tg_onnx_model* m, size_t i);
/* What output `i` gives, as tg_onnx_input_kind. @errors(-1) */
TG_API int tg_onnx_output_kind(const tg_onnx_model* m, size_t i);
/* tg_onnx_run for models with sequence and optional inputs or outputs. Input i is the next in_lengths[i] tensors of
 * `tensors` (borrowed, n_tensors in all): 1 for a tensor, any number for a sequence, -1 for an absent optional. Outputs are
 * laid out the same way in `outputs` (caller-owned, `capacity` long; new references), each output's count (-1: absent)
 * in out_lengths (caller-owned, n_outputs long). A capacity below what the outputs need is TG_ERROR_INVALID_ARGUMENT with
 * out_lengths written and no tensor returned. @len(in_lengths=n_inputs) */
TG_API tg_status tg_onnx_run_values(tg_onnx_model* m, tg_tensor* const* tensors, size_t n_tensors, const int64_t* in_lengths, size_t n_inputs,
                                    tg_tensor** outputs, size_t capacity, int64_t* out_lengths, size_t n_outputs);
/* The value in a file holding one serialized TensorProto (kind 0), SequenceProto (1) or OptionalProto (2 or 3), as
 * tg_onnx_input_kind numbers kinds: its tensors into `out` (caller-owned, `capacity` long; new references, realized) and
 * their count into *n (-1 for an empty optional). A capacity below the count is TG_ERROR_INVALID_ARGUMENT with *n
 * written. `path` is borrowed; `device` NULL is the default device. @int(kind) */
TG_API tg_status tg_onnx_load_value(const char* path, const char* device, int kind, tg_tensor** out, size_t capacity, int64_t* n);
/* Another reference to the same model. */
TG_API tg_onnx_model* tg_onnx_model_retain(tg_onnx_model* m);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_onnx_model_release(tg_onnx_model* m);

/* ---- llm: language models from GGUF files ---------------------------------------------------------------------- */
/* The llama family from a GGUF file's metadata: `llama` (Llama 2/3, TinyLlama, Mistral) and `qwen2`. The weights stay
 * in the file's quantized blocks (F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K), read into device memory;
 * each matmul dequantizes its blocks inside its kernel. A KV cache of `context` positions lives on the device: each
 * tg_llm_eval feeds tokens at the current position and moves it on. docs/llm.md.
 * Thread safety: a model may be used by one thread at a time. */
typedef struct tg_llm_options {
  size_t struct_size;  /* sizeof(tg_llm_options) as the caller knows it */
  const char* device;  /* NULL: the default device */
  int64_t context;     /* positions the KV cache holds; 0: the file's context length, at most 4096 */
  int64_t threads;     /* CPU threads the model's kernels run on, at most NUM_CPU_THREADS; 0: all of them */
  int64_t beam;        /* BEAM width for the kernels the model compiles (0..64); 0: the BEAM setting */
} tg_llm_options;
/* The model at `path`: an unsupported architecture or rope scaling is TG_ERROR_UNSUPPORTED naming the metadata key; a
 * missing key, a tensor missing or of the wrong shape for the metadata, TG_ERROR_IO naming it. A new reference.
 * @nullable(opts) */
TG_API tg_llm* tg_llm_load(const char* path, const tg_llm_options* opts);
/* Feed the int32 or int64 token ids `tokens` (a 1-D tensor, 1 to context - position of them) at the current position,
 * which moves on by their count; returns the last token's logits, a realized (vocab,) float32 tensor. A token outside
 * the vocabulary or past the context is TG_ERROR_INVALID_ARGUMENT and leaves the position where it was. */
TG_API tg_tensor* tg_llm_eval(tg_llm* m, const tg_tensor* tokens);
/* Back to position 0 (the cache's old contents are overwritten as new tokens are fed). */
TG_API tg_status tg_llm_reset(tg_llm* m);
/* The current position (tokens fed since the last reset), the context and the vocabulary size; -1 on error. @errors(-1) */
TG_API int64_t tg_llm_position(const tg_llm* m);
/* @errors(-1) */
TG_API int64_t tg_llm_context(const tg_llm* m);
/* @errors(-1) */
TG_API int64_t tg_llm_vocab_size(const tg_llm* m);
/* The architecture's hyperparameters the model was built with, as JSON ({"arch": "llama", "n_layer": 22, ...}), and
 * "prompt_products": how its prompts multiply quantized weights here ("int8", "bfloat16" or "float32"; docs/llm.md).
 * @errors(-1) */
TG_API int64_t tg_llm_config(const tg_llm* m, char* buf, size_t size);
/* A metadata value of the file (GGUF key) as JSON text; -1 with TG_ERROR_INVALID_ARGUMENT when the file has no such
 * key. @errors(-1) */
TG_API int64_t tg_llm_metadata(const tg_llm* m, const char* key, char* buf, size_t size);
/* The file's tokenizer (tokenizer.ggml.*: SentencePiece-style "llama" or byte-level BPE "gpt2", equal to llama.cpp's).
 * A model whose file has none gives TG_ERROR_UNSUPPORTED here. The token ids of the UTF-8 `text` as a 1-D int32 tensor:
 * add_special adds the BOS/EOS the vocabulary asks for; parse_special turns control tokens' texts into those tokens. */
TG_API tg_tensor* tg_llm_tokenize(const tg_llm* m, const char* text, int add_special, int parse_special);
/* The text of `tokens` (a 1-D int32 or int64 tensor) as llama_detokenize gives it: remove_special drops a leading BOS
 * and a trailing EOS; unparse_special writes control tokens' texts. Into buf (NUL-terminated, truncated to size); the
 * full length. @errors(-1) */
TG_API int64_t tg_llm_detokenize(const tg_llm* m, const tg_tensor* tokens, int remove_special, int unparse_special, char* buf, size_t size);
/* One token's text, as a stream of tokens prints it (llama_token_to_piece; control tokens print nothing). @errors(-1) */
TG_API int64_t tg_llm_token_piece(const tg_llm* m, int64_t token, char* buf, size_t size);
/* The vocabulary's BOS and EOS tokens (-1: it has none, or an error), and whether `token` ends a generation (EOS, EOT,
 * the end-of-turn tokens). @errors(-1) */
TG_API int64_t tg_llm_bos(const tg_llm* m);
/* @errors(-1) */
TG_API int64_t tg_llm_eos(const tg_llm* m);
/* 1 if `token` ends a generation, 0 if not, -1 on error. @errors(-1) */
TG_API int tg_llm_is_eog(const tg_llm* m, int64_t token);

/* How tg_llm_sample and tg_llm_generate pick a token. temperature <= 0 is greedy (the argmax); otherwise the top_k most
 * likely tokens (0: 1024) are kept, of those the smallest set whose probability reaches top_p, and one is drawn at
 * `temperature`. repeat_penalty != 1 scales the logits of the last repeat_last_n tokens of the history (divided when
 * positive, multiplied when negative, as llama.cpp). `seed` seeds tg_llm_generate's draws. */
typedef struct tg_llm_sampling {
  size_t struct_size; /* sizeof(tg_llm_sampling) as the caller knows it */
  double temperature; /* 0.8 */
  int64_t top_k;      /* 40 */
  double top_p;       /* 0.95 */
  double repeat_penalty; /* 1.0: off */
  int64_t repeat_last_n; /* 64 */
  uint64_t seed;      /* 0 */
} tg_llm_sampling;
/* The defaults above into *out (set out->struct_size first). */
TG_API tg_status tg_llm_sampling_default(tg_llm_sampling* out);
/* A token drawn from `logits` (vocab,) on the device; `history` (1-D int tensor, may be NULL) feeds the repetition
 * penalty, `s` NULL is the defaults. The token id, or -1 on error. @nullable(history, s) @errors(-1) */
TG_API int64_t tg_llm_sample(tg_llm* m, const tg_tensor* logits, const tg_tensor* history, const tg_llm_sampling* s);
/* Called with each generated token and its text (tg_llm_token_piece, borrowed for the call); nonzero stops. */
typedef int (*tg_llm_token_fn)(void* userdata, int64_t token, const char* piece);
/* Feeds `prompt` (1-D int tensor) at the current position, then samples up to max_tokens tokens, feeding each back:
 * stops at an end-of-generation token (not passed on), when `fn` returns nonzero, or when the context is full. The
 * number of tokens generated, or -1 on error. @nullable(s, fn, userdata) @errors(-1) */
TG_API int64_t tg_llm_generate(tg_llm* m, const tg_tensor* prompt, int64_t max_tokens, const tg_llm_sampling* s, tg_llm_token_fn fn, void* userdata);
/* Another reference to the same model. */
TG_API tg_llm* tg_llm_retain(tg_llm* m);
/* Drop a reference; the model (weights, KV cache) is freed with the last. NULL is ignored. */
TG_API void tg_llm_release(tg_llm* m);

/* ---- distributed: a communicator over MPI ---------------------------------------------------------------------- */
/* Collectives and messages on tensors between the processes of an MPI job (mpirun -np N program). The library loads
 * Open MPI's libmpi.so.40 at run time ($TG_MPI_LIB names another path): without it tg_comm_world fails with
 * TG_ERROR_UNSUPPORTED, and the rest of the library is unaffected. MPI is initialized by the first tg_comm_world unless
 * the program did it (then the program finalizes it; else the library does at exit). Every rank must make the same
 * collective calls in the same order with tensors of the same shape and dtype: a mismatch is detected and fails with
 * TG_ERROR_SHAPE on every rank. A call waits at most $TG_COMM_TIMEOUT seconds (default 300) for the other ranks: past
 * that (a rank died, hangs, or made another call) it fails with TG_ERROR_RUNTIME, and the communicator can't be used
 * again. Each call realizes its input and returns a new realized tensor on the input's device (device memory goes
 * through host memory); inside a tg_jit function the call is captured with the kernels and replays in order. One thread
 * at a time per communicator. See docs/distributed.md. */
typedef enum tg_reduce {
  TG_REDUCE_INVALID = -1,
  TG_REDUCE_SUM = 0,
  TG_REDUCE_PROD = 1,
  TG_REDUCE_MAX = 2,
  TG_REDUCE_MIN = 3,
  TG_REDUCE_AVG = 4, /* the sum divided by the number of ranks; float dtypes only */
  TG_REDUCE_MAX_ENUM = 0x7fffffff
} tg_reduce;

/* Every process of the job (MPI_COMM_WORLD). A process started without mpirun is a job of one. */
TG_API tg_comm* tg_comm_world(void);
/* The ranks that pass the same `color` (>= 0), ordered by `key`, then by rank: MPI_Comm_split. Every rank must call it. */
TG_API tg_comm* tg_comm_split(tg_comm* comm, int64_t color, int64_t key);
TG_API tg_comm* tg_comm_retain(tg_comm* comm);
TG_API void tg_comm_release(tg_comm* comm);
/* This process's rank in `comm`, and the number of ranks. @errors(-1) */
TG_API int64_t tg_comm_rank(const tg_comm* comm);
TG_API int64_t tg_comm_size(const tg_comm* comm);
/* `t` combined elementwise over every rank. Every dtype; 16-bit floats are combined in float32 and rounded once; for
 * bool, SUM and MAX are a logical or, PROD and MIN a logical and. */
TG_API tg_tensor* tg_comm_allreduce(tg_comm* comm, tg_tensor* t, tg_reduce op);
/* Every rank's `t` concatenated along dim 0 in rank order: (size * d0, ...); a 0-d `t` gives (size,). */
TG_API tg_tensor* tg_comm_allgather(tg_comm* comm, tg_tensor* t);
/* Rank `root`'s `t` on every rank; each rank passes a tensor of root's shape and dtype (its values are not read). */
TG_API tg_tensor* tg_comm_broadcast(tg_comm* comm, tg_tensor* t, int64_t root);
/* `t` to rank `dest` with `tag` in [0, 32767]; returns when the message is on its way (its buffer may be reused). */
TG_API tg_status tg_comm_send(tg_comm* comm, tg_tensor* t, int64_t dest, int64_t tag);
/* A message from rank `src` with `tag`, of exactly this shape and dtype (another size: TG_ERROR_SHAPE), on `device`. */
TG_API tg_tensor* tg_comm_recv(tg_comm* comm, const int64_t* shape, size_t ndim, tg_dtype dtype, int64_t src, int64_t tag, const char* device);
/* Data-parallel training: the gradient of each of `params` replaced by its average over the ranks, between
 * tg_tensor_backward and the optimizer step. The gradients and the `n_also` tensors of `also` (the loss) are computed in
 * one schedule, so the forward pass they share runs once, and allreduced in one step; out[i] receives the average of
 * also[i] (a new reference). The division fuses into the optimizer's update. Parameters without a gradient are
 * skipped; every rank must have gradients on the same ones. @nullable(also, out) @len(out=n_also) */
TG_API tg_status tg_comm_average_gradients(tg_comm* comm, tg_tensor* const* params, size_t n, tg_tensor* const* also, size_t n_also,
                                           tg_tensor** out);
/* Each of `tensors` assigned rank `root`'s values and realized: the same initial weights on every rank. */
TG_API tg_status tg_comm_broadcast_tensors(tg_comm* comm, tg_tensor* const* tensors, size_t n, int64_t root);

/* ---- distributed: between the devices of one process ----------------------------------------------------------- */
/* `tensors[0..n)` (one shape and dtype, each on a different device: "CPU", "CPU:1", "CL", ...) combined elementwise by
 * `op`; out[i] gets the result on tensors[i]'s device, the same bits on each (new handles; out has n slots). Ring
 * (reduce-scatter, then all-gather: 2n(n-1) copies of a 1/n part) for n > 2 and more than RING_ALLREDUCE_THRESHOLD
 * (256000) elements, or with option RING=2; else naive (each device copies the others' tensors: n(n-1) copies); RING=0
 * is always naive. Copies between devices and the kernels that combine run now, and a tg_jit function captures and
 * replays them. Dtypes and ops as tg_comm_allreduce (AVG divides by n). See docs/distributed.md. @len(out=n) */
TG_API tg_status tg_tensor_allreduce(tg_tensor* const* tensors, size_t n, tg_reduce op, tg_tensor** out);

/* ---- distributed: tensors sharded over the devices of one process ---------------------------------------------- */
/* A new tensor holding t's values spread over `devices[0..n)` ("CPU", "CPU:1", ... "CL", "CUDA:1"; each named once):
 * split along `axis` into ceil(size / n) pieces in device order (the last ones smaller or empty), or, with axis -1, a
 * whole copy on each. Its device (tg_tensor_device) is the names joined by ',' ("CPU,CPU:1"), and any tensor op takes
 * it with other tensors on the same devices: ops on matching shards run on each device, a reduce over the split axis
 * is an allreduce, a view that moves elements between shards gathers the whole first, a whole copy meeting a shard is
 * cut to it. tg_tensor_to(t, "CPU") gathers it on one device; a device name with ',' in tg_tensor_to, tg_tensor_zeros
 * and the other makers replicates. The copies run now (as tg_tensor_to) and start a new graph: gradients reach the
 * sharded tensor, not t. A sharded t is gathered first. See docs/distributed.md. */
TG_API tg_tensor* tg_tensor_shard(tg_tensor* t, const char* const* devices, size_t n, int64_t axis);
/* t (of like's shape) split as `like` is: its devices, its axis and each shard's bounds. */
TG_API tg_tensor* tg_tensor_shard_like(tg_tensor* t, tg_tensor* like);
/* How many devices t is on (1 for a tensor on one device), or -1 on error. @errors(-1) */
TG_API int64_t tg_tensor_device_count(const tg_tensor* t);
/* The name of t's device i (static storage), i < tg_tensor_device_count(t). NULL on error. */
TG_API const char* tg_tensor_device_at(const tg_tensor* t, size_t i);
/* The axis t is split along into *out, or -1 when each device holds the whole (and for a tensor on one device). */
TG_API tg_status tg_tensor_shard_axis(const tg_tensor* t, int64_t* out);
/* Each device's [start, end) along the split axis into out[2i], out[2i + 1] (the whole axis 0 when not split);
 * `capacity` is out's length and must be >= 2 * tg_tensor_device_count(t). */
TG_API tg_status tg_tensor_shard_bounds(const tg_tensor* t, int64_t* out, size_t capacity);
/* t's part on its device i as a tensor on that device (t is realized first; a view of the shard's buffer, no copy). */
TG_API tg_tensor* tg_tensor_shard_get(tg_tensor* t, size_t i);

/* ---- looking inside a realize ----------------------------------------------------------------------------------- */
/* What realizing a set of tensors runs (what DEBUG=2..4 prints), as data: per kernel its name, generated source,
 * buffers and, after running, its time. */
typedef struct tg_kernel_info {
  size_t struct_size;        /* sizeof(tg_kernel_info) as the caller knows it */
  const char* name;          /* kernel name, e.g. "r_64_128_784" (borrowed from the plan) */
  const char* source;        /* the generated source the device compiled (borrowed from the plan) */
  size_t n_buffers;          /* buffers the kernel takes, output first */
  const int64_t* buffer_nbytes; /* n_buffers sizes in bytes (borrowed from the plan) */
  double time_s;             /* seconds of its last timed run; -1 before one (a jit replay on a GPU runs its kernels back to back and times them only with DEBUG>=2) */
  int64_t threads;           /* CPU cores it is split over (1: one call) */
  uint64_t ops, mem;         /* estimated arithmetic ops and bytes moved per run */
} tg_kernel_info;
/* Schedules `tensors` (borrowed, on one device) and compiles their kernels without running them. A new reference. */
TG_API tg_plan* tg_plan_create(tg_tensor* const* tensors, size_t n);
/* Run the plan: the tensors are realized (as tg_tensor_realize_many would) and each kernel's time is recorded. A plan
 * runs once; running it again is TG_ERROR_INVALID_ARGUMENT. */
TG_API tg_status tg_plan_run(tg_plan* plan);
/* Kernels in the plan, in launch order; 0 for a bad handle, with the error set. @errors(0, last_error) */
TG_API size_t tg_plan_kernel_count(const tg_plan* plan);
/* Kernel `i` into *out (set out->struct_size first; a caller built against a smaller struct gets its prefix). The
 * strings and arrays stay valid while the plan lives. */
TG_API tg_status tg_plan_kernel(const tg_plan* plan, size_t i, tg_kernel_info* out);
/* The memory planner's result: bytes of the intermediate buffers if each had its own memory, and bytes they take
 * sharing memory (the peak). Either pointer may be NULL. @nullable(intermediate_bytes, peak_bytes) */
TG_API tg_status tg_plan_memory(const tg_plan* plan, int64_t* intermediate_bytes, int64_t* peak_bytes);
/* Drops the caller's reference; the object goes with the last one. NULL is a no-op. */
TG_API void tg_plan_release(tg_plan* plan);

/* ---- options ---------------------------------------------------------------------------------------------------- */
/* The library's settings, by the names of their environment variables: DEBUG (0..7), SPEC (0..2), NOOPT (0/1),
 * BEAM (search width, 0..64; 0: off), JITBEAM (0..64; the BEAM width for kernels compiled while a tg_jit captures), CACHELEVEL (0..2),
 * IGNORE_BEAM_CACHE (0/1), BEAM_DEBUG (0..2), BEAM_UPCAST_MAX (1..4096), BEAM_LOCAL_MAX (1..4096),
 * BEAM_UOPS_MAX (0..1e6; 0: no limit), BEAM_MIN_PROGRESS (microseconds, 0..1e6), BEAM_TIMEOUT_SEC (0..3600).
 * A value set here wins over the environment, for the whole process, from the next time the library reads the option:
 * JIT (0: a tg_jit runs its function at every call; 1: it captures; default 1), TRAINING (0/1, default 0: tinygrad's
 * Tensor.training; BatchNorm uses batch statistics and updates its running ones, dropout drops, optimizers step only in
 * training).
 * DEBUG and SPEC at every use, NOOPT and BEAM when a kernel is first compiled for a device (a kernel compiled before
 * keeps its program; a new BEAM width compiles it again), CACHELEVEL at every disk or BEAM cache access. Paths (CACHEDB, XDG_CACHE_HOME) and sizes read
 * once at start (NUM_CPU_THREADS) are environment only.
 * `name` and `value` are borrowed; `value` is a decimal number (as the environment variable takes it) in the option's
 * range, or NULL to forget the value set here so the environment applies again. An unknown name or a value that is
 * not a number in range is TG_ERROR_INVALID_ARGUMENT naming it, and nothing changes. Thread-safe. @nullable(value) */
TG_API tg_status tg_set_option(const char* name, const char* value);
/* The value the library uses now for option `name` (set here, else the environment, else its default) into *value
 * (caller-owned). TG_ERROR_INVALID_ARGUMENT for an unknown name or a NULL `value`. Thread-safe. */
TG_API tg_status tg_get_option(const char* name, double* value);
/* A scoped override for the calling thread only (tinygrad's `with Context(TRAINING=1):` and `@Tensor.train()`):
 * option `name` reads `value` in this thread until the matching tg_option_pop, over tg_set_option and the
 * environment; pushes nest, and other threads keep their values. `value` as tg_set_option takes it (not NULL);
 * errors as tg_set_option's, and nothing is pushed. Borrowed strings. */
TG_API tg_status tg_option_push(const char* name, const char* value);
/* Undo this thread's last tg_option_push. TG_ERROR_INVALID_ARGUMENT when the thread has none left to undo (inside a
 * callback the library runs, only the callback's own pushes). */
TG_API tg_status tg_option_pop(void);

/* ---- counters --------------------------------------------------------------------------------------------------- */
/* Process-wide counters (tinygrad's GlobalCounters). A small struct that may grow: set struct_size first. */
typedef struct tg_counters {
  size_t struct_size;      /* sizeof(tg_counters) as the caller knows it */
  uint64_t kernel_count;   /* kernels run */
  uint64_t global_ops;     /* estimated arithmetic ops run */
  uint64_t global_mem;     /* estimated bytes moved by kernels */
  double time_sum_s;       /* seconds spent in kernels */
  uint64_t compile_count;  /* kernels compiled (not found in a cache) */
  uint64_t schedule_count; /* schedules made (not found in the schedule cache) */
  uint64_t lower_count;    /* realizes lowered to kernel launches (a JIT replay lowers nothing) */
  uint64_t copy_count;     /* copies between devices (tg_tensor_to, tg_tensor_allreduce), JIT replays included */
  uint64_t copy_bytes;     /* the bytes those copies moved */
} tg_counters;
/* The counters into *out (set out->struct_size first; a caller built against a smaller struct gets its prefix). */
TG_API tg_status tg_counters_get(tg_counters* out);
/* Set every counter to zero. */
TG_API void tg_counters_reset(void);
/* Handles of every type (tensors, expressions, jits, plans, modules, optimizers, states) alive in the process: made
 * and not yet released, including those a tg_jit function holds during a call. For tests of bindings that promise to
 * release everything they make: the count is back where it started when they have. @errors(none) */
TG_API int64_t tg_live_handles(void);

#ifdef __cplusplus
}
#endif
#endif /* TINYGRAD_H */
