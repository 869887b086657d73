"""Python that behaves like Python (issue 46): chains that pickle and copy by their description, kernels as
arrays, scipy's names for the common filters, float64 and channels-first arrays, warnings for arguments
without effect, messages in Python's words, upright reads, dir(), batch progress."""
import concurrent.futures
import copy
import errno
import inspect
import multiprocessing
import os
import pickle
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tilefilter
from conftest import random_image

SHARPEN = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)


def kernel_file(path, k, fmt="%.17g"):
    np.savetxt(path, np.atleast_2d(k), fmt=fmt)
    return str(path)


def image(seed=1, h=37, w=53, c=3, dtype=np.uint8):
    return random_image(np.random.default_rng(seed), h, w, c, dtype)


# ---- 1. Chains pickle and copy by their description ----

def filter_with(chain, a):  # a module-level function: ProcessPoolExecutor pickles it by name
    return tilefilter.filter(a, chain, devices="cpu")


def test_pickle_and_copy_give_the_same_bits(tmp_path):
    a = image()
    rng = np.random.default_rng(3)
    k = rng.normal(size=(5, 7))
    for chain in (tilefilter.Chain("gaussian:sigma=2", "sharpen"), tilefilter.Chain(preset="motion-blur"),
                  tilefilter.Chain("box:radius=2", kernel=k, border="constant", border_value=9),
                  tilefilter.Chain(kernel=(np.array([1.0, 2, 1]), np.array([1.0, 0, -1]))),
                  tilefilter.Chain(kernel=np.array([1.0, 3, 5, 3, 1]), normalize=True)):
        want = tilefilter.filter(a, chain)
        for other in (pickle.loads(pickle.dumps(chain)), copy.deepcopy(chain), copy.copy(chain)):
            assert other == chain and hash(other) == hash(chain) and other.halo == chain.halo
            assert other.specs == chain.specs
            assert (other.border, other.border_value) == (chain.border, chain.border_value)
            assert np.array_equal(tilefilter.filter(a, other), want)


def test_a_pickled_kernel_file_travels_as_its_numbers(tmp_path):
    a = image(2)
    path = kernel_file(tmp_path / "k.txt", np.random.default_rng(4).normal(size=(3, 5)))
    chain = tilefilter.Chain(f"custom:file={path},normalize=true")
    want = tilefilter.filter(a, chain)
    data = pickle.dumps(chain)
    assert path.encode() not in data
    os.remove(path)
    assert np.array_equal(tilefilter.filter(a, pickle.loads(data)), want)


def test_a_chain_goes_to_worker_processes():
    a = image(5)
    chain = tilefilter.Chain("unsharp:sigma=1.5", kernel=SHARPEN)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        got = list(pool.map(filter_with, [chain, chain], [a, a[::-1]]))
    assert np.array_equal(got[0], tilefilter.filter(a, chain, devices="cpu"))
    assert np.array_equal(got[1], tilefilter.filter(a[::-1], chain, devices="cpu"))


def test_a_chain_goes_to_a_dask_cluster():
    distributed = pytest.importorskip("distributed", reason="python3-distributed is not installed")
    da = pytest.importorskip("dask.array")
    import tilefilter.dask as tfd
    a = image(6, 120, 97, 3, np.float32)
    k = np.random.default_rng(7).normal(size=(7, 7))
    chain = tilefilter.Chain("gaussian:sigma=1", kernel=k)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        submitted = client.submit(filter_with, chain, a).result()
        lazy = client.compute(tfd.filter(da.from_array(a, chunks=(40, 50, 3)), chain, exact=True)).result()
    assert np.array_equal(submitted, tilefilter.filter(a, chain, devices="cpu"))
    assert np.array_equal(lazy, tilefilter.filter(a, chain, exact=True))


