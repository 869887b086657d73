"""tilefilter.filter on NumPy arrays: the CLI's bits for every pixel type, border and channel count on odd
sizes; strided and non-contiguous inputs; out= and its aliasing; errors with the CLI's messages and
nothing leaked; many threads at once; files, catalog, presets and devices."""
import gc
import os
import threading

import numpy as np
import pytest

import tilefilter
from conftest import random_image, run_cli

CHAIN = ("gaussian:sigma=1.5", "sharpen:amount=0.7")
BORDERS = ("reflect101", "reflect", "replicate", "constant", "wrap")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("border", BORDERS)
def test_same_bits_as_the_cli(cli, tmp_path, dtype, channels, border):
    rng = np.random.default_rng(hash((np.dtype(dtype).str, channels, border)) % 2**32)
    a = random_image(rng, 37, 53, channels, dtype)
    src, dst = tmp_path / "in.tif", tmp_path / "out.tif"
    tilefilter.write(src, a, compression="none")
    assert np.array_equal(tilefilter.read(src), a)  # lossless round trip
    args = ["apply", src, dst, "--border", border, "--border-value", 7, "--devices", "cpu", "--exact", "-q"]
    for spec in CHAIN:
        args += ["--filter", spec]
    code, err = run_cli(cli, *args)
    assert code == 0, err
    want = tilefilter.read(dst)
    got = tilefilter.filter(a, *CHAIN, border=border, border_value=7 if border == "constant" else 0, devices="cpu",
                            exact=True)
    assert got.dtype == a.dtype and got.shape == a.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))  # bits, NaN-safe


@pytest.mark.parametrize("h,w", [(1, 1), (7, 3), (2, 40), (33, 1)])
def test_tiny_images_match_two_workers_and_tiles(h, w):
    rng = np.random.default_rng(h * 100 + w)
    a = random_image(rng, h, w, 3, np.uint8)
    one = tilefilter.filter(a, "gaussian:sigma=3", devices="cpu:1")
    assert np.array_equal(one, tilefilter.filter(a, "gaussian:sigma=3", devices="cpu:2", tile=4))


def reference(a, *specs, **kw):
    return tilefilter.filter(np.ascontiguousarray(a), *specs, devices="cpu", **kw)


def test_strided_and_non_contiguous_inputs():
    rng = np.random.default_rng(1)
    big = random_image(rng, 80, 90, 4, np.uint8)
    views = {
        "rows of a larger image": big[5:70, 3:81],
        "every other row": big[::2],
        "every third column": big[:, ::3],
        "reversed rows": big[::-1],
        "reversed columns": big[:, ::-1],
        "three of four channels": big[..., :3],
        "one channel": big[..., 1],
        "transposed": big.transpose(1, 0, 2),
        "fortran order": np.asfortranarray(big),
    }
    for name, v in views.items():
        got = tilefilter.filter(v, "gaussian:sigma=2", devices="cpu")
        assert np.array_equal(got, reference(v, "gaussian:sigma=2")), name
    shifted = np.zeros(90 * 80 * 4 + 1, np.uint8)[1:].reshape(80, 90, 4)  # starts at an odd address
    shifted[:] = big
    assert np.array_equal(tilefilter.filter(shifted, "box:radius=2"), reference(big, "box:radius=2"))


def test_unaligned_float_input_is_copied():
    rng = np.random.default_rng(2)
    a = random_image(rng, 20, 30, 1, np.float32)
    un = np.ndarray(a.shape, np.float32, buffer=bytearray(a.nbytes + 1), offset=1)
    un[:] = a
    assert not un.flags.aligned
    assert np.array_equal(tilefilter.filter(un, "sharpen"), reference(a, "sharpen"))


def test_out_rules():
    rng = np.random.default_rng(3)
    a = random_image(rng, 40, 50, 3, np.uint16)
    want = reference(a, "gaussian:sigma=2")
    out = np.empty_like(a)
    assert tilefilter.filter(a, "gaussian:sigma=2", out=out) is out and np.array_equal(out, want)
    # In place: out is the input.
    b = a.copy()
    assert tilefilter.filter(b, "gaussian:sigma=2", out=b) is b and np.array_equal(b, want)
    # Overlapping: the output is the input shifted by a row (computed through a temporary).
    buf = np.zeros((41, 50, 3), np.uint16)
    buf[:40] = a
    tilefilter.filter(buf[:40], "gaussian:sigma=2", out=buf[1:])
    assert np.array_equal(buf[1:], want)
    # A non-packed out (every other column of a larger array).
    wide = np.zeros((40, 100, 3), np.uint16)
    tilefilter.filter(a, "gaussian:sigma=2", out=wide[:, ::2])
    assert np.array_equal(wide[:, ::2], want) and not wide[:, 1::2].any()
    with pytest.raises(ValueError, match="out="):
        tilefilter.filter(a, "sharpen", out=np.empty((40, 50, 3), np.uint8))
    with pytest.raises(ValueError, match="out="):
        tilefilter.filter(a, "sharpen", out=np.empty((40, 51, 3), np.uint16))
    ro = np.empty_like(a)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tilefilter.filter(a, "sharpen", out=ro)


