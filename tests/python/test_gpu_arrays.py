"""CuPy arrays and PyTorch CUDA tensors (run on a GPU machine; skipped without CuPy, PyTorch or a GPU):
filtered where they live with the NumPy path's bits, into out= without a copy (the output's device
pointer is the one given), in place (out= the input), on a non-default stream, and split over two GPUs."""
import numpy as np
import pytest

import tilefilter
from conftest import random_image

CHAIN = ("gaussian:sigma=1.5", "sharpen")


def gpu_count():
    try:
        return sum(1 for d in tilefilter.devices("all") if d["kind"] == "gpu")
    except tilefilter.TileFilterError:
        return 0


needs_gpu = pytest.mark.skipif(gpu_count() == 0, reason="no GPU visible to libtilefilter")


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy", reason="CuPy is not installed")


@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not t.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    return t


@needs_gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("border", ["reflect101", "constant", "wrap"])
def test_cupy_same_bits_as_numpy(cp, dtype, channels, border):
    a = random_image(np.random.default_rng(1), 301, 517, channels, dtype)
    value = 3 if border == "constant" else 0
    got = tilefilter.filter(cp.asarray(a), *CHAIN, border=border, border_value=value)
    assert isinstance(got, cp.ndarray)
    want = tilefilter.filter(a, *CHAIN, border=border, border_value=value, devices="cpu", exact=True)
    assert np.array_equal(cp.asnumpy(got), want)


# Chains for filtering in place: two stages (the library writes the input straight), one separable and
# one 2-D stage (a single launch: through one intermediate on the device).
IN_PLACE_CHAINS = [CHAIN, ("gaussian:sigma=1.5",), ("sharpen",)]


@needs_gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("border", ["reflect101", "replicate", "constant", "wrap"])
@pytest.mark.parametrize("chain", IN_PLACE_CHAINS, ids=["two_stages", "separable", "2d"])
def test_cupy_in_place_same_bits_as_out_of_place(cp, dtype, channels, border, chain):
    a = random_image(np.random.default_rng(11), 301, 517, channels, dtype)
    value = 3 if border == "constant" else 0
    want = tilefilter.filter(a, *chain, border=border, border_value=value, devices="cpu", exact=True)
    d_a = cp.asarray(a)
    apart = tilefilter.filter(d_a, *chain, border=border, border_value=value)
    ptr = d_a.data.ptr
    got = tilefilter.filter(d_a, *chain, border=border, border_value=value, out=d_a)
    assert got is d_a and got.data.ptr == ptr
    assert np.array_equal(cp.asnumpy(apart), want)
    assert np.array_equal(cp.asnumpy(got), want)


def check_torch_on_a_stream(torch, a, chain, in_place):
    """`a` filtered on the GPU from a side stream into `out` (the input itself when in_place): the same
    tensor back, written where it lies, with the CPU's bits."""
    want = tilefilter.filter(a, *chain, devices="cpu", exact=True)
    t = torch.from_numpy(a).cuda()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # after the upload
    with torch.cuda.stream(s):
        out = t if in_place else torch.empty_like(t)
        ptr = out.data_ptr()
        got = tilefilter.filter(t, *chain, out=out)
        assert got is out and got.data_ptr() == ptr
    s.synchronize()
    assert np.array_equal(got.cpu().numpy(), want)


@needs_gpu
@pytest.mark.parametrize("chain", IN_PLACE_CHAINS, ids=["two_stages", "separable", "2d"])
def test_torch_in_place_on_a_stream(torch, chain):
    check_torch_on_a_stream(torch, random_image(np.random.default_rng(12), 257, 263, 4, np.uint8), chain, True)


@needs_gpu
def test_cupy_out_overlapping_the_input_without_being_it(cp):
    a = random_image(np.random.default_rng(13), 120, 90, 3, np.float32)
    d = cp.asarray(np.concatenate([a, a[:1]]))  # one spare row
    want = tilefilter.filter(a, *CHAIN, devices="cpu", exact=True)
    got = tilefilter.filter(d[:-1], *CHAIN, out=d[1:])  # through a copy: the library refuses such an overlap
    assert np.array_equal(cp.asnumpy(got), want)


