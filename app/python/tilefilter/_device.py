"""CuPy arrays and PyTorch CUDA tensors filtered on the GPU that holds them, on the caller's current
stream, returned as the same type. Neither library is imported here: an array is recognised by its
type's module and its __cuda_array_interface__ (duck typing), and its module is already loaded.
A call's Python side takes 12-21 us before the library's (two H200 hosts, 2026-11-28): nothing is
imported or looked up per call that can be once."""
from __future__ import annotations

import ctypes
import sys

from . import _lib
from ._host import options, packed_pitch, shape_of  # NumPy: loaded already beside CuPy and PyTorch

_TYPESTR = {"|u1": _lib.U8, "<u2": _lib.U16, "<f4": _lib.F32}
_ITEMSIZE = {_lib.U8: 1, _lib.U16: 2, _lib.F32: 4}


def _is_torch(a) -> bool:
    return type(a).__module__.startswith("torch") and hasattr(a, "data_ptr")


def is_device_array(a) -> bool:
    if _is_torch(a):
        return bool(getattr(a, "is_cuda", False))
    return hasattr(a, "__cuda_array_interface__")


_TORCH_TYPES: dict = {}  # torch dtype -> _lib type, filled at the first tensor


def _torch_types(torch) -> dict:
    if not _TORCH_TYPES:
        _TORCH_TYPES.update({torch.uint8: _lib.U8, torch.float32: _lib.F32})
        if hasattr(torch, "uint16"):
            _TORCH_TYPES[torch.uint16] = _lib.U16
    return _TORCH_TYPES


class _Described:
    """A device array's pointer, shape, byte strides, type, GPU and (`with_stream`: the input's) current
    stream; an output needs no stream, as the call runs on the input's."""

    def __init__(self, a, with_stream=True):
        self.stream = 0
        if _is_torch(a):
            torch = sys.modules["torch"]
            self.type = _torch_types(torch).get(a.dtype)
            if self.type is None:
                raise _lib.InvalidArgumentError(
                    f"tensors of {a.dtype} cannot be filtered: use torch.uint8, torch.uint16 or torch.float32")
            self.ptr = a.data_ptr()
            self.shape = tuple(a.shape)
            self.h, self.w, self.c = shape_of(self.shape)
            size = a.element_size()
            self.strides = tuple(s * size for s in a.stride())
            index = a.device.index
            self.device = index if index is not None else torch.cuda.current_device()
            if with_stream:
                self.stream = torch.cuda.current_stream(self.device).cuda_stream
        else:
            iface = a.__cuda_array_interface__
            self.type = _TYPESTR.get(iface["typestr"].replace("=", "<"))
            if self.type is None:
                raise _lib.InvalidArgumentError(
                    f"device arrays of type {iface['typestr']} cannot be filtered: use uint8, uint16 or float32")
            self.ptr = iface["data"][0]
            self.shape = tuple(iface["shape"])
            self.h, self.w, self.c = shape_of(self.shape)
            itemsize = _ITEMSIZE[self.type]
            strides = iface.get("strides")
            if strides is None:  # C-contiguous: H x W or H x W x C
                strides = (self.w * self.c * itemsize, self.c * itemsize, itemsize)[:len(self.shape)]
            self.strides = tuple(strides)
            dev = getattr(a, "device", None)
            self.device = getattr(dev, "id", -1) if dev is not None else -1
            if with_stream:
                cupy = sys.modules.get("cupy")
                if cupy is not None and type(a).__module__.startswith("cupy"):
                    self.stream = cupy.cuda.get_current_stream().ptr
                else:
                    s = iface.get("stream")  # v3: None = no ordering needed, 1 = legacy default, 2 = per-thread
                    self.stream = 0 if s in (None, 1) else s
        self.pitch = packed_pitch(self.shape, self.strides, _ITEMSIZE[self.type])

    def image(self) -> _lib.Image:
        return _lib.Image(self.ptr, self.pitch, self.w, self.h, self.c, self.type)

    def span(self):
        return self.ptr, self.ptr + self.pitch * (self.h - 1) + self.w * self.c * _ITEMSIZE[self.type]


def _packed(a):
    """`a`, or a packed copy made on the current stream by the array's own library."""
    d = _Described(a)
    if d.pitch is not None and d.ptr % _ITEMSIZE[d.type] == 0:
        return a, d
    c = a.contiguous() if _is_torch(a) else sys.modules["cupy"].ascontiguousarray(a)
    return c, _Described(c)


def _empty_like(a):
    if _is_torch(a):
        torch = sys.modules["torch"]
        return torch.empty(tuple(a.shape), dtype=a.dtype, device=a.device)
    cupy = sys.modules.get("cupy")
    if cupy is None or not type(a).__module__.startswith("cupy"):
        raise TypeError(f"out= is needed for device arrays of type {type(a).__name__} (CuPy and PyTorch make their own)")
    with cupy.cuda.Device(a.device.id):
        return cupy.empty(a.shape, a.dtype)


def filter_device(a, chain, border, border_value, devices, out=None):
    """The library decides which GPUs take the array (`devices` "all" spreads a large array over every
    GPU where the chain's work outweighs the copies; CPUs are refused): tf_filter_device."""
    src, d = _packed(a)
    opts = options(border, border_value, devices, False, None, 0, 0)

    def run(dst_d):
        _lib.check(_lib.lib.tf_filter_device(chain._handle, ctypes.byref(d.image()), ctypes.byref(dst_d.image()),
                                             d.device, d.stream or None, ctypes.byref(opts)))

    if out is None:
        dst = _empty_like(src)
        run(_Described(dst, with_stream=False))
        return dst
    if type(out) is not type(a) and not (_is_torch(out) and _is_torch(a)):
        raise TypeError(f"out= must be of the input's type {type(a).__name__}, not {type(out).__name__}")
    o = _Described(out, with_stream=False)
    if o.shape != d.shape or o.type != d.type:
        raise _lib.InvalidArgumentError(f"out= has shape {o.shape} and another type or shape than the input {d.shape}")
    s0, s1 = d.span()
    o0, o1 = o.span()
    in_place = o.ptr == d.ptr and o.pitch == d.pitch  # the library filters an array into itself
    if o.pitch is not None and o.ptr % _ITEMSIZE[o.type] == 0 and (in_place or not (s0 < o1 and o0 < s1)):
        run(o)
        return out
    # Rows that are not pixel-packed, or an output that overlaps the input without being it.
    tmp = _empty_like(src)
    run(_Described(tmp, with_stream=False))
    if _is_torch(out):
        out.copy_(tmp)
    else:
        out[...] = tmp
    return out
