// MPI: Open MPI's libmpi.so.40, dlopen'ed on first use (so the library loads and builds without it), and the collectives
// the communicator (tensor/comm.cpp) runs on raw host memory. Waits for the other ranks poll a non-blocking call against
// a deadline (same_on_all, which every collective begins with, and send/recv), so a rank that died, hangs or made
// another call makes the others fail with TG_ERROR_RUNTIME instead of waiting forever; the data of a collective then
// moves with MPI's blocking call, the fastest.
#pragma once
#include <cstdint>
#include <string>

#include "uop/dtype.h"

namespace tg::mpi {

using Comm = void*;  // an MPI_Comm (Open MPI's handles are pointers)
enum class Red { Sum, Prod, Max, Min };

// MPI_COMM_WORLD, initializing MPI first unless the application did (then it also finalizes it). TG_ERROR_UNSUPPORTED
// when no Open MPI library loads ($TG_MPI_LIB, else libmpi.so.40), naming what was tried.
Comm world();
int rank(Comm c);
int size(Comm c);
// MPI_Comm_split; color < 0: this rank is in no new communicator (null)
Comm split(Comm c, int color, int key);
void release(Comm c);  // MPI_Comm_free of a split (world is kept)
bool has_type(DType dt);  // an MPI datatype of the same values exists (not the 16-bit floats)
// $TG_COMM_TIMEOUT seconds (default 300): how long one call waits for the other ranks
double timeout_s();

// Thrown (as TG_ERROR_RUNTIME) when a call's deadline passed: the request is still outstanding, so MPI may yet write the
// buffers it was given; the caller keeps them alive for the rest of the process. The communicator is unusable after.
struct Timeout {
  std::string message;
};

// every rank's `count` elements at in combined into out (in == out: in place); after same_on_all
void allreduce(Comm c, const void* in, void* out, int64_t count, DType dt, Red op);
// every rank's `count` elements at in, in rank order, into out (size * count elements)
void allgather(Comm c, const void* in, void* out, int64_t count, DType dt);
// root's `count` elements at buf into every rank's buf
void broadcast(Comm c, void* buf, int64_t count, DType dt, int root);
void send(Comm c, const void* buf, int64_t count, DType dt, int dest, int tag);
// returns the number of elements that arrived (at most count; a larger message is an error)
int64_t recv(Comm c, void* buf, int64_t count, DType dt, int src, int tag);
// true when every rank passed the same `sig` (one small allreduce): collectives whose shapes differ between ranks fail
// with a clear error instead of hanging or reading past a buffer
bool same_on_all(Comm c, int64_t sig);

}  // namespace tg::mpi
