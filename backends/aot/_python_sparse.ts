/**
 * The structured-sparse part of the Python artefact (DESIGN §6.3, issue 21):
 * `compress_sparse` and `decompress_sparse`, the Python side of
 * numerics/sparse_compress.ts `compressSparse` / `pruneSparse` / `decompressSparse`.
 * They write the canonical format that module's header defines, byte for
 * byte (tests/python_sparse_test.ts compares them), with the same pattern,
 * tie and padding rules and the same messages (the Python errors say
 * `prune=True` where the Deno one says `prune: true`).
 *
 * The Python API (numpy needed, imported when called; torch optional, imported
 * only for a torch input):
 *
 * - `compress_sparse(a, dtype, prune=False) -> (values, meta)`: `a` is a dense
 *   `[M, K]` or `[L, M, K]` A (any strides; read as row-major, K the last
 *   axis), `dtype` a gemmc name (`"f16"`, `"bf16"`, `"f32"`, `"tf32"`, `"s8"`,
 *   `"u8"`, `"s4"`, `"u4"`). `a`'s element type: float16 (f16); numpy uint16
 *   bit patterns or torch bfloat16 (bf16); float32 (f32, tf32; tf32 is not
 *   rounded, the values are kept as given); int8 (s8); uint8 (u8); int8 or
 *   uint8 holding one unpacked element each (s4: -8..7, u4: 0..15). `values`:
 *   the kept elements `[.., M, K/2]` in `a`'s element type, or for s4/u4 the
 *   packed bytes `[.., M, K/4]` uint8 (two elements a byte, the lower index in
 *   the low nibble). `meta`: the canonical metadata `[.., M, ceil(K/group/8)]`,
 *   numpy uint32, or for a torch input torch int32 holding the same bits
 *   (older torch has no uint32). A torch input is read on the CPU and the
 *   results come back as torch tensors on its device. Without `prune`, a
 *   matrix that breaks the pattern raises `SparsePatternError` (a ValueError:
 *   the count and the first 8 groups, as batch, row, group, columns and
 *   nonzeros; also in `.count` and `.violations`); with `prune=True` each
 *   group keeps its largest magnitudes (a pair's is its sum, NaN ranks
 *   highest, ties go to the lower index) and the rest count as zero.
 * - `decompress_sparse(values, meta, dtype, K) -> dense`: the inverse: `values`
 *   and `meta` as `compress_sparse` returns them (`meta` uint32 or int32), the
 *   dense `[.., M, K]` in the values' element type (bf16 numpy: uint16 bits),
 *   dropped positions +0; s4 comes back as int8, u4 as uint8, one element each.
 *   A torch `values` gives a torch tensor on its device. A nibble that is not
 *   meaningful for `dtype` raises ValueError naming its row and group.
 *
 * Other failures (an unknown dtype, K not a multiple of the group, a wrong
 * element type or shape, an s4/u4 element out of range) raise ValueError or
 * TypeError before anything is computed.
 *
 * @module
 */

/**
 * The Python functions of structured-sparse A operands (module level; no
 * tables needed: the text runs on its own, as tests/python_sparse_test.ts runs
 * it).
 *
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { PYTHON_SPARSE } from "./_python_sparse.ts";
 * ok(PYTHON_SPARSE.includes("def compress_sparse(a, dtype, prune=False):"));
 * ok(PYTHON_SPARSE.includes("def decompress_sparse(values, meta, dtype, K):"));
 * ```
 */
