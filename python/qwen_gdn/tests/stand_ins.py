"""Stand-ins the tests share: tensors that the argument checks accept, a fresh interpreter."""

import os
import subprocess
import sys

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Device:
    def __init__(self, type_, index=None):
        self.type, self.index = type_, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class Fake:
    """What the argument checks read of a tensor: shape, dtype, device, stride()."""

    def __init__(self, shape, dtype="bf16", device=Device("cuda", 0), strides=None):
        self.shape, self.dtype, self.device = tuple(shape), dtype, device
        if strides is None:
            strides, n = [], 1
            for d in reversed(self.shape):
                strides.insert(0, n)
                n *= d
        self._strides = tuple(strides)

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]


def python(code, **env):
    """Runs `code` in a fresh interpreter that imports the package from PACKAGE_ROOT, with `env`
    over os.environ (a None value unsets); returns (exit code, stdout + stderr)."""
    full = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    for key, value in env.items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    r = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr
