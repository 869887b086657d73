"""Dask arrays filtered chunk by chunk with the bits of tilefilter.filter on the whole array.

    import dask.array as da, tilefilter.dask
    big = da.from_zarr(...)                         # H x W [x C], any chunks
    out = tilefilter.dask.filter(big, "gaussian:sigma=2", exact=True)

The overlap of Dask's map_overlap, with one or two tasks a chunk instead of about a dozen: a block's
task puts the chunk between its eight neighbours' edges (as deep as the chain's halo: rows, columns
and corners), filters that with tilefilter and keeps the chunk. Chunks up to 4 MiB are read whole by
their neighbours' tasks; larger ones have their edges cut by a task of their own, so only those edges
travel between workers. The border is tilefilter's own, synthesised where a block meets the array's
edge (no neighbour is added there), so a block at the edge sees exactly what the whole image sees; for
wrap the neighbours are taken across the array (periodic), as the whole image would wrap. An axis whose
smallest chunk is shallower than the halo, or which the halo spans, is made one chunk first (the block
is then the whole axis and tilefilter synthesises both of its edges). On the direct path (exact=True,
or any chain without 2-D kernels of 25x25 and more) the result equals tilefilter.filter(whole_array)
bit for bit. On a dask.distributed cluster each worker filters its blocks on its own devices: by default
(devices=None) its GPUs, else one CPU worker per Dask thread, since Dask already runs a block per thread.
"""
from __future__ import annotations

import functools
import itertools
from typing import Any, Optional

import numpy as np

import tilefilter
from ._chain import chain_of

# glibc settings for worker processes that filter many megabyte-sized blocks. dask.distributed starts
# its workers with MALLOC_TRIM_THRESHOLD_=65536; setting any threshold turns off glibc's moving mmap
# threshold, so every block-sized array is mapped fresh and page-faulted on first touch (on the 2-core
# VM a 1 MB concatenation took 0.67 ms instead of 0.07, a 1024² block's filtering 2.7 ms instead of
# 2.1). Give them to the nanny before the cluster starts:
#   dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENVIRON.items()})
WORKER_ENVIRON = {"MALLOC_TRIM_THRESHOLD_": 256 << 20, "MALLOC_MMAP_THRESHOLD_": 32 << 20}

# Chunks up to this size are read whole by their neighbours' tasks instead of through edges tasks.
_WHOLE_NEIGHBOUR_BYTES = 4 << 20

# Pieces an edges task returns, by the neighbour's offset (dy, dx) from the block that receives them:
# the block below a chunk receives the chunk's bottom rows, and so on.
_OFFSETS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]


@functools.lru_cache(maxsize=None)
def _block_devices() -> str:
    """GPUs when the process (a worker) has some, else one CPU worker per Dask thread."""
    try:
        if any(d["kind"] == "gpu" for d in tilefilter.devices("all")):
            return "gpu"
    except tilefilter.TileFilterError:
        pass
    return "cpu:1"


def _side(block: np.ndarray, oy: int, ox: int, dy: int, dx: int) -> np.ndarray:
    """The side of `block` that the block at offset (oy, ox) from it needs: dy rows, dx columns deep."""
    ys = slice(None) if oy == 0 else (slice(-dy, None) if oy > 0 else slice(None, dy))
    xs = slice(None) if ox == 0 else (slice(-dx, None) if ox > 0 else slice(None, dx))
    return block[ys, xs]


def _edges(block: np.ndarray, dy: int, dx: int) -> dict:
    """The parts of `block` its neighbours need, keyed by the offset of the neighbour that takes them."""
    return {(oy, ox): np.ascontiguousarray(_side(block, oy, ox, dy, dx)) for oy, ox in _OFFSETS
            if not ((oy and not dy) or (ox and not dx))}


def _filter_block(block: np.ndarray, neighbours: list, chain, border, border_value, devices, exact, dy=0,
                  dx=0) -> np.ndarray:
    """`block` between its neighbours' edges (neighbours[k]: the block at _OFFSETS[k] itself, or its
    edges task, or None), filtered, then cropped back to `block`."""
    # The neighbour at (oy, ox) hands over its side that faces this block, its own (-oy, -ox).
    edges = {(oy, ox): (n[(-oy, -ox)] if isinstance(n, dict) else _side(n, -oy, -ox, dy, dx))
             for (oy, ox), n in zip(_OFFSETS, neighbours) if n is not None}
    ys = [oy for oy in (-1, 0, 1) if oy == 0 or (oy, 0) in edges]
    xs = [ox for ox in (-1, 0, 1) if ox == 0 or (0, ox) in edges]
    grid = [[block if (oy, ox) == (0, 0) else edges[(oy, ox)] for ox in xs] for oy in ys]
    if len(grid) > 1 or len(grid[0]) > 1:  # rows along axis 1, then those along axis 0 (not channels)
        padded = np.concatenate([np.concatenate(row, axis=1) for row in grid], axis=0)
    else:
        padded = block
    top = grid[0][0].shape[0] if ys[0] == -1 else 0
    left = grid[0][0].shape[1] if xs[0] == -1 else 0
    dev = _block_devices() if devices is None else devices
    result = tilefilter.filter(padded, chain, border=border, border_value=border_value, devices=dev, exact=exact)
    return result[top:top + block.shape[0], left:left + block.shape[1]]


