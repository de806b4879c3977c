// collective_probe.c — times single collectives as farthing's MPI communicator issues them
// (framework/dist/mpi_communicator.cpp, the default ordered reduction), for checking the scaling
// model's link cost (train/plan/scaling_model.cpp) over the multihost harness's wire:
//   all_gather:     MPI_Allgather of B/N bytes per rank (B: the gathered whole);
//   reduce_scatter: MPI_Alltoall of B/N-byte blocks (then each rank sums its blocks in rank order);
//   all_reduce:     MPI_Alltoall of B/N-byte blocks, then MPI_Allgather in place of the sums.
// Not a test: scaling_table.sh's PROBE step builds and runs it (mpicc, no farthing libraries).
//   usage: collective_probe MIN_BYTES MAX_BYTES REPS GAP_MS [CHAIN [plain|trainer|ungreeted]]
// Sizes go from MIN to MAX by factors of 4. Each sample: a barrier, GAP_MS of sleep (the link
// idle, as between a step's collectives), then the collective CHAIN times back to back (1 by
// default), as a step issues one collective after another; its time per collective is the
// slowest rank's (MPI_MAX) over CHAIN, and the median of REPS samples is printed, one JSON line
// per collective and size. With CHAIN 1 a sample also holds the barrier's skew: the rank that
// leaves the barrier first waits up to one latency for the others' messages. `trainer` starts MPI
// as farthing's communicator does: MPI_THREAD_MULTIPLE (its worker thread and roll call), a
// zero-byte message from every rank to every other at once (the greeting), then a duplicate of
// MPI_COMM_WORLD, before any collective (the collectives here stay on the world). `ungreeted` is
// the same without the greeting: the duplicate is then the pair's first contact, one-sided.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec t = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (time_t)(ms / 1000)) * 1e6)};
  nanosleep(&t, NULL);
}

// Every rank sends a zero-byte message to every other and receives one from each, all at once.
static void greet_every_peer(void) {
  int rank, world;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Request* requests = malloc(sizeof(MPI_Request) * 2 * (size_t)world);
  int n = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    MPI_Irecv(NULL, 0, MPI_BYTE, peer, 30071, MPI_COMM_WORLD, &requests[n++]);
    MPI_Isend(NULL, 0, MPI_BYTE, peer, 30071, MPI_COMM_WORLD, &requests[n++]);
  }
  MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
  free(requests);
}

int main(int argc, char** argv) {
  const char* start = argc == 7 ? argv[6] : "plain";
  const int greeted = strcmp(start, "trainer") == 0, as_trainer = greeted || strcmp(start, "ungreeted") == 0;
  int provided = 0;
  MPI_Comm duplicate = MPI_COMM_NULL;
  if (as_trainer) {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (greeted) greet_every_peer();
    MPI_Comm_dup(MPI_COMM_WORLD, &duplicate);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank, world;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (argc < 5 || argc > 7 || (!as_trainer && strcmp(start, "plain") != 0) ||
      (as_trainer && provided != MPI_THREAD_MULTIPLE)) {
    if (rank == 0) fprintf(stderr, "usage: collective_probe MIN_BYTES MAX_BYTES REPS GAP_MS [CHAIN [plain|trainer|ungreeted]] "
                                   "(trainer and ungreeted need an MPI with MPI_THREAD_MULTIPLE)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long min_bytes = atol(argv[1]), max_bytes = atol(argv[2]);
  const int reps = atoi(argv[3]);
  const double gap_ms = atof(argv[4]);
  const int chain = argc >= 6 ? atoi(argv[5]) : 1;
  if (min_bytes < 4 * world || max_bytes < min_bytes || reps < 1 || reps > 1000 || gap_ms < 0 || chain < 1 || chain > 1000) {
    if (rank == 0) fprintf(stderr, "collective_probe: need 4*N <= MIN <= MAX, 1 <= REPS <= 1000, GAP_MS >= 0, 1 <= CHAIN <= 1000\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* names[3] = {"all_gather", "reduce_scatter", "all_reduce"};
  double* times = malloc(sizeof(double) * (size_t)reps);
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const int block = (int)(bytes / 4 / world);  // f32 elements per rank's block
    float* whole = calloc((size_t)block * (size_t)world, 4);
    float* blocks = calloc((size_t)block * (size_t)world, 4);
    float* part = calloc((size_t)block, 4);
    for (int c = 0; c < 3; ++c) {
      for (int r = -1; r < reps; ++r) {  // r = -1: a warm-up, not timed
        MPI_Barrier(MPI_COMM_WORLD);
        sleep_ms(gap_ms);
        const double t0 = MPI_Wtime();
        for (int k = 0; k < chain; ++k) {
          if (c == 0) {
            MPI_Allgather(part, block, MPI_FLOAT, whole, block, MPI_FLOAT, MPI_COMM_WORLD);
          } else {
            MPI_Alltoall(whole, block, MPI_FLOAT, blocks, block, MPI_FLOAT, MPI_COMM_WORLD);
            if (c == 2) MPI_Allgather(MPI_IN_PLACE, block, MPI_FLOAT, whole, block, MPI_FLOAT, MPI_COMM_WORLD);
          }
        }
        double mine = (MPI_Wtime() - t0) / chain, slowest = 0;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0) times[r] = slowest;
      }
      qsort(times, (size_t)reps, sizeof(double), cmp_double);
      if (rank == 0) {
        printf("{\"collective\": \"%s\", \"world\": %d, \"bytes\": %ld, \"gap_ms\": %g, \"median_s\": %.6f, "
               "\"min_s\": %.6f, \"max_s\": %.6f, \"chain\": %d, \"start\": \"%s\"}\n",
               names[c], world, (long)block * 4 * world, gap_ms, times[reps / 2], times[0], times[reps - 1], chain, start);
        fflush(stdout);
      }
    }
    free(whole);
    free(blocks);
    free(part);
  }
  free(times);
  if (duplicate != MPI_COMM_NULL) MPI_Comm_free(&duplicate);
  MPI_Finalize();
  return 0;
}
