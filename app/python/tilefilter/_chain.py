"""Filter chains: filter specs, presets and kernels given as arrays, parsed once by the library.

A Chain is described by its stages (spec strings, or kernels as their values), its border and the
border's value; that description is what pickle and copy carry, so a chain travels to other processes
(multiprocessing, Dask workers) with its kernels' numbers, never their files' paths."""
from __future__ import annotations

import ctypes
import json
import os
import threading
from collections import OrderedDict
from typing import Any, Optional, Tuple

from . import _lib

# A stage of a description: a spec string, or a kernel: ("kernel", taps (float64: 2-D rows, or a separable
# pair's row then column), width, height, separable, normalize). A chain describes its kernels as it
# applies them (normalized already, normalize False).


class Chain:
    """A parsed, validated chain of filters: spec strings (as `tilefilter apply --filter` takes them), a
    preset's stages ahead of them, and a kernel given as an array after them.

    >>> Chain("gaussian:sigma=2", "sharpen").halo
    (7, 7, 7, 7)
    >>> Chain("box:radius=1", kernel=np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]]))

    specs: spec strings ("gaussian:sigma=2"; a path holding a comma quoted: 'custom:file="a,b.txt"', see
           spec_value()), or Chains, whose stages are taken in their place.
    preset: a bundled preset's name (`presets()`) or a preset file, ahead of `specs`; its border is the default.
    kernel: an array applied like cv2.filter2D (correlation, anchor at the centre): 2-D (rows of taps);
            1-D (the same taps along rows, then columns: a separable kernel); or a tuple (row, column) of
            two 1-D arrays (cv2.sepFilter2D's kernelX, kernelY). float32 or float64 (or integers); the
            taps are rounded to float32 as a kernel file's numbers are, so the bits equal the same numbers
            in a file ('custom:file=K').
    normalize: divide the kernel's taps by their sum (each factor by its own for a separable kernel).
    border, border_value: the chain's default border (else the preset's, else reflect101).
    """

    __slots__ = ("_handle", "stages", "specs", "halo", "border", "border_value", "_files", "__weakref__")

    def __init__(self, *specs: Any, preset: Optional[str] = None, kernel: Any = None, normalize: bool = False,
                 border: Optional[str] = None, border_value: float = 0.0):
        self._handle = None
        if len(specs) == 1 and isinstance(specs[0], (list, tuple)):
            specs = tuple(specs[0])
        stages, chain_border, preset_file = [], None, None
        if preset is not None:
            preset_stages, chain_border, preset_file = _preset_description(preset)
            stages += preset_stages
        for i, s in enumerate(specs):
            if isinstance(s, str):
                stages.append(s)
            elif isinstance(s, Chain):
                stages += s.stages
                if chain_border is None:
                    chain_border = (s.border, s.border_value)
            else:
                raise TypeError(f"filter {i + 1} is a {type(s).__module__}.{type(s).__name__}: filters are spec "
                                "strings like 'gaussian:sigma=2' or Chains; give a kernel array as kernel=")
        if kernel is not None:
            stages.append(kernel_stage(kernel, normalize))
        elif normalize:
            raise _lib.InvalidArgumentError("normalize= applies to kernel=; for a kernel file use "
                                            "'custom:file=K,normalize=true'")
        if not stages:
            raise _lib.InvalidArgumentError("give at least one filter spec, a kernel= or a preset=")
        if border is not None:
            chain_border = (check_border(border), float(border_value))
        elif border_value:
            raise _lib.InvalidArgumentError(f"border_value={border_value!r} needs border='constant'")
        self._build(stages, chain_border)
        if preset_file is not None:  # read again, like a kernel file, once it changes
            self._files += ((preset_file, _stamp(preset_file)),)

    def _build(self, stages, border) -> None:
        arr = (_lib.Stage * len(stages))()
        keep = []  # the taps' buffers, alive until the library has copied them
        for slot, s in zip(arr, stages):
            if isinstance(s, str):
                slot.spec = s.encode()
            else:
                _, taps, width, height, separable, normalize = s
                keep.append(taps)
                slot.taps = taps.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
                slot.width, slot.height = width, height
                slot.separable, slot.normalize = int(separable), int(normalize)
        handle = ctypes.c_void_p()
        name, value = (None, 0.0) if border is None else border
        _lib.check(_lib.lib.tf_chain_new_stages(arr, len(stages), _lib.text(name), float(value),
                                                ctypes.byref(handle)))
        self._handle = handle.value
        halo = (ctypes.c_int * 4)()
        _lib.lib.tf_chain_halo(self._handle, halo)
        self.halo: Tuple[int, int, int, int] = tuple(halo)  # left, top, right, bottom
        value = ctypes.c_double()
        self.border: str = _lib.lib.tf_chain_border(self._handle, ctypes.byref(value)).decode()
        self.border_value: float = value.value
        n = _lib.lib.tf_chain_length(self._handle)
        self.specs: Tuple[str, ...] = tuple(_lib.lib.tf_chain_spec(self._handle, i).decode() for i in range(n))
        self.stages, self._files = self._describe(n)

    def _describe(self, n: int):
        """The stages as values (kernel files read into their taps) and the kernel files read, with the
        size and time they had: the cache reads a file again once it changes."""
        stages, files = [], []
        for i in range(n):
            st, path = _lib.Stage(), ctypes.c_char_p()
            _lib.check(_lib.lib.tf_chain_stage(self._handle, i, ctypes.byref(st), ctypes.byref(path)))
            if path.value is not None:
                files.append((os.fsdecode(path.value), _stamp(os.fsdecode(path.value))))
            if st.spec is not None:
                stages.append(st.spec.decode())
                continue
            import numpy as np
            count = st.width + st.height if st.separable else st.width * st.height
            taps = np.ctypeslib.as_array(st.taps, (count,)).copy()
            taps.flags.writeable = False
            stages.append(("kernel", taps, st.width, st.height, bool(st.separable), False))
        return tuple(stages), tuple(files)

    def __reduce__(self):
        return (_rebuild, (self.stages, self.border, self.border_value))

    def _key(self) -> tuple:
        """The description as plain values: equal for chains that apply the same taps with the same border."""
        return (self.border, self.border_value,
                tuple(s if isinstance(s, str) else (s[1].tobytes(), *s[2:]) for s in self.stages))

    def __eq__(self, other) -> bool:
        return isinstance(other, Chain) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __dask_tokenize__(self):
        return ("tilefilter.Chain",) + self._key()

    def __del__(self, _free=_lib.lib.tf_chain_free):  # bound now: module globals may be gone at exit
        if getattr(self, "_handle", None):
            _free(self._handle)
            self._handle = None

    def __repr__(self) -> str:
        return f"Chain({', '.join(map(repr, self.specs))}; border={self.border})"

    def current(self) -> bool:
        """Whether every kernel file the chain read is as it was (same size and time)."""
        return all(_stamp(path) == stamp for path, stamp in self._files)


