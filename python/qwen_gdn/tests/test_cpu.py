"""qwen_gdn without a GPU or PyTorch: the argument checks (on stand-in tensors), the library
through ctypes (loading, version, size queries, the C checks field by field), where the library is
looked for. Needs QWEN_GDN_LIBRARY naming a built libqwen_gdn.so (CTest sets it).

    QWEN_GDN_LIBRARY=build/kernels/capi/libqwen_gdn.so python3 -m unittest discover -s python/qwen_gdn/tests
"""

import importlib.util
import os
import subprocess
import sys
import unittest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PACKAGE_ROOT)

import qwen_gdn  # noqa: E402
from qwen_gdn import _checks, _lib  # noqa: E402


class Device:
    def __init__(self, type_, index=None):
        self.type, self.index = type_, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class Fake:
    """What the checks read of a tensor: shape, dtype, device, stride()."""

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


KINDS = _checks.Kinds(Fake, "bf16", "f32", ("i32", "i64"))


def problem(B=2, T=100, Hk=2, Hv=4, K=128, V=128, **over):
    args = dict(q=Fake((B, T, Hk, K)), k=Fake((B, T, Hk, K)), v=Fake((B, T, Hv, V)),
                g=Fake((B, T, Hv), "f32"), beta=Fake((B, T, Hv)))
    args.update(over)
    return args


class Checks(unittest.TestCase):
    def check(self, **kw):
        return _checks.check_inputs(KINDS, **kw)

    def raises(self, exc, text, **kw):
        with self.assertRaises(exc) as cm:
            self.check(**kw)
        self.assertIn(text, str(cm.exception))

    def test_good_inputs_give_the_problem(self):
        p = self.check(**problem(), scale=0.5, initial_state=Fake((2, 4, 128, 128), "f32"))
        self.assertEqual(p, _checks.Problem(2, 100, 2, 4, 128, 128, 2, 0, 0.5))
        self.assertAlmostEqual(self.check(**problem()).scale, 128 ** -0.5)
        _checks.check_covered(p)

    def test_each_argument_is_named(self):
        self.raises(TypeError, "q: expected a tensor, got list", **problem(q=[1]))
        self.raises(TypeError, "k: dtype must be bf16, got f32", **problem(k=Fake((2, 100, 2, 128), "f32")))
        self.raises(TypeError, "g: dtype must be f32, got bf16", **problem(g=Fake((2, 100, 4))))
        self.raises(TypeError, "beta: dtype must be bf16", **problem(beta=Fake((2, 100, 4), "f32")))
        self.raises(ValueError, "q: must be on a CUDA device, got cpu",
                    **problem(q=Fake((2, 100, 2, 128), device=Device("cpu"))))
        self.raises(ValueError, "v: on cuda:1, but q is on cuda:0",
                    **problem(v=Fake((2, 100, 4, 128), device=Device("cuda", 1))))
        self.raises(ValueError, "q: must be 4-D", **problem(q=Fake((2, 100, 256))))
        self.raises(ValueError, "k: shape must be q's [B, T, Hk, K] = (2, 100, 2, 128)",
                    **problem(k=Fake((2, 100, 4, 128))))
        self.raises(ValueError, "v: must be [B, T, Hv, V] = (2, 100, Hv, V)",
                    **problem(v=Fake((2, 99, 4, 128))))
        self.raises(ValueError, "v: its 3 heads are not a multiple of q's and k's 2 heads",
                    **problem(Hv=3))
        self.raises(ValueError, "g: shape must be [B, T, Hv] = (2, 100, 4)",
                    **problem(g=Fake((2, 100, 2), "f32")))
        self.raises(ValueError, "beta: shape must be", **problem(beta=Fake((2, 100, 4, 1))))
        self.raises(ValueError, "q, v: empty tensors", **problem(T=0))
        self.raises(ValueError, "v: the last dimension must be contiguous (stride 1), got stride 2",
                    **problem(v=Fake((2, 100, 4, 128), strides=(102400, 1024, 256, 2))))
        self.raises(TypeError, "scale: expected a float or None, got bool", **problem(), scale=True)
        self.raises(ValueError, "scale: must be a positive finite number, got -1",
                    **problem(), scale=-1.0)
        self.raises(ValueError, "scale: must be a positive finite number, got nan",
                    **problem(), scale=float("nan"))
        self.raises(TypeError, "output_final_state: expected a bool, got int",
                    **problem(), output_final_state=1)
        self.raises(TypeError, "use_qk_l2norm_in_kernel: expected a bool",
                    **problem(), use_qk_l2norm_in_kernel=None)
        self.raises(TypeError, "initial_state: dtype must be f32",
                    **problem(), initial_state=Fake((2, 4, 128, 128)))
        self.raises(ValueError, "initial_state: shape must be [N, Hv, K, V] (N = B) = (2, 4, 128, 128)",
                    **problem(), initial_state=Fake((1, 4, 128, 128), "f32"))

    def test_strided_rows_are_accepted(self):
        # q, k, v as views of one packed projection: only the last dim must be contiguous.
        q = Fake((2, 100, 2, 128), strides=(100 * 1024, 1024, 128, 1))
        self.check(**problem(q=q, k=q))

    def test_cu_seqlens(self):
        one = problem(B=1, T=100)
        p = self.check(**one, cu_seqlens=Fake((4,), "i64"), initial_state=Fake((3, 4, 128, 128), "f32"))
        self.assertEqual((p.num_seqs, p.num_states), (3, 3))
        self.raises(TypeError, "cu_seqlens: dtype must be one of i32, i64, got f32",
                    **one, cu_seqlens=Fake((4,), "f32"))
        self.raises(ValueError, "cu_seqlens: on cpu, but q is on cuda:0",
                    **one, cu_seqlens=Fake((4,), "i32", Device("cpu")))
        self.raises(ValueError, "cu_seqlens: must be 1-D with N + 1 >= 2 offsets",
                    **one, cu_seqlens=Fake((1,), "i32"))
        self.raises(ValueError, "q: batch must be 1 with cu_seqlens",
                    **problem(), cu_seqlens=Fake((4,), "i32"))
        self.raises(ValueError, "(N = len(cu_seqlens) - 1) = (3, 4, 128, 128)",
                    **one, cu_seqlens=Fake((4,), "i32"), initial_state=Fake((1, 4, 128, 128), "f32"))
        self.raises(ValueError, "cu_seqlens: 3 sequences in T = 2 tokens",
                    **problem(B=1, T=2), cu_seqlens=Fake((4,), "i32"))
        _checks.check_covered(p)  # the kernels take packed sequences

    def test_uncovered_head_dims(self):
        with self.assertRaisesRegex(_checks.Unsupported, "K = 64, V = 64 are not covered"):
            _checks.check_covered(self.check(**problem(K=64, V=64)))
        self.assertTrue(issubclass(_checks.Unsupported, ValueError))


