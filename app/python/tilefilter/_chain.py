"""Filter chains: specs (or a preset) parsed once by the library and cached."""
from __future__ import annotations

import ctypes
import functools
from typing import Optional, Sequence, Tuple

from . import _lib


class Chain:
    """A parsed, validated chain of filters, as `tilefilter apply --filter SPEC ... [--preset P]` builds it.

    >>> Chain("gaussian:sigma=2", "sharpen").halo
    (7, 7, 7, 7)
    """

    __slots__ = ("_handle", "specs", "halo", "border", "border_value")

    def __init__(self, *specs: str, preset: Optional[str] = None):
        if len(specs) == 1 and not isinstance(specs[0], str) and isinstance(specs[0], Sequence):
            specs = tuple(specs[0])
        for s in specs:
            if not isinstance(s, str):
                raise TypeError(f"filter specs are strings like 'gaussian:sigma=2', not {type(s).__name__}")
        self._handle = None
        arr = (ctypes.c_char_p * max(len(specs), 1))(*[s.encode() for s in specs])
        handle = ctypes.c_void_p()
        if preset is None:
            _lib.check(_lib.lib.tf_chain_new(arr, len(specs), ctypes.byref(handle)))
        else:
            _lib.check(_lib.lib.tf_chain_from_preset(_lib.text(preset), arr, len(specs), ctypes.byref(handle)))
        self._handle = handle.value
        halo = (ctypes.c_int * 4)()
        _lib.lib.tf_chain_halo(self._handle, halo)
        self.halo: Tuple[int, int, int, int] = tuple(halo)  # left, top, right, bottom
        value = ctypes.c_double()
        self.border: str = _lib.lib.tf_chain_border(self._handle, ctypes.byref(value)).decode()
        self.border_value: float = value.value
        n = _lib.lib.tf_chain_length(self._handle)
        self.specs: Tuple[str, ...] = tuple(_lib.lib.tf_chain_spec(self._handle, i).decode() for i in range(n))

    def __del__(self, _free=_lib.lib.tf_chain_free):  # bound now: module globals may be gone at exit
        if getattr(self, "_handle", None):
            _free(self._handle)
            self._handle = None

    def __repr__(self) -> str:
        return f"Chain({', '.join(map(repr, self.specs))}; border={self.border})"


@functools.lru_cache(maxsize=128)
def _cached(specs: Tuple[str, ...], preset: Optional[str]) -> Chain:
    return Chain(*specs, preset=preset)


def chain_of(specs, preset=None) -> Chain:
    """The chain for `specs` (strings, or one Chain), made once per distinct specs and preset."""
    if len(specs) == 1 and isinstance(specs[0], Chain):
        if preset is not None:
            raise ValueError("give a Chain or a preset, not both")
        return specs[0]
    if len(specs) == 1 and isinstance(specs[0], (list, tuple)):
        specs = tuple(specs[0])
    try:
        return _cached(tuple(specs), None if preset is None else str(preset))
    except TypeError:
        raise TypeError("filter specs are strings like 'gaussian:sigma=2'") from None
