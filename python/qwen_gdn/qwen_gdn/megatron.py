"""qwen_gdn.megatron.enable() / disable(): Megatron-Core's GatedDeltaNet layer on our kernels, on
the call they are fastest on (docs/training.md, "Megatron-Core").

The stock layer (megatron.core.ssm.gated_delta_net.GatedDeltaNet) L2-normalises q and k, repeats
them from Hk to Hv heads, makes them contiguous and calls FLA's chunk_gated_delta_rule with
use_qk_l2norm_in_kernel=False. enable() replaces the class's `forward` with one that keeps q, k
and v as strided views of the convolution's output, hands the grouped heads to our kernels as they
are and lets them normalise q and k (use_qk_l2norm_in_kernel=True). Everything else is the layer's
own: in_proj, the short convolution + SiLU (FLA's causal_conv1d, which the layer imports; our
fused convolution has no C ABI entry), the gates, the gated RMSNorm (_apply_gated_norm) and
out_proj. Packed sequences (PackedSeqParams, THD) go to the kernels as cu_seqlens; the
convolution runs over the packed tokens at once and its first W - 1 outputs of each sequence are
recomputed without the taps that cross a boundary, so nothing waits for the device or sizes a
tensor by the offsets' values (the stock layer reads cu_seqlens[-1] on the host), and the layer
can be captured in a CUDA graph.

Calls this forward does not cover (context parallelism, deterministic mode, inference, the
norm's recompute, head dims other than 128, dtypes other than bf16, devices older than sm_90)
run the stock forward, with one warning per reason. enable() patches by what it finds: on a
Megatron-Core whose layer lacks a method or forward parameter this forward relies on, it warns
once and leaves the layer alone. disable() puts the stock forward back.
"""

import functools
import importlib
import inspect
import threading
import warnings

from . import _checks

LAYER_MODULE = "megatron.core.ssm.gated_delta_net"
# The forward's parameters and the methods it calls, as Megatron-Core 0.19.2 and the commit
# Megatron-Bridge pins (2a75ac12) define them.
FORWARD_PARAMETERS = ("self", "hidden_states", "attention_mask", "inference_context",
                      "packed_seq_params", "sequence_len_offset", "inference_params", "kwargs")
METHODS = ("forward", "_apply_gated_norm")
# What the forward reads of a layer (set by _GDNBase.__init__ and _setup_variant_attrs there).
ATTRIBUTES = ("config", "in_proj", "conv1d", "out_proj", "A_log", "dt_bias", "feat_dim_split",
              "qk_dim_local_tp", "v_dim_local_tp", "key_head_dim", "value_head_dim",
              "use_qk_l2norm", "activation", "conv_bias", "cp_size", "sp_size",
              "recompute_norm_out")
_MISSING = object()

_lock = threading.Lock()
_patched = None  # (class, its own `forward` before enable(), or _MISSING)
_warned = set()


def _warn_once(message, stacklevel=3):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=stacklevel)


def unknown_layer(cls):
    """Why `cls` is not a GatedDeltaNet this integration knows, or None."""
    for name in METHODS:
        if not callable(getattr(cls, name, None)):
            return f"it has no method {name}()"
    try:
        parameters = tuple(inspect.signature(cls.forward).parameters)
    except (TypeError, ValueError) as e:
        return f"its forward() has no signature ({e})"
    if parameters != FORWARD_PARAMETERS:
        return f"its forward() takes ({', '.join(parameters)}), not ({', '.join(FORWARD_PARAMETERS)})"
    if not callable(_stock_conv(cls.forward)):
        return "its module has no causal_conv1d (FLA's short convolution)"
    return None


def _stock_conv(forward):
    return getattr(forward, "__globals__", {}).get("causal_conv1d")


def layer_not_covered(layer):
    """Why this layer instance runs the stock forward, or None. Reads attributes only."""
    for name in ATTRIBUTES:
        if not hasattr(layer, name):
            return f"the layer has no attribute {name!r}"
    if layer.cp_size != 1:
        return f"context parallelism (cp_size {layer.cp_size}) is not supported"
    if getattr(layer.config, "deterministic_mode", False):
        return "deterministic_mode runs the layer's torch implementation"
    if layer.recompute_norm_out:
        return "recompute of gdn_norm_out is not supported"
    if layer.activation not in ("silu", "swish"):
        return f"activation {layer.activation!r} (the convolution takes silu)"
    if layer.key_head_dim != _checks.HEAD_DIM or layer.value_head_dim != _checks.HEAD_DIM:
        return (f"head dims K = {layer.key_head_dim}, V = {layer.value_head_dim} are not covered "
                f"(the kernels take K = V = {_checks.HEAD_DIM})")
    return None


