/**
 * The grouped-kernel part of the Python artefact's runtime (DESIGN §6.2): the
 * Python text backends/aot/_python_runtime.ts appends to its own. A grouped
 * kernel's table in `_KERNELS` is the launch contract of one problem (the
 * ordinary kernel's tensors, dims and strides; backends/aot/_group.ts), its ABI
 * (`params`: the table, the count, the scalars) and the table's layout
 * (`group`: `entryBytes` and the fields). `_grouped` checks every problem as
 * `_launch` checks an ordinary launch (each message "Problem i: ..."), `_moe`
 * builds the problems of the mixture-of-experts form from row offsets; both
 * write the table as backends/ptx/group_table.ts does, upload it into a device
 * buffer kept per device and stream, and launch on the persistent grid
 * `[min(tiles, SMs x blocks per SM), 1, 1]`.
 *
 * @module
 */

/** The Python functions of grouped kernels (module level; called by the generated functions). */
export const PYTHON_GROUPED = String.raw`

import struct as _struct


def _group_table(k, entries):
    """backends/ptx/group_table.ts groupTable: (bytearray, total tiles) of the problems.

    entries: (sizes with every dim and stride, addresses by tensor name), in order.
    """
    g = k["group"]
    plan = k["gridPlan"]
    table = bytearray(len(entries) * g["entryBytes"])
    tiles = 0
    for i, (sizes, addresses) in enumerate(entries):
        base = i * g["entryBytes"]
        for f in g["fields"]:
            if f["kind"] == "tiles_before":
                v = tiles
            elif f["kind"] == "tensor":
                v = addresses[f["name"]]
            else:
                v = sizes[f["name"]]
            _struct.pack_into("<Q" if f["ptx"] == "u64" else "<I", table, base + f["offset"], v)
        tiles += (-(-_dim(plan["m"], sizes) // plan["tileM"])
                  * -(-_dim(plan["n"], sizes) // plan["tileN"]))
        if tiles > 0xFFFFFFFF:
            raise GemmcLaunchError(k["name"], [f"The problems have {tiles} tiles: over 2^32 - 1"])
    return table, tiles


def _table_buffer(lib, device, handle, n):
    """A device buffer of at least n bytes for the tables of this device and stream, kept.

    A launch's table copy runs on its stream, after the kernels before it there, so
    launches on one stream share the buffer. A grown buffer's predecessor is kept
    alive (a kernel queued before may still read it; tables are small).
    """
    key = (lib, device, handle)
    held = _state["tables"].get(key)
    if held is None or held[1] < n:
        size = max(n, 2 * held[1] if held is not None else 4096)
        t = {"shape": [size], "bits": 8, "dtype": "u8", "layout": "row"}
        x = _allocate(t, lib, device, {})
        retired = (held[2] + [held[0]]) if held is not None else []
        held = (x, size, retired, None)
        _state["tables"][key] = held
    return held


def _launch_table(k, lib, device, stream, entries, scalars, pdl=False):
    """Writes the table, uploads it on the stream and launches on the persistent grid (with
    pdl: as a programmatic dependent)."""
    table, tiles = _group_table(k, entries)
    handle = _stream_handle(stream, lib, device)
    backend = _backend()
    f = backend.function(device, k["entry"], k["dynamicSmemBytes"])
    threads = k["block"][0] * k["block"][1] * k["block"][2]
    rkey = (backend.name, device, k["entry"])
    with _lock:
        if rkey not in _state["resident"]:
            _state["resident"][rkey] = backend.resident_blocks(device, f, threads,
                                                               k["dynamicSmemBytes"])
        resident = _state["resident"][rkey]
        held = _table_buffer(lib, device, handle, max(1, len(table)))
        address = _view("group_table", held[0], []).address
        buf = table if table else bytearray(1)
        host = (_ctypes.c_char * len(buf)).from_buffer(buf)
        # The host bytes stay referenced until the next table of this stream.
        _state["tables"][(lib, device, handle)] = (held[0], held[1], held[2], host)
        if table:
            backend.copy_htod(device, address, _ctypes.addressof(host), len(table), handle)
    values = []
    for kind, name, ptx in k["params"]:
        if kind == "table":
            v = address
        elif kind == "count":
            v = len(entries)
        else:
            v = scalars[name] if ptx != "s32" else int(scalars[name])
        values.append(_PARAM_CTYPES[ptx](v))
    array = (_ctypes.c_void_p * len(values))(
        *[_ctypes.cast(_ctypes.pointer(v), _ctypes.c_void_p) for v in values])
    grid = (max(1, min(tiles, resident)), 1, 1)
    backend.launch(device, f, grid, k["block"], k["dynamicSmemBytes"], handle,
                   _ctypes.addressof(array), pdl)
    del values


def _grouped(k, problems, stream, given, pdl=False):
    """kernel.grouped(problems): checks every problem, builds the table, launches.

    Returns each problem's output (allocated where the problem's dict has none).
    """
    if pdl:
        _require_pdl(k, _backend())
    bad = []
    scalars = _scalar_values(k, given, bad)
    _scalar_violations(k, scalars, bad)
    output = [t for t in k["tensors"] if t["output"]][0]
    names = [t["name"] for t in k["tensors"]]
    try:
        problems = list(problems)
    except TypeError:
        raise GemmcLaunchError(k["name"], [f"The problems are a {type(problems).__name__}: a "
                                           "list of dicts of tensors by name is needed"])
    first = None
    checked = []
    for i, p in enumerate(problems):
        pb = []
        if not isinstance(p, dict):
            bad.append(f"Problem {i}: is a {type(p).__name__}: a dict of tensors by name "
                       f"({', '.join(names)}) is needed")
            continue
        for n in p:
            if n not in names:
                pb.append(f'Kernel "{k["name"]}" has no tensor "{n}": its tensors are '
                          + ", ".join(names))
        args = dict((n, x) for n, x in p.items() if x is not None and n in names)
        for t in k["tensors"]:
            if not t["output"] and args.get(t["name"]) is None:
                pb.append(f'No tensor given for "{t["name"]}"')
        views = _tensor_views(k, args, pb)
        for n, v in views.items():
            if first is None:
                first = (i, n, v)
            elif v.lib != first[2].lib:
                pb.append(f'Tensor "{n}" is a {v.lib} tensor but tensor "{first[1]}" of problem '
                          f'{first[0]} is a {first[2].lib} one')
            elif v.device != first[2].device:
                pb.append(f'Tensor "{n}" is on cuda:{v.device} but tensor "{first[1]}" of '
                          f'problem {first[0]} is on cuda:{first[2].device}')
        sizes = _sizes(k, views, pb)
        _stride_values(k, views, sizes, pb)
        if not pb:
            strided = set(t["name"] for t in k["tensors"] if t.get("strides") is not None)
            bindings = dict((n, (v.address, None if n in strided else v.bytes))
                            for n, v in views.items())
            pending = () if output["name"] in args else (output["name"],)
            pb += _violations(k, sizes, bindings, None, None, pending)
        bad += [f"Problem {i}: {m}" for m in pb]
        checked.append((views, sizes))
    if bad:
        raise GemmcLaunchError(k["name"], bad)
    if first is None:
        return []  # no problem: nothing to launch
    lib, device = first[2].lib, first[2].device
    outs = []
    entries = []
    for views, sizes in checked:
        sizes = _with_stride_defaults(k, sizes)
        if output["name"] not in views:
            if output.get("strides") is not None:
                out = _allocate_strided(output, lib, device, sizes)
            else:
                out = _allocate(output, lib, device, sizes)
            views[output["name"]] = _view(output["name"], out, bad)
        outs.append(views[output["name"]].x)
        entries.append((sizes, dict((n, v.address) for n, v in views.items())))
    try:
        _stream_handle(stream, lib, device)
    except (TypeError, ValueError):
        raise GemmcLaunchError(k["name"], [f"The stream is {stream!r}: a torch or CuPy stream "
                                           "or a CUstream handle is needed"])
    _launch_table(k, lib, device, stream, entries, scalars, pdl)
    return outs


def _row_axis(t, k):
    """The axis of t's shape that is the grid plan's M dimension (None: none)."""
    m = k["gridPlan"]["m"]
    return next((i for i, d in enumerate(t["shape"]) if d == m), None)


def _moe(k, a, b, d, offs, stream, given, pdl=False):
    """kernel.moe(a, b, d, offs): the problems of one packed operand by row offsets."""
    if pdl:
        _require_pdl(k, _backend())
    bad = []
    name = k["name"]
    scalars = _scalar_values(k, given, bad)
    _scalar_violations(k, scalars, bad)
    roles = dict((t["role"], t) for t in k["tensors"])
    if sorted(roles) != ["A", "B", "D"] or len(k["tensors"]) != 3:
        raise GemmcLaunchError(name, [f'Kernel "{name}": moe() takes a kernel whose tensors '
                                      "are A, B and D alone; use grouped()"])
    tA, tB, tD = roles["A"], roles["B"], roles["D"]
    for t in (tA, tD):
        r = _row_axis(t, k)
        if r is None or len(t["shape"]) != 2 or _contiguous_axis(t, 2) == r:
            raise GemmcLaunchError(name, [f'Tensor "{t["name"]}": moe() needs it [M, ...] with '
                                          "rows not contiguous (row-major)"])
    if hasattr(offs, "tolist"):
        offs = offs.tolist()  # a GPU tensor is copied to the host (and waits for it)
    try:
        offs = [int(o) if float(o).is_integer() else o for o in offs]
    except (TypeError, ValueError):
        raise GemmcLaunchError(name, [f"offs is {offs!r}: a list or tensor of integers is "
                                      "needed"])
    args = {tA["name"]: a}
    if d is not None:
        args[tD["name"]] = d
    views = _tensor_views(k, args, bad)
    wv = _view(tB["name"], b, bad)
    experts = 0
    if wv is not None:
        if len(wv.shape) != len(tB["shape"]) + 1:
            bad.append(f'Tensor "{tB["name"]}" has shape {list(wv.shape)}; moe() needs '
                       f'[experts, {", ".join(str(x) for x in tB["shape"])}]')
            wv = None
        else:
            experts = wv.shape[0]
            w0 = _View(b, wv.lib, wv.dtype, wv.shape[1:], wv.strides[1:], wv.address, wv.device,
                       wv.itemsize)
            if _check_view(tB, w0, bad):
                first = next(iter(views.values()), None)
                if first is not None and (first.lib != w0.lib or first.device != w0.device):
                    bad.append(f'Tensor "{tB["name"]}" is a {w0.lib} tensor on cuda:{w0.device} '
                               f'but tensor "{tA["name"]}" is a {first.lib} one on '
                               f'cuda:{first.device}')
                else:
                    views[tB["name"]] = w0
            es = wv.strides[0]
            if experts > 1 and (es < 0 or (es * wv.itemsize) % tB["alignBytes"] != 0):
                bad.append(f'Tensor "{tB["name"]}" has expert stride {es}: it must be a '
                           f'non-negative multiple of {tB["alignBytes"]} bytes')
    sizes = _sizes(k, views, bad)
    _stride_values(k, views, sizes, bad)
    m = k["gridPlan"]["m"]
    rows = sizes.get(m)
    if wv is not None and len(offs) != experts:
        bad.append(f'offs has {len(offs)} entries but tensor "{tB["name"]}" holds {experts} '
                   "experts")
    prev = 0
    for g, o in enumerate(offs):
        if not isinstance(o, int) or isinstance(o, bool):
            bad.append(f"Problem {g}: offs[{g}]={_js(o)} is not an integer")
        elif o < prev:
            bad.append(f"Problem {g}: offs[{g}]={o} is less than the previous end row {prev} "
                       "(offs are cumulative end rows)")
        elif rows is not None and o > rows:
            bad.append(f'Problem {g}: offs[{g}]={o} is beyond the {rows} rows of tensor '
                       f'"{tA["name"]}"')
        else:
            prev = o
    if not bad:
        # One check of the whole operands covers every problem's slice (the rows of one).
        strided = set(t["name"] for t in k["tensors"] if t.get("strides") is not None)
        bindings = dict((n, (v.address, None if n in strided or n == tB["name"] else v.bytes))
                        for n, v in views.items())
        pending = () if d is not None else (tD["name"],)
        bad += _violations(k, sizes, bindings, None, None, pending)
        if d is not None and experts > 0 and not bad:
            lo = wv.address
            hi = lo + _span_bytes(wv)
            dv = views[tD["name"]]
            dlo = dv.address
            dhi = dlo + _tensor_bytes(tD, _with_stride_defaults(k, sizes))
            if dlo < hi and lo < dhi and dhi > dlo:
                bad.append(f'Output "{tD["name"]}" overlaps input "{tB["name"]}"')
    if bad:
        raise GemmcLaunchError(name, bad)
    lib, device = wv.lib, wv.device
    sizes = _with_stride_defaults(k, sizes)
    if d is None:
        d = _allocate(tD, lib, device, sizes)
        views[tD["name"]] = _view(tD["name"], d, bad)
    ra, rd = _row_axis(tA, k), _row_axis(tD, k)
    av, dv = views[tA["name"]], views[tD["name"]]
    entries = []
    start = 0
    for g, end in enumerate(offs):
        s = dict(sizes)
        s[m] = end - start
        entries.append((s, {
            tA["name"]: av.address + start * av.strides[ra] * av.itemsize,
            tB["name"]: wv.address + g * wv.strides[0] * wv.itemsize,
            tD["name"]: dv.address + start * dv.strides[rd] * dv.itemsize,
        }))
        start = end
    try:
        _stream_handle(stream, lib, device)
    except (TypeError, ValueError):
        raise GemmcLaunchError(name, [f"The stream is {stream!r}: a torch or CuPy stream or a "
                                      "CUstream handle is needed"])
    if entries:
        _launch_table(k, lib, device, stream, entries, scalars, pdl)
    return d


def _span_bytes(v):
    """Bytes from a view's first element to its last, plus one element."""
    if 0 in v.shape:
        return 0
    return (1 + sum((e - 1) * abs(s) for e, s in zip(v.shape, v.strides))) * v.itemsize
`;
