"""TileFilter for Python: convolution filters on every GPU of the machine, or on the CPU with the same
bits, over NumPy arrays, CuPy arrays and PyTorch CUDA tensors, image files and folders.

    import numpy as np, tilefilter
    a = tilefilter.read("photo.jpg")                              # H x W x 3 uint8
    b = tilefilter.filter(a, "gaussian:sigma=2", "sharpen")       # the chain of `tilefilter apply`
    tilefilter.write("out.png", b, metadata_from="photo.jpg")

A thin binding (ctypes, no compiled module) over libtilefilter's C API (tilefilter/tilefilter.h), in
the manner of pyvips on libvips. Errors carry the command-line tool's messages: ValueError for bad
specs, parameters and arrays, OSError for files, RuntimeError for devices. Calls release the GIL.
The details: docs/python.md.
"""
from __future__ import annotations

import importlib
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._chain import Chain, chain_of
from ._lib import (CancelledError, DeviceError, FileError, InvalidArgumentError, LimitError,
                   TileFilterError)

__version__: str = _lib.lib.tf_version().decode()

__all__ = ["filter", "Chain", "read", "read_info", "write", "Writer", "apply", "batch", "filters", "devices",
           "presets", "TileFilterError", "InvalidArgumentError", "LimitError", "FileError", "DeviceError",
           "CancelledError", "__version__"]

Tile = Union[int, Tuple[int, int], None]


def filter(a: Any, *specs: Union[str, Chain], preset: Optional[str] = None, border: Optional[str] = None,
           border_value: float = 0.0, devices: Optional[str] = "all", exact: bool = False, out: Any = None,
           tile: Tile = None, streams: int = 0, device_memory: int = 0) -> Any:
    """Filters image array `a` with the chain `specs` and returns the result as a new array (or `out`).

    a: a NumPy array (uint8, uint16 or float32; H x W, or H x W x C with 1, 3 or 4 channels; any strides:
       it is read in place when its rows are pixel-packed, else copied once), or a CuPy array / PyTorch
       CUDA tensor, filtered on its own GPU on the current stream (no host round trip) and returned as
       the same type; `devices="all"` spreads a device array of 16 Mpix or more over every GPU when the
       chain is heavy enough to gain from it (docs/python.md).
    specs: filter specs as `tilefilter apply --filter` takes them ("gaussian:sigma=2", "sharpen"), or a Chain.
    preset: a preset file or a bundled preset's name (`presets()`), ahead of `specs`; its border is the default.
    border: reflect101 (default), reflect, replicate, constant (with border_value) or wrap.
    devices: as --devices: "all" (every GPU, else every core), "gpu", "cpu", "cpu:N", "0,1".
    exact: direct convolution only (large 2-D kernels skip the FFT path): the same bits on every device.
    out: where the result goes (same shape and dtype); it may be `a` itself (filtered in place).
    tile, streams, device_memory: --tile N|(W, H), --streams, --device-memory in bytes.

    Device arrays always take the direct path (the bits of exact=True).
    """
    chain = chain_of(specs, preset)
    if not _is_ndarray(a) and _device_module().is_device_array(a):
        return _device_module().filter_device(a, chain, border, border_value, devices, out)
    host = _host_module()
    try:
        opts = host.options(border, border_value, devices, exact, tile, streams, device_memory)
    except TypeError:  # an unhashable argument: made for this call only
        opts = host._make_options(border, border_value, devices, exact, tile, streams, device_memory)
    return host.filter_array(a, chain, opts, out)


def _host_module():
    """tilefilter._host, imported on first use (it imports NumPy), then from sys.modules."""
    return sys.modules.get(__name__ + "._host") or importlib.import_module("._host", __name__)


def _device_module():
    return sys.modules.get(__name__ + "._device") or importlib.import_module("._device", __name__)


def _is_ndarray(a) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and type(a) is np.ndarray


def read(path) -> Any:
    """Decodes an image file into a NumPy array (H x W for one channel, else H x W x C; gray+alpha as RGBA)."""
    return _host_module().read(path)


def read_info(path) -> Dict[str, Any]:
    """What a file holds, from its header: width, height, channels, dtype, orientation, metadata present."""
    return _host_module().read_info(path)


def write(path, a: Any, *, metadata_from=None, quality: int = 95, compression: Optional[str] = None) -> None:
    """Encodes array `a` into `path` (format from the extension; temporary file + rename).

    metadata_from: a file whose EXIF, ICC profile and XMP are copied. compression: as --compression
    ("deflate:9", "zstd", a PNG level "6")."""
    _host_module().write(path, a, metadata_from, quality, compression)


def __getattr__(name: str):
    if name == "Writer":
        from ._host import Writer
        return Writer
    if name == "dask":  # tilefilter.dask without importing it first (it needs Dask)
        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'tilefilter' has no attribute {name!r}")


def _options(border, border_value, devices, exact):
    return _host_module()._make_options(border, border_value, devices, exact, None, 0, 0)


def apply(input, output, *specs: Union[str, Chain], preset: Optional[str] = None, border: Optional[str] = None,
          border_value: float = 0.0, devices: Optional[str] = "all", exact: bool = False, quality: int = 95,
          compression: Optional[str] = None) -> None:
    """`tilefilter apply IN OUT`: streams a file of any size through the chain band by band, metadata kept."""
    import ctypes
    chain = chain_of(specs, preset)
    opts = _options(border, border_value, devices, exact)
    _lib.check(_lib.lib.tf_apply_file(chain._handle, _lib.text(input), _lib.text(output), ctypes.byref(opts),
                                      int(quality), _lib.text(compression)))


def batch(input_dir, output_dir, *specs: Union[str, Chain], preset: Optional[str] = None,
          border: Optional[str] = None, border_value: float = 0.0, devices: Optional[str] = "all",
          exact: bool = False, format: str = "same", recursive: bool = False, resume: bool = False,
          report=None) -> Dict[str, Any]:
    """`tilefilter batch IN_DIR OUT_DIR`: every image of a folder; returns the counts (files_ok, files_failed,
    ...). A file that fails is counted, not raised; `report` names a JSON report to write (--report)."""
    import ctypes
    chain = chain_of(specs, preset)
    opts = _options(border, border_value, devices, exact)
    r = _lib.BatchResult()
    _lib.check(_lib.lib.tf_batch(chain._handle, _lib.text(input_dir), _lib.text(output_dir), ctypes.byref(opts),
                                 _lib.text(format), int(recursive), int(resume), _lib.text(report), ctypes.byref(r)))
    return {name: getattr(r, name) for name, _ in r._fields_}


def filters() -> List[Dict[str, Any]]:
    """The filter catalog (`tilefilter filters`): name, summary and parameters with ranges and defaults."""
    return json.loads(_lib.lib.tf_filters_json())


def presets() -> List[Dict[str, Any]]:
    """The bundled presets: name (for preset=), description, specs and border."""
    return json.loads(_lib.lib.tf_presets_json())


def devices(selection: str = "all") -> List[Dict[str, Any]]:
    """The devices a job with `devices=selection` uses (`tilefilter devices`): GPUs with their memory, or CPU
    workers."""
    import ctypes
    out = ctypes.c_char_p()
    _lib.check(_lib.lib.tf_devices_json(_lib.text(selection), ctypes.byref(out)))
    return json.loads(out.value)["devices"]
