/**
 * The strides part of the Python artefact's runtime (DESIGN.md §6.1): the
 * Python text backends/aot/_python_runtime.ts appends to its own. A tensor
 * declared with `strides(...)` is any view whose contiguous dimension has
 * stride 1; its other strides are the `.u64` stride values. The contract's
 * stride rules (backends/ptx/contract.ts `strideViolations`, `viewValues`,
 * `withStrideDefaults`, `sameStrides`) are ported here with the same
 * messages; tests/aot_python_test.ts compares them.
 *
 * @module
 */

/** The Python functions of strided tensors (module level; called by the runtime). */
export const PYTHON_STRIDES = String.raw`

def _check_strided(t, v, bad):
    """A tensor declared with strides: any view whose contiguous dimension has stride 1."""
    axis = _view_axes(t, len(v.shape))[2]
    if v.shape[axis] != 1 and v.strides[axis] != 1:
        bad.append(f'Tensor "{t["name"]}" has strides {list(v.strides)} for shape '
                   f'{list(v.shape)}: declared {t["layout"]} strides('
                   f'{", ".join(str(e) for e in t["strides"])}), its dimension {axis} must be '
                   'contiguous (stride 1)')
        return False
    return True


def _view_axes(t, rank):
    """The axes of a TensorView's batch, rows and contiguous dimension (None: none)."""
    w = t["view"]
    contiguous = _contiguous_axis(t, rank) if w["rows"] is not None else rank - 1
    rows = None if w["rows"] is None else (rank - 1 if contiguous == rank - 2 else rank - 2)
    return (0 if w["batch"] is not None else None), rows, contiguous


def _stride_values(k, views, sizes, bad):
    """The stride values the strided views give (in the kernel's elements), into sizes.

    An axis of extent 1 gives none (its stride is never used); a literal or a
    dimension's stride must equal it; two tensors naming one stride must agree.
    """
    origin = {}
    dims = set(d["name"] for d in k["dims"])
    for t in k["tensors"]:
        v = views.get(t["name"])
        if v is None or t.get("strides") is None:
            continue
        w = t["view"]
        pack = 8 // t["bits"] if t["bits"] < 8 else 1
        b_axis, r_axis, _ = _view_axes(t, len(v.shape))
        for what, entry, axis in (("matrix", w["matrixStride"], r_axis),
                                  ("batch", w["batchStride"], b_axis)):
            if entry is None or axis is None or v.shape[axis] <= 1:
                continue
            value = v.strides[axis] * pack
            want = entry if isinstance(entry, int) else sizes.get(entry) if entry in dims else None
            if want is not None and value != want:
                declared = str(entry) if isinstance(entry, int) else f"{entry}={want}"
                bad.append(f'Tensor "{t["name"]}" has {what} stride {value} where it is declared '
                           f'{declared}')
            elif entry in origin and sizes[entry] != value:
                bad.append(f'Tensor "{t["name"]}" gives {what} stride {entry}={value} but tensor '
                           f'"{origin[entry]}" gives {entry}={sizes[entry]}')
            elif want is None and entry not in origin:
                sizes[entry] = value
                origin[entry] = t["name"]


def _view_values(w, sizes):
    """contract.ts viewValues: (batch, rows, contiguous, batch stride, matrix stride)."""
    cont = _dim(w["contiguous"], sizes)
    rows = 1 if w["rows"] is None else _dim(w["rows"], sizes)
    ms = None if w["matrixStride"] is None else _dim(w["matrixStride"], sizes)
    ms = cont if ms is None else ms
    bs = None if w["batchStride"] is None else _dim(w["batchStride"], sizes)
    batch = 1 if w["batch"] is None else _dim(w["batch"], sizes)
    return batch, rows, cont, rows * ms if bs is None else bs, ms


def _with_stride_defaults(k, sizes):
    """contract.ts withStrideDefaults: every stride left out takes its dense value."""
    if all(s["name"] in sizes for s in k["strides"]):
        return sizes
    out = dict(sizes)
    for t in k["tensors"]:
        w = t["view"]
        if w is None:
            continue
        cont = _dim(w["contiguous"], out)
        if isinstance(w["matrixStride"], str) and w["matrixStride"] not in out:
            out[w["matrixStride"]] = cont
        if isinstance(w["batchStride"], str) and w["batchStride"] not in out:
            rows = 1 if w["rows"] is None else _dim(w["rows"], out)
            ms = cont if w["matrixStride"] is None else _dim(w["matrixStride"], out)
            out[w["batchStride"]] = rows * ms
    return out


def _label(d, v):
    return str(v) if isinstance(d, int) else f"{d}={v}"


def _stride_violations(t, sizes, bad):
    """contract.ts strideViolations: a strided tensor's broken stride rules."""
    w = t["view"]
    batch, rows, cont, sb, sm = _view_values(w, sizes)
    a = t["alignElems"]
    n = t["name"]
    if w["matrixStride"] is not None:
        ms = _label(w["matrixStride"], sm)
        if sm < cont:
            bad.append(f'Tensor "{n}" has matrix stride {ms}, less than its contiguous extent '
                       + _label(w["contiguous"], cont))
        if sm % a != 0:
            bad.append(f'Tensor "{n}" declares align {a} but its matrix stride {ms} is not a '
                       f'multiple of {a}')
    if w["batchStride"] is not None:
        bs = _label(w["batchStride"], sb)
        need = rows * sm
        if sb < need and (sb != 0 or t["output"]):
            what = "its row length" if w["rows"] is None else "rows x matrix stride"
            bad.append(f'Tensor "{n}" has batch stride {bs}; '
                       + (f"an output's must be at least {need}" if t["output"]
                          else f"it must be 0 or at least {need}") + f" ({what})")
        if sb % a != 0:
            bad.append(f'Tensor "{n}" declares align {a} but its batch stride {bs} is not a '
                       f'multiple of {a}')


def _same_strides(c, d, sizes):
    """contract.ts sameStrides: whether C (at D's address) lies as D does."""
    if c.get("strides") is None and d.get("strides") is None:
        return True
    if c["view"] is None or d["view"] is None:
        return c["view"] is None and d["view"] is None
    x = _view_values(c["view"], sizes)
    y = _view_values(d["view"], sizes)
    return x[4] == y[4] and (x[0] <= 1 or x[3] == y[3])


def _allocate_strided(t, lib, device, sizes):
    """An output declared with strides: a view of a fresh buffer with its stride values."""
    rank = len(t["shape"])
    pack = 8 // t["bits"] if t["bits"] < 8 else 1
    batch, rows, cont, sb, sm = _view_values(t["view"], sizes)
    b_axis, r_axis, c_axis = _view_axes(t, rank)
    shape = [_dim(d, sizes) for d in t["shape"]]
    shape[c_axis] //= pack
    strides = [0] * rank
    strides[c_axis] = 1
    if r_axis is not None:
        strides[r_axis] = sm // pack
    if b_axis is not None:
        strides[b_axis] = sb // pack
    n = 0 if 0 in shape else 1 + sum((e - 1) * s for e, s in zip(shape, strides))
    dtype = _DTYPES[t["dtype"]][lib][0]
    if lib == "torch":
        torch = _torch()
        return torch.empty_strided(tuple(shape), tuple(strides), dtype=getattr(torch, dtype),
                                   device=f"cuda:{device}")
    cupy = _cupy()
    with cupy.cuda.Device(device):
        x = cupy.empty((max(n, 1),), dtype=dtype)
        return cupy.lib.stride_tricks.as_strided(
            x, shape=tuple(shape), strides=tuple(s * x.itemsize for s in strides))
`;
