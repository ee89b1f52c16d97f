"""ctypes binding of libqwen_gdn.so (kernels/capi/qr_gdn.h). Needs no torch and no GPU.

Where the library is looked for, first match wins:
  1. the file named by the QWEN_GDN_LIBRARY environment variable (only there, when it is set);
  2. a copy inside this package (bundled when the wheel was built with QWEN_GDN_LIBRARY set);
  3. the dynamic loader's search for libqwen_gdn.so.1 (LD_LIBRARY_PATH, the ld.so cache), then
     lib/ and lib64/ under sys.prefix and under /usr/local (CMake's default install prefix).
"""

import ctypes
import os
import sys
import threading

from ._checks import Unsupported

# The ABI this binding is written for (QR_GDN_ABI_VERSION_MAJOR / _MINOR of qr_gdn.h).
ABI_MAJOR = 1
ABI_MINOR = 0
SONAME = f"libqwen_gdn.so.{ABI_MAJOR}"

OK, INVALID_ARGUMENT, NOT_SUPPORTED, CUDA_ERROR, INTERNAL = 0, 1, 2, 3, 4
FUSED, REFERENCE = 0, 1
FORWARD, BACKWARD = 0, 1
BACKENDS = {"fused": FUSED, "reference": REFERENCE}


class QrGdnError(RuntimeError):
    """A call into libqwen_gdn failed; `status` is its qr_gdn_status."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class InvalidArgument(QrGdnError, ValueError):
    pass


class NotSupported(QrGdnError, Unsupported):
    pass


class Shape(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in (
        "batch", "seq_len", "key_heads", "value_heads", "head_dim_k", "head_dim_v", "num_seqs")]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("stride_b", ctypes.c_int64),
                ("stride_t", ctypes.c_int64), ("stride_h", ctypes.c_int64)]


class ForwardArgs(ctypes.Structure):
    _fields_ = [
        ("shape", Shape), ("scale", ctypes.c_float), ("l2norm_qk", ctypes.c_int32),
        ("cu_seqlens", ctypes.c_void_p),
        ("q", Tensor), ("k", Tensor), ("v", Tensor), ("beta", Tensor), ("g", Tensor),
        ("initial_state", ctypes.c_void_p), ("o", Tensor), ("final_state", ctypes.c_void_p),
        ("saved", ctypes.c_void_p), ("saved_bytes", ctypes.c_size_t),
        ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t),
    ]


class BackwardArgs(ctypes.Structure):
    _fields_ = [
        ("shape", Shape), ("scale", ctypes.c_float), ("l2norm_qk", ctypes.c_int32),
        ("cu_seqlens", ctypes.c_void_p),
        ("q", Tensor), ("k", Tensor), ("v", Tensor), ("beta", Tensor), ("g", Tensor),
        ("initial_state", ctypes.c_void_p), ("d_o", Tensor), ("d_final_state", ctypes.c_void_p),
        ("dq", Tensor), ("dk", Tensor), ("dv", Tensor), ("dbeta", Tensor), ("dg", Tensor),
        ("d_initial_state", ctypes.c_void_p),
        ("saved", ctypes.c_void_p), ("saved_bytes", ctypes.c_size_t),
        ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t),
    ]


def candidates():
    """(where, path) pairs in the order they are tried."""
    env = os.environ.get("QWEN_GDN_LIBRARY")
    if env:
        return [("QWEN_GDN_LIBRARY", env)]
    found = [("package", os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)),
             ("loader", SONAME)]
    for prefix in dict.fromkeys((sys.prefix, "/usr/local")):
        for libdir in ("lib", "lib64"):
            found.append(("prefix", os.path.join(prefix, libdir, SONAME)))
    return found


_lock = threading.Lock()
_lib = None
_path = None


def _declare(lib):
    i32, size_p, vp = ctypes.c_int32, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p
    shape_p = ctypes.POINTER(Shape)
    for name, res, args in (
        ("qr_gdn_abi_version", i32, []),
        ("qr_gdn_last_error", ctypes.c_char_p, []),
        ("qr_gdn_backend_name", ctypes.c_char_p, [i32]),
        ("qr_gdn_check_shape", i32, [i32, shape_p]),
        ("qr_gdn_workspace_size", i32, [i32, shape_p, i32, size_p]),
        ("qr_gdn_saved_size", i32, [i32, shape_p, size_p]),
        ("qr_gdn_check_forward", i32, [i32, ctypes.POINTER(ForwardArgs)]),
        ("qr_gdn_check_backward", i32, [i32, ctypes.POINTER(BackwardArgs)]),
        ("qr_gdn_forward", i32, [i32, ctypes.POINTER(ForwardArgs), vp]),
        ("qr_gdn_backward", i32, [i32, ctypes.POINTER(BackwardArgs), vp]),
        ("qr_gdn_input_error", i32, [i32, vp, vp]),
    ):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def library():
    """The loaded library (loaded on first use); OSError naming every place tried if none loads,
    RuntimeError if its ABI major version is not ours."""
    global _lib, _path
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in candidates():
            if where != "loader" and not os.path.exists(path):
                tried.append(f"{path} ({where}: no such file)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({where}: {e})")
                continue
            try:
                _declare(lib)
            except AttributeError as e:
                raise RuntimeError(f"qwen_gdn: {path} is not libqwen_gdn ({e})") from None
            version = lib.qr_gdn_abi_version()
            major, minor = divmod(version, 1000)
            if major != ABI_MAJOR or minor < ABI_MINOR:
                raise RuntimeError(
                    f"qwen_gdn: {path} has ABI {major}.{minor}; this package needs "
                    f"{ABI_MAJOR}.x with x >= {ABI_MINOR}: rebuild the library or the package")
            _lib, _path = lib, path
            return lib
        raise OSError("qwen_gdn: libqwen_gdn.so not found (build it with CMake where CUDA is "
                      "installed, then set QWEN_GDN_LIBRARY to it); tried: " + "; ".join(tried))


def library_path():
    library()
    return _path


def abi_version():
    return library().qr_gdn_abi_version()


def _raise(status):
    message = library().qr_gdn_last_error().decode(errors="replace")
    if status == INVALID_ARGUMENT:
        raise InvalidArgument(status, message)
    if status == NOT_SUPPORTED:
        raise NotSupported(status, message)
    raise QrGdnError(status, message)


def check(status):
    if status != OK:
        _raise(status)


def make_shape(batch, seq_len, key_heads, value_heads, head_dim_k, head_dim_v, num_seqs=0):
    return Shape(batch, seq_len, key_heads, value_heads, head_dim_k, head_dim_v, num_seqs)


def check_shape(backend, shape):
    check(library().qr_gdn_check_shape(backend, ctypes.byref(shape)))


def workspace_size(backend, shape, pass_):
    out = ctypes.c_size_t()
    check(library().qr_gdn_workspace_size(backend, ctypes.byref(shape), pass_, ctypes.byref(out)))
    return out.value


def saved_size(backend, shape):
    out = ctypes.c_size_t()
    check(library().qr_gdn_saved_size(backend, ctypes.byref(shape), ctypes.byref(out)))
    return out.value


def check_forward(backend, args):
    check(library().qr_gdn_check_forward(backend, ctypes.byref(args)))


def check_backward(backend, args):
    check(library().qr_gdn_check_backward(backend, ctypes.byref(args)))


def forward(backend, args, stream):
    check(library().qr_gdn_forward(backend, ctypes.byref(args), stream))


def backward(backend, args, stream):
    check(library().qr_gdn_backward(backend, ctypes.byref(args), stream))


def input_error(backend, workspace, stream):
    """Waits for the stream; InvalidArgument (a ValueError) if the last run given `workspace` met
    inputs outside the kernels' contract (g > 0 or NaN, bad cu_seqlens, a foreign context)."""
    check(library().qr_gdn_input_error(backend, workspace, stream))
