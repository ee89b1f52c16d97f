"""The PyTorch face of the kernels: two torch.library custom ops (forward, backward) with fake
implementations, so torch.compile(fullgraph=True) traces through them, and an autograd.Function
that keeps the forward's saved context for the backward.

Tensors, the workspace and the saved context come from PyTorch's caching allocator, and the
kernels run on the current stream, so the ops work under CUDA-graph capture. Nothing on the
default path waits for the device (see _flags).
"""

import os
import warnings
from typing import Optional, Tuple

import torch

from . import _checks, _lib

KINDS = _checks.Kinds(torch.Tensor, torch.bfloat16, torch.float32, (torch.int32, torch.int64))
_BACKEND = _lib.FUSED


def _rows16(t):
    """t itself if its rows suit the fused kernels (16-byte aligned, unit last stride), else a copy."""
    if (t.stride(-1) == 1 and t.data_ptr() % 16 == 0
            and all(s % 8 == 0 for s in t.stride()[:-1])):
        return t
    return t.clone(memory_format=torch.contiguous_format)


def _ref(t):
    return _lib.Tensor(t.data_ptr(), t.stride(0), t.stride(1), t.stride(2))


def _ptr(t):
    return t.data_ptr() if t is not None and t.numel() else None


def _state(t):
    return None if t is None else t.to(torch.float32).contiguous()


def _shape(q, v, cu_seqlens):
    B, T, Hk, K = q.shape
    num_seqs = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else 0
    return _lib.make_shape(B, T, Hk, v.shape[2], K, v.shape[3], num_seqs)


def _states(q, cu_seqlens):
    """First dimension of the states: the batch, or the number of packed sequences."""
    return cu_seqlens.shape[0] - 1 if cu_seqlens is not None else q.shape[0]


def _offsets(cu_seqlens):
    return None if cu_seqlens is None else cu_seqlens.to(torch.int32).contiguous()


def _static_ints(*sizes):
    return all(isinstance(s, int) for s in sizes)


def _saved_bytes_of(q, v, cu_seqlens):
    """The context's size for the fake implementation: the library's count for concrete shapes,
    an unbacked size when torch.compile traces with symbolic ones."""
    sizes = (*q.shape, *v.shape) + ((cu_seqlens.shape[0],) if cu_seqlens is not None else ())
    if _static_ints(*sizes):
        return _lib.saved_size(_BACKEND, _shape(q, v, cu_seqlens))
    return torch.library.get_ctx().new_dynamic_size()


# The kernels' verdict on the values (g <= 0 and finite, cu_seqlens, the saved context) is a status
# word at the start of each run's workspace (kernels/gdn/common.cuh). Reading it right after the
# run would wait for the stream: a host sync per forward and per backward. Instead each run ORs its
# word into one flag word per device, on the stream (a one-element kernel, captured like the rest
# under a CUDA graph), and the flag reaches the host without waiting: an eager call copies it into
# pinned host memory behind the work it enqueued, and a later call reads that copy once its event
# has completed. The flag word has the workspace's layout, so qr_gdn_input_error turns it into the
# library's own message (that call waits, but only once there is an error to report, or in
# check_errors()).
_flags = {}  # device index -> int32 [64] on the device (256 bytes, the status granule)
_copies = {}  # device index -> (pinned int32 [1], cuda.Event): the flag's last copy to the host
_warned_capture = set()


def _check_mode():
    """"off" (QWEN_GDN_INPUT_CHECKS=0), "sync" (QWEN_GDN_SYNC_CHECKS=1: wait and raise after every
    call, for debugging) or "deferred" (the default)."""
    if os.environ.get("QWEN_GDN_INPUT_CHECKS", "1") == "0":
        return "off"
    return "sync" if os.environ.get("QWEN_GDN_SYNC_CHECKS", "0") == "1" else "deferred"


def _flag(device, capturing):
    index = device.index if device.index is not None else torch.cuda.current_device()
    flag = _flags.get(index)
    if flag is None and not capturing:
        flag = _flags[index] = torch.zeros(64, dtype=torch.int32, device=device)
    return index, flag


def _accumulate(ws, device, capturing):
    """ORs the run's status word into the device's flag; returns (device index, flag or None)."""
    index, flag = _flag(device, capturing)
    if flag is None:
        # Zeroing a new flag inside the capture would make it part of the graph, cleared on every
        # replay; graphs are captured after an eager warm-up, which makes the flag.
        if index not in _warned_capture:
            _warned_capture.add(index)
            warnings.warn(f"qwen_gdn: the first call on cuda:{index} is inside a CUDA graph "
                          "capture; that graph's input checks are off (run one call eagerly first)",
                          stacklevel=4)
        return index, None
    flag[:1].bitwise_or_(ws[:4].view(torch.int32))
    return index, flag


def _report(index, stream):
    """Raises the library's message for the flagged bits (waits for the stream), clearing them."""
    _copies.pop(index, None)
    flag = _flags[index]
    try:
        _lib.input_error(_BACKEND, flag.data_ptr(), stream.cuda_stream)
    finally:
        flag.zero_()


