"""tilefilter.dask.filter: the whole array's bits from uneven chunks, every border, chains, and on a local
dask.distributed cluster of worker processes."""
import numpy as np
import pytest

import tilefilter
from conftest import random_image

da = pytest.importorskip("dask.array", reason="python3-dask is not installed")
import tilefilter.dask as tfd  # noqa: E402

CHAIN = ("gaussian:sigma=2", "sharpen")
# The chain reaches 7 pixels: chunks of at least 7 take their neighbours' edges; smaller ones make the
# axis one chunk first.
UNEVEN = ((17, 40, 9, 23), (31, 12, 43, 11))
UNEVEN_SMALL = ((17, 40, 3, 29), (31, 5, 50, 11))


@pytest.mark.parametrize("border", ["reflect101", "reflect", "replicate", "constant", "wrap"])
@pytest.mark.parametrize("channels", [1, 4])
@pytest.mark.parametrize("chunking", [UNEVEN, UNEVEN_SMALL, ((89,), (20, 20, 20, 20, 17))])
@pytest.mark.parametrize("neighbours", ["whole", "edges"])  # small chunks travel whole; large ones as edges
def test_whole_array_bits_with_uneven_chunks(border, channels, chunking, neighbours, monkeypatch):
    if neighbours == "edges":
        monkeypatch.setattr(tfd, "_WHOLE_NEIGHBOUR_BYTES", 0)
    rng = np.random.default_rng(7)
    a = random_image(rng, 89, 97, channels, np.uint8)
    chunks = chunking if channels == 1 else chunking + ((channels,),)
    d = da.from_array(a, chunks=chunks)
    value = 9 if border == "constant" else 0
    got = tfd.filter(d, *CHAIN, border=border, border_value=value, devices="cpu:1", exact=True)
    want = tilefilter.filter(a, *CHAIN, border=border, border_value=value, devices="cpu", exact=True)
    result = got.compute(scheduler="threads")
    assert result.shape == a.shape and np.array_equal(result, want)
    assert got.chunks[:2] == d.chunks[:2] or chunking is UNEVEN_SMALL


def test_halo_larger_than_chunks_and_array():
    rng = np.random.default_rng(8)
    a = random_image(rng, 40, 300, 3, np.float32)
    d = da.from_array(a, chunks=(7, 64, 3))
    got = tfd.filter(d, "gaussian:sigma=20", exact=True).compute(scheduler="threads")
    assert np.array_equal(got, tilefilter.filter(a, "gaussian:sigma=20", exact=True))


def test_on_a_local_cluster_of_worker_processes():
    distributed = pytest.importorskip("distributed", reason="python3-distributed is not installed")
    rng = np.random.default_rng(9)
    a = random_image(rng, 300, 257, 3, np.uint16)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        d = da.from_array(a, chunks=((100, 77, 123), (64, 64, 129), (3,)))
        got = client.compute(tfd.filter(d, *CHAIN, exact=True)).result()
        pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2
    assert np.array_equal(got, tilefilter.filter(a, *CHAIN, exact=True))