def fused_context_bytes(B, T, Hk, Hv):
    """kernels/gdn/fused_workspace.cuh's dense context, FLA's set: the stamp, then qn, kn, G,
    their rstd and A, each piece rounded to 256 bytes (as test_capi.c)."""
    r = lambda n: (n + 255) // 256 * 256  # noqa: E731
    NT = (T + 63) // 64
    Tp, kh, vh = NT * 64, B * Hk, B * Hv
    return 256 + 2 * r(kh * Tp * 256) + r(vh * Tp * 4) + 2 * r(kh * Tp * 4) + r(vh * Tp * 128)


@unittest.skipUnless(os.environ.get("QWEN_GDN_LIBRARY"), "QWEN_GDN_LIBRARY is not set")
class Library(unittest.TestCase):
    def test_loads_without_a_gpu_and_matches_the_abi(self):
        self.assertEqual(qwen_gdn.abi_version(), _lib.ABI_MAJOR * 1000 + _lib.ABI_MINOR)
        self.assertEqual(os.path.realpath(qwen_gdn.library_path()),
                         os.path.realpath(os.environ["QWEN_GDN_LIBRARY"]))
        self.assertEqual(_lib.library().qr_gdn_backend_name(_lib.REFERENCE), b"reference")

    def test_size_queries(self):
        for B, T, Hk, Hv in ((4, 4096, 16, 32), (1, 4096, 16, 64), (2, 1000, 2, 4), (1, 1, 1, 1)):
            shape = _lib.make_shape(B, T, Hk, Hv, 128, 128)
            self.assertEqual(_lib.saved_size(_lib.FUSED, shape), fused_context_bytes(B, T, Hk, Hv))
            self.assertEqual(_lib.saved_size(_lib.REFERENCE, shape), 0)
            self.assertGreater(_lib.workspace_size(_lib.FUSED, shape, _lib.BACKWARD),
                               _lib.workspace_size(_lib.FUSED, shape, _lib.FORWARD))
        # The recipe's 35B layer keeps 205.5 MB, FLA's set (docs/gdn-bench.md).
        self.assertEqual(_lib.saved_size(_lib.FUSED, _lib.make_shape(4, 4096, 16, 32, 128, 128)),
                         205521152)

    def test_errors_map_to_python_exceptions(self):
        with self.assertRaisesRegex(qwen_gdn.Unsupported, r"fused: head dims must be 128 \(got Dk 64"):
            _lib.check_shape(_lib.FUSED, _lib.make_shape(1, 64, 2, 4, 64, 64))
        with self.assertRaisesRegex(ValueError, "shape.value_heads: 5 is not a multiple"):
            _lib.saved_size(_lib.FUSED, _lib.make_shape(1, 64, 2, 5, 128, 128))
        with self.assertRaises(_lib.InvalidArgument) as cm:
            _lib.workspace_size(_lib.FUSED, _lib.make_shape(1, 64, 2, 4, 128, 128), 5)
        self.assertEqual(cm.exception.status, _lib.INVALID_ARGUMENT)

    def _tensors(self, shape, names):
        B, T, Hk, Hv = shape.batch, shape.seq_len, shape.key_heads, shape.value_heads
        out = {}
        for i, name in enumerate(names):
            heads = Hk if name in ("q", "k", "dq", "dk") else Hv
            dim = 1 if name in ("g", "beta", "dg", "dbeta") else 128
            out[name] = _lib.Tensor(0x100000000 + i * 0x10000000, T * heads * dim, heads * dim, dim)
        return out

    def test_forward_args_layout_field_by_field(self):
        shape = _lib.make_shape(2, 1000, 2, 4, 128, 128)
        names = ["q", "k", "v", "beta", "g", "o"]
        tensors = self._tensors(shape, names)
        ws = _lib.workspace_size(_lib.FUSED, shape, _lib.FORWARD)
        args = _lib.ForwardArgs(shape=shape, l2norm_qk=1, workspace=0x7000000000,
                                workspace_bytes=ws, **tensors)
        _lib.check_forward(_lib.FUSED, args)
        for name in names:
            keep = getattr(args, name).data
            getattr(args, name).data = None
            with self.assertRaisesRegex(ValueError, f"qr_gdn_check_forward: {name}: null data"):
                _lib.check_forward(_lib.FUSED, args)
            getattr(args, name).data = keep
        args.workspace_bytes = ws - 1
        with self.assertRaisesRegex(ValueError, "workspace_bytes:"):
            _lib.check_forward(_lib.FUSED, args)
        args.workspace_bytes = ws
        args.cu_seqlens = 0x7100000000
        with self.assertRaisesRegex(ValueError, "cu_seqlens: given, but shape.num_seqs is 0"):
            _lib.check_forward(_lib.FUSED, args)
        args.shape = _lib.make_shape(1, 1000, 2, 4, 128, 128, 1001)
        with self.assertRaisesRegex(ValueError, "shape.num_seqs: 1001 sequences in 1000 tokens"):
            _lib.forward(_lib.FUSED, args, None)  # refused before any device work
        with self.assertRaisesRegex(ValueError, "qr_gdn_input_error: workspace: null"):
            _lib.input_error(_lib.FUSED, None, None)

    def test_backward_args_layout_field_by_field(self):
        shape = _lib.make_shape(1, 130, 1, 2, 128, 128)
        names = ["q", "k", "v", "beta", "g", "d_o", "dq", "dk", "dv", "dbeta", "dg"]
        args = _lib.BackwardArgs(shape=shape, workspace=0x7000000000,
                                 workspace_bytes=_lib.workspace_size(_lib.FUSED, shape, _lib.BACKWARD),
                                 **self._tensors(shape, names))
        _lib.check_backward(_lib.FUSED, args)
        for name in names:
            keep = getattr(args, name).data
            getattr(args, name).data = None
            with self.assertRaisesRegex(ValueError, f"qr_gdn_check_backward: {name}: null data"):
                _lib.check_backward(_lib.FUSED, args)
            getattr(args, name).data = keep
        args.d_initial_state = 0x7200000008
        with self.assertRaisesRegex(ValueError, "d_initial_state: must be 16-byte aligned"):
            _lib.check_backward(_lib.FUSED, args)


