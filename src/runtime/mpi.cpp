// MPI through Open MPI's C ABI, resolved at run time: its handles (MPI_Comm, MPI_Datatype, MPI_Op) are pointers to the
// library's predefined objects (ompi_mpi_comm_world, ompi_mpi_float, ompi_mpi_op_sum, ...), which dlsym finds by name,
// so no mpi.h is needed to build. MPICH's ABI (integer handles) is a different one and is refused by name.
#include "runtime/mpi.h"

#include <dlfcn.h>
#include <sched.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "helpers.h"
#include "runtime/dynlib.h"

namespace tg::mpi {
namespace {

using Handle = void*;
struct Api {
  int (*MPI_Initialized)(int*);
  int (*MPI_Finalized)(int*);
  int (*MPI_Init_thread)(int*, char***, int, int*);
  int (*MPI_Finalize)();
  int (*MPI_Comm_rank)(Handle, int*);
  int (*MPI_Comm_size)(Handle, int*);
  int (*MPI_Comm_split)(Handle, int, int, Handle*);
  int (*MPI_Comm_free)(Handle*);
  int (*MPI_Comm_set_errhandler)(Handle, Handle);
  int (*MPI_Iallreduce)(const void*, void*, int, Handle, Handle, Handle, Handle*);
  int (*MPI_Allreduce)(const void*, void*, int, Handle, Handle, Handle);
  int (*MPI_Allgather)(const void*, int, Handle, void*, int, Handle, Handle);
  int (*MPI_Bcast)(void*, int, Handle, int, Handle);
  int (*MPI_Isend)(const void*, int, Handle, int, int, Handle, Handle*);
  int (*MPI_Irecv)(void*, int, Handle, int, int, Handle, Handle*);
  int (*MPI_Test)(Handle*, int*, void*);
  int (*MPI_Get_count)(const void*, Handle, int*);
  int (*MPI_Error_string)(int, char*, int*);
  int (*MPI_Abort)(Handle, int);
  Handle comm_world = nullptr, errors_return = nullptr;
  Handle op[4]{};                               // Red order
  Handle lor = nullptr, land = nullptr;         // bool's sum/max and prod/min
  Handle type[int(Scalar::Void)]{};             // by scalar kind; null: none
  std::string error;
};

std::mutex mu;  // MPI is initialized for one thread at a time (MPI_THREAD_SERIALIZED): every call is made under this
std::unordered_set<Handle>* broken = new std::unordered_set<Handle>();  // comms a timed-out call left a request on

// a predefined object: the global lookup first, since a program linked against libmpi holds copies of the objects it
// names (copy relocations) and the library itself uses those; only a library loaded privately is asked directly
Handle sym(void* h, const char* name, std::string& error) {
  void* p = ::dlsym(RTLD_DEFAULT, name);
  if (!p) p = ::dlsym(h, name);
  if (!p && error.empty()) error = std::string("libmpi has no ") + name;
  return p;
}

Api* load() {
  auto* a = new Api();
  std::string lib = getenv_str("TG_MPI_LIB", "");
  void* h = nullptr;
  // RTLD_GLOBAL: Open MPI's plugins, which it dlopens itself, resolve their symbols against libmpi
  for (const std::string& n : lib.empty() ? std::vector<std::string>{"libmpi.so.40", "libmpi.so"} : std::vector<std::string>{lib})
    if ((h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL))) break;
  if (!h) {
    a->error = (lib.empty() ? std::string("Open MPI's libmpi.so.40") : "TG_MPI_LIB=" + lib) + " does not load (" + ::dlerror() +
               "): install Open MPI (Debian: openmpi-bin libopenmpi-dev), or point TG_MPI_LIB at its libmpi";
    return a;
  }
  if (!::dlsym(h, "ompi_mpi_comm_world")) {
    a->error = "the MPI library loaded is not Open MPI (no ompi_mpi_comm_world): only Open MPI's ABI is supported";
    return a;
  }
#define F(f) TG_DLSYM(a, h, f, "libmpi")
  F(MPI_Initialized); F(MPI_Finalized); F(MPI_Init_thread); F(MPI_Finalize); F(MPI_Comm_rank); F(MPI_Comm_size); F(MPI_Comm_split);
  F(MPI_Comm_free); F(MPI_Comm_set_errhandler); F(MPI_Iallreduce); F(MPI_Allreduce); F(MPI_Allgather); F(MPI_Bcast); F(MPI_Isend); F(MPI_Irecv);
  F(MPI_Test); F(MPI_Get_count); F(MPI_Error_string); F(MPI_Abort);
#undef F
  a->comm_world = sym(h, "ompi_mpi_comm_world", a->error);
  a->errors_return = sym(h, "ompi_mpi_errors_return", a->error);
  const char* ops[4] = {"ompi_mpi_op_sum", "ompi_mpi_op_prod", "ompi_mpi_op_max", "ompi_mpi_op_min"};
  for (int i = 0; i < 4; i++) a->op[i] = sym(h, ops[i], a->error);
  a->lor = sym(h, "ompi_mpi_op_lor", a->error), a->land = sym(h, "ompi_mpi_op_land", a->error);
  const std::pair<Scalar, const char*> types[] = {
      {Scalar::Bool, "ompi_mpi_c_bool"},     {Scalar::Int8, "ompi_mpi_int8_t"},   {Scalar::UInt8, "ompi_mpi_uint8_t"},
      {Scalar::Int16, "ompi_mpi_int16_t"},   {Scalar::UInt16, "ompi_mpi_uint16_t"}, {Scalar::Int32, "ompi_mpi_int32_t"},
      {Scalar::UInt32, "ompi_mpi_uint32_t"}, {Scalar::Int64, "ompi_mpi_int64_t"}, {Scalar::UInt64, "ompi_mpi_uint64_t"},
      {Scalar::Float32, "ompi_mpi_float"},   {Scalar::Float64, "ompi_mpi_double"}};
  for (auto [s, n] : types) a->type[int(s)] = sym(h, n, a->error);
  return a;
}

const Api& api() {
  static Api* a = load();
  TG_CHECK(a->error.empty(), TG_ERROR_UNSUPPORTED, "MPI: " + a->error);
  return *a;
}

std::string error_string(const Api& a, int rc) {
  char buf[512] = {0};
  int n = 0;
  if (a.MPI_Error_string(rc, buf, &n) != 0) return strformat("MPI error %d", rc);
  return std::string(buf, size_t(std::clamp(n, 0, 511)));
}
void check(const Api& a, int rc, const char* what) {
  if (rc != 0) fail(TG_ERROR_RUNTIME, std::string("MPI: ") + what + " failed: " + error_string(a, rc));
}

// At exit: a process that fails (a nonzero status: an uncaught Python exception, exit(1)) aborts the job, so the other
// ranks end now instead of waiting in their next collective until the timeout; one that succeeds finalizes. A request
// a timed-out call left behind would make MPI_Finalize wait forever: that exit aborts too.
void finish_at_exit(int status, void*) {
  const Api& a = api();
  std::lock_guard<std::mutex> lk(mu);
  int done = 0;
  if (a.MPI_Finalized(&done) != 0 || done) return;
  if (status != 0 || !broken->empty()) a.MPI_Abort(a.comm_world, status ? status : 1);
  else a.MPI_Finalize();
}

// waits between polls: spinning first (a collective of a training step takes micro- to milliseconds), then yielding
// the core (ranks may share cores: mpirun --oversubscribe), then sleeping (a rank far behind, or gone: no busy core)
void pause(std::chrono::steady_clock::time_point start, uint64_t i) {
  if (i < 64) return;
  if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100)) sched_yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(200));
}