def _poll(index, flag, stream):
    """Reads the flag's last copy if it has arrived (no wait), then sends a new one behind the
    work just enqueued."""
    copy = _copies.get(index)
    if copy is not None:
        host, done = copy
        if not done.query():
            return
        if int(host[0]):  # pinned host memory the copy has filled: reading it waits for nothing
            _report(index, stream)
    else:
        host, done = torch.zeros(1, dtype=torch.int32, pin_memory=True), torch.cuda.Event()
        _copies[index] = host, done
    host.copy_(flag[:1], non_blocking=True)
    done.record(stream)


def _sync_check(ws, stream):
    _lib.input_error(_BACKEND, ws.data_ptr(), stream.cuda_stream)


def _launch(run, args, ws, device):
    """Enqueues the pass on the current stream, and its input verdict behind it (see _flags)."""
    stream = torch.cuda.current_stream(device)
    with torch.cuda.device(device):
        run(_BACKEND, args, stream.cuda_stream)
        mode = _check_mode()
        if mode == "off":
            return
        capturing = torch.cuda.is_current_stream_capturing()
        if mode == "sync" and not capturing:
            _sync_check(ws, stream)
            return
        index, flag = _accumulate(ws, device, capturing)
        if flag is not None and not capturing:
            _poll(index, flag, stream)


def check_errors():
    """Raises ValueError (qwen_gdn's InvalidArgument) if any run since the last report met inputs
    outside the kernels' contract, naming what was wrong, and clears the record. Waits for the
    current stream of each device used: call it where the training loop synchronises anyway (the
    loss's .item(), the end of a step), and after replaying CUDA graphs."""
    for index in sorted(_flags):
        with torch.cuda.device(index):
            _report(index, torch.cuda.current_stream(index))


def _empty(shape, dtype, like):
    return torch.empty(shape, dtype=dtype, device=like.device)


@torch.library.custom_op("qwen_gdn::chunk_fwd", mutates_args=(), device_types="cuda")
def chunk_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
              beta: torch.Tensor, initial_state: Optional[torch.Tensor],
              cu_seqlens: Optional[torch.Tensor], scale: float, l2norm_qk: bool,
              output_final_state: bool,
              training: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k, v = _rows16(q), _rows16(k), _rows16(v)
    cu = _offsets(cu_seqlens)
    shape = _shape(q, v, cu)
    B, T, Hk, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    h0 = _state(initial_state)
    o = _empty((B, T, Hv, V), v.dtype, v)
    final = _empty((_states(q, cu), Hv, K, V) if output_final_state else (0,), torch.float32, q)
    saved = _empty((_lib.saved_size(_BACKEND, shape) if training else 0,), torch.uint8, q)
    ws = _empty((_lib.workspace_size(_BACKEND, shape, _lib.FORWARD),), torch.uint8, q)
    args = _lib.ForwardArgs(
        shape=shape, scale=scale, l2norm_qk=int(l2norm_qk), cu_seqlens=_ptr(cu),
        q=_ref(q), k=_ref(k), v=_ref(v), beta=_ref(beta), g=_ref(g),
        initial_state=_ptr(h0), o=_ref(o), final_state=_ptr(final),
        saved=_ptr(saved), saved_bytes=saved.numel(),
        workspace=_ptr(ws), workspace_bytes=ws.numel())
    _launch(_lib.forward, args, ws, q.device)
    return o, final, saved


@chunk_fwd.register_fake
def _chunk_fwd_fake(q, k, v, g, beta, initial_state, cu_seqlens, scale, l2norm_qk,
                    output_final_state, training):
    B, T, Hk, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    o = v.new_empty((B, T, Hv, V))
    final = q.new_empty((_states(q, cu_seqlens), Hv, K, V) if output_final_state else (0,),
                        dtype=torch.float32)
    saved = q.new_empty((_saved_bytes_of(q, v, cu_seqlens) if training else 0,),
                        dtype=torch.uint8)
    return o, final, saved


