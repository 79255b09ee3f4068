// What the first boxes copied before the set-up's barrier would gain (bench/NOTES.md 100 item 3,
// the lead set aside): a block's start to its first stage landed, with the stages' copies issued
// after the block's (or the cluster's) barrier, as gemmc's TMA pipelines do, or before it, right
// after the thread's own fenced mbarrier.inits. One thread (the 129th, gemmc's producer for a
// 128-thread consumer warpgroup) initialises S stages' full barriers, fences them and issues S
// bulk copies of BOX bytes each (`cp.async.bulk`, one a stage, each completing on its stage's
// barrier) from a region of global memory no launch before has read (so from DRAM, as a decode
// GEMM's weights come); the block's first thread (a consumer) waits for stage 0. Each block reads
// its own S x BOX bytes, so a launch of 128 blocks asks for S x BOX x 128 bytes at once, as the
// decode rows' prologues do. Medians over blocks and 20 launches (3 warm-ups first), in SM cycles
// (%clock64 from the block's start) and at the clock the driver reports. Not part of the benchmark
// or of CI.
//
// Build and run (on the device): nvcc -arch=sm_90a -O2 -o /tmp/first_box first_box.cu &&
// /tmp/first_box
#include "_probe.cuh"

constexpr unsigned BOX = 8192;  // bytes a stage: a 64-row box of 128-byte rows

struct Times {
  long long issued, barrier, landed;
};

/** Whether the barrier at `bar` has completed the phase of `parity`. */
__device__ __forceinline__ bool done(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

__device__ __forceinline__ void issue(unsigned smem, unsigned bars, const char* src, int stages) {
  for (int s = 0; s < stages; s++) {
    unsigned full = bars + 8 * s;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(full), "r"(BOX)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(smem + s * BOX),
        "l"(src + static_cast<size_t>(s) * BOX), "r"(BOX), "r"(full)
        : "memory");
  }
}

template <bool CLUSTER, bool EARLY>
__global__ void firstBox(const char* src, int stages, Times* out) {
  extern __shared__ __align__(128) unsigned char buf[];
  __shared__ __align__(8) unsigned long long bars[MAX_STAGES];
  const unsigned tid = threadIdx.x;
  const long long t0 = clk();
  const unsigned barBase = static_cast<unsigned>(__cvta_generic_to_shared(bars));
  const unsigned smem = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  const char* mine = src + static_cast<size_t>(blockIdx.x) * MAX_STAGES * BOX;
  long long issued = 0;
  if (tid == INIT_THREAD) {
    for (int s = 0; s < stages; s++) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barBase + 8 * s) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (EARLY) {
      issue(smem, barBase, mine, stages);
      issued = clk() - t0;
    }
  }
  meet<CLUSTER>();
  const long long barrier = clk() - t0;
  if (tid == INIT_THREAD && !EARLY) {
    issue(smem, barBase, mine, stages);
    issued = clk() - t0;
  }
  if (tid == 0) {
    while (!done(barBase, 0)) {
    }
    out[blockIdx.x].landed = clk() - t0;
    out[blockIdx.x].barrier = barrier;
  }
  if (tid == INIT_THREAD) out[blockIdx.x].issued = issued;
  // Every stage landed before the block leaves (its copies write this block's shared memory).
  if (tid == INIT_THREAD) {
    for (int s = 1; s < stages; s++) {
      while (!done(barBase + 8 * s, 0)) {
      }
    }
  }
  if (CLUSTER) meet<true>();
}

/** The next region of the source buffer a launch reads (past every region read before). */
static size_t nextRegion = 0;

template <bool CLUSTER, bool EARLY>
static void run(const char* name, char* src, size_t srcBytes, int stages, int mhz) {
  const int smemBytes = MAX_STAGES * BOX;
  cudaFuncSetAttribute(firstBox<CLUSTER, EARLY>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       smemBytes);
  ProbeLaunch l(CLUSTER, smemBytes);
  // Each launch reads a region no launch of this run has read: past the L2 by a stride of 64 MB.
  const size_t perLaunch = static_cast<size_t>(PROBE_BLOCKS) * MAX_STAGES * BOX;
  const size_t stride = std::max<size_t>(perLaunch, 64u << 20);
  std::vector<long long> issued, barrier, landed;
  const cudaError_t e = probeSeries<Times>(
      [&](int, Times* d) {
        if (nextRegion + perLaunch > srcBytes) nextRegion = 0;
        cudaLaunchKernelEx(&l.cfg, firstBox<CLUSTER, EARLY>,
                           static_cast<const char*>(src + nextRegion), stages, d);
        nextRegion += stride;
      },
      [&](const Times& t) {
        issued.push_back(t.issued);
        barrier.push_back(t.barrier);
        landed.push_back(t.landed);
      });
  const double ns = 1000.0 / mhz;
  const long long i = median(issued), b = median(barrier), l0 = median(landed);
  printf(
      "%-38s stages %2d: barrier passed %5lld cyc (%4.0f ns)  copies issued %5lld (%4.0f)"
      "  stage 0 landed %5lld (%4.0f)  %s\n",
      name, stages, b, b * ns, i, i * ns, l0, l0 * ns,
      e == cudaSuccess ? "ok" : cudaGetErrorString(e));
}

int main() {
  const int mhz = probeCard("8192-byte stages");
  const size_t srcBytes = static_cast<size_t>(2) << 30;
  char* src;
  if (cudaMalloc(&src, srcBytes) != cudaSuccess) {
    printf("cudaMalloc of %zu bytes failed\n", srcBytes);
    return 1;
  }
  cudaMemset(src, 1, srcBytes);
  for (int stages : {4, 9, 13, 18}) {
    run<true, false>("cluster 2, copies after the barrier", src, srcBytes, stages, mhz);
    run<true, true>("cluster 2, copies before the barrier", src, srcBytes, stages, mhz);
    run<false, false>("no cluster, copies after the barrier", src, srcBytes, stages, mhz);
    run<false, true>("no cluster, copies before the barrier", src, srcBytes, stages, mhz);
  }
  cudaFree(src);
  return 0;
}
