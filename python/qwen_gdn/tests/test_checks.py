"""The argument checks of qwen_gdn.chunk_gated_delta_rule on stand-in tensors: no GPU, no torch."""

import pytest
from stand_ins import Device, Fake

from qwen_gdn import _checks

KINDS = _checks.Kinds(Fake, "bf16", "f32", ("i32", "i64"))


def problem(B=2, T=100, Hk=2, Hv=4, K=128, V=128, **over):
    args = dict(q=Fake((B, T, Hk, K)), k=Fake((B, T, Hk, K)), v=Fake((B, T, Hv, V)),
                g=Fake((B, T, Hv), "f32"), beta=Fake((B, T, Hv)))
    args.update(over)
    return args


def check(**kw):
    return _checks.check_inputs(KINDS, **kw)


def test_good_inputs_give_the_problem():
    p = check(**problem(), scale=0.5, initial_state=Fake((2, 4, 128, 128), "f32"))
    assert p == _checks.Problem(2, 100, 2, 4, 128, 128, 2, 0, 0.5)
    assert check(**problem()).scale == pytest.approx(128 ** -0.5)
    _checks.check_covered(p)


BAD = [
    (TypeError, "q: expected a tensor, got list", problem(q=[1])),
    (TypeError, "k: dtype must be bf16, got f32", problem(k=Fake((2, 100, 2, 128), "f32"))),
    (TypeError, "g: dtype must be f32, got bf16", problem(g=Fake((2, 100, 4)))),
    (TypeError, "beta: dtype must be bf16", problem(beta=Fake((2, 100, 4), "f32"))),
    (ValueError, "q: must be on a CUDA device, got cpu",
     problem(q=Fake((2, 100, 2, 128), device=Device("cpu")))),
    (ValueError, "v: on cuda:1, but q is on cuda:0",
     problem(v=Fake((2, 100, 4, 128), device=Device("cuda", 1)))),
    (ValueError, "q: must be 4-D", problem(q=Fake((2, 100, 256)))),
    (ValueError, "k: shape must be q's [B, T, Hk, K] = (2, 100, 2, 128)",
     problem(k=Fake((2, 100, 4, 128)))),
    (ValueError, "v: must be [B, T, Hv, V] = (2, 100, Hv, V)", problem(v=Fake((2, 99, 4, 128)))),
    (ValueError, "v: its 3 heads are not a multiple of q's and k's 2 heads", problem(Hv=3)),
    (ValueError, "g: shape must be [B, T, Hv] = (2, 100, 4)", problem(g=Fake((2, 100, 2), "f32"))),
    (ValueError, "beta: shape must be", problem(beta=Fake((2, 100, 4, 1)))),
    (ValueError, "q, v: empty tensors", problem(T=0)),
    (ValueError, "v: the last dimension must be contiguous (stride 1), got stride 2",
     problem(v=Fake((2, 100, 4, 128), strides=(102400, 1024, 256, 2)))),
    (TypeError, "scale: expected a float or None, got bool", dict(problem(), scale=True)),
    (ValueError, "scale: must be a positive finite number, got -1", dict(problem(), scale=-1.0)),
    (ValueError, "scale: must be a positive finite number, got nan",
     dict(problem(), scale=float("nan"))),
    (TypeError, "output_final_state: expected a bool, got int",
     dict(problem(), output_final_state=1)),
    (TypeError, "use_qk_l2norm_in_kernel: expected a bool",
     dict(problem(), use_qk_l2norm_in_kernel=None)),
    (TypeError, "initial_state: dtype must be f32",
     dict(problem(), initial_state=Fake((2, 4, 128, 128)))),
    (ValueError, "initial_state: shape must be [N, Hv, K, V] (N = B) = (2, 4, 128, 128)",
     dict(problem(), initial_state=Fake((1, 4, 128, 128), "f32"))),
]


@pytest.mark.parametrize("exc, text, kwargs", BAD, ids=[b[1][:40] for b in BAD])
def test_each_argument_is_named(exc, text, kwargs):
    with pytest.raises(exc) as info:
        check(**kwargs)
    assert text in str(info.value)


def test_strided_rows_are_accepted():
    # q, k, v as views of one packed projection: only the last dim must be contiguous.
    q = Fake((2, 100, 2, 128), strides=(100 * 1024, 1024, 128, 1))
    check(**problem(q=q, k=q))


ONE = problem(B=1, T=100)
BAD_VARLEN = [
    (TypeError, "cu_seqlens: dtype must be one of i32, i64, got f32",
     dict(ONE, cu_seqlens=Fake((4,), "f32"))),
    (ValueError, "cu_seqlens: on cpu, but q is on cuda:0",
     dict(ONE, cu_seqlens=Fake((4,), "i32", Device("cpu")))),
    (ValueError, "cu_seqlens: must be 1-D with N + 1 >= 2 offsets",
     dict(ONE, cu_seqlens=Fake((1,), "i32"))),
    (ValueError, "q: batch must be 1 with cu_seqlens", dict(problem(), cu_seqlens=Fake((4,), "i32"))),
    (ValueError, "(N = len(cu_seqlens) - 1) = (3, 4, 128, 128)",
     dict(ONE, cu_seqlens=Fake((4,), "i32"), initial_state=Fake((1, 4, 128, 128), "f32"))),
    (ValueError, "cu_seqlens: 3 sequences in T = 2 tokens",
     dict(problem(B=1, T=2), cu_seqlens=Fake((4,), "i32"))),
]


def test_cu_seqlens_gives_one_state_per_sequence():
    p = check(**ONE, cu_seqlens=Fake((4,), "i64"), initial_state=Fake((3, 4, 128, 128), "f32"))
    assert (p.num_seqs, p.num_states) == (3, 3)
    _checks.check_covered(p)  # the kernels take packed sequences


@pytest.mark.parametrize("exc, text, kwargs", BAD_VARLEN, ids=[b[1][:40] for b in BAD_VARLEN])
def test_cu_seqlens_errors(exc, text, kwargs):
    with pytest.raises(exc) as info:
        check(**kwargs)
    assert text in str(info.value)


def test_uncovered_head_dims():
    with pytest.raises(_checks.Unsupported, match="K = 64, V = 64 are not covered"):
        _checks.check_covered(check(**problem(K=64, V=64)))
    assert issubclass(_checks.Unsupported, ValueError)