Handle dtype_of(const Api& a, DType dt) {
  Handle t = dt.scalar < Scalar::Void ? a.type[int(dt.scalar)] : nullptr;
  TG_CHECK(t, TG_ERROR_DTYPE, "MPI: no MPI datatype for " + dt.name() + " (the communicator sends 16-bit floats as float32)");
  return t;
}

// waits for `req` until the deadline, making progress; the lock is held only while MPI is called. `status`: where the
// completed request's MPI_Status goes (null: ignored); `waiting_for` completes the timeout's message.
void wait(const Api& a, Comm c, Handle& req, const std::string& what, void* status = nullptr,
          const char* waiting_for = "the other ranks: one died, hangs, or did not make the same call") {
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::duration<double>(timeout_s());
  for (uint64_t i = 0;; i++) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lk(mu);
      check(a, a.MPI_Test(&req, &done, status), what.c_str());
    }
    if (done) return;
    if ((i & 255) == 255 && std::chrono::steady_clock::now() > deadline) {
      std::lock_guard<std::mutex> lk(mu);
      broken->insert(c);
      throw Timeout{strformat("MPI: %s waited %.0f s (TG_COMM_TIMEOUT) for %s; this communicator can't be used again", what.c_str(), timeout_s(),
                              waiting_for)};
    }
    pause(start, i);
  }
}

