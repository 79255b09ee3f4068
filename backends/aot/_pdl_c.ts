/**
 * Programmatic dependent launch (PDL, sm_90+) in the C artefact (backends/aot/c.ts): the
 * header's `gemmc_set_pdl(int on)` and the runtime's one launch call, `gemmc_launch`, of the
 * ordinary and the grouped launch functions. With PDL on, a launch goes through
 * `cuLaunchKernelEx` with the one attribute `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`
 * (`programmaticStreamSerializationAllowed` = 1, every other byte of the configuration 0), as
 * backends/cuda/launch.ts `launchPacked` does with `pdl`; off (the default), through `cuLaunchKernel`.
 *
 * `cuLaunchKernelEx` is compiled in where cuda.h has it (CUDA 11.8 and later) and
 * `GEMMC_NO_LAUNCH_EX` is not defined (for a driver before CUDA 11.8: the file then does not
 * reference it); without it, `gemmc_set_pdl(1)` fails with `GEMMC_ERROR_UNSUPPORTED`.
 * tests/aot_c_pdl_test.ts checks both builds against the fake driver.
 *
 * @module
 */

/** The header part's declaration of `gemmc_set_pdl` (after the fixed declarations). */
export const C_PDL_DECLS = `/**
 * Programmatic dependent launch (sm_90+) for every later launch of this file's kernels, ordinary
 * and grouped (on: nonzero; default off; kept across gemmc_unload()). On, each launch goes
 * through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
 * (programmaticStreamSerializationAllowed = 1): the kernel may start while the previous kernel
 * in its stream finishes. Kernels compiled with pdl for sm90 wait (griddepcontrol.wait) before touching
 * global memory, so the results are those of a serialized launch; kernels of other targets run
 * correctly with it but gain nothing. Off, cuLaunchKernel. A launch whose cuLaunchKernelEx fails
 * returns GEMMC_ERROR_CUDA naming it. Returns GEMMC_ERROR_UNSUPPORTED (and stays off) when
 * turned on in a file compiled without cuLaunchKernelEx: cuda.h before CUDA 11.8, or
 * GEMMC_NO_LAUNCH_EX defined where the implementation is compiled (for a driver before 11.8).
 * Not thread-safe: change it while no other thread launches this file's kernels.
 */
gemmc_status gemmc_set_pdl(int on);
`;

/**
 * The implementation's PDL state, `gemmc_set_pdl` and `gemmc_launch` (after the fixed
 * functions, before the grouped runtime and the kernels' launch functions that call it).
 */
export const C_LAUNCH_FUNCTIONS =
  `/* cuLaunchKernelEx: in cuda.h of CUDA 11.8 and later; left out with GEMMC_NO_LAUNCH_EX. */
#if !defined(GEMMC_NO_LAUNCH_EX) && defined(CUDA_VERSION) && CUDA_VERSION >= 11080
#define GEMMC_HAS_LAUNCH_EX 1
#endif

/* gemmc_set_pdl: launch through cuLaunchKernelEx as a programmatic dependent. */
static int gemmc_pdl;

gemmc_status gemmc_set_pdl(int on) {
  gemmc_clear_error();
#if !defined(GEMMC_HAS_LAUNCH_EX)
  if (on) {
#if defined(GEMMC_NO_LAUNCH_EX)
    gemmc_add_error("Cannot launch with pdl: this file was compiled with GEMMC_NO_LAUNCH_EX, "
                    "without cuLaunchKernelEx");
#else
    gemmc_add_error("Cannot launch with pdl: this file was compiled against cuda.h of CUDA "
                    "%d.%d, without cuLaunchKernelEx (CUDA 11.8 and later)",
                    CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
#endif
    gemmc_pdl = 0;
    return GEMMC_ERROR_UNSUPPORTED;
  }
#endif
  gemmc_pdl = on != 0;
  return GEMMC_OK;
}

/*
 * Launches kernel index on grid g: cuLaunchKernel, or with gemmc_set_pdl(1) cuLaunchKernelEx
 * with the programmatic stream-serialization attribute (backends/cuda/launch.ts launchPacked with pdl).
 */
static gemmc_status gemmc_launch(int index, CUstream stream, const long long g[3], void **params) {
  const gemmc_kernel *k = gemmc_kernels[index];
  CUresult r;
#if defined(GEMMC_HAS_LAUNCH_EX)
  if (gemmc_pdl) {
    CUlaunchConfig config;
    CUlaunchAttribute attr;
    memset(&config, 0, sizeof config);
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    config.gridDimX = (unsigned)g[0];
    config.gridDimY = (unsigned)g[1];
    config.gridDimZ = (unsigned)g[2];
    config.blockDimX = k->block[0];
    config.blockDimY = k->block[1];
    config.blockDimZ = k->block[2];
    config.sharedMemBytes = k->smem;
    config.hStream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    r = cuLaunchKernelEx(&config, gemmc_functions[index], params, 0);
    if (r != CUDA_SUCCESS) {
      gemmc_add_error("Kernel \\"%s\\": grid [%lld, %lld, %lld] (pdl):", k->name, g[0], g[1],
                      g[2]);
      return gemmc_cuda_failed("cuLaunchKernelEx", r);
    }
    return GEMMC_OK;
  }
#endif
  r = cuLaunchKernel(gemmc_functions[index], (unsigned)g[0], (unsigned)g[1], (unsigned)g[2],
                     k->block[0], k->block[1], k->block[2], k->smem, stream, params, 0);
  if (r != CUDA_SUCCESS) {
    gemmc_add_error("Kernel \\"%s\\": grid [%lld, %lld, %lld]:", k->name, g[0], g[1], g[2]);
    return gemmc_cuda_failed("cuLaunchKernel", r);
  }
  return GEMMC_OK;
}
`;
