"""Dask arrays filtered chunk by chunk with the bits of tilefilter.filter on the whole array.

    import dask.array as da, tilefilter.dask
    big = da.from_zarr(...)                         # H x W [x C], any chunks
    out = tilefilter.dask.filter(big, "gaussian:sigma=2", exact=True)

Each chunk is filtered with its neighbours' pixels around it (map_overlap, depth = the chain's halo),
and only the chunk is kept. The border is tilefilter's own, synthesised where a block meets the array's
edge — Dask adds nothing there (boundary "none") — so a block at the edge sees exactly what the whole
image sees; only wrap takes Dask's "periodic" overlap, which hands each edge block the far edge's pixels.
Where the halo is as large as the array along an axis, that axis is one chunk (the block is then the
whole axis). On the direct path (exact=True, or any chain without 2-D kernels of 25x25 and more) the
result equals tilefilter.filter(whole_array) bit for bit. On a dask.distributed cluster each worker
runs the blocks on its own devices (devices="all": its GPUs, else its cores).
"""
from __future__ import annotations

import functools
from typing import Any, Optional

import numpy as np

import tilefilter
from ._chain import chain_of


def _filter_block(block: np.ndarray, specs, preset, border, border_value, devices, exact) -> np.ndarray:
    return tilefilter.filter(block, *specs, preset=preset, border=border, border_value=border_value,
                             devices=devices, exact=exact)


def filter(darr: Any, *specs: str, preset: Optional[str] = None, border: Optional[str] = None,
           border_value: float = 0.0, devices: Optional[str] = "all", exact: bool = False) -> Any:
    """A lazy Dask array: `darr` (H x W or H x W x C; uint8, uint16 or float32) filtered by the chain
    `specs` (or `preset`) with tilefilter.filter's arguments. The channel axis becomes one chunk."""
    import dask.array as da

    darr = da.asarray(darr)
    chain = chain_of(specs, preset)
    left, top, right, bottom = chain.halo
    mode = border if border is not None else chain.border
    if border is None:
        border_value = chain.border_value
    from ._host import pixel_type, shape_of
    pixel_type(darr.dtype)
    shape_of(darr.shape)
    depth = [max(top, bottom), max(left, right)] + [0] * (darr.ndim - 2)
    # An axis whose halo reaches as far as the array (or whose smallest chunk is smaller than the halo,
    # where Dask's overlap could not take it from one neighbour) is one chunk; the block is then the
    # whole axis and tilefilter synthesises both of its edges itself.
    whole = {}
    for axis in range(darr.ndim):
        if axis >= 2 or depth[axis] == 0:
            if axis >= 2:
                whole[axis] = -1
            continue
        if depth[axis] >= darr.shape[axis] or min(darr.chunks[axis]) < depth[axis]:
            whole[axis] = -1
            depth[axis] = 0
    if whole:
        darr = darr.rechunk(whole)
    boundary = {axis: ("periodic" if mode == "wrap" and depth[axis] else "none") for axis in range(darr.ndim)}
    func = functools.partial(_filter_block, specs=chain.specs, preset=None, border=mode, border_value=border_value,
                             devices=devices, exact=exact)
    return darr.map_overlap(func, depth={a: d for a, d in enumerate(depth)}, boundary=boundary, trim=True,
                            dtype=darr.dtype, meta=np.empty((0,) * darr.ndim, darr.dtype))