# ---- 2. Kernels as arrays ----

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("normalize", [False, True])
def test_kernel_arrays_give_the_bits_of_kernel_files(tmp_path, dtype, normalize):
    a = image(8, 41, 39, 4, np.uint16)
    rng = np.random.default_rng(9)
    for shape in ((5, 5), (3, 9), (1, 11), (11, 1), (4, 6)):
        k = (rng.uniform(0.1, 1, shape) + (np.arange(np.prod(shape)).reshape(shape) == 0)).astype(dtype)
        path = kernel_file(tmp_path / "k.txt", k, "%.9g" if dtype == np.float32 else "%.17g")
        want = tilefilter.filter(a, f"custom:file={path},normalize={str(normalize).lower()}", devices="cpu")
        got = tilefilter.filter(a, kernel=k, normalize=normalize, devices="cpu")
        assert np.array_equal(got, want), shape
        assert np.array_equal(tilefilter.filter(a, tilefilter.Chain(kernel=k, normalize=normalize), devices="cpu"),
                              want)


def test_one_dimensional_kernels_are_separable():
    a = image(10, 30, 44, 1, np.float32)
    row = np.array([1.0, 4, 6, 4, 1]) / 16
    col = np.array([-1.0, 0, 1])
    one = tilefilter.filter(a, kernel=row)
    assert np.array_equal(one, tilefilter.filter(a, kernel=(row, row)))
    pair = tilefilter.filter(a, kernel=(row, col))
    scipy = pytest.importorskip("scipy.ndimage")
    want = scipy.correlate1d(scipy.correlate1d(a.astype(np.float64), row, axis=1, mode="mirror"), col, axis=0,
                             mode="mirror")
    assert np.allclose(pair, want, atol=1e-5)
    assert np.allclose(one, tilefilter.filter(a, kernel=np.outer(row, row)), atol=1e-6)


def test_kernel_arrays_refuse_what_they_cannot_be():
    a = image(11)
    with pytest.raises(ValueError, match="2-D"):
        tilefilter.filter(a, kernel=np.ones((3, 3, 3)))
    with pytest.raises(TypeError, match="complex"):
        tilefilter.filter(a, kernel=np.ones((3, 3), complex))
    with pytest.raises(ValueError, match="sum to 0"):
        tilefilter.filter(a, kernel=np.array([[1.0, -1.0]]), normalize=True)
    with pytest.raises(tilefilter.LimitError):
        tilefilter.filter(a, kernel=np.ones((1025, 3)))
    with pytest.raises(ValueError, match="is nan"):
        tilefilter.filter(a, kernel=np.array([[1.0, np.nan, 1.0]]))
    with pytest.raises(TypeError, match="kernel="):
        tilefilter.filter(a, SHARPEN)


def test_a_kernel_file_is_read_again_when_it_changes(tmp_path):
    a = image(12)
    path = tmp_path / "k.txt"
    kernel_file(path, SHARPEN)
    spec = f"custom:file={path}"
    first = tilefilter.filter(a, spec)
    assert np.array_equal(first, tilefilter.filter(a, "sharpen"))
    kernel_file(path, np.ones((3, 3)) / 9)  # the same spec, another kernel (and another size and time)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert np.array_equal(tilefilter.filter(a, spec), tilefilter.filter(a, "box:radius=1"))


def test_a_preset_file_is_read_again_when_it_changes(tmp_path):
    a = image(24)
    path = tmp_path / "p.json"
    path.write_text('{"name": "p", "filters": [{"filter": "sharpen"}]}')
    assert np.array_equal(tilefilter.filter(a, preset=str(path)), tilefilter.filter(a, "sharpen"))
    path.write_text('{"name": "p", "filters": [{"filter": "box", "params": {"radius": 2}}]}')
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert np.array_equal(tilefilter.filter(a, preset=str(path)), tilefilter.filter(a, "box:radius=2"))


def test_paths_with_commas(tmp_path):
    a = image(13)
    folder = tmp_path / "with, comma"
    folder.mkdir()
    path = kernel_file(folder / 'k,"1".txt', SHARPEN)
    spec = f"custom:file={tilefilter.spec_value(path)},normalize=false"
    assert spec.startswith('custom:file="')
    assert np.array_equal(tilefilter.filter(a, spec), tilefilter.filter(a, "sharpen"))
    with pytest.raises(ValueError, match="closing quote"):
        tilefilter.filter(a, 'custom:file="unclosed')


# ---- 3. Keyword helpers ----

