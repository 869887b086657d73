"""Shared fixtures: the CLI the bits are compared with (TILEFILTER_CLI, set by ctest) and random images."""
import os
import shutil
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TILEFILTER_CLI") or shutil.which("tilefilter")
    if not path:
        pytest.skip("no tilefilter CLI to compare with (set TILEFILTER_CLI)")
    return path


def run_cli(cli, *args):
    """(exit code, stderr) of `tilefilter ARGS`."""
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stderr.strip()


def random_image(rng, h, w, c, dtype):
    shape = (h, w) if c == 1 else (h, w, c)
    if np.dtype(dtype) == np.float32:
        return rng.uniform(-0.5, 1.5, shape).astype(np.float32)
    top = 256 if np.dtype(dtype) == np.uint8 else 65536
    return rng.integers(0, top, shape, dtype=dtype)