export const PYTHON_SPARSE = String.raw`

# Structured-sparse A (numerics/sparse.ts): (elements per group, elements per unit, units kept).
_SPARSE_GROUPS = {
    "f16": (4, 1, 2), "bf16": (4, 1, 2), "f32": (2, 1, 1), "tf32": (2, 1, 1),
    "s8": (4, 1, 2), "u8": (4, 1, 2), "s4": (8, 2, 2), "u4": (8, 2, 2),
}
_SPARSE_PAD_NIBBLE = 0b0100
# The element types of a dense A (and of the kept values but for s4/u4), numpy names.
_SPARSE_ELEMENTS = {
    "f16": ("float16",), "bf16": ("uint16",), "f32": ("float32",), "tf32": ("float32",),
    "s8": ("int8",), "u8": ("uint8",), "s4": ("int8", "uint8"), "u4": ("int8", "uint8"),
}
_SPARSE_INT_RANGES = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15)}


class SparsePatternError(ValueError):
    """A dense A that breaks its dtype's sparse pattern (compress_sparse without prune).

    count: the groups that break it; violations: the first of them (at most 8,
    in storage order), dicts of batch, row, group, col (its first column) and
    nonzeros (elements; pairs for s4/u4).
    """

    def __init__(self, dtype, count, violations):
        elements, unit = _SPARSE_GROUPS[dtype][:2]
        what = "nonzero pairs" if unit == 2 else "nonzeros"
        where = []
        for v in violations:
            b = "batch %d " % v["batch"] if v["batch"] else ""
            where.append("%srow %d group %d (cols %d..%d): %d %s" % (
                b, v["row"], v["group"], v["col"], v["col"] + elements - 1, v["nonzeros"], what))
        ValueError.__init__(
            self,
            "A (%s) breaks the sparse pattern %s along K in %d group%s; first: %s%s "
            "(prune=True keeps the largest magnitudes instead)" % (
                dtype, _sparse_pattern_name(dtype), count, "" if count == 1 else "s",
                "; ".join(where), "; ..." if count > len(violations) else ""))
        self.dtype = dtype
        self.count = count
        self.violations = violations


def _sparse_np():
    try:
        import numpy
    except ImportError:
        raise ImportError("compress_sparse and decompress_sparse need numpy")
    return numpy


def _sparse_group(dtype):
    g = _SPARSE_GROUPS.get(dtype)
    if g is None:
        raise ValueError("%s cannot be a sparse operand; mma.sp takes %s" % (
            dtype, ", ".join(_SPARSE_GROUPS)))
    return g


def _sparse_pattern_name(dtype):
    elements, unit, kept = _SPARSE_GROUPS[dtype]
    if unit == 2:
        return "4:8 in pairs (at most 2 nonzero pairs in every aligned group of 8)"
    if kept == 1:
        return "1:2 (at most 1 nonzero in every aligned pair)"
    return "2:4 (at most 2 nonzeros in every aligned group of 4)"


def _sparse_check_k(K, dtype):
    elements = _SPARSE_GROUPS[dtype][0]
    if isinstance(K, bool) or not isinstance(K, int) or K < 0:
        raise ValueError("K must be a non-negative integer, not %r" % (K,))
    if K % elements != 0:
        raise ValueError("K (cols) = %d is not a multiple of %d, the %s sparse group (%s)" % (
            K, elements, dtype, _sparse_pattern_name(dtype)))


def _sparse_host(x, name, allowed, label):
    """(numpy array, restore) of a numpy array or torch tensor.

    allowed: numpy element type names (uint16: bf16 bits, a torch bfloat16; uint32: also
    int32 bits). restore(numpy result) gives a result of the caller's kind: numpy as is;
    for torch a tensor on x's device (uint16 bits as bfloat16, uint32 as int32 bits).
    """
    np = _sparse_np()
    if type(x).__module__.split(".")[0] == "torch":
        import torch
        kind = str(x.dtype).replace("torch.", "")
        need = ["bfloat16" if e == "uint16" else "int32" if e == "uint32" else e for e in allowed]
        if kind not in need:
            raise TypeError("%s has element type torch.%s: %s needs %s" % (
                name, kind, label, " or ".join("torch." + e for e in need)))
        t = x.detach().cpu().contiguous()
        if kind == "bfloat16":
            arr = t.view(torch.int16).numpy().view(np.uint16)
        elif kind == "int32":
            arr = t.numpy().view(np.uint32)
        else:
            arr = t.numpy()
        device = x.device

        def restore(r):
            r = np.ascontiguousarray(r)
            if r.dtype == np.uint16:
                return torch.from_numpy(r.view(np.int16)).view(torch.bfloat16).to(device)
            if r.dtype == np.uint32:
                return torch.from_numpy(r.view(np.int32)).to(device)
            return torch.from_numpy(r).to(device)
    elif isinstance(x, np.ndarray):
        kind = x.dtype.name
        need = list(allowed) + (["int32"] if "uint32" in allowed else [])
        if kind not in need:
            raise TypeError("%s has element type %s: %s needs %s" % (
                name, kind, label,
                " or ".join("uint16 (bf16 bits)" if e == "uint16" else e for e in need)))
        arr = x.view(np.uint32) if kind == "int32" else x

        def restore(r):
            return r
    else:
        raise TypeError("%s is a %s: a numpy array or a torch tensor is needed" % (
            name, type(x).__name__))
    return np.ascontiguousarray(arr), restore


def _sparse_shape(arr, name, want):
    """(L, M, last extent, batched) of a [M, X] or [L, M, X] array."""
    if arr.ndim not in (2, 3):
        raise ValueError("%s has shape %s: %s is needed" % (
            name, list(arr.shape), " or ".join("[%s]" % w for w in want)))
    if arr.ndim == 3:
        return arr.shape[0], arr.shape[1], arr.shape[2], True
    return 1, arr.shape[0], arr.shape[1], False


def _sparse_nonzero(x, dtype):
    """Whether each element is nonzero as stored (-0 is zero, NaN is not)."""
    if dtype == "bf16":
        return (x & 0x7FFF) != 0
    return x != 0


def _sparse_magnitudes(x, dtype):
    """|element| as float64, NaN as infinity (pruneSparse's ranking)."""
    np = _sparse_np()
    if dtype == "bf16":
        v = (x.astype(np.uint32) << 16).view(np.float32)
    else:
        v = x
    m = np.abs(v.astype(np.float64))
    m[np.isnan(m)] = np.inf
    return m


def compress_sparse(a, dtype, prune=False):
    """numerics/sparse_compress.ts compressSparse: (kept values, canonical metadata) of a dense A.

    a: [M, K] or [L, M, K], numpy or torch (bf16: numpy uint16 bits or torch bfloat16;
    s4/u4: int8 or uint8, one element each). Returns values [.., M, K/2] in a's element
    type (s4/u4: [.., M, K/4] uint8, two a byte, low nibble first) and meta
    [.., M, ceil(K/group/8)] uint32 (torch: int32 bits). prune=True keeps the largest
    magnitudes of each group instead of raising SparsePatternError.
    """
    np = _sparse_np()
    elements, unit, kept = _sparse_group(dtype)
    x, restore = _sparse_host(a, "a", _SPARSE_ELEMENTS[dtype], dtype)
    L, M, K, batched = _sparse_shape(x, "a", ("M, K", "L, M, K"))
    _sparse_check_k(K, dtype)
    R, G, U = L * M, K // elements, elements // unit
    x = x.reshape(R, K)
    if dtype in _SPARSE_INT_RANGES:
        lo, hi = _SPARSE_INT_RANGES[dtype]
        wide = x.astype(np.int16)
        out = np.flatnonzero((wide < lo) | (wide > hi))
        if out.size:
            i = int(out[0])
            r = i // K if K else 0
            raise ValueError("Element %d (row %d, col %d) is %d: not a %s (an integer in %d..%d)" % (
                i, r, i - r * K, int(wide.reshape(-1)[i]), dtype, lo, hi))
    nz = _sparse_nonzero(x, dtype).reshape(R, G, U, unit).any(axis=3)
    if prune:
        mag = _sparse_magnitudes(x, dtype).reshape(R, G, U, unit).sum(axis=3)
        # Largest magnitude first, the lower index first among equals (a stable sort).
        order = np.argsort(-mag, axis=2, kind="stable")
        dropped = np.zeros((R, G, U), dtype=bool)
        np.put_along_axis(dropped, order[:, :, kept:], True, axis=2)
        x = x.reshape(R, G, U, unit).copy()
        x[dropped] = 0
        x = x.reshape(R, K)
        nz &= ~dropped
    else:
        bad = nz.sum(axis=2) > kept
        count = int(bad.sum())
        if count:
            rows, groups = np.nonzero(bad)
            first = []
            for r, q in zip(rows[:8].tolist(), groups[:8].tolist()):
                first.append({"batch": r // M, "row": r % M, "group": q, "col": q * elements,
                              "nonzeros": int(nz[r, q].sum())})
            raise SparsePatternError(dtype, count, first)
    # Kept units: the nonzero ones, then the lowest-index zero ones, as many as needed.
    fill = kept - nz.sum(axis=2, keepdims=True)
    keep = nz | (~nz & (np.cumsum(~nz, axis=2) <= fill))
    idx = np.nonzero(keep.reshape(R * G, U))[1].reshape(R, G, kept)
    gather = np.broadcast_to(idx[:, :, :, None], (R, G, kept, unit))
    values = np.take_along_axis(x.reshape(R, G, U, unit), gather, axis=2).reshape(R, K // 2)
    if kept == 1:
        nibbles = np.where(idx[:, :, 0] == 0, 0b0100, 0b1110).astype(np.uint32)
    else:
        nibbles = (idx[:, :, 0] | (idx[:, :, 1] << 2)).astype(np.uint32)
    W = -(-G // 8)
    padded = np.full((R, W * 8), _SPARSE_PAD_NIBBLE, dtype=np.uint32)
    padded[:, :G] = nibbles
    shifts = (4 * np.arange(8, dtype=np.uint32)).astype(np.uint32)
    meta = np.bitwise_or.reduce(padded.reshape(R, W, 8) << shifts, axis=2).astype(np.uint32)
    meta = meta.reshape(R, W)
    if unit == 2:
        nib = values.astype(np.uint8) & 0xF
        values = nib[:, 0::2] | (nib[:, 1::2] << 4)
    lead = (L, M) if batched else (M,)
    return (restore(values.reshape(lead + (values.shape[1],))),
            restore(meta.reshape(lead + (W,))))


def decompress_sparse(values, meta, dtype, K):
    """numerics/sparse_compress.ts decompressSparse: the dense A of compress_sparse's (values, meta).

    values: [.., M, K/2] (s4/u4: [.., M, K/4] uint8); meta: [.., M, ceil(K/group/8)]
    uint32 or int32. Returns [.., M, K] in the values' element type (bf16 numpy: uint16
    bits; s4: int8; u4: uint8), dropped positions +0; a torch values gives torch.
    """
    np = _sparse_np()
    elements, unit, kept = _sparse_group(dtype)
    _sparse_check_k(K, dtype)
    packed = unit == 2
    v, restore = _sparse_host(values, "values", ("uint8",) if packed else _SPARSE_ELEMENTS[dtype],
                              dtype)
    m, _ = _sparse_host(meta, "meta", ("uint32",), "the metadata")
    width = K // 4 if packed else K // 2
    L, M, X, batched = _sparse_shape(v, "values", ("M, %d" % width, "L, M, %d" % width))
    R, G, U = L * M, K // elements, elements // unit
    W = -(-G // 8)
    want = ((L, M) if batched else (M,))
    if X != width:
        raise ValueError("values has shape %s: %s expected for K = %d (%s)" % (
            list(v.shape), list(want + (width,)), K, dtype))
    if tuple(m.shape) != want + (W,):
        raise ValueError("meta has shape %s: %s expected for K = %d (%s)" % (
            list(m.shape), list(want + (W,)), K, dtype))
    shifts = (4 * np.arange(8, dtype=np.uint32)).astype(np.uint32)
    nibbles = ((m.reshape(R, W, 1) >> shifts) & 0xF).reshape(R, W * 8)[:, :G]
    if kept == 1:
        ok = (nibbles == 0b0100) | (nibbles == 0b1110)
        idx = np.where(nibbles == 0b0100, 0, 1)[:, :, None]
    else:
        i0, i1 = nibbles & 3, nibbles >> 2
        ok = i0 < i1
        idx = np.stack([i0, i1], axis=2).astype(np.intp)
    if not ok.all():
        r, q = [int(e[0]) for e in np.nonzero(~ok)]
        raise ValueError("metadata of row %d%s, group %d: 0b%s is not a meaningful %s index" % (
            r % M, " (batch %d)" % (r // M) if L > 1 else "", q,
            format(int(nibbles[r, q]), "04b"), dtype))
    v = v.reshape(R, X)
    if packed:
        v = np.stack([v & 0xF, v >> 4], axis=2).reshape(R, K // 2)
        if dtype == "s4":
            v = ((v.astype(np.int16) ^ 8) - 8).astype(np.int8)
    dense = np.zeros((R, G, U, unit), dtype=v.dtype)
    scatter = np.broadcast_to(idx.astype(np.intp)[:, :, :, None], (R, G, kept, unit))
    np.put_along_axis(dense, scatter, v.reshape(R, G, kept, unit), axis=2)
    return restore(dense.reshape(want + (K,)))
`;
