// What the set-up probes (setup_cost.cu, first_box.cu; bench/NOTES.md 100) share: the clock read,
// a median, a launch of 256-thread blocks on clusters of 2 or none, and the card's line.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

constexpr int PROBE_THREADS = 256;
// The thread that sets up: the 129th, where gemmc's producer begins beside a 128-thread consumer
// warpgroup.
constexpr int INIT_THREAD = 128;
constexpr int MAX_STAGES = 18;
// 128 blocks (64 clusters of 2), as the decode rows' grids: all of them resident at once (NOTES
// 87: not every GPC takes as many clusters as its SMs would say).
constexpr int PROBE_BLOCKS = 128;
// Launches a variant runs, the first PROBE_WARMUPS of them not counted.
constexpr int PROBE_LAUNCHES = 23, PROBE_WARMUPS = 3;

__device__ __forceinline__ long long clk() {
  long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  return c;
}

/** Every thread of a block (or of its cluster) meets: the warp reconverged first, since the
 * .aligned barriers want all its threads at them. */
template <bool CLUSTER>
__device__ __forceinline__ void meet() {
  __syncwarp();
  if (CLUSTER) {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  } else {
    asm volatile("bar.sync 0;" ::: "memory");
  }
}

static long long median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/** A launch of PROBE_BLOCKS blocks of PROBE_THREADS, on clusters of 2 or none. */
struct ProbeLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  ProbeLaunch(bool cluster, int dynamicSmem) {
    cfg.gridDim = dim3(PROBE_BLOCKS);
    cfg.blockDim = dim3(PROBE_THREADS);
    cfg.dynamicSmemBytes = dynamicSmem;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster ? 2 : 1;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
};

/** Prints the card's line and returns the clock the driver reports, in MHz. */
static int probeCard(const char* what) {
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  printf("%s, %d SMs, clock rate %d MHz (ns below at that clock); %s\n", p.name,
         p.multiProcessorCount, khz / 1000, what);
  return khz / 1000;
}

/** Runs PROBE_LAUNCHES launches (`launch(r, out)` issues the r-th, its blocks writing one T each
 * to `out`) and, past the warm-ups, hands every block's record to `take`. */
template <typename T, typename Launch, typename Take>
static cudaError_t probeSeries(Launch launch, Take take) {
  T* d;
  cudaMalloc(&d, PROBE_BLOCKS * sizeof(T));
  std::vector<T> h(PROBE_BLOCKS);
  for (int r = 0; r < PROBE_LAUNCHES; r++) {
    launch(r, d);
    cudaDeviceSynchronize();
    if (r < PROBE_WARMUPS) continue;
    cudaMemcpy(h.data(), d, PROBE_BLOCKS * sizeof(T), cudaMemcpyDeviceToHost);
    for (const T& t : h) take(t);
  }
  cudaError_t e = cudaGetLastError();
  cudaFree(d);
  return e;
}
