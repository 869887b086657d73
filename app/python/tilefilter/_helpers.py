"""The common filters as keyword calls, named and defaulted as scipy.ndimage and cupyx.scipy.ndimage
users expect: thin wrappers that build the spec (or the kernel) and call tilefilter.filter, so that
`gaussian(a, 2)` and `filter(a, "gaussian:sigma=2,radius=6")` are the same call and give the same bits.

Every helper takes filter()'s keywords after its own: border (reflect101 = scipy's mode='mirror',
reflect = 'reflect', replicate = 'nearest', constant, wrap), border_value, devices, exact, out,
channel_axis. Results keep the input's type (uint8 results are rounded and clamped to 0..255)."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    import numpy.typing as npt


def _filter(a, *specs, **options):
    from . import filter
    return filter(a, *specs, **options)


def _number(name: str, value, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = "one value per axis" if hasattr(value, "__len__") else type(value).__name__
        raise TypeError(f"{name}= is one number for both axes, not {kind} ({value!r})")
    if not value >= minimum:
        raise ValueError(f"{name}={value!r} must be at least {minimum}")
    return float(value)


def gaussian(a: npt.NDArray[Any], sigma: float, truncate: float = 3.0, **options) -> npt.NDArray[Any]:
    """Gaussian blur of standard deviation `sigma` pixels, as scipy.ndimage.gaussian_filter(a, sigma,
    truncate=truncate) on each channel (radius int(truncate * sigma + 0.5), at least 1; the taps of
    cv2.getGaussianKernel). The spec 'gaussian:sigma=S,radius=R'. sigma from 0.1 to 680, one for both axes.

    >>> tilefilter.gaussian(a, 2)                       # == filter(a, "gaussian:sigma=2,radius=6")
    >>> tilefilter.gaussian(a, 2, border="constant", border_value=0)
    """
    sigma = _number("sigma", sigma)
    radius = max(1, int(_number("truncate", truncate) * sigma + 0.5))
    return _filter(a, f"gaussian:sigma={sigma!r},radius={radius}", **options)


def box(a: npt.NDArray[Any], radius: int, **options) -> npt.NDArray[Any]:
    """Mean over a (2*radius+1)-pixel square window, as scipy.ndimage.uniform_filter(a, size=2*radius+1) and
    cv2.blur. The spec 'box:radius=R'; radius from 1 to 2047."""
    if isinstance(radius, bool) or not isinstance(radius, numbers.Integral):
        raise TypeError(f"radius= is a whole number of pixels, not {radius!r}")
    return _filter(a, f"box:radius={int(radius)}", **options)


def unsharp(a: npt.NDArray[Any], sigma: float = 1.5, amount: float = 1.0, truncate: float = 3.0,
            **options) -> npt.NDArray[Any]:
    """Unsharp mask: (1 + amount) * a - amount * gaussian(a, sigma), as skimage.filters.unsharp_mask(a,
    radius=sigma, amount=amount) without its rescaling. The spec 'unsharp:sigma=S,amount=A,radius=R'
    (radius as gaussian's); amount from 0 to 10."""
    sigma = _number("sigma", sigma)
    radius = max(1, int(_number("truncate", truncate) * sigma + 0.5))
    return _filter(a, f"unsharp:sigma={sigma!r},amount={_number('amount', amount)!r},radius={radius}", **options)


def sobel(a: npt.NDArray[Any], axis: Optional[int] = -1, **options) -> npt.NDArray[Any]:
    """Sobel derivative along image axis `axis`, as scipy.ndimage.sobel(a, axis) on a 2-D image: axis 1 or
    -1 across the columns (x, the default), 0 down the rows (y); None the gradient magnitude
    sqrt(gx^2 + gy^2). The axis counts the image's two axes only, also for H x W x C arrays. The spec
    'sobel:dir=x|y|magnitude'. Unsigned results clamp negative slopes to 0: pass float32 for signs."""
    names = {0: "y", 1: "x", -1: "x", -2: "y", None: "magnitude"}
    if axis not in names or isinstance(axis, bool):
        raise ValueError(f"axis={axis!r}: use 0 (down the rows), 1 or -1 (across the columns) or None (magnitude)")
    return _filter(a, f"sobel:dir={names[axis]}", **options)


def correlate(a: npt.NDArray[Any], kernel: Any, normalize: bool = False, **options) -> npt.NDArray[Any]:
    """Correlation with `kernel` (anchor at its centre), as scipy.ndimage.correlate(a, kernel) and
    cv2.filter2D(a, -1, kernel): filter(a, kernel=kernel). 2-D kernel, 1-D (along the rows, then the
    columns) or a (row, column) pair; float32 or float64 taps (rounded to float32)."""
    return _filter(a, kernel=kernel, normalize=normalize, **options)


def convolve(a: npt.NDArray[Any], kernel: Any, normalize: bool = False, **options) -> npt.NDArray[Any]:
    """Convolution with `kernel`, as scipy.ndimage.convolve(a, kernel): correlation with the kernel
    reversed on both axes (for odd sizes the same result as scipy's; an even side's anchor is at
    size // 2 of the reversed kernel). 2-D kernel, 1-D (along the rows, then the columns) or a (row,
    column) pair; float32 or float64 taps (rounded to float32)."""
    import numpy as np
    if isinstance(kernel, tuple) and len(kernel) == 2 and all(np.ndim(k) == 1 for k in kernel):
        flipped: Any = (np.asarray(kernel[0])[::-1], np.asarray(kernel[1])[::-1])
    else:
        k = np.asarray(kernel)
        flipped = k[::-1, ::-1] if k.ndim == 2 else k[::-1]
    return _filter(a, kernel=flipped, normalize=normalize, **options)
