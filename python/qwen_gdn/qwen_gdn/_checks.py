"""Argument checks of qwen_gdn.chunk_gated_delta_rule, in plain Python (no torch import), so that
they run anywhere: they read only .shape, .dtype, .device and .stride() of the tensors.

Every failure names the argument: TypeError for a wrong type or dtype, ValueError for a wrong
device, shape or layout, Unsupported (a ValueError) for valid input our kernels do not cover.
What only the values show (g <= 0 and finite; cu_seqlens rising strictly from 0 to T) the kernels
check on the device (qwen_gdn._torch reads their verdict).
"""

import collections
import math
import numbers

# The kernels' head dims (the `fused` backend; qr_gdn_check_shape is the authority).
HEAD_DIM = 128


class Unsupported(ValueError):
    """Valid input that qwen_gdn's kernels do not cover (FLA does): enable() falls back to FLA."""


# The tensor type and dtypes of the caller's framework (torch's in qwen_gdn._torch).
Kinds = collections.namedtuple("Kinds", "tensor bf16 f32 index_dtypes")

Problem = collections.namedtuple(
    "Problem", "batch seq_len key_heads value_heads head_dim_k head_dim_v num_states num_seqs scale")


def _tensor(kinds, name, t, optional=False):
    if t is None and optional:
        return False
    if not isinstance(t, kinds.tensor):
        raise TypeError(f"{name}: expected a tensor, got {type(t).__name__}")
    return True


def _dtype(name, t, want):
    if t.dtype != want:
        raise TypeError(f"{name}: dtype must be {want}, got {t.dtype}")


def _device(name, t, q):
    if t.device != q.device:
        raise ValueError(f"{name}: on {t.device}, but q is on {q.device}")


def _dims(name, t, want, what):
    if tuple(t.shape) != tuple(want):
        raise ValueError(f"{name}: shape must be {what} = {tuple(want)}, got {tuple(t.shape)}")


def _last_dim_contiguous(name, t):
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(f"{name}: the last dimension must be contiguous (stride 1), got stride "
                         f"{t.stride(-1)}; call .contiguous() first")


def check_inputs(kinds, q, k, v, g, beta, scale=None, initial_state=None,
                 output_final_state=False, use_qk_l2norm_in_kernel=False, cu_seqlens=None):
    """The checks that need no tensor values; returns the Problem."""
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        _tensor(kinds, name, t)
    for name, t, want in (("q", q, kinds.bf16), ("k", k, kinds.bf16), ("v", v, kinds.bf16),
                          ("beta", beta, kinds.bf16), ("g", g, kinds.f32)):
        _dtype(name, t, want)
    if q.device.type != "cuda":
        raise ValueError(f"q: must be on a CUDA device, got {q.device}")
    for name, t in (("k", k), ("v", v), ("g", g), ("beta", beta)):
        _device(name, t, q)
    if len(q.shape) != 4:
        raise ValueError(f"q: must be 4-D [B, T, Hk, K], got shape {tuple(q.shape)}")
    B, T, Hk, K = (int(d) for d in q.shape)
    _dims("k", k, (B, T, Hk, K), "q's [B, T, Hk, K]")
    if len(v.shape) != 4 or tuple(v.shape[:2]) != (B, T):
        raise ValueError(f"v: must be [B, T, Hv, V] = ({B}, {T}, Hv, V) like q, "
                         f"got shape {tuple(v.shape)}")
    Hv, V = int(v.shape[2]), int(v.shape[3])
    if min(B, T, Hk, K, Hv, V) == 0:
        raise ValueError(f"q, v: empty tensors (q {tuple(q.shape)}, v {tuple(v.shape)})")
    if Hv % Hk != 0:
        raise ValueError(f"v: its {Hv} heads are not a multiple of q's and k's {Hk} heads "
                         "(GVA needs Hv = n * Hk)")
    _dims("g", g, (B, T, Hv), "[B, T, Hv]")
    _dims("beta", beta, (B, T, Hv), "[B, T, Hv]")
    for name, t in (("q", q), ("k", k), ("v", v)):
        _last_dim_contiguous(name, t)

    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError(f"scale: expected a float or None, got {type(scale).__name__}")
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale: must be a positive finite number, got {scale}")
    for name, flag in (("output_final_state", output_final_state),
                       ("use_qk_l2norm_in_kernel", use_qk_l2norm_in_kernel)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name}: expected a bool, got {type(flag).__name__}")

    num_seqs = 0
    if _tensor(kinds, "cu_seqlens", cu_seqlens, optional=True):
        if cu_seqlens.dtype not in kinds.index_dtypes:
            raise TypeError(f"cu_seqlens: dtype must be one of "
                            f"{', '.join(str(d) for d in kinds.index_dtypes)}, "
                            f"got {cu_seqlens.dtype}")
        _device("cu_seqlens", cu_seqlens, q)
        if len(cu_seqlens.shape) != 1 or cu_seqlens.shape[0] < 2:
            raise ValueError("cu_seqlens: must be 1-D with N + 1 >= 2 offsets, got shape "
                             f"{tuple(cu_seqlens.shape)}")
        if B != 1:
            raise ValueError(f"q: batch must be 1 with cu_seqlens (packed sequences), got {B}")
        num_seqs = int(cu_seqlens.shape[0]) - 1
        if num_seqs > T:
            raise ValueError(f"cu_seqlens: {num_seqs} sequences in T = {T} tokens (each needs at "
                             "least one)")
    num_states = num_seqs or B

    if _tensor(kinds, "initial_state", initial_state, optional=True):
        _dtype("initial_state", initial_state, kinds.f32)
        _device("initial_state", initial_state, q)
        _dims("initial_state", initial_state, (num_states, Hv, K, V),
              "[N, Hv, K, V]" + (" (N = len(cu_seqlens) - 1)" if num_seqs else " (N = B)"))

    effective = float(scale) if scale is not None else K ** -0.5
    return Problem(B, T, Hk, Hv, K, V, num_states, num_seqs, effective)


def check_covered(problem):
    """Unsupported for what the kernels do not take (FLA does)."""
    if problem.head_dim_k != HEAD_DIM or problem.head_dim_v != HEAD_DIM:
        raise Unsupported(f"q, v: head dims K = {problem.head_dim_k}, V = {problem.head_dim_v} "
                          f"are not covered (qwen_gdn's kernels need K = V = {HEAD_DIM})")