void check_usable(Comm c, const char* what) {
  TG_CHECK(c, TG_ERROR_INVALID_ARGUMENT, std::string("MPI: ") + what + " on a null communicator");
  std::lock_guard<std::mutex> lk(mu);
  int done = 0;  // the program finalized MPI itself: no call may follow
  TG_CHECK(api().MPI_Finalized(&done) == 0 && !done, TG_ERROR_RUNTIME, std::string("MPI: ") + what + ": MPI is already finalized");
  TG_CHECK(!broken->count(c), TG_ERROR_RUNTIME,
           std::string("MPI: ") + what + ": an earlier call on this communicator timed out; it can't be used again");
}

// calls `start(offset, n, &request)` for chunks of at most INT_MAX elements (MPI counts are int), each waited for
// against the deadline
template <class F>
void chunked(const Api& a, Comm c, int64_t count, const char* what, F start) {
  check_usable(c, what);
  for (int64_t off = 0; off < count || (count == 0 && off == 0); off += INT_MAX) {
    int n = int(std::min<int64_t>(count - off, INT_MAX));
    Handle req = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu);
      check(a, start(off, n, &req), what);
    }
    wait(a, c, req, what);
    if (count == 0) break;
  }
}
// the same with MPI's blocking collectives, whose algorithms are tuned (the non-blocking ones' are 10-15% slower on
// 16 MB): for data moved after every rank agreed on the call (same_on_all), so none can be missing from it but a
// process that dies in between, which mpirun ends the job for
template <class F>
void blocking(const Api& a, Comm c, int64_t count, const char* what, F call) {
  check_usable(c, what);
  std::lock_guard<std::mutex> lk(mu);
  for (int64_t off = 0; off < count; off += INT_MAX) check(a, call(off, int(std::min<int64_t>(count - off, INT_MAX))), what);
}

}  // namespace

double timeout_s() { return double(getenv_int("TG_COMM_TIMEOUT", 300)); }

Comm world() {
  static std::once_flag once;
  const Api& a = api();
  std::call_once(once, [&] {
    std::lock_guard<std::mutex> lk(mu);
    int init = 0;
    check(a, a.MPI_Initialized(&init), "MPI_Initialized");
    if (!init) {
      int provided = 0;
      check(a, a.MPI_Init_thread(nullptr, nullptr, 2 /* MPI_THREAD_SERIALIZED */, &provided), "MPI_Init_thread");
      ::on_exit(finish_at_exit, nullptr);
    }
    // errors come back as codes (and become tg_status errors) instead of aborting every rank
    check(a, a.MPI_Comm_set_errhandler(a.comm_world, a.errors_return), "MPI_Comm_set_errhandler");
  });
  return a.comm_world;
}

int rank(Comm c) {
  const Api& a = api();
  int r = 0;
  std::lock_guard<std::mutex> lk(mu);
  check(a, a.MPI_Comm_rank(c, &r), "MPI_Comm_rank");
  return r;
}
int size(Comm c) {
  const Api& a = api();
  int n = 0;
  std::lock_guard<std::mutex> lk(mu);
  check(a, a.MPI_Comm_size(c, &n), "MPI_Comm_size");
  return n;
}
Comm split(Comm c, int color, int key) {
  const Api& a = api();
  check_usable(c, "split");
  Handle out = nullptr;
  std::lock_guard<std::mutex> lk(mu);
  check(a, a.MPI_Comm_split(c, color < 0 ? -32766 /* MPI_UNDEFINED */ : color, key, &out), "MPI_Comm_split");
  if (color < 0) return nullptr;
  check(a, a.MPI_Comm_set_errhandler(out, a.errors_return), "MPI_Comm_set_errhandler");
  return out;
}
void release(Comm c) {
  const Api& a = api();
  if (!c || c == a.comm_world) return;
  std::lock_guard<std::mutex> lk(mu);
  int done = 0;
  if (broken->count(c) || a.MPI_Finalized(&done) != 0 || done) return;  // a pending request still refers to it
  a.MPI_Comm_free(&c);
}

