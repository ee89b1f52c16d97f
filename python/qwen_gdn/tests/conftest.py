"""Fixtures of qwen_gdn's tests. pytest imports the package from the folder above
(pyproject.toml's [tool.pytest.ini_options] pythonpath), or from wherever it is installed."""

import os

import pytest


@pytest.fixture
def library():
    """The path of the built libqwen_gdn.so (CTest sets QWEN_GDN_LIBRARY where CUDA is built)."""
    path = os.environ.get("QWEN_GDN_LIBRARY")
    if not path:
        pytest.skip("QWEN_GDN_LIBRARY is not set (no libqwen_gdn.so built here)")
    return path
