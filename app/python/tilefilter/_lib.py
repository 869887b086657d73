"""The C API (tilefilter/tilefilter.h) through ctypes: no compiled module, so one installed package
imports under every Python 3. This file alone knows the library's functions and structs."""
from __future__ import annotations

import ctypes
import errno
import os
import re

API_VERSION = 1  # TF_C_API_VERSION of the header this binding follows

U8, U16, F32 = 0, 1, 2


class Image(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("pitch", ctypes.c_size_t), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("channels", ctypes.c_int), ("type", ctypes.c_int)]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("border", ctypes.c_char_p), ("border_value", ctypes.c_double),
                ("devices", ctypes.c_char_p), ("exact", ctypes.c_int), ("tile_width", ctypes.c_int),
                ("tile_height", ctypes.c_int), ("streams", ctypes.c_int), ("device_memory", ctypes.c_size_t)]


class ImageInfo(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("channels", ctypes.c_int), ("type", ctypes.c_int),
                ("stored_channels", ctypes.c_int), ("orientation", ctypes.c_int), ("has_exif", ctypes.c_int),
                ("has_icc", ctypes.c_int), ("has_xmp", ctypes.c_int), ("codec", ctypes.c_char * 32)]


class Stage(ctypes.Structure):
    _fields_ = [("spec", ctypes.c_char_p), ("taps", ctypes.POINTER(ctypes.c_double)), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("separable", ctypes.c_int), ("normalize", ctypes.c_int)]


class BatchProgress(ctypes.Structure):
    _fields_ = [("files_done", ctypes.c_int), ("files_total", ctypes.c_int), ("files_failed", ctypes.c_int),
                ("megapixels_done", ctypes.c_double), ("elapsed_s", ctypes.c_double)]


PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(BatchProgress), ctypes.c_void_p)


class BatchResult(ctypes.Structure):
    _fields_ = [("files_ok", ctypes.c_int), ("files_failed", ctypes.c_int), ("files_resumed", ctypes.c_int),
                ("files_cancelled", ctypes.c_int), ("exit_code", ctypes.c_int), ("wall_s", ctypes.c_double),
                ("megapixels", ctypes.c_double)]


# ---- Errors: a tf_status and the CLI's one-line message ----

class TileFilterError(Exception):
    """Base of every error the library reports; `status` is the C API's tf_status."""

    status = 7


class InvalidArgumentError(TileFilterError, ValueError):
    """A bad filter spec, parameter, border, device selection or array (TF_ERR_INVALID_ARGUMENT)."""
    status = 1


class LimitError(TileFilterError, ValueError):
    """Past a documented limit: kernel size, a chain's halo, pixel counts (TF_ERR_LIMIT)."""
    status = 4


class FileError(TileFilterError, OSError):
    """A file that cannot be opened, read, decoded or written (TF_ERR_IO, TF_ERR_DECODE); `filename` names
    it where the call knows it."""
    status = 2

    def __str__(self) -> str:  # the library's line, which names the file, without OSError's "[Errno 2]"
        return str(self.args[0]) if self.args else ""


class MissingFileError(FileError, FileNotFoundError):
    """A file that does not exist: `errno` is ENOENT and `filename` names it. Caught by
    `except FileNotFoundError` as by `except tilefilter.FileError`."""


class TileFilterWarning(UserWarning):
    """An argument that has no effect or is changed (a border_value without border='constant', a
    border_value past the pixel type's range, metadata a format cannot hold)."""


def warn(message: str) -> None:
    """A TileFilterWarning pointing at the caller's line outside this package."""
    import sys
    import warnings
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 2  # stacklevel 1 is this function, 2 its caller
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, TileFilterWarning, stacklevel=level)


class DeviceError(TileFilterError, RuntimeError):
    """A CUDA or device failure, or no GPU backend in this build (TF_ERR_DEVICE, TF_ERR_NO_GPU_BACKEND)."""
    status = 5


class CancelledError(TileFilterError, RuntimeError):
    status = 6


_ERRORS = {1: InvalidArgumentError, 2: FileError, 3: FileError, 4: LimitError, 5: DeviceError,
           6: CancelledError, 7: TileFilterError, 8: DeviceError, 9: MemoryError}


def _candidates():
    env = os.environ.get("TILEFILTER_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libtilefilter.so.0")
    # Installed: <prefix>/lib/python3/dist-packages/tilefilter beside <prefix>/lib/libtilefilter.so.0.
    yield os.path.normpath(os.path.join(here, "..", "..", "..", "libtilefilter.so.0"))
    # The source tree (app/python/tilefilter) beside its release build (cmake --preset release).
    yield os.path.normpath(os.path.join(here, "..", "..", "..", "build", "app", "capi", "libtilefilter.so.0"))
    yield "libtilefilter.so.0"  # the dynamic loader's paths: /usr/lib, LD_LIBRARY_PATH


