"""NumPy arrays (and anything with __array_interface__) filtered in host memory, read and written.

An array is passed to the library as it lies when its rows are pixel-packed (H x W [x C] with the
channels, then the pixels, adjacent: any row pitch, views of a larger image included); other layouts
(columns skipped, transposed, reversed, unaligned) are copied once to a packed array first."""
from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np

from . import _lib

_TYPES = {np.dtype(np.uint8): _lib.U8, np.dtype(np.uint16): _lib.U16, np.dtype(np.float32): _lib.F32}
_DTYPES = {v: k for k, v in _TYPES.items()}
# Filtered as float32 and handed back in their own type (float32 holds every float64 to 1e-7 relative).
_THROUGH_FLOAT32 = (np.dtype(np.float64),)


def pixel_type(dtype) -> int:
    dtype = np.dtype(dtype)
    t = _TYPES.get(dtype)
    if t is not None:
        return t
    if not dtype.isnative and dtype.newbyteorder("=") in _TYPES:
        raise _lib.InvalidArgumentError(f"arrays of byte order {dtype.str!r} cannot be filtered: "
                                        f"a.astype({dtype.newbyteorder('=').name!r}) gives the machine's order")
    if dtype == np.int16:
        raise _lib.InvalidArgumentError(
            "int16 arrays cannot be filtered: the library holds uint8, uint16 and float32 samples; filter "
            "a.astype(numpy.float32) (it holds every int16 exactly) and round back, or offset into uint16")
    raise _lib.InvalidArgumentError(
        f"arrays of {dtype} cannot be filtered: use uint8, uint16, float32 or float64 (filtered in float32)")


def shape_of(shape) -> tuple:
    """(height, width, channels) of an H x W or H x W x C array shape."""
    if len(shape) == 2:
        return shape[0], shape[1], 1
    if len(shape) == 3 and shape[2] in (1, 3, 4):
        return shape[0], shape[1], shape[2]
    hint = " (channels first: pass channel_axis=0, or channel_axis=1 for N x C x H x W)" if len(shape) in (3, 4) else ""
    raise _lib.InvalidArgumentError(
        f"an image array is H x W or H x W x C with C = 1, 3 or 4 channels, not of shape {tuple(shape)}{hint}")


def packed_pitch(shape, strides, itemsize: int) -> Optional[int]:
    """The row pitch when rows are pixel-packed (channels, then pixels adjacent), else None."""
    h, w, c = shape_of(shape)
    if len(shape) == 3 and c > 1 and strides[2] != itemsize:
        return None
    if w > 1 and strides[1] != c * itemsize:
        return None
    row = w * c * itemsize
    if h == 1:
        return row
    return strides[0] if strides[0] >= row else None


def describe(a: np.ndarray) -> _lib.Image:
    """The tf_image of a packed array (the caller checked it with packed_pitch)."""
    h, w, c = shape_of(a.shape)
    pitch = w * c * a.itemsize if a.flags.c_contiguous else packed_pitch(a.shape, a.strides, a.itemsize)
    return _lib.Image(a.ctypes.data, pitch, w, h, c, _TYPES[a.dtype])


def as_packed(a) -> np.ndarray:
    """`a` itself when the library can read it in place, else a packed copy."""
    if not isinstance(a, np.ndarray):
        if not hasattr(a, "__array_interface__") and not hasattr(a, "__array__"):
            raise TypeError(f"expected a NumPy array (or a CuPy array / PyTorch tensor), not {type(a).__name__}")
        a = np.asarray(a)
    pixel_type(a.dtype)
    shape_of(a.shape)
    if a.size == 0:
        raise _lib.InvalidArgumentError(f"the array of shape {a.shape} holds no pixel")
    if a.flags.c_contiguous and a.flags.aligned:
        return a
    if a.flags.aligned and packed_pitch(a.shape, a.strides, a.itemsize) is not None:
        return a
    return np.ascontiguousarray(a)


_OPTIONS = {}


def options(*key) -> _lib.Options:
    """The tf_options for filter()'s keyword arguments, made once per distinct set (read-only after);
    a set with an unhashable argument is made for its call only (and checked there)."""
    try:
        o = _OPTIONS.get(key)
    except TypeError:
        return _make_options(*key)
    if o is None:
        o = _make_options(*key)
        if len(_OPTIONS) < 256:
            _OPTIONS[key] = o
    return o


