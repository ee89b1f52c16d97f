"""qwen_gdn.enable() / disable(): FLA's chunk_gated_delta_rule runs our kernels.

FLA defines the function in fla.ops.gated_delta_rule.chunk; its users bind it at import time with
`from fla.ops.gated_delta_rule import chunk_gated_delta_rule` (fla.ops.gated_delta_rule, fla.ops,
fla.layers.gated_deltanet, fla.layers.mom, Megatron-Core's megatron.core.ssm.gated_delta_net).
enable() replaces every such binding that is loaded (any module attribute named
chunk_gated_delta_rule or chunk_gdn that is FLA's function); modules imported later read the
patched fla.ops.gated_delta_rule and get ours too. disable() puts FLA's function back everywhere.

The replacement takes FLA's whole signature, cu_seqlens included. Calls our kernels do not cover
(head dims other than 128, context parallelism, dtypes other than bf16, a device older than
sm_90, arguments it does not know, inputs our checks refuse) run FLA's own function, with one
warning per reason.
FLA's in-kernel extras are done in PyTorch before our kernels: the gate
(use_gate_in_kernel: g = -exp(A_log) softplus(g + dt_bias)), the beta sigmoid
(use_beta_sigmoid_in_kernel, times 2 with allow_neg_eigval) and the [V, K] state layout
(state_v_first).
"""

import functools
import importlib
import sys
import threading
import warnings

import torch
import torch.nn.functional as F

from . import _checks
from ._torch import chunk_gated_delta_rule as _ours

_NAMES = ("chunk_gated_delta_rule", "chunk_gdn")
_KNOWN_KWARGS = {"use_gate_in_kernel", "A_log", "dt_bias", "chunk_size", "transpose_state_layout"}
_lock = threading.Lock()
_original = None
_replacement = None
_warned = set()


def _fla_function():
    try:
        module = importlib.import_module("fla.ops.gated_delta_rule.chunk")
    except ImportError as e:
        raise ImportError(f"qwen_gdn.enable(): flash-linear-attention (fla) is not importable: {e}")
    return module.chunk_gated_delta_rule


def _warn_once(reason):
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"qwen_gdn: {reason}; running FLA's chunk_gated_delta_rule instead",
                      stacklevel=3)


def _not_covered(q, v, cu_seqlens, cp_context, allow_neg_eigval, use_beta_sigmoid, kwargs):
    """Why the call goes to FLA, or None."""
    unknown = sorted(set(kwargs) - _KNOWN_KWARGS)
    if unknown:
        return f"argument {unknown[0]!r} is not handled"
    if cp_context is not None:
        return "cp_context (context parallelism) is not supported"
    if allow_neg_eigval and not use_beta_sigmoid:
        return "allow_neg_eigval needs use_beta_sigmoid_in_kernel"
    if not isinstance(q, torch.Tensor) or not isinstance(v, torch.Tensor):
        return "q and v must be tensors"
    if q.dtype != torch.bfloat16:
        return f"q has dtype {q.dtype} (the kernels take bf16)"
    if q.dim() != 4 or v.dim() != 4:
        return "q and v must be 4-D"
    if q.shape[-1] != _checks.HEAD_DIM or v.shape[-1] != _checks.HEAD_DIM:
        return (f"head dims K = {q.shape[-1]}, V = {v.shape[-1]} are not covered "
                f"(the kernels take K = V = {_checks.HEAD_DIM})")
    if not q.is_cuda or torch.cuda.get_device_capability(q.device)[0] < 9:
        return f"device {q.device} is not sm_90 or newer"
    return None


def _make_replacement(original):
    @functools.wraps(original)
    def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                               output_final_state=False, use_qk_l2norm_in_kernel=False,
                               use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                               state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
                               chunk_indices=None, cp_context=None, **kwargs):
        reason = _not_covered(q, v, cu_seqlens, cp_context, allow_neg_eigval,
                              use_beta_sigmoid_in_kernel, kwargs)
        if reason is None:
            try:
                return _adapted(q, k, v, g, beta, scale, initial_state, output_final_state,
                                use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel,
                                allow_neg_eigval, state_v_first, cu_seqlens, kwargs)
            except (TypeError, ValueError) as e:
                reason = str(e)
        _warn_once(reason)
        return original(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                        output_final_state=output_final_state,
                        use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                        use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
                        allow_neg_eigval=allow_neg_eigval, state_v_first=state_v_first,
                        cu_seqlens=cu_seqlens, cu_seqlens_cpu=cu_seqlens_cpu,
                        chunk_indices=chunk_indices, cp_context=cp_context, **kwargs)

    chunk_gated_delta_rule.qwen_gdn_original = original
    return chunk_gated_delta_rule


def _adapted(q, k, v, g, beta, scale, initial_state, output_final_state, l2norm, beta_sigmoid,
             allow_neg_eigval, state_v_first, cu_seqlens, kwargs):
    """FLA's extras in PyTorch (autograd covers them), then our kernels."""
    state_v_first = state_v_first or bool(kwargs.get("transpose_state_layout", False))
    if kwargs.get("use_gate_in_kernel", False):
        A_log, dt_bias = kwargs.get("A_log"), kwargs.get("dt_bias")
        if A_log is None:
            raise ValueError("A_log: required with use_gate_in_kernel=True")
        x = g.float() if dt_bias is None else g.float() + dt_bias.float()
        g = -A_log.float().exp() * F.softplus(x)
    else:
        g = g.float()
    if beta_sigmoid:
        beta = beta.float().sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    beta = beta.to(torch.bfloat16)
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    h0 = initial_state
    if h0 is not None:
        h0 = (h0.transpose(-1, -2) if state_v_first else h0).float()
    o, ht = _ours(q, k, v, g, beta, scale, h0, bool(output_final_state), bool(l2norm), cu_seqlens)
    if ht is not None and state_v_first:
        ht = ht.transpose(-1, -2)
    return o, ht


def _bindings(fn):
    """(module, name) of every loaded module attribute that is `fn`."""
    found = []
    for module in list(sys.modules.values()):
        try:
            namespace = vars(module)
        except TypeError:
            continue
        for name in _NAMES:
            if namespace.get(name) is fn:
                found.append((module, name))
    return found


def enable():
    """Make FLA's chunk_gated_delta_rule run qwen_gdn's kernels; returns the patched bindings as
    'module.name' strings. Idempotent."""
    global _original, _replacement
    with _lock:
        if _replacement is None:
            _original = _fla_function()
            _replacement = _make_replacement(_original)
        for module, name in _bindings(_original):
            setattr(module, name, _replacement)
        return sorted(f"{m.__name__}.{n}" for m, n in _bindings(_replacement))


def disable():
    """Put FLA's own function back in every binding enable() (or a later import) set."""
    with _lock:
        if _replacement is None:
            return []
        restored = _bindings(_replacement)
        for module, name in restored:
            setattr(module, name, _original)
        return sorted(f"{m.__name__}.{n}" for m, n in restored)


def is_enabled():
    return _replacement is not None and bool(_bindings(_replacement))