def _rebuild(stages, border, border_value) -> Chain:
    chain = Chain.__new__(Chain)
    chain._handle = None
    chain._build(list(stages), (border, border_value))
    return chain


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def spec_value(value) -> str:
    """`value` (a kernel file's path) as a spec writes it: quoted when it holds a comma, as
    'custom:file="a,b.txt"' (inside the quotes \\\\ and \\" stand for \\ and ")."""
    value = os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)
    if "," not in value and not value.startswith('"'):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_border(border) -> str:
    """`border` when the library knows it, else ValueError naming the choices (and scipy's names)."""
    names = _lib.lib.tf_border_names().decode().split("|")
    if border in names:
        return border
    scipy = {"mirror": "reflect101", "nearest": "replicate", "grid-wrap": "wrap", "grid-mirror": "reflect",
             "grid-constant": "constant"}
    hint = f" (scipy's mode={border!r} is border={scipy[border]!r})" if border in scipy else ""
    raise _lib.InvalidArgumentError(f"border={border!r} is not one of {', '.join(names)}{hint}")


def kernel_stage(kernel, normalize: bool = False):
    """A description stage for a kernel array (see Chain's `kernel`)."""
    import numpy as np

    def taps_of(k, what):
        a = np.asarray(k)
        if a.dtype.kind not in "fiub":
            hint = " (a kernel file goes in a spec: 'custom:file=k.txt')" if a.dtype.kind in "US" else ""
            raise TypeError(f"the {what} is an array of {a.dtype}: kernels are float32 or float64 numbers{hint}")
        return np.ascontiguousarray(a, dtype=np.float64)

    if isinstance(kernel, tuple) and len(kernel) == 2 and all(np.ndim(k) == 1 for k in kernel):
        row, col = taps_of(kernel[0], "row kernel"), taps_of(kernel[1], "column kernel")
    else:
        k = taps_of(kernel, "kernel")
        if k.ndim == 2:
            return ("kernel", k.ravel(), k.shape[1], k.shape[0], False, bool(normalize))
        if k.ndim != 1:
            raise _lib.InvalidArgumentError(f"a kernel is 2-D (rows of taps), 1-D or a (row, column) pair of 1-D "
                                            f"arrays, not of shape {k.shape}")
        row = col = k
    return ("kernel", np.concatenate([row, col]), row.size, col.size, True, bool(normalize))