@torch.library.custom_op("qwen_gdn::chunk_bwd", mutates_args=(), device_types="cuda")
def chunk_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
              beta: torch.Tensor, initial_state: Optional[torch.Tensor],
              cu_seqlens: Optional[torch.Tensor], saved: torch.Tensor, d_o: torch.Tensor,
              d_final_state: Optional[torch.Tensor], scale: float, l2norm_qk: bool,
              want_d_initial_state: bool
              ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                         torch.Tensor]:
    q, k, v, d_o = _rows16(q), _rows16(k), _rows16(v), _rows16(d_o)
    cu = _offsets(cu_seqlens)
    shape = _shape(q, v, cu)
    B, T, Hk, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    h0, dht = _state(initial_state), _state(d_final_state)
    dq = _empty(q.shape, q.dtype, q)
    dk = _empty(k.shape, k.dtype, k)
    dv = _empty(v.shape, v.dtype, v)
    dg = _empty(g.shape, torch.float32, g)
    dbeta = _empty(beta.shape, beta.dtype, beta)
    dh0 = _empty((_states(q, cu), Hv, K, V) if want_d_initial_state else (0,), torch.float32, q)
    ws = _empty((_lib.workspace_size(_BACKEND, shape, _lib.BACKWARD),), torch.uint8, q)
    args = _lib.BackwardArgs(
        shape=shape, scale=scale, l2norm_qk=int(l2norm_qk), cu_seqlens=_ptr(cu),
        q=_ref(q), k=_ref(k), v=_ref(v), beta=_ref(beta), g=_ref(g),
        initial_state=_ptr(h0), d_o=_ref(d_o), d_final_state=_ptr(dht),
        dq=_ref(dq), dk=_ref(dk), dv=_ref(dv), dbeta=_ref(dbeta), dg=_ref(dg),
        d_initial_state=_ptr(dh0), saved=_ptr(saved), saved_bytes=saved.numel(),
        workspace=_ptr(ws), workspace_bytes=ws.numel())
    _launch(_lib.backward, args, ws, q.device)
    return dq, dk, dv, dg, dbeta, dh0


@chunk_bwd.register_fake
def _chunk_bwd_fake(q, k, v, g, beta, initial_state, cu_seqlens, saved, d_o, d_final_state,
                    scale, l2norm_qk, want_d_initial_state):
    B, T, Hk, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    dh0 = q.new_empty((_states(q, cu_seqlens), Hv, K, V) if want_d_initial_state else (0,),
                      dtype=torch.float32)
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            g.new_empty(g.shape, dtype=torch.float32), beta.new_empty(beta.shape), dh0)


class ChunkGatedDeltaRule(torch.autograd.Function):
    """Training forward: the fused kernels' saved context is kept with ctx.save_for_backward and
    read by the backward, which then skips recomputing the forward."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, scale, initial_state, output_final_state, l2norm_qk,
                cu_seqlens):
        o, final, saved = torch.ops.qwen_gdn.chunk_fwd(
            q, k, v, g, beta, initial_state, cu_seqlens, scale, l2norm_qk, output_final_state,
            True)
        ctx.save_for_backward(q, k, v, g, beta, initial_state, cu_seqlens, saved)
        ctx.want_d_initial_state = initial_state is not None and initial_state.requires_grad
        ctx.scale = scale
        ctx.l2norm_qk = l2norm_qk
        ctx.output_final_state = output_final_state
        return o, (final if output_final_state else None)

    @staticmethod
    def backward(ctx, d_o, d_final_state):
        q, k, v, g, beta, initial_state, cu_seqlens, saved = ctx.saved_tensors
        want_dh0 = ctx.want_d_initial_state
        if not ctx.output_final_state:
            d_final_state = None
        dq, dk, dv, dg, dbeta, dh0 = torch.ops.qwen_gdn.chunk_bwd(
            q, k, v, g, beta, initial_state, cu_seqlens, saved, d_o, d_final_state, ctx.scale,
            ctx.l2norm_qk, want_dh0)
        return (dq, dk, dv, dg, dbeta, None, dh0 if want_dh0 else None, None, None, None)


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                           output_final_state=False, use_qk_l2norm_in_kernel=False,
                           cu_seqlens=None):
    """FLA's chunk_gated_delta_rule on our kernels: returns (o, final_state or None).

    q, k: bf16 [B, T, Hk, 128]; v: bf16 [B, T, Hv, 128] (Hv a multiple of Hk); g: fp32 [B, T, Hv]
    log decay (<= 0); beta: bf16 [B, T, Hv]; scale None means K^-0.5; initial_state fp32
    [N, Hv, 128, 128]; cu_seqlens: N + 1 int32 or int64 offsets on q's device for N packed
    sequences (B = 1), rising strictly from 0 to T; N = B without it.
    """
    if torch.compiler.is_compiling():
        effective = scale if scale is not None else q.shape[-1] ** -0.5
    else:
        problem = _checks.check_inputs(KINDS, q, k, v, g, beta, scale, initial_state,
                                       output_final_state, use_qk_l2norm_in_kernel, cu_seqlens)
        _checks.check_covered(problem)
        effective = problem.scale
    training = False
    if torch.is_grad_enabled():
        for t in (q, k, v, g, beta, initial_state):
            training = training or (t is not None and t.requires_grad)
    if training:
        return ChunkGatedDeltaRule.apply(q, k, v, g, beta, float(effective), initial_state,
                                         output_final_state, use_qk_l2norm_in_kernel, cu_seqlens)
    o, final, _ = torch.ops.qwen_gdn.chunk_fwd(q, k, v, g, beta, initial_state, cu_seqlens,
                                               float(effective), use_qk_l2norm_in_kernel,
                                               output_final_state, False)
    return o, (final if output_final_state else None)