def filter(darr: Any, *specs: Any, preset: Optional[str] = None, kernel: Any = None, normalize: bool = False,
           border: Optional[str] = None, border_value: float = 0.0, devices: Optional[str] = None,
           exact: bool = False) -> Any:
    """A lazy Dask array: `darr` (H x W or H x W x C; uint8, uint16 or float32) filtered by the chain
    `specs` (spec strings or Chains; or `preset`, `kernel`) with tilefilter.filter's arguments. Its chunks
    are kept where each is at least as deep as the chain's halo; an axis with a shallower chunk (or, for
    wrap, one the halo spans) becomes one chunk, and so does the channel axis. The chain travels to the
    workers by its description (kernels as their numbers). devices=None: each worker's GPUs, else one CPU
    worker per Dask thread."""
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    darr = da.asarray(darr)
    chain = chain_of(specs, preset, kernel, normalize)
    left, top, right, bottom = chain.halo
    border, border_value = tilefilter._border_for(chain, border, border_value, darr.dtype)  # warned here, once
    mode = border if border is not None else chain.border
    if border is None or mode != "constant":
        border_value = chain.border_value if mode == "constant" else 0.0
    from ._host import pixel_type, shape_of
    pixel_type(darr.dtype)
    shape_of(darr.shape)
    depth = [max(top, bottom), max(left, right)]
    wrap = mode == "wrap"
    whole = {axis: -1 for axis in range(2, darr.ndim)}
    for axis in (0, 1):
        chunks, d = darr.chunks[axis], depth[axis]
        if d == 0:
            continue
        # One chunk when a neighbour cannot supply the halo, or when (wrap) a block and its halo would
        # meet themselves across the array.
        if min(chunks) < d or (wrap and max(chunks) + 2 * d >= darr.shape[axis]) or len(chunks) == 1:
            whole[axis] = -1
            depth[axis] = 0
    if any(darr.chunks[a] != (darr.shape[a],) for a in whole):
        darr = darr.rechunk(whole)
    dy, dx = depth
    token = tokenize(darr, chain, mode, border_value, devices, exact)
    edges_name, out_name = "tilefilter-edges-" + token, "tilefilter-filter-" + token
    ny, nx = len(darr.chunks[0]), len(darr.chunks[1])
    tail = (0,) * (darr.ndim - 2)
    layer = {}
    # Small chunks travel whole: a block's task reads its neighbours' chunks itself, one task a chunk
    # (on the 2-core VM's local cluster, 1024² u8 chunks: 611 ms against 991 with edges tasks). Larger
    # ones send only their edges, cut by a task of their own, so little crosses the network.
    whole_neighbours = max(darr.chunks[0]) * max(darr.chunks[1]) * int(np.prod(darr.shape[2:])) * \
        darr.dtype.itemsize <= _WHOLE_NEIGHBOUR_BYTES
    if (dy or dx) and not whole_neighbours:
        for i, j in itertools.product(range(ny), range(nx)):
            layer[(edges_name, i, j)] = (_edges, (darr.name, i, j) + tail, dy, dx)
    for i, j in itertools.product(range(ny), range(nx)):
        neighbours = []
        for oy, ox in _OFFSETS:
            ni, nj = i + oy, j + ox
            if wrap:
                ni, nj = ni % ny, nj % nx
            usable = not ((oy and not dy) or (ox and not dx)) and 0 <= ni < ny and 0 <= nj < nx
            source = (darr.name, ni, nj) + tail if whole_neighbours else (edges_name, ni, nj)
            neighbours.append(source if usable else None)
        layer[(out_name, i, j) + tail] = (_filter_block, (darr.name, i, j) + tail, neighbours, chain, mode,
                                          border_value, devices, exact, dy, dx)
    graph = HighLevelGraph.from_collections(out_name, layer, dependencies=[darr])
    return da.Array(graph, out_name, darr.chunks, dtype=darr.dtype, meta=np.empty((0,) * darr.ndim, darr.dtype))