def _make_options(border, border_value, devices, exact, tile, streams, device_memory) -> _lib.Options:
    from ._chain import check_border
    o = _lib.Options()
    _lib.lib.tf_options_init(ctypes.byref(o))
    if border is not None:
        o.border = check_border(border).encode()
        o.border_value = float(border_value)
    o.devices = str(devices).encode() if devices is not None else None
    o.exact = 1 if exact else 0
    if tile is not None:
        size = (tile, tile) if isinstance(tile, (int, np.integer)) else tile
        if not (isinstance(size, (tuple, list)) and len(size) == 2 and
                all(isinstance(n, (int, np.integer)) and n > 0 for n in size)):
            raise TypeError(f"tile= is a tile side in pixels or (width, height), not {tile!r}")
        o.tile_width, o.tile_height = int(size[0]), int(size[1])
    for name, value in (("streams", streams), ("device_memory", device_memory)):
        if not isinstance(value, (int, np.integer)) or value < 0:
            raise TypeError(f"{name}= is a whole number, 0 for automatic, not {value!r}")
    o.streams = int(streams)
    o.device_memory = int(device_memory)
    return o


def warn_border_value(dtype, border: str, value: float) -> None:
    """TileFilterWarning where a constant border's value leaves the pixel type's range (it is clamped)."""
    dtype = np.dtype(dtype)
    if border != "constant" or dtype.kind != "u":
        return
    top = np.iinfo(dtype).max
    if not 0 <= value <= top:
        _lib.warn(f"border_value={value!r} is clamped to {min(max(value, 0), top)} for {dtype} pixels")


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    return np.may_share_memory(a, b)


def filter_array(a, chain, opts: _lib.Options, out=None) -> np.ndarray:
    if getattr(a, "dtype", None) in _THROUGH_FLOAT32:
        if out is not None and (not isinstance(out, np.ndarray) or out.dtype != a.dtype or out.shape != a.shape):
            raise _lib.InvalidArgumentError(f"out= must be a {a.dtype} array of shape {a.shape}")
        result = filter_array(np.asarray(a, np.float32), chain, opts)
        if out is None:
            return result.astype(a.dtype)
        np.copyto(out, result)
        return out
    src = as_packed(a)
    if out is None:
        dst = np.empty(src.shape, src.dtype)
        _lib.check(_lib.lib.tf_filter(chain._handle, ctypes.byref(describe(src)), ctypes.byref(describe(dst)),
                                      ctypes.byref(opts)))
        return dst
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out= must be a NumPy array for a NumPy input, not {type(out).__name__}")
    if out.shape != np.shape(a) or out.dtype != src.dtype:
        raise _lib.InvalidArgumentError(
            f"out= has shape {out.shape} and dtype {out.dtype}; the input {np.shape(a)} and {src.dtype}")
    if not out.flags.writeable:
        raise _lib.InvalidArgumentError("out= is read-only")
    # In place (out is the input, or overlaps it) or out laid out other than packed rows: through a
    # temporary, then one copy into out, as NumPy's ufuncs do with overlapping outputs.
    direct = out.flags.aligned and packed_pitch(out.shape, out.strides, out.itemsize) is not None
    if direct and not _overlap(src, out):
        _lib.check(_lib.lib.tf_filter(chain._handle, ctypes.byref(describe(src)), ctypes.byref(describe(out)),
                                      ctypes.byref(opts)))
        return out
    tmp = np.empty(src.shape, src.dtype)
    _lib.check(_lib.lib.tf_filter(chain._handle, ctypes.byref(describe(src)), ctypes.byref(describe(tmp)),
                                  ctypes.byref(opts)))
    np.copyto(out, tmp)
    return out


def read_info(path) -> dict:
    info = _lib.ImageInfo()
    _lib.check(_lib.lib.tf_read_info(_lib.text(path), ctypes.byref(info)), path)
    return {"width": info.width, "height": info.height, "channels": info.channels,
            "dtype": _DTYPES[info.type], "stored_channels": info.stored_channels,
            "orientation": info.orientation, "exif": bool(info.has_exif), "icc": bool(info.has_icc),
            "xmp": bool(info.has_xmp), "codec": info.codec.decode()}


