/**
 * Programmatic dependent launch (PDL, sm_90+) in the Python artefact's runtime
 * (backends/aot/_python_runtime.ts): the Python text behind the `pdl=False` keyword of every
 * kernel function, `.grouped` and `.moe`. With `pdl=True` the cuda-python backend launches
 * through `cuLaunchKernelEx` with a `CUlaunchConfig` of the plain launch's grid, block, shared
 * memory and stream and one `CUlaunchAttribute`,
 * `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` with
 * `programmaticStreamSerializationAllowed` = 1 (as backends/cuda/launch.ts `launchPacked` with `pdl`). CuPy's
 * driver wrappers (`cupy.cuda.driver`) have no `cuLaunchKernelEx`: with the CuPy backend, and
 * with cuda-python bindings older than CUDA 11.8's, `pdl=True` raises a `RuntimeError` naming
 * the backend before anything is checked, allocated or launched (as `requirePdl`).
 * tests/python/check_fakes.py checks both against its fakes.
 *
 * @module
 */

/** The runtime's PDL functions (module level; the backends' `launch` and `_launch` call them). */
export const PYTHON_PDL = String.raw`


def _pdl_missing(backend):
    """Why the backend cannot launch with pdl (cuLaunchKernelEx), or None when it can."""
    if backend.name == "cupy":
        return ('the cupy backend lacks cuLaunchKernelEx (cupy.cuda.driver has none; '
                'set_backend("cuda-python") launches CuPy arrays with pdl)')
    names = ("cuLaunchKernelEx", "CUlaunchConfig", "CUlaunchAttribute", "CUlaunchAttributeID")
    if not all(hasattr(backend.d, n) for n in names):
        return (f"the cuda-python bindings {backend.d.__name__} lack cuLaunchKernelEx "
                "(CUDA 11.8 and later)")
    return None


def _require_pdl(k, backend):
    """Raises RuntimeError (nothing launched or allocated) unless the backend can launch
    kernel k as a programmatic dependent (backends/cuda/launch.ts requirePdl)."""
    why = _pdl_missing(backend)
    if why is not None:
        raise RuntimeError(f'Cannot launch kernel "{k["name"]}" with pdl: {why}')


def _pdl_config(d, grid, block, smem, stream):
    """cuda-python's CUlaunchConfig of a programmatic dependent launch: the plain launch's
    grid, block, dynamic shared memory and stream, and the one attribute
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, allowed (1)."""
    attr = d.CUlaunchAttribute()
    attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    config = d.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes = smem
    config.hStream = d.CUstream(stream)
    config.attrs = [attr]
    config.numAttrs = 1
    return config
`;