def test_errors_carry_the_cli_messages(cli, tmp_path):
    a = np.zeros((8, 8), np.uint8)
    for spec in ("gaussian:sigma=banana", "nosuchfilter", "box:radius=0", "gaussian:sigma=2,colour=red"):
        code, err = run_cli(cli, "apply", "x.png", tmp_path / "y.png", "--filter", spec)
        with pytest.raises(ValueError) as e:
            tilefilter.filter(a, spec)
        assert err == f"tilefilter: {e.value}", spec
    with pytest.raises(ValueError, match="border"):
        tilefilter.filter(a, "sharpen", border="mirror")
    with pytest.raises(ValueError, match="int32"):
        tilefilter.filter(a.astype(np.int32), "sharpen")
    with pytest.raises(ValueError, match="channels"):
        tilefilter.filter(np.zeros((4, 4, 5), np.uint8), "sharpen")
    with pytest.raises(ValueError):
        tilefilter.filter(np.zeros((4, 4, 3, 1), np.uint8), "sharpen")
    with pytest.raises(ValueError, match="no pixel"):
        tilefilter.filter(np.zeros((0, 4), np.uint8), "sharpen")
    with pytest.raises(ValueError, match="devices"):
        tilefilter.filter(a, "sharpen", devices="cpu:0")
    with pytest.raises(TypeError):
        tilefilter.filter([[1, 2]], 3)
    missing = tmp_path / "missing.png"
    code, err = run_cli(cli, "apply", missing, tmp_path / "o.png", "--filter", "sharpen")
    with pytest.raises(OSError) as e:
        tilefilter.read(missing)
    assert str(missing) in str(e.value)
    assert isinstance(e.value, tilefilter.FileError)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_flat_over_1000_calls():
    rng = np.random.default_rng(4)
    a = random_image(rng, 64, 64, 4, np.uint8)

    def round_of_calls():
        for i in range(1000):
            tilefilter.filter(a, "gaussian:sigma=1.5", devices="cpu")
            for bad in (lambda: tilefilter.filter(a, f"gaussian:sigma=x{i}"),
                        lambda: tilefilter.filter(a.astype(np.int64), "sharpen"),
                        lambda: tilefilter.filter(a, "sharpen", border="nope"),
                        lambda: tilefilter.read(f"/nonexistent/{i}.png")):
                try:
                    bad()
                except (ValueError, OSError):
                    pass
        gc.collect()

    round_of_calls()  # warm: caches, thread pools, allocator arenas
    before = rss_bytes()
    round_of_calls()
    grown = rss_bytes() - before
    assert grown < 2 << 20, f"resident memory grew by {grown / 1e6:.1f} MB over 1000 calls"


def test_many_threads_at_once():
    rng = np.random.default_rng(5)
    images = [random_image(rng, 61 + i, 47 + 2 * i, 3, np.uint8) for i in range(8)]
    wants = [reference(im, "gaussian:sigma=2", "sharpen") for im in images]
    errors = []

    def worker(i):
        try:
            for _ in range(10):
                got = tilefilter.filter(images[i], "gaussian:sigma=2", "sharpen", devices="cpu:2")
                if not np.array_equal(got, wants[i]):
                    errors.append(f"thread {i}: wrong bits")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {i}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_chain_and_presets():
    c = tilefilter.Chain("gaussian:sigma=2", "sharpen")
    assert c.halo == (7, 7, 7, 7) and c.specs == ("gaussian:sigma=2", "sharpen")
    a = np.arange(30 * 20, dtype=np.float32).reshape(30, 20)
    assert np.array_equal(tilefilter.filter(a, c), tilefilter.filter(a, "gaussian:sigma=2", "sharpen"))
    names = [p["name"] for p in tilefilter.presets()]
    assert "soft-focus" in names
    p = next(p for p in tilefilter.presets() if p["name"] == "soft-focus")
    assert np.array_equal(tilefilter.filter(a, preset="soft-focus"),
                          tilefilter.filter(a, *[s["spec"] for s in p["stages"]], border=p["border"]))


def test_catalog_and_devices():
    names = [f["name"] for f in tilefilter.filters()]
    assert {"gaussian", "box", "sharpen", "unsharp", "sobel", "custom"} <= set(names)
    g = next(f for f in tilefilter.filters() if f["name"] == "gaussian")
    assert any(p["name"] == "sigma" for p in g["params"])
    cpus = tilefilter.devices("cpu:3")
    assert [d["id"] for d in cpus] == ["cpu0", "cpu1", "cpu2"] and cpus[0]["kind"] == "cpu"
    assert tilefilter.devices()  # GPUs, or CPU workers without them
    assert tilefilter.__version__.count(".") == 2


def test_files_writer_apply_and_batch(tmp_path, cli):
    rng = np.random.default_rng(6)
    a = random_image(rng, 50, 70, 3, np.uint8)
    tilefilter.write(tmp_path / "a.png", a)
    info = tilefilter.read_info(tmp_path / "a.png")
    assert (info["width"], info["height"], info["channels"], info["dtype"]) == (70, 50, 3, np.uint8)
    with tilefilter.Writer(tmp_path / "b.tif", 70, 50, channels=3, dtype=np.uint8) as w:
        w.write(a[:20])
        w.write(a[20:])
    assert np.array_equal(tilefilter.read(tmp_path / "b.tif"), a)
    with pytest.raises(ValueError, match="not complete"):
        with tilefilter.Writer(tmp_path / "c.tif", 70, 50, channels=3) as w:
            w.write(a[:10])
            w.close()
    assert not (tmp_path / "c.tif").exists()
    tilefilter.apply(tmp_path / "a.png", tmp_path / "f.png", "gaussian:sigma=2", devices="cpu")
    assert np.array_equal(tilefilter.read(tmp_path / "f.png"), tilefilter.filter(a, "gaussian:sigma=2"))
    (tmp_path / "out").mkdir()
    r = tilefilter.batch(tmp_path, tmp_path / "out", "sharpen", devices="cpu", report=tmp_path / "r.json")
    assert r["files_ok"] == 3 and r["files_failed"] == 0 and r["exit_code"] == 0
    assert (tmp_path / "r.json").stat().st_size > 0