def test_helpers_equal_their_specs():
    a = image(14, 45, 38, 3, np.uint8)
    cases = [(tilefilter.gaussian(a, 2), ("gaussian:sigma=2,radius=6",)),
             (tilefilter.gaussian(a, 1.1, truncate=4.0), ("gaussian:sigma=1.1,radius=4",)),
             (tilefilter.box(a, 3), ("box:radius=3",)),
             (tilefilter.unsharp(a, 1.5, 0.8), ("unsharp:sigma=1.5,amount=0.8,radius=5",)),
             (tilefilter.sobel(a, 0), ("sobel:dir=y",)),
             (tilefilter.sobel(a, -1), ("sobel:dir=x",)),
             (tilefilter.sobel(a, None), ("sobel:dir=magnitude",)),
             (tilefilter.correlate(a, SHARPEN), ("sharpen",)),
             (tilefilter.convolve(a, SHARPEN), ("sharpen",))]
    for got, specs in cases:
        assert np.array_equal(got, tilefilter.filter(a, *specs)), specs
    assert np.array_equal(tilefilter.gaussian(a, 2, border="constant", border_value=30),
                          tilefilter.filter(a, "gaussian:sigma=2", border="constant", border_value=30))
    for helper in (tilefilter.gaussian, tilefilter.box, tilefilter.unsharp, tilefilter.sobel, tilefilter.convolve,
                   tilefilter.correlate):
        assert helper.__doc__ and ("scipy" in helper.__doc__ or "skimage" in helper.__doc__)
    with pytest.raises(TypeError, match="one number"):
        tilefilter.gaussian(a, (2, 3))
    with pytest.raises(ValueError, match="axis"):
        tilefilter.sobel(a, 2)


def test_helpers_equal_scipy():
    scipy = pytest.importorskip("scipy.ndimage")
    a = image(15, 40, 47, 1, np.float32)
    f = a.astype(np.float64)
    k = np.random.default_rng(16).normal(size=(5, 3))
    for border, mode in (("reflect101", "mirror"), ("reflect", "reflect"), ("replicate", "nearest"),
                         ("wrap", "wrap"), ("constant", "constant")):
        pairs = [(tilefilter.gaussian(a, 1.7, border=border), scipy.gaussian_filter(f, 1.7, truncate=3.0, mode=mode)),
                 (tilefilter.box(a, 2, border=border), scipy.uniform_filter(f, 5, mode=mode)),
                 (tilefilter.sobel(a, 0, border=border), scipy.sobel(f, 0, mode=mode)),
                 (tilefilter.sobel(a, 1, border=border), scipy.sobel(f, 1, mode=mode)),
                 (tilefilter.convolve(a, k, border=border), scipy.convolve(f, k, mode=mode)),
                 (tilefilter.correlate(a, k, border=border), scipy.correlate(f, k, mode=mode))]
        for i, (got, want) in enumerate(pairs):
            assert np.allclose(got, want, atol=2e-5), (border, i)


# ---- 4. float64, int16, channel_axis ----

def test_float64_is_filtered_in_float32_and_returned_as_float64():
    a = image(17, 30, 31, 3, np.float32).astype(np.float64) + 1e-9
    got = tilefilter.filter(a, "gaussian:sigma=2")
    assert got.dtype == np.float64
    assert np.array_equal(got, tilefilter.filter(a.astype(np.float32), "gaussian:sigma=2").astype(np.float64))
    out = np.empty_like(a)
    assert tilefilter.filter(a, "gaussian:sigma=2", out=out) is out and np.array_equal(out, got)


def test_int16_is_refused_with_the_way_round():
    with pytest.raises(ValueError, match="int16 arrays cannot be filtered.*float32"):
        tilefilter.filter(np.arange(64, dtype=np.int16).reshape(8, 8), "sharpen")


