"""libqwen_gdn.so through ctypes without a GPU (loading, version, size queries, the C checks field
by field; these need QWEN_GDN_LIBRARY), and where the library is looked for (these need none)."""

import importlib.util
import os

import pytest
from stand_ins import python

import qwen_gdn
from qwen_gdn import _lib


def fused_context_bytes(B, T, Hk, Hv):
    """kernels/gdn/fused_workspace.cuh's dense context, FLA's set: the stamp, then qn, kn, G,
    their rstd and A, each piece rounded to 256 bytes (as test_capi.c)."""
    r = lambda n: (n + 255) // 256 * 256  # noqa: E731
    NT = (T + 63) // 64
    Tp, kh, vh = NT * 64, B * Hk, B * Hv
    return 256 + 2 * r(kh * Tp * 256) + r(vh * Tp * 4) + 2 * r(kh * Tp * 4) + r(vh * Tp * 128)


def test_loads_without_a_gpu_and_matches_the_abi(library):
    assert qwen_gdn.abi_version() == _lib.ABI_MAJOR * 1000 + _lib.ABI_MINOR
    assert os.path.realpath(qwen_gdn.library_path()) == os.path.realpath(library)
    assert _lib.library().qr_gdn_backend_name(_lib.REFERENCE) == b"reference"


@pytest.mark.parametrize("B, T, Hk, Hv", [(4, 4096, 16, 32), (1, 4096, 16, 64), (2, 1000, 2, 4),
                                          (1, 1, 1, 1)])
def test_size_queries(library, B, T, Hk, Hv):
    shape = _lib.make_shape(B, T, Hk, Hv, 128, 128)
    assert _lib.saved_size(_lib.FUSED, shape) == fused_context_bytes(B, T, Hk, Hv)
    assert _lib.saved_size(_lib.REFERENCE, shape) == 0
    assert (_lib.workspace_size(_lib.FUSED, shape, _lib.BACKWARD)
            > _lib.workspace_size(_lib.FUSED, shape, _lib.FORWARD))


def test_the_35b_layer_keeps_fla_s_set(library):
    assert _lib.saved_size(_lib.FUSED, _lib.make_shape(4, 4096, 16, 32, 128, 128)) == 205521152


def test_errors_map_to_python_exceptions(library):
    with pytest.raises(qwen_gdn.Unsupported, match=r"fused: head dims must be 128 \(got Dk 64"):
        _lib.check_shape(_lib.FUSED, _lib.make_shape(1, 64, 2, 4, 64, 64))
    with pytest.raises(ValueError, match="shape.value_heads: 5 is not a multiple"):
        _lib.saved_size(_lib.FUSED, _lib.make_shape(1, 64, 2, 5, 128, 128))
    with pytest.raises(_lib.InvalidArgument) as info:
        _lib.workspace_size(_lib.FUSED, _lib.make_shape(1, 64, 2, 4, 128, 128), 5)
    assert info.value.status == _lib.INVALID_ARGUMENT


def tensors(shape, names):
    T, Hk, Hv = shape.seq_len, shape.key_heads, shape.value_heads
    out = {}
    for i, name in enumerate(names):
        heads = Hk if name in ("q", "k", "dq", "dk") else Hv
        dim = 1 if name in ("g", "beta", "dg", "dbeta") else 128
        out[name] = _lib.Tensor(0x100000000 + i * 0x10000000, T * heads * dim, heads * dim, dim)
    return out


