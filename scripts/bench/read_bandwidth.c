// Memory read bandwidth probe: how fast this machine streams a buffer larger than its caches,
// with 1 and 2 threads, so decode figures can be stated as a share of the bandwidth limit
// (bytes of weights per token / read bandwidth).
//
//   cc -O2 -mavx2 -pthread scripts/bench/read_bandwidth.c -o build/bench/read_bandwidth
//   build/bench/read_bandwidth [MiB per buffer, default 512] [passes, default 10]
//
// Each thread sums its own half (or all) of the buffer with 256-bit loads, four independent
// accumulators; the best pass of `passes` is reported (the machine is shared, so the best pass is
// the least disturbed one), along with the median.
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { const __m256i* p; size_t n; long long sink; } Job;

static void* reader(void* arg) {
  Job* j = (Job*)arg;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 4 <= j->n; i += 4) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(j->p + i));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(j->p + i + 1));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(j->p + i + 2));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(j->p + i + 3));
  }
  __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  j->sink = _mm256_extract_epi64(a, 0);
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
  int passes = argc > 2 ? atoi(argv[2]) : 10;
  if (mib < 1 || passes < 1 || passes > 1000) {
    fprintf(stderr, "usage: read_bandwidth [MiB >= 1] [passes 1..1000]\n");
    return 1;
  }
  size_t bytes = mib << 20;
  __m256i* buf = aligned_alloc(64, bytes);
  if (!buf) { perror("aligned_alloc"); return 1; }
  memset(buf, 1, bytes);  // touch every page
  size_t n = bytes / sizeof(__m256i);
  long long sink = 0;
  for (int threads = 1; threads <= 2; threads++) {
    double* gbs = malloc(sizeof(double) * passes);
    for (int p = 0; p < passes; p++) {
      pthread_t t[2];
      Job jobs[2];
      double t0 = now();
      for (int i = 0; i < threads; i++) {
        jobs[i].p = buf + n / threads * i;
        jobs[i].n = n / threads;
        pthread_create(&t[i], NULL, reader, &jobs[i]);
      }
      for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        sink ^= jobs[i].sink;
      }
      gbs[p] = bytes / (now() - t0) / 1e9;
    }
    qsort(gbs, passes, sizeof(double), cmp);
    printf("threads %d: best %.2f GB/s, median %.2f GB/s (%zu MiB, %d passes)\n", threads,
           gbs[passes - 1], gbs[passes / 2], mib, passes);
    free(gbs);
  }
  free(buf);
  return sink == 42 ? 2 : 0;
}