def test_channel_axis():
    hwc = image(18, 33, 29, 3, np.uint8)
    chw = np.ascontiguousarray(hwc.transpose(2, 0, 1))
    want = tilefilter.filter(hwc, "gaussian:sigma=1.5", "sharpen").transpose(2, 0, 1)
    assert np.array_equal(tilefilter.filter(chw, "gaussian:sigma=1.5", "sharpen", channel_axis=0), want)
    nchw = np.stack([chw, chw[:, ::-1]])
    got = tilefilter.filter(nchw, "gaussian:sigma=1.5", "sharpen", channel_axis=1)
    assert np.array_equal(got[0], want)
    assert np.array_equal(got[1], tilefilter.filter(chw[:, ::-1], "gaussian:sigma=1.5", "sharpen", channel_axis=0))
    nhwc = np.stack([hwc, hwc[::-1]])
    assert np.array_equal(tilefilter.filter(nhwc, "sharpen", channel_axis=-1)[1],
                          tilefilter.filter(hwc[::-1], "sharpen"))
    out = np.empty_like(chw)
    assert tilefilter.filter(chw, "sharpen", channel_axis=0, out=out) is out
    with pytest.raises(ValueError, match="channel_axis=0"):
        tilefilter.filter(chw, "sharpen")
    with pytest.raises(ValueError, match="channel_axis=1"):
        tilefilter.filter(chw, "sharpen", channel_axis=1)


# ---- 5. Listing writes nothing; warnings; messages in Python's words; missing files ----

def test_presets_write_nothing(tmp_path):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), HOME=str(tmp_path / "home"),
               TMPDIR=str(tmp_path / "tmp"))
    for d in ("data", "home", "tmp"):
        (tmp_path / d).mkdir()
    code = ("import tilefilter; p = tilefilter.presets(); assert any('kernel' in s for x in p for s in x['stages']);"
            "c = tilefilter.Chain(preset='motion-blur'); import pickle; pickle.loads(pickle.dumps(c))")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert sorted(tmp_path.rglob("*")) == sorted(tmp_path / d for d in ("data", "home", "tmp"))


def test_arguments_without_effect_warn_or_are_refused(tmp_path):
    a = image(19)
    with pytest.warns(tilefilter.TileFilterWarning, match="no effect"):
        tilefilter.filter(a, "sharpen", border_value=5)
    with pytest.warns(tilefilter.TileFilterWarning, match="no effect"):
        tilefilter.filter(a, "sharpen", border="wrap", border_value=5)
    with pytest.warns(tilefilter.TileFilterWarning, match="clamped to 255"):
        tilefilter.filter(a, "sharpen", border="constant", border_value=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tilefilter.filter(a, "sharpen", border="constant", border_value=200)
        tilefilter.filter(a.astype(np.float32), "sharpen", border="constant", border_value=300)
    for name in ("a.png", "a.jpg"):
        with pytest.raises(ValueError, match="compression='bogus'"):
            tilefilter.write(tmp_path / name, a, compression="bogus")
    tilefilter.write(tmp_path / "ok.png", a, compression="9")
    with pytest.warns(tilefilter.TileFilterWarning, match="quality=50 has no effect on .png") as w:
        tilefilter.write(tmp_path / "q.png", a, quality=50)
    assert w[0].filename == __file__  # the caller's line, not the package's
    tilefilter.write(tmp_path / "src.jpg", a)
    try:
        with pytest.warns(tilefilter.TileFilterWarning, match="WebP"):
            tilefilter.write(tmp_path / "a.webp", a, metadata_from=tmp_path / "src.jpg")
    except tilefilter.FileError as e:  # a build without WebP
        pytest.skip(str(e))


def test_messages_speak_python():
    a = image(20)
    chain = tilefilter.Chain("gaussian:sigma=1")
    assert np.array_equal(tilefilter.filter(a, chain, "sharpen"), tilefilter.filter(a, "gaussian:sigma=1", "sharpen"))
    with pytest.raises(ValueError) as e:
        tilefilter.filter(a, "sharpen", border="mirror")
    assert str(e.value) == ("border='mirror' is not one of reflect101, reflect, replicate, constant, wrap "
                            "(scipy's mode='mirror' is border='reflect101')")
    with pytest.raises(TypeError, match="tile= is a tile side"):
        tilefilter.filter(a, "sharpen", tile="big")
    with pytest.raises(ValueError, match=r"byte order '>u2'.*astype\('uint16'\)"):
        tilefilter.filter(a.astype(">u2"), "sharpen")
    with pytest.raises(ValueError) as e:
        tilefilter.filter(a, "sharpen", devices="cpu:0")
    assert "--" not in str(e.value) and "devices=" in str(e.value)
    with pytest.raises(ValueError) as e:
        tilefilter.Chain()
    assert "--" not in str(e.value)
    with pytest.raises(TypeError, match="spec strings"):
        tilefilter.filter(a, 3)


def test_missing_files_raise_file_not_found(tmp_path):
    a = image(21)
    missing = str(tmp_path / "missing.png")
    calls = [lambda: tilefilter.read(missing), lambda: tilefilter.read_info(missing),
             lambda: tilefilter.write(tmp_path / "o.jpg", a, metadata_from=missing),
             lambda: tilefilter.apply(missing, tmp_path / "o.png", "sharpen"),
             lambda: tilefilter.filter(a, f"custom:file={missing}")]
    for call in calls:
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert isinstance(e.value, tilefilter.FileError)
        assert e.value.errno == errno.ENOENT and e.value.filename == missing
        assert missing in str(e.value) and not str(e.value).startswith("[Errno")
    broken = tmp_path / "broken.png"
    broken.write_text("not a picture")
    with pytest.raises(tilefilter.FileError) as e:
        tilefilter.read(broken)
    assert not isinstance(e.value, FileNotFoundError) and e.value.filename == str(broken)


# ---- 6. Upright reads, dir(), types, batch progress ----

def with_orientation(jpeg: bytes, orientation: int) -> bytes:
    """`jpeg` with an EXIF block (APP1) holding only the orientation tag."""
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1) + \
        struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    body = b"Exif\x00\x00" + tiff
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + jpeg[2:]


