import os
import pathlib

import pytest


def matrix_dir() -> pathlib.Path:
    """SAP_MATRIX_DIR, else ../shared/matrices beside the repository."""
    env = os.environ.get("SAP_MATRIX_DIR")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parents[3] / "shared" / "matrices"


def have_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if have_gpu():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU with CuPy here (GPU tests run on the GPU machine: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