def python(code, **env):
    """Runs `code` in a fresh interpreter with the package on the path and `env` over os.environ
    (a None value unsets); returns (exit code, stdout + stderr)."""
    full = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    for key, value in env.items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    r = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


class Finding(unittest.TestCase):
    def test_search_order(self):
        rc, out = python("from qwen_gdn import _lib; print(*(w for w, _ in _lib.candidates()))",
                         QWEN_GDN_LIBRARY=None)
        self.assertEqual(rc, 0, out)
        where = out.split()
        self.assertEqual(where[:2], ["package", "loader"])
        self.assertTrue(len(where) >= 4 and set(where[2:]) == {"prefix"}, where)
        rc, out = python("from qwen_gdn import _lib; print(_lib.candidates())",
                         QWEN_GDN_LIBRARY="/x/libqwen_gdn.so")
        self.assertEqual(out.strip(), "[('QWEN_GDN_LIBRARY', '/x/libqwen_gdn.so')]")

    def test_a_bad_QWEN_GDN_LIBRARY_is_named(self):
        rc, out = python("import qwen_gdn; qwen_gdn.abi_version()",
                         QWEN_GDN_LIBRARY="/nonexistent/libqwen_gdn.so")
        self.assertNotEqual(rc, 0)
        self.assertIn("libqwen_gdn.so not found", out)
        self.assertIn("/nonexistent/libqwen_gdn.so (QWEN_GDN_LIBRARY: no such file)", out)

    def test_import_needs_no_library(self):
        rc, out = python("import qwen_gdn; print(qwen_gdn.__version__)",
                         QWEN_GDN_LIBRARY="/nonexistent/libqwen_gdn.so")
        self.assertEqual((rc, out.strip()), (0, "0.1.0"), out)

    @unittest.skipIf(importlib.util.find_spec("torch"), "PyTorch is installed")
    def test_without_torch_the_torch_api_says_so(self):
        for name in ("chunk_gated_delta_rule", "enable", "disable"):
            with self.assertRaisesRegex(ImportError, f"qwen_gdn.{name} needs PyTorch"):
                getattr(qwen_gdn, name)()

if __name__ == "__main__":
    unittest.main()
