// Where a TMA pipeline's barrier set-up spends its time (bench/NOTES.md 99 item 4: ~1.1 µs on a
// block's path at f16 M = 128, clusters of 2). One thread (the 129th, where gemmc's producer
// begins for a 128-thread consumer warpgroup) initialises S stages' full and empty mbarriers, then
// fences them; every thread then meets at the block's or the cluster's barrier. The thread reads
// %clock64 after each step, so each step's cost is in SM cycles, the clock read beside it:
//
//   init:  S x 2 mbarrier.init (full: 1 arrival; empty: 4 or 8), by the one thread or (a warp's
//          inits) by its warp's lanes, stage l's two by lane l: their issue (the clock read does
//          not wait for them to land; the fence does, so what they cost beyond issue is there)
//   fence: fence.mbarrier_init.release.cluster (gemmc's), or fence.proxy.async.shared::cta
//   bar:   barrier.cluster.arrive.release + wait.acquire (clusters), or bar.sync 0
//
// and, for the block's first thread (a consumer, which does nothing before the barrier), its
// wait at the barrier. Each variant runs as one launch of 128 blocks of 256 threads (64
// clusters of 2, or none), 20 times after 3 warm-ups; the medians over blocks and launches are
// printed, in cycles and at the clock the driver reports as current. Not part of the benchmark or of CI.
//
// Build and run (on the device): nvcc -arch=sm_90a -O2 -o /tmp/setup_cost setup_cost.cu &&
// /tmp/setup_cost
#include "_probe.cuh"

struct Times {
  long long init, fence, bar, consumerWait;
};

template <bool CLUSTER, bool PROXY_FENCE, bool PARALLEL>
__global__ void setup(int stages, Times* out) {
  __shared__ __align__(8) unsigned long long bars[2 * MAX_STAGES];
  const unsigned tid = threadIdx.x;
  long long t0 = clk(), t1 = t0, t2 = t0;
  // PARALLEL: the init thread's warp, lane l initialising stage l's two barriers.
  const bool initWarp = tid / 32 == INIT_THREAD / 32;
  if (PARALLEL ? initWarp : tid == INIT_THREAD) {
    for (int s = PARALLEL ? tid % 32 : 0; s < stages; s += PARALLEL ? 32 : 1) {
      unsigned full = static_cast<unsigned>(__cvta_generic_to_shared(&bars[s]));
      unsigned empty = static_cast<unsigned>(__cvta_generic_to_shared(&bars[MAX_STAGES + s]));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(full) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(empty), "r"(CLUSTER ? 8 : 4)
                   : "memory");
    }
    t1 = clk();
    if (PROXY_FENCE) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    } else {
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    t2 = clk();
  }
  const long long arrive = clk();
  meet<CLUSTER>();
  const long long t3 = clk();
  const unsigned block = blockIdx.x;
  if (tid == INIT_THREAD) {
    out[block].init = t1 - t0;
    out[block].fence = t2 - t1;
    out[block].bar = t3 - t2;
  }
  if (tid == 0) out[block].consumerWait = t3 - arrive;
}

template <bool CLUSTER, bool PROXY_FENCE, bool PARALLEL = false>
static void run(const char* name, int stages, int mhz) {
  ProbeLaunch l(CLUSTER, 0);
  std::vector<long long> init, fence, bar, wait;
  const cudaError_t e = probeSeries<Times>(
      [&](int, Times* d) {
        cudaLaunchKernelEx(&l.cfg, setup<CLUSTER, PROXY_FENCE, PARALLEL>, stages, d);
      },
      [&](const Times& t) {
        init.push_back(t.init);
        fence.push_back(t.fence);
        bar.push_back(t.bar);
        wait.push_back(t.consumerWait);
      });
  const double ns = 1000.0 / mhz;
  const long long i = median(init), f = median(fence), b = median(bar), w = median(wait);
  printf(
      "%-34s stages %2d: init %5lld cyc (%4.0f ns)  fence %5lld (%4.0f)  barrier %5lld (%4.0f)"
      "  consumer's wait %5lld (%4.0f)  %s\n",
      name, stages, i, i * ns, f, f * ns, b, b * ns, w, w * ns,
      e == cudaSuccess ? "ok" : cudaGetErrorString(e));
}

int main() {
  const int mhz = probeCard("the set-up's steps");
  for (int stages : {4, 9, 13, 18}) {
    run<true, false>("cluster 2, fence.mbarrier_init", stages, mhz);
    run<true, true>("cluster 2, fence.proxy.async", stages, mhz);
    run<false, false>("no cluster, fence.mbarrier_init", stages, mhz);
    run<false, true>("no cluster, fence.proxy.async", stages, mhz);
    run<true, false, true>("cluster 2, a warp's inits", stages, mhz);
    run<false, false, true>("no cluster, a warp's inits", stages, mhz);
  }
  return 0;
}