# EXIF orientation 1..8: the stored pixels turned upright (as PIL's ImageOps.exif_transpose does).
_UPRIGHT = {
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.swapaxes(0, 1),
    6: lambda a: a[::-1].swapaxes(0, 1),
    7: lambda a: a[::-1, ::-1].swapaxes(0, 1),
    8: lambda a: a[:, ::-1].swapaxes(0, 1),
}


def read(path, autorotate: bool = False) -> np.ndarray:
    info = read_info(path)
    shape = (info["height"], info["width"]) if info["channels"] == 1 else (info["height"], info["width"],
                                                                           info["channels"])
    out = np.empty(shape, info["dtype"])
    _lib.check(_lib.lib.tf_read(_lib.text(path), ctypes.byref(describe(out))), path)
    turn = _UPRIGHT.get(info["orientation"]) if autorotate else None
    return out if turn is None else np.ascontiguousarray(turn(out))


def check_write(path, metadata_from, compression, quality=None) -> int:
    """Refuses what a format would drop without a word, warns of what it cannot keep; returns the
    library's quality (0: its default)."""
    ext = str(_lib.text(path).decode(errors="replace")).rsplit(".", 1)[-1].lower()
    if quality is not None and ext not in ("jpg", "jpeg", "webp"):
        _lib.warn(f"quality={quality!r} has no effect on .{ext} files (JPEG and WebP take it; TIFF's JPEG "
                  "compression takes compression='jpeg:Q')")
    if compression is not None:
        method, _, level = str(compression).partition(":")
        if ext in ("jpg", "jpeg", "webp"):
            raise _lib.InvalidArgumentError(f"compression={compression!r}: .{ext} files take quality= instead")
        digits = method if method.isdigit() and not level else level if method == "deflate" else None
        if ext == "png" and (digits is None or (digits and not (digits.isdigit() and int(digits) <= 9))):
            raise _lib.InvalidArgumentError(
                f"compression={compression!r}: PNG files take a zlib level 0-9 ('6', 'deflate:9')")
    if metadata_from is not None and ext == "webp":
        _lib.warn(f"metadata_from={str(metadata_from)!r}: WebP files are written without metadata")
    return 0 if quality is None else int(quality)


def write(path, a, metadata_from=None, quality=None, compression=None) -> None:
    quality = check_write(path, metadata_from, compression, quality)
    src = as_packed(a)
    _lib.check(_lib.lib.tf_write(_lib.text(path), ctypes.byref(describe(src)), _lib.text(metadata_from),
                                 quality, _lib.text(compression)), metadata_from)


class Writer:
    """Writes an image band by band (the file appears only at close(), temporary file + rename).

    with tilefilter.Writer("big.tif", width, height, channels=4, dtype="uint8") as w:
        for band in bands: w.write(band)
    """

    def __init__(self, path, width: int, height: int, channels: int = 1, dtype="uint8", metadata_from=None,
                 quality: Optional[int] = None, compression: Optional[str] = None):
        self._handle = None
        self.width, self.height, self.channels, self.dtype = width, height, channels, np.dtype(dtype)
        quality = check_write(path, metadata_from, compression, quality)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.tf_writer_new(_lib.text(path), int(width), int(height), int(channels),
                                          pixel_type(self.dtype), _lib.text(metadata_from), quality,
                                          _lib.text(compression), ctypes.byref(h)), metadata_from)
        self._handle = h.value

    def write(self, rows: np.ndarray) -> None:
        src = as_packed(rows)
        _lib.check(_lib.lib.tf_writer_write(self._handle, ctypes.byref(describe(src))))

    def close(self) -> None:
        """Completes the file (all rows must have been written)."""
        if self._handle:
            try:
                _lib.check(_lib.lib.tf_writer_finish(self._handle))
            finally:
                _lib.lib.tf_writer_free(self._handle)
                self._handle = None

    def abort(self, _free=_lib.lib.tf_writer_free) -> None:
        """Drops the file: the target is left untouched."""
        if getattr(self, "_handle", None):
            _free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:
            self.abort()

    def __del__(self):
        self.abort()