def _load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("tilefilter: cannot load libtilefilter.so.0 (set TILEFILTER_LIBRARY to its path): " +
                      "; ".join(errors or ["not found"]))


lib = _load()

_P = ctypes.POINTER
_c = ctypes.c_char_p
_I = ctypes.c_int
_V = ctypes.c_void_p
_PImage = _P(Image)
_POptions = _P(Options)

_SIGNATURES = {
    "tf_last_error": (_c, []),
    "tf_version": (_c, []),
    "tf_api_version": (_I, []),
    "tf_chain_new": (_I, [_P(_c), _I, _P(_V)]),
    "tf_chain_from_preset": (_I, [_c, _P(_c), _I, _P(_V)]),
    "tf_chain_free": (None, [_V]),
    "tf_chain_halo": (None, [_V, _P(_I)]),
    "tf_chain_border": (_c, [_V, _P(ctypes.c_double)]),
    "tf_chain_length": (_I, [_V]),
    "tf_chain_spec": (_c, [_V, _I]),
    "tf_options_init": (None, [_POptions]),
    "tf_filter": (_I, [_V, _PImage, _PImage, _POptions]),
    "tf_filter_device": (_I, [_V, _PImage, _PImage, _I, _V, _c, ctypes.c_double, _c]),
    "tf_read_info": (_I, [_c, _P(ImageInfo)]),
    "tf_read": (_I, [_c, _PImage]),
    "tf_writer_new": (_I, [_c, _I, _I, _I, _I, _c, _I, _c, _P(_V)]),
    "tf_writer_write": (_I, [_V, _PImage]),
    "tf_writer_finish": (_I, [_V]),
    "tf_writer_free": (None, [_V]),
    "tf_write": (_I, [_c, _PImage, _c, _I, _c]),
    "tf_apply_file": (_I, [_V, _c, _c, _POptions, _I, _c]),
    "tf_batch": (_I, [_V, _c, _c, _POptions, _c, _I, _I, _c, _P(BatchResult)]),
    "tf_filters_json": (_c, []),
    "tf_presets_json": (_c, []),
    "tf_devices_json": (_I, [_c, _P(_c)]),
    "tf_chain_new_stages": (_I, [_P(Stage), _I, _c, ctypes.c_double, _P(_V)]),
    "tf_chain_stage": (_I, [_V, _I, _P(Stage), _P(_c)]),
    "tf_border_names": (_c, []),
    "tf_presets_stages_json": (_c, []),
    "tf_batch_with_progress": (_I, [_V, _c, _c, _POptions, _c, _I, _I, _c, _P(BatchResult), PROGRESS_FN, _V]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

if lib.tf_api_version() != API_VERSION:
    raise ImportError(f"tilefilter: libtilefilter API version {lib.tf_api_version()}, this package needs {API_VERSION}")


# The library's messages are the command-line tool's; a Python caller sees its keywords instead.
_FLAG = re.compile(r"--([a-z][a-z-]*)(?: '([^']*)')?")
_FLAG_TEXT = {"--filter SPEC": "a filter spec", "use --filter, see `tilefilter filters`": "see tilefilter.filters()"}


def _python_words(message: str) -> str:
    for cli, words in _FLAG_TEXT.items():
        message = message.replace(cli, words)
    return _FLAG.sub(lambda m: m.group(1).replace("-", "_") + ("=" + repr(m.group(2)) if m.group(2) is not None
                                                               else "="), message)


def error(status: int, paths=()) -> Exception:
    """The exception for a failed call, carrying the library's message in Python's words. A file error's
    `filename` is the file its message begins with (the library names it first); where that, or one of
    the files the call reads (`paths`), does not exist, it is a MissingFileError with errno ENOENT."""
    message = _python_words(lib.tf_last_error().decode("utf-8", "replace"))
    cls = _ERRORS.get(status, TileFilterError)
    if cls is not FileError:
        return cls(message)
    head = message.split(": ", 1)[0]
    named = head if head != message else None
    inputs = [os.fspath(p) for p in paths if p is not None]
    if named is not None and "No such file or directory" in message:
        inputs.insert(0, named)
    missing = next((p for p in inputs if not os.path.lexists(p)), None)
    if missing is not None:
        e = MissingFileError(message)
        e.errno, e.strerror, e.filename = errno.ENOENT, os.strerror(errno.ENOENT), missing
        return e
    e = FileError(message)
    e.filename = named if named is not None else (inputs[0] if inputs else None)
    return e


def check(status: int, *paths) -> None:
    """Raises error(status, paths) for a failed call; `paths` are the files it reads."""
    if status:
        raise error(status, paths)


def text(s) -> bytes | None:
    return None if s is None else os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode()
