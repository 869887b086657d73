"""TileFilter for Python: convolution filters on every GPU of the machine, or on the CPU with the same
bits, over NumPy arrays, CuPy arrays and PyTorch CUDA tensors, image files and folders.

    import numpy as np, tilefilter
    a = tilefilter.read("photo.jpg", autorotate=True)             # H x W x 3 uint8, upright
    b = tilefilter.gaussian(a, 2)                                 # scipy.ndimage's names and defaults
    c = tilefilter.convolve(a, np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]]))
    d = tilefilter.filter(a, "gaussian:sigma=2", "sharpen")       # the chain of `tilefilter apply`
    tilefilter.write("out.png", d, metadata_from="photo.jpg")

A thin binding (ctypes, no compiled module) over libtilefilter's C API (tilefilter/tilefilter.h), in
the manner of pyvips on libvips. Errors: ValueError for bad specs, parameters and arrays, OSError for
files (FileNotFoundError for missing ones), RuntimeError for devices; a TileFilterWarning for an
argument that has no effect or is changed. Calls release the GIL. The details: docs/python.md.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from . import _lib
from ._chain import Chain, chain_of, spec_value
from ._helpers import box, convolve, correlate, gaussian, sobel, unsharp
from ._lib import (CancelledError, DeviceError, FileError, InvalidArgumentError, LimitError, MissingFileError,
                   TileFilterError, TileFilterWarning)

if TYPE_CHECKING:
    import numpy.typing as npt
    from . import dask
    from ._host import Writer

    Kernel = Union[npt.ArrayLike, Tuple[npt.ArrayLike, npt.ArrayLike]]

__version__: str = _lib.lib.tf_version().decode()

__all__ = ["filter", "gaussian", "box", "unsharp", "sobel", "convolve", "correlate", "Chain", "spec_value", "read",
           "read_info", "write", "Writer", "apply", "batch", "filters", "devices", "presets", "dask",
           "TileFilterError", "InvalidArgumentError", "LimitError", "FileError", "MissingFileError", "DeviceError",
           "CancelledError", "TileFilterWarning", "__version__"]

Tile = Union[int, Tuple[int, int], None]
Path = Union[str, "os.PathLike[str]"]


def filter(a: npt.NDArray[Any], *specs: Union[str, Chain], preset: Optional[str] = None,
           kernel: Optional[Kernel] = None, normalize: bool = False, border: Optional[str] = None,
           border_value: float = 0.0, devices: Optional[str] = "all", exact: bool = False,
           out: Optional[npt.NDArray[Any]] = None, tile: Tile = None, streams: int = 0, device_memory: int = 0,
           channel_axis: Optional[int] = None) -> npt.NDArray[Any]:
    """Filters image array `a` with the chain `specs` (and `preset`, `kernel`) and returns the result as a
    new array (or `out`).

    a: a NumPy array (uint8, uint16, float32, or float64: filtered in float32, returned as float64; H x W,
       or H x W x C with 1, 3 or 4 channels; any strides: it is read in place when its rows are
       pixel-packed, else copied once), or a CuPy array / PyTorch CUDA tensor, filtered on its own GPU on
       the current stream (no host round trip) and returned as the same type; `devices="all"` spreads a
       device array of 16 Mpix or more over every GPU when the chain is heavy enough to gain from it.
       int16 is refused (the library holds no signed samples).
    specs: filter specs as `tilefilter apply --filter` takes them ("gaussian:sigma=2", "sharpen"), or Chains.
    preset: a preset file or a bundled preset's name (`presets()`), ahead of `specs`; its border is the default.
    kernel: an array applied after `specs` like cv2.filter2D (correlation): 2-D, 1-D (along rows then
       columns) or a (row, column) pair of 1-D arrays; see Chain. normalize: divide its taps by their sum.
    border: reflect101 (default; scipy's 'mirror'), reflect, replicate, constant (with border_value) or wrap.
    devices: "all" (every GPU, else every core), "gpu", "cpu", "cpu:N", "0,1".
    exact: direct convolution only (large 2-D kernels skip the FFT path): the same bits on every device.
    out: where the result goes (same shape and dtype); it may be `a` itself (filtered in place).
    tile, streams, device_memory: a tile side N or (width, height), CUDA streams a GPU, bytes a GPU.
    channel_axis: the axis of channels when it is not the last: 0 for C x H x W, 1 for N x C x H x W (each
       plane filtered where it lies, without a copy when its rows are packed); -1 or 2 for N x H x W x C.

    Device arrays always take the direct path (the bits of exact=True).
    """
    chain = chain_of(specs, preset, kernel, normalize)
    border, border_value = _border_for(chain, border, border_value, getattr(a, "dtype", None))
    if channel_axis is not None:
        return _planes(a, channel_axis, out, lambda p, o: filter(p, chain, border=border, border_value=border_value,
                                                                  devices=devices, exact=exact, out=o, tile=tile,
                                                                  streams=streams, device_memory=device_memory))
    if not _is_ndarray(a) and _device_module().is_device_array(a):
        ignored = [f"{k}={v!r}" for k, v in (("tile", tile), ("streams", streams), ("device_memory", device_memory))
                   if v]
        if ignored:
            _lib.warn(f"{', '.join(ignored)}: a device array is filtered as one tile on its GPU; ignored")
        return _device_module().filter_device(a, chain, border, border_value, devices, out)
    host = _host_module()
    opts = host.options(border, border_value, devices, exact, tile, streams, device_memory)
    return host.filter_array(a, chain, opts, out)


def _border_for(chain: Chain, border, border_value, dtype) -> Tuple[Optional[str], float]:
    """(border, value) for the library, warning where border_value would be ignored or clamped."""
    if border is None and border_value:
        if chain.border != "constant":
            _lib.warn(f"border_value={border_value!r} has no effect without border='constant' (the chain's "
                      f"border is {chain.border!r})")
            return None, 0.0
        border = "constant"
    elif border is not None and border != "constant" and border_value:
        _lib.warn(f"border_value={border_value!r} has no effect with border={border!r}")
        border_value = 0.0
    if dtype is not None and (border or chain.border) == "constant" and "numpy" in sys.modules:
        _host_module().warn_border_value(str(dtype).replace("torch.", ""), "constant",
                                         border_value if border is not None else chain.border_value)
    return border, border_value


def _planes(a, channel_axis: int, out, filter_one):
    """`a` filtered image by image along its leading axes: the planes behind `channel_axis` (H x W each),
    or H x W x C images when it is the last axis."""
    if not hasattr(a, "shape"):
        a = _host_module().np.asarray(a)
    ndim = len(a.shape)
    axis = channel_axis + ndim if channel_axis < 0 else channel_axis
    if ndim < 3 or not 0 <= axis < ndim or axis == ndim - 2:
        raise InvalidArgumentError(f"channel_axis={channel_axis} for an array of shape {tuple(a.shape)}: give the "
                                   "axis of channels ahead of H x W (0 for C x H x W, 1 for N x C x H x W) or "
                                   "the last one (H x W x C)")
    image_ndim = 3 if axis == ndim - 1 else 2
    if out is None:
        out = _empty_like(a)
    import itertools
    for index in itertools.product(*(range(n) for n in a.shape[:ndim - image_ndim])):
        filter_one(a[index], out[index])
    return out


def _empty_like(a):
    module = type(a).__module__.split(".")[0]
    if module in ("torch", "cupy"):
        return sys.modules[module].empty_like(a)
    import numpy as np
    a = np.asarray(a)
    return np.empty(a.shape, a.dtype)


def _host_module():
    """tilefilter._host, imported on first use (it imports NumPy), then from sys.modules."""
    return sys.modules.get(__name__ + "._host") or importlib.import_module("._host", __name__)


def _device_module():
    return sys.modules.get(__name__ + "._device") or importlib.import_module("._device", __name__)


def _is_ndarray(a) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and type(a) is np.ndarray


def read(path: Path, autorotate: bool = False) -> npt.NDArray[Any]:
    """Decodes an image file into a NumPy array (H x W for one channel, else H x W x C; gray+alpha as RGBA).

    autorotate: False (the default) gives the pixels as stored, whatever the EXIF orientation says
    (read_info(path)["orientation"]); True turns them upright as a viewer shows them (as cv2.imread does),
    so an orientation-6 photo stored as 1600 x 2400 (H x W) comes back 2400 x 1600."""
    return _host_module().read(path, autorotate)


def read_info(path: Path) -> Dict[str, Any]:
    """What a file holds, from its header: width, height, channels, dtype, orientation, metadata present."""
    return _host_module().read_info(path)


def write(path: Path, a: npt.NDArray[Any], *, metadata_from: Optional[Path] = None,
          quality: Optional[int] = None, compression: Optional[str] = None) -> None:
    """Encodes array `a` into `path` (format from the extension; temporary file + rename).

    metadata_from: a file whose EXIF, ICC profile and XMP are copied (WebP keeps none: a TileFilterWarning).
    quality: JPEG and WebP, 1-100 (default: a JPEG metadata_from's quality and chroma subsampling, estimated
    from its tables, else 92; other formats warn). compression: TIFF "deflate:9", "zstd",
    "lzw", "none", ...; PNG a zlib level "0".."9" or "deflate:N"; JPEG and WebP refuse it (they take quality)."""
    _host_module().write(path, a, metadata_from, quality, compression)


def __getattr__(name: str):
    if name == "Writer":
        from ._host import Writer
        return Writer
    if name == "dask":  # tilefilter.dask without importing it first (Dask itself is imported when used)
        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'tilefilter' has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(__all__) | {"__doc__", "__file__", "__name__", "__path__"})


def _options(border, border_value, devices, exact):
    return _host_module()._make_options(border, border_value, devices, exact, None, 0, 0)


def apply(input: Path, output: Path, *specs: Union[str, Chain], preset: Optional[str] = None,
          kernel: Optional[Kernel] = None, normalize: bool = False, border: Optional[str] = None,
          border_value: float = 0.0, devices: Optional[str] = "all", exact: bool = False,
          quality: Optional[int] = None,
          compression: Optional[str] = None) -> None:
    """`tilefilter apply IN OUT`: streams a file of any size through the chain band by band, metadata kept.
    Arguments as filter()'s and write()'s."""
    import ctypes
    chain = chain_of(specs, preset, kernel, normalize)
    border, border_value = _border_for(chain, border, border_value, None)
    quality = _host_module().check_write(output, None, compression, quality)
    opts = _options(border, border_value, devices, exact)
    _lib.check(_lib.lib.tf_apply_file(chain._handle, _lib.text(input), _lib.text(output), ctypes.byref(opts),
                                      quality, _lib.text(compression)), input)


def batch(input_dir: Path, output_dir: Path, *specs: Union[str, Chain], preset: Optional[str] = None,
          border: Optional[str] = None, border_value: float = 0.0, devices: Optional[str] = "all",
          exact: bool = False, format: str = "same", recursive: bool = False, resume: bool = False,
          report: Optional[Path] = None, progress: Optional[Callable[[Dict[str, Any]], Any]] = None
          ) -> Dict[str, Any]:
    """`tilefilter batch IN_DIR OUT_DIR`: every image of a folder; returns the counts (files_ok, files_failed,
    ...). A file that fails is counted, not raised; `report` names a JSON report to write.

    progress: called as the batch goes (after each file and about four times a second, from the batch's
    threads, one call at a time) with {"files_done", "files_total", "files_failed", "megapixels_done",
    "elapsed_s"}; an exception it raises stops the batch taking new files and is raised once the files in
    flight are done. The chain must be spec strings or a preset: its specs are written in the folder's job
    record (resume=), which holds no kernel array (save one with numpy.savetxt, pass 'custom:file=...')."""
    import ctypes
    from ._chain import has_values
    if preset is not None and all(isinstance(s, str) for s in specs):
        chain = _preset_chain(specs, preset)
    else:
        chain = chain_of(specs, preset)
    if has_values(chain):
        raise InvalidArgumentError("batch(): a kernel given as an array cannot go in the folder's job record; "
                                   "save it (numpy.savetxt('k.txt', k)) and give 'custom:file=k.txt'")
    border, border_value = _border_for(chain, border, border_value, None)
    opts = _options(border, border_value, devices, exact)
    r = _lib.BatchResult()
    raised = []

    def report_progress(p, _user):
        try:
            if progress is not None and not raised:
                progress({name: getattr(p.contents, name) for name, _ in _lib.BatchProgress._fields_})
            return 0
        except BaseException as e:  # noqa: B902 - handed back to the caller after the batch
            raised.append(e)
            return 1

    callback = _lib.PROGRESS_FN(report_progress)
    _lib.check(_lib.lib.tf_batch_with_progress(chain._handle, _lib.text(input_dir), _lib.text(output_dir),
                                               ctypes.byref(opts), _lib.text(format), int(recursive), int(resume),
                                               _lib.text(report), ctypes.byref(r), callback, None), input_dir)
    if raised:
        raise raised[0]
    return {name: getattr(r, name) for name, _ in r._fields_}


def _preset_chain(specs, preset) -> Chain:
    """A chain of the preset's specs as the library writes them (a custom kernel as a kernel file), for
    batch()'s job record."""
    import ctypes
    chain = Chain.__new__(Chain)
    chain._handle = None
    arr = (ctypes.c_char_p * max(len(specs), 1))(*[s.encode() for s in specs])
    handle = ctypes.c_void_p()
    _lib.check(_lib.lib.tf_chain_from_preset(_lib.text(preset), arr, len(specs), ctypes.byref(handle)), preset)
    chain._handle = handle.value
    value = ctypes.c_double()
    chain.border = _lib.lib.tf_chain_border(chain._handle, ctypes.byref(value)).decode()
    chain.border_value = value.value
    chain.specs = tuple(_lib.lib.tf_chain_spec(chain._handle, i).decode()
                        for i in range(_lib.lib.tf_chain_length(chain._handle)))
    chain.stages = chain.specs
    return chain


def filters() -> List[Dict[str, Any]]:
    """The filter catalog (`tilefilter filters`): name, summary and parameters with ranges and defaults."""
    return json.loads(_lib.lib.tf_filters_json())


def presets() -> List[Dict[str, Any]]:
    """The bundled presets: name (for preset=), title, description, path, border, border_value and
    "stages": each {"spec": "gaussian:sigma=2"} or {"kernel": rows of taps, "normalize": bool}. Reads the
    preset files and writes nothing."""
    return json.loads(_lib.lib.tf_presets_stages_json())


def devices(selection: str = "all") -> List[Dict[str, Any]]:
    """The devices a job with `devices=selection` uses (`tilefilter devices`): GPUs with their memory, or CPU
    workers."""
    import ctypes
    out = ctypes.c_char_p()
    _lib.check(_lib.lib.tf_devices_json(_lib.text(selection), ctypes.byref(out)))
    return json.loads(out.value)["devices"]