bool has_type(DType dt) { return dt.scalar != Scalar::Float16 && dt.scalar != Scalar::BFloat16 && dt.scalar < Scalar::Void; }

void allreduce(Comm c, const void* in, void* out, int64_t count, DType dt, Red op) {
  const Api& a = api();
  Handle t = dtype_of(a, dt);
  Handle o = dt == dtypes::bool_ ? (op == Red::Sum || op == Red::Max ? a.lor : a.land) : a.op[int(op)];
  size_t isz = size_t(dt.itemsize());
  blocking(a, c, count, "allreduce", [&](int64_t off, int n) {
    const void* src = in == out ? reinterpret_cast<const void*>(1) /* MPI_IN_PLACE */ : static_cast<const char*>(in) + off * isz;
    return a.MPI_Allreduce(src, static_cast<char*>(out) + off * isz, n, t, o, c);
  });
}

void allgather(Comm c, const void* in, void* out, int64_t count, DType dt) {
  const Api& a = api();
  Handle t = dtype_of(a, dt);
  TG_CHECK(count <= INT_MAX, TG_ERROR_UNSUPPORTED, strformat("MPI: allgather of %lld elements per rank (at most %d)", (long long)count, INT_MAX));
  blocking(a, c, count, "allgather", [&](int64_t, int n) { return a.MPI_Allgather(in, n, t, out, n, t, c); });
}

void broadcast(Comm c, void* buf, int64_t count, DType dt, int root) {
  const Api& a = api();
  Handle t = dtype_of(a, dt);
  size_t isz = size_t(dt.itemsize());
  blocking(a, c, count, "broadcast", [&](int64_t off, int n) { return a.MPI_Bcast(static_cast<char*>(buf) + off * isz, n, t, root, c); });
}

void send(Comm c, const void* buf, int64_t count, DType dt, int dest, int tag) {
  const Api& a = api();
  Handle t = dtype_of(a, dt);
  size_t isz = size_t(dt.itemsize());
  chunked(a, c, count, "send",
          [&](int64_t off, int n, Handle* req) { return a.MPI_Isend(static_cast<const char*>(buf) + off * isz, n, t, dest, tag, c, req); });
}

int64_t recv(Comm c, void* buf, int64_t count, DType dt, int src, int tag) {
  const Api& a = api();
  Handle t = dtype_of(a, dt);
  TG_CHECK(count <= INT_MAX, TG_ERROR_UNSUPPORTED, strformat("MPI: recv of %lld elements (at most %d)", (long long)count, INT_MAX));
  check_usable(c, "recv");
  Handle req = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu);
    check(a, a.MPI_Irecv(buf, int(count), t, src, tag, c, &req), "recv");
  }
  // the status tells how much arrived; Open MPI's MPI_Status is 24 bytes, this is room to spare
  alignas(16) char status[64] = {0};
  wait(a, c, req, strformat("recv from rank %d", src), status, strformat("a message with tag %d", tag).c_str());
  int n = 0;
  std::lock_guard<std::mutex> lk(mu);
  check(a, a.MPI_Get_count(status, t, &n), "MPI_Get_count");
  return n;
}

bool same_on_all(Comm c, int64_t sig) {
  const Api& a = api();
  int64_t v[2] = {sig, -sig}, r[2] = {0, 0};  // max of sig and of -sig: equal to ours on every rank iff all are
  Handle i64 = a.type[int(Scalar::Int64)], max = a.op[int(Red::Max)];
  chunked(a, c, 2, "allreduce", [&](int64_t, int, Handle* req) { return a.MPI_Iallreduce(v, r, 2, i64, max, c, req); });
  return r[0] == sig && r[1] == -sig;
}

}  // namespace tg::mpi