@needs_gpu
def test_cupy_out_is_written_in_place_on_a_stream(cp):
    a = random_image(np.random.default_rng(2), 1000, 1200, 4, np.uint8)
    want = tilefilter.filter(a, *CHAIN, devices="cpu", exact=True)
    d_a = cp.asarray(a)
    cp.cuda.Device().synchronize()  # the upload ran on the null stream, which a non-blocking one ignores
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        d_out = cp.empty_like(d_a)
        ptr = d_out.data.ptr
        got = tilefilter.filter(d_a, *CHAIN, out=d_out)
        assert got is d_out and got.data.ptr == ptr
        host = cp.asnumpy(got, stream=stream)
    stream.synchronize()
    assert np.array_equal(host, want)
    view = cp.asarray(random_image(np.random.default_rng(3), 400, 600, 3, np.float32))[50:350, 100:500]
    assert np.array_equal(cp.asnumpy(tilefilter.filter(view, "gaussian:sigma=3")),
                          tilefilter.filter(cp.asnumpy(view), "gaussian:sigma=3", devices="cpu"))


@needs_gpu
def test_torch_tensors(torch):
    check_torch_on_a_stream(torch, random_image(np.random.default_rng(4), 333, 444, 4, np.uint8), CHAIN, False)
    f = torch.from_numpy(random_image(np.random.default_rng(5), 100, 90, 1, np.float32)).cuda()
    g = tilefilter.filter(f, "box:radius=3")
    assert isinstance(g, torch.Tensor) and g.is_cuda
    assert np.array_equal(g.cpu().numpy(), tilefilter.filter(f.cpu().numpy(), "box:radius=3", devices="cpu"))


@needs_gpu
def test_torch_nchw_with_channel_axis_and_kernel_arrays(torch):
    a = random_image(np.random.default_rng(7), 2 * 3 * 65, 71, 1, np.float32).reshape(2, 3, 65, 71)
    k = np.random.default_rng(8).normal(size=(5, 3))
    want = np.stack([tilefilter.filter(a[n], "gaussian:sigma=1", kernel=k, channel_axis=0, devices="cpu",
                                       exact=True) for n in range(2)])
    t = torch.from_numpy(a).cuda()
    out = torch.empty_like(t)
    ptr = out.data_ptr()
    got = tilefilter.filter(t, "gaussian:sigma=1", kernel=k, channel_axis=1, out=out)
    assert got is out and got.data_ptr() == ptr
    assert np.array_equal(got.cpu().numpy(), want)
    chw = t[1]  # a view: each plane is filtered where it lies
    assert np.array_equal(tilefilter.filter(chw, "gaussian:sigma=1", kernel=k, channel_axis=0).cpu().numpy(), want[1])


@needs_gpu
def test_cupy_kernel_arrays(cp):
    a = random_image(np.random.default_rng(9), 200, 301, 3, np.uint16)
    k = np.random.default_rng(10).uniform(size=(7, 7))
    got = tilefilter.filter(cp.asarray(a), kernel=k, normalize=True)
    assert np.array_equal(cp.asnumpy(got), tilefilter.filter(a, kernel=k, normalize=True, devices="cpu",
                                                               exact=True))


@pytest.mark.skipif(gpu_count() < 2, reason="needs two GPUs")
def test_cupy_split_over_two_gpus(cp):
    a = random_image(np.random.default_rng(6), 4099, 4097, 4, np.uint8)
    want = tilefilter.filter(a, *CHAIN, devices="cpu", exact=True)
    with cp.cuda.Device(0):
        d_a = cp.asarray(a)
        got = tilefilter.filter(d_a, *CHAIN, devices="0,1")
        assert got.device.id == 0
        assert np.array_equal(cp.asnumpy(got), want)
        wrap = tilefilter.filter(d_a, *CHAIN, devices="0,1", border="wrap")
        assert np.array_equal(cp.asnumpy(wrap), tilefilter.filter(a, *CHAIN, border="wrap", devices="cpu"))


class _FakeDeviceArray:
    """Claims to be a device array (duck typing, as _device.py recognises one) over host memory: the
    library must refuse it on its own rules before any GPU is touched."""

    def __init__(self, a):
        self.host = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                                         "version": 3, "strides": None, "stream": None}


@pytest.mark.parametrize("devices", ["cpu", "cpu:2", "0,cpu:1"])
def test_a_device_array_is_refused_on_cpus_by_the_library(devices):
    a = random_image(np.random.default_rng(5), 40, 30, 3, np.uint8)
    src, out = _FakeDeviceArray(a), _FakeDeviceArray(np.zeros_like(a))
    with pytest.raises(tilefilter.InvalidArgumentError, match="filtered on GPUs"):
        tilefilter.filter(src, *CHAIN, devices=devices, out=out)
    with pytest.raises(tilefilter.InvalidArgumentError, match="border='mirror' is not one of"):
        tilefilter.filter(src, *CHAIN, border="mirror", out=out)