@pytest.mark.parametrize("orientation", range(1, 9))
def test_read_autorotate(tmp_path, orientation):
    a = image(22, 16, 24, 3, np.uint8)
    tilefilter.write(tmp_path / "plain.jpg", a, quality=100)
    path = tmp_path / "turned.jpg"
    path.write_bytes(with_orientation((tmp_path / "plain.jpg").read_bytes(), orientation))
    assert tilefilter.read_info(path)["orientation"] == orientation
    stored = tilefilter.read(path)
    assert stored.shape == (16, 24, 3) and np.array_equal(stored, tilefilter.read(path, autorotate=False))
    upright = tilefilter.read(path, autorotate=True)
    # The stored pixels as a viewer turns them (EXIF 2.32, table of Orientation): where the stored
    # image's first row and column go.
    want = {1: stored, 2: stored[:, ::-1], 3: stored[::-1, ::-1], 4: stored[::-1],
            5: np.rot90(stored, -1)[:, ::-1], 6: np.rot90(stored, -1), 7: np.rot90(stored, -1)[::-1],
            8: np.rot90(stored, 1)}
    assert np.array_equal(upright, want[orientation])
    assert upright.flags.c_contiguous
    assert "autorotate" in tilefilter.read.__doc__


def test_dir_all_and_types():
    for name in ("Writer", "dask", "gaussian", "convolve", "TileFilterWarning"):
        assert name in tilefilter.__all__ and name in dir(tilefilter)
    assert "NDArray" in str(inspect.signature(tilefilter.filter).parameters["a"].annotation)
    assert "NDArray" in str(inspect.signature(tilefilter.read).return_annotation)


def test_batch_progress(tmp_path):
    a = image(23)
    (tmp_path / "in").mkdir()
    for i in range(4):
        tilefilter.write(tmp_path / "in" / f"{i}.png", a)
    seen = []
    r = tilefilter.batch(tmp_path / "in", tmp_path / "out", "sharpen", devices="cpu", progress=seen.append)
    assert r["files_ok"] == 4
    assert seen and seen[-1]["files_done"] == 4 and seen[-1]["files_total"] == 4
    assert [p["files_done"] for p in seen] == sorted(p["files_done"] for p in seen)

    def stop(p):
        raise KeyboardInterrupt("enough")

    with pytest.raises(KeyboardInterrupt, match="enough"):
        tilefilter.batch(tmp_path / "in", tmp_path / "out2", "sharpen", devices="cpu", progress=stop)
    with pytest.raises(ValueError, match="custom:file"):
        tilefilter.batch(tmp_path / "in", tmp_path / "out3", tilefilter.Chain(kernel=SHARPEN))