def call_not_covered(hidden_states, inference_context, packed_seq_params):
    """Why this call runs the stock forward, or None. Reads no tensor values."""
    if inference_context is not None:
        return "inference is not supported"
    if str(hidden_states.dtype) != "torch.bfloat16":
        return f"hidden_states has dtype {hidden_states.dtype} (the kernels take bf16)"
    if hidden_states.device.type != "cuda":
        return f"hidden_states is on {hidden_states.device}"
    return None


def check_packed(hidden_states, packed_seq_params):
    """The packed call's offsets (cu_seqlens_q, or its padded form), or None for a dense call.
    Checks what the shapes show; the kernels check the offsets' values on the device."""
    if packed_seq_params is None or getattr(packed_seq_params, "qkv_format", None) != "thd":
        return None
    if hidden_states.shape[1] != 1:
        raise ValueError(f"hidden_states: packed sequences (THD) need batch 1, got shape "
                         f"{tuple(hidden_states.shape)}")
    cu_q, cu_kv = (
        getattr(packed_seq_params, f"cu_seqlens_{side}_padded", None)
        if getattr(packed_seq_params, f"cu_seqlens_{side}_padded", None) is not None
        else getattr(packed_seq_params, f"cu_seqlens_{side}", None) for side in ("q", "kv"))
    if cu_q is None:
        raise ValueError("packed_seq_params: qkv_format 'thd' without cu_seqlens_q")
    if len(cu_q.shape) != 1 or cu_q.shape[0] < 2:
        raise ValueError(f"packed_seq_params.cu_seqlens_q: must be 1-D with N + 1 >= 2 offsets, "
                         f"got shape {tuple(cu_q.shape)}")
    if cu_kv is not None and cu_kv is not cu_q and tuple(cu_kv.shape) != tuple(cu_q.shape):
        raise ValueError(f"packed_seq_params: cu_seqlens_kv (shape {tuple(cu_kv.shape)}) must equal "
                         f"cu_seqlens_q (shape {tuple(cu_q.shape)})")
    return cu_q, cu_kv


def _make_forward(stock):
    @functools.wraps(stock)
    def forward(self, hidden_states, attention_mask, inference_context=None,
                packed_seq_params=None, sequence_len_offset=None, *, inference_params=None,
                **kwargs):
        reason = (layer_not_covered(self)
                  or call_not_covered(hidden_states, inference_context or inference_params,
                                      packed_seq_params)
                  or _device_not_covered(hidden_states))
        if reason is None:
            return _forward(self, hidden_states, packed_seq_params, _stock_conv(stock))
        _warn_once(f"qwen_gdn.megatron: {reason}; running Megatron-Core's own GatedDeltaNet "
                   "forward")
        return stock(self, hidden_states, attention_mask, inference_context, packed_seq_params,
                     sequence_len_offset, inference_params=inference_params, **kwargs)

    forward.qwen_gdn_stock = stock
    return forward


def _device_not_covered(hidden_states):
    import torch
    if torch.cuda.get_device_capability(hidden_states.device)[0] < 9:
        return f"device {hidden_states.device} is not sm_90 or newer"
    return None


def _gates(A_log, dt_bias, alpha, beta):
    """The stock layer's g (fp32 log decay) and beta, computed the same way."""
    import torch.nn.functional as F
    g = -A_log.exp() * F.softplus(alpha.float() + dt_bias)
    return g, beta.sigmoid()


_fused_gates = None


def _gates_fn():
    """_gates through Megatron-Core's jit_fuser (torch.compile), as the stock layer fuses them."""
    global _fused_gates
    if _fused_gates is None:
        try:
            from megatron.core.jit import jit_fuser
            _fused_gates = jit_fuser(_gates)
        except ImportError:
            _fused_gates = _gates
    return _fused_gates


def _conv_silu(conv, x, weight, bias, activation, cu_seqlens):
    """FLA's causal_conv1d + SiLU over [B, T, D]; with cu_seqlens (B = 1), over the packed tokens
    at once, then each sequence's first W - 1 outputs recomputed from its own tokens only. The
    shapes depend on T, D, W and the number of sequences, never on the offsets' values."""
    import torch
    import torch.nn.functional as F
    y, _ = conv(x=x, weight=weight, bias=bias, activation=activation, initial_state=None,
                output_final_state=False, cu_seqlens=None)
    if cu_seqlens is None:
        return y
    T, D = x.shape[1], x.shape[2]
    W = weight.shape[-1]
    dev = x.device
    starts = cu_seqlens[:-1].long()
    lengths = cu_seqlens[1:].long() - starts
    r = torch.arange(W - 1, device=dev)  # position within the sequence
    j = torch.arange(W, device=dev)  # tap: how many tokens back
    pos = starts[:, None] + r  # [N, W-1]
    valid = r < lengths[:, None]  # the sequence has a token at r
    use = (j <= r[:, None]) & valid[:, :, None]  # [N, W-1, W]: taps inside the sequence
    src = torch.where(use, pos[:, :, None] - j, 0).clamp_(0, T - 1)
    taps = weight.flip(-1).t().float()  # [W, D]: taps[j] = weight[:, W-1-j]
    pre = (x[0][src].float() * taps * use[..., None]).sum(2)  # [N, W-1, D]
    if bias is not None:
        pre = pre + bias.float()
    fixed = F.silu(pre).to(y.dtype)
    # Positions past a short sequence's end belong to the next one: those slots write the
    # sequence's own first output again, detached, so no index receives two values or gradients.
    fixed = torch.where(valid[:, :, None], fixed, fixed[:, :1].detach())
    dest = torch.where(valid, pos, pos[:, :1]).reshape(-1)
    # In place: FLA's convolution keeps its input, not y, for the backward.
    return y.index_put_((torch.zeros_like(dest), dest), fixed.reshape(-1, D))