# ---- Presets ----

def bundled_presets() -> list:
    return json.loads(_lib.lib.tf_presets_stages_json())


def _preset_description(preset):
    """(stages, (border, value), the preset file or None) of a bundled preset's name or a preset file."""
    name = os.fspath(preset) if isinstance(preset, os.PathLike) else str(preset)
    if "/" not in name and not os.path.isfile(name):
        for p in bundled_presets():
            if name in (p["name"], p["name"] + ".json"):
                stages = [s["spec"] if "spec" in s else kernel_stage(s["kernel"], s["normalize"]) for s in p["stages"]]
                return stages, (p["border"], p["border_value"]), None
    handle = ctypes.c_void_p()
    _lib.check(_lib.lib.tf_chain_from_preset(_lib.text(name), None, 0, ctypes.byref(handle)), name)
    tmp = Chain.__new__(Chain)
    tmp._handle = handle.value
    value = ctypes.c_double()
    border = _lib.lib.tf_chain_border(tmp._handle, ctypes.byref(value)).decode()
    stages = list(tmp._describe(_lib.lib.tf_chain_length(tmp._handle))[0])
    return stages, (border, value.value), name if os.path.isfile(name) else None


# ---- The cache: chains of spec strings (and preset names), re-read when a kernel file changes ----

_CACHE: "OrderedDict[tuple, Chain]" = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 128


def chain_of(specs, preset=None, kernel=None, normalize=False) -> Chain:
    """The chain for filter()'s `specs`, `preset` and `kernel`: one Chain as it is; spec strings (and a
    preset) made once and kept while their kernel files are unchanged; anything else made for the call."""
    if len(specs) == 1 and isinstance(specs[0], (list, tuple)):
        specs = tuple(specs[0])
    if len(specs) == 1 and isinstance(specs[0], Chain) and preset is None and kernel is None:
        return specs[0]
    if kernel is not None or not all(isinstance(s, str) for s in specs):
        return Chain(*specs, preset=preset, kernel=kernel, normalize=normalize)
    key = (tuple(specs), None if preset is None else os.fspath(preset) if isinstance(preset, os.PathLike)
           else str(preset))
    with _CACHE_LOCK:
        chain = _CACHE.get(key)
        if chain is not None:
            _CACHE.move_to_end(key)
    if chain is not None and chain.current():
        return chain
    chain = Chain(*specs, preset=key[1])
    with _CACHE_LOCK:
        _CACHE[key] = chain
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return chain


def has_values(chain: Chain) -> bool:
    """Whether a stage of `chain` was given as kernel values (no spec string holds it)."""
    return any(not isinstance(s, str) and not spec.startswith("custom:") for s, spec in zip(chain.stages, chain.specs))