def test_forward_args_layout_field_by_field(library):
    shape = _lib.make_shape(2, 1000, 2, 4, 128, 128)
    names = ["q", "k", "v", "beta", "g", "o"]
    ws = _lib.workspace_size(_lib.FUSED, shape, _lib.FORWARD)
    args = _lib.ForwardArgs(shape=shape, l2norm_qk=1, workspace=0x7000000000, workspace_bytes=ws,
                            **tensors(shape, names))
    _lib.check_forward(_lib.FUSED, args)
    for name in names:
        keep = getattr(args, name).data
        getattr(args, name).data = None
        with pytest.raises(ValueError, match=f"qr_gdn_check_forward: {name}: null data"):
            _lib.check_forward(_lib.FUSED, args)
        getattr(args, name).data = keep
    args.workspace_bytes = ws - 1
    with pytest.raises(ValueError, match="workspace_bytes:"):
        _lib.check_forward(_lib.FUSED, args)
    args.workspace_bytes = ws
    args.cu_seqlens = 0x7100000000
    with pytest.raises(ValueError, match="cu_seqlens: given, but shape.num_seqs is 0"):
        _lib.check_forward(_lib.FUSED, args)
    args.shape = _lib.make_shape(1, 1000, 2, 4, 128, 128, 1001)
    with pytest.raises(ValueError, match="shape.num_seqs: 1001 sequences in 1000 tokens"):
        _lib.forward(_lib.FUSED, args, None)  # refused before any device work
    with pytest.raises(ValueError, match="qr_gdn_input_error: workspace: null"):
        _lib.input_error(_lib.FUSED, None, None)


def test_backward_args_layout_field_by_field(library):
    shape = _lib.make_shape(1, 130, 1, 2, 128, 128)
    names = ["q", "k", "v", "beta", "g", "d_o", "dq", "dk", "dv", "dbeta", "dg"]
    args = _lib.BackwardArgs(shape=shape, workspace=0x7000000000,
                             workspace_bytes=_lib.workspace_size(_lib.FUSED, shape, _lib.BACKWARD),
                             **tensors(shape, names))
    _lib.check_backward(_lib.FUSED, args)
    for name in names:
        keep = getattr(args, name).data
        getattr(args, name).data = None
        with pytest.raises(ValueError, match=f"qr_gdn_check_backward: {name}: null data"):
            _lib.check_backward(_lib.FUSED, args)
        getattr(args, name).data = keep
    args.d_initial_state = 0x7200000008
    with pytest.raises(ValueError, match="d_initial_state: must be 16-byte aligned"):
        _lib.check_backward(_lib.FUSED, args)


def test_search_order():
    rc, out = python("from qwen_gdn import _lib; print(*(w for w, _ in _lib.candidates()))",
                     QWEN_GDN_LIBRARY=None)
    assert rc == 0, out
    where = out.split()
    assert where[:2] == ["package", "loader"]
    assert len(where) >= 4 and set(where[2:]) == {"prefix"}, where
    rc, out = python("from qwen_gdn import _lib; print(_lib.candidates())",
                     QWEN_GDN_LIBRARY="/x/libqwen_gdn.so")
    assert out.strip() == "[('QWEN_GDN_LIBRARY', '/x/libqwen_gdn.so')]"


def test_a_bad_QWEN_GDN_LIBRARY_is_named():
    rc, out = python("import qwen_gdn; qwen_gdn.abi_version()",
                     QWEN_GDN_LIBRARY="/nonexistent/libqwen_gdn.so")
    assert rc != 0
    assert "libqwen_gdn.so not found" in out
    assert "/nonexistent/libqwen_gdn.so (QWEN_GDN_LIBRARY: no such file)" in out


def test_import_needs_no_library():
    rc, out = python("import qwen_gdn; print(qwen_gdn.__version__)",
                     QWEN_GDN_LIBRARY="/nonexistent/libqwen_gdn.so")
    assert (rc, out.strip()) == (0, qwen_gdn.__version__), out


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch is installed")
@pytest.mark.parametrize("name", ["chunk_gated_delta_rule", "enable", "disable", "check_errors"])
def test_without_torch_the_torch_api_says_so(name):
    with pytest.raises(ImportError, match=f"qwen_gdn.{name} needs PyTorch"):
        getattr(qwen_gdn, name)()
