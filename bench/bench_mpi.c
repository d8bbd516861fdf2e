/* bench_mpi: tg_comm_allreduce against MPI_Allreduce called directly, in the same processes, on the same 16 MB of
 * float32. Run under mpirun; rank 0 prints one line: "allreduce <bytes> <ranks> <direct median s> <ours median s>".
 * Rounds alternate the two (each after a barrier) so both see the same machine; medians of RUNS rounds. The program
 * initializes MPI itself, so the library uses it as it is (and leaves finalizing to the program). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tinygrad.h>

enum { RUNS = 30, WARMUP = 3 };

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t n = (argc > 1 ? atoll(argv[1]) : 16 << 20) / 4;
  float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *c = malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) a[i] = (float)((i * 7 + rank * 13) % 101) * 0.25f;
  tg_comm* comm = tg_comm_world();
  tg_tensor* t = tg_tensor_from_data(a, (size_t)n * 4, TG_FLOAT32, &n, 1, NULL);
  if (!comm || !t || tg_tensor_realize(t) != TG_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, tg_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double direct[RUNS], ours[RUNS];
  for (int i = -WARMUP; i < RUNS; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    tg_tensor* r = tg_comm_allreduce(comm, t, TG_REDUCE_SUM);
    double t3 = MPI_Wtime();
    if (!r) {
      fprintf(stderr, "rank %d: %s\n", rank, tg_last_error_message());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (i == 0) { /* the same sums, bit for bit: both are MPI's reduction of the same data */
      tg_tensor_to_data(r, c, (size_t)n * 4);
      if (memcmp(b, c, (size_t)n * 4) != 0) {
        fprintf(stderr, "rank %d: the library's allreduce differs from MPI_Allreduce's\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    tg_tensor_release(r);
    if (i >= 0) direct[i] = t1 - t0, ours[i] = t3 - t2;
  }
  if (rank == 0) printf("allreduce %lld %d %.9f %.9f\n", (long long)n * 4, size, median(direct, RUNS), median(ours, RUNS));
  tg_tensor_release(t), tg_comm_release(comm);
  free(a), free(b), free(c);
  MPI_Finalize();
  return 0;
}