def _forward(layer, hidden_states, packed_seq_params, conv):
    import torch
    from ._torch import chunk_gated_delta_rule
    packed = check_packed(hidden_states, packed_seq_params)
    cu_seqlens = None
    if packed is not None:
        cu_seqlens, cu_kv = packed
        if cu_kv is not None and cu_kv is not cu_seqlens:
            torch._assert_async((cu_kv == cu_seqlens).all(),
                                "GDN: cu_seqlens_kv must equal cu_seqlens_q")
    _, batch, _ = hidden_states.shape
    qkvzba, _ = layer.in_proj(hidden_states)
    qkvzba = qkvzba.transpose(0, 1)  # [s, b, x] -> [b, s, x]
    qkv, gate, beta, alpha = torch.split(qkvzba, layer.feat_dim_split, dim=-1)
    seq_len = qkv.shape[1]
    qkv = _conv_silu(conv, qkv, layer.conv1d.weight.squeeze(1),
                     layer.conv1d.bias if layer.conv_bias else None, layer.activation, cu_seqlens)
    q, k, v = torch.split(qkv, [layer.qk_dim_local_tp, layer.qk_dim_local_tp,
                                layer.v_dim_local_tp], dim=-1)
    q = q.unflatten(-1, (-1, layer.key_head_dim))  # views: rows of 128 inside the conv's output
    k = k.unflatten(-1, (-1, layer.key_head_dim))
    v = v.unflatten(-1, (-1, layer.value_head_dim))
    g, beta = _gates_fn()(layer.A_log, layer.dt_bias, alpha, beta)
    o, _ = chunk_gated_delta_rule(q, k, v, g, beta,
                                  use_qk_l2norm_in_kernel=bool(layer.use_qk_l2norm),
                                  cu_seqlens=cu_seqlens)
    gate = gate.reshape(batch, seq_len, -1, layer.value_head_dim)
    norm_out = layer._apply_gated_norm(o, gate)
    norm_out = norm_out.reshape(batch, seq_len, -1).transpose(0, 1).contiguous()
    return layer.out_proj(norm_out)


def _layer_class():
    try:
        module = importlib.import_module(LAYER_MODULE)
    except ImportError as e:
        raise ImportError(f"qwen_gdn.megatron.enable(): Megatron-Core is not importable: {e}")
    cls = getattr(module, "GatedDeltaNet", None)
    if cls is None:
        raise ImportError(f"qwen_gdn.megatron.enable(): {LAYER_MODULE} has no GatedDeltaNet")
    return cls


def enable(layer_class=None):
    """Patch GatedDeltaNet.forward (Megatron-Core's, or `layer_class`). Returns True when the
    layer runs ours; on a layer this integration does not know, warns once and returns False.
    Idempotent."""
    global _patched
    cls = layer_class if layer_class is not None else _layer_class()
    with _lock:
        if _patched is not None:
            if _patched[0] is cls:
                return True
            raise RuntimeError(f"qwen_gdn.megatron: {_patched[0].__qualname__} is patched; "
                               "disable() it first")
        why = unknown_layer(cls)
        if why is not None:
            _warn_once(f"qwen_gdn.megatron: {cls.__module__}.{cls.__qualname__} is not a "
                       f"GatedDeltaNet this integration knows ({why}); the stock layer runs")
            return False
        _patched = (cls, cls.__dict__.get("forward", _MISSING))
        cls.forward = _make_forward(cls.forward)
        return True


def disable():
    """Put the stock forward back; True if one was patched."""
    global _patched
    with _lock:
        if _patched is None:
            return False
        cls, own = _patched
        if own is _MISSING:
            del cls.forward
        else:
            cls.forward = own
        _patched = None
        return True


def is_enabled():
    return _patched is not None
