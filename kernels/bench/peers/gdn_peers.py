#!/usr/bin/env python3
"""gdn-bench's driver for the Python GatedDeltaNet and short-convolution backends
(docs/gdn/peers.md).

gdn-bench writes the inputs it generated (the very tensors, see tensors_io below) into one folder
per shape and starts this script; it runs each peer backend on those tensors, times it the way
gdn-bench times ours (CUDA-graph replay medians; eager runs with the L2 flushed before each),
measures its memory, writes its outputs and gradients back for gdn-bench to compare with our fp32
`reference`, and writes one JSON file of results. A backend that cannot run gets a row saying why.

    gdn_peers.py gdn --inputs DIR [--inputs DIR ...] --out DIR [--backend fla,flash_qla,...]
                     [--modes fwd,fwd-train,bwd,fwdbwd] [--warmup N] [--iters N]
                     [--prepare-timeout S]
    gdn_peers.py conv --inputs DIR [--inputs DIR ...] --out DIR [--backend fla,causal_conv1d]
                      [--modes fwd,bwd,fwdbwd] [--warmup N] [--iters N] [--prepare-timeout S]
    gdn_peers.py plot --json GDN_BENCH_JSON --out FILE.png|FILE.svg

Backends (each backend and shape runs in a process of its own, so that the packages cannot see
each other and the first calls, which compile and autotune, run side by side; the timed runs
then have the GPU to themselves, one process at a time):
  fla                 FLA's Triton chunk_gated_delta_rule, pinned to Triton: FLA_FLASH_QLA=0 and
                      `tilelang` / `flash_qla` refused at import (FLA 0.6 would otherwise dispatch
                      to FlashQLA, or to a TileLang kernel for one backward stage); the kernels
                      that ran are read back with torch.profiler and checked.
  flash_qla           FlashQLA through FLA's dispatch, as a user gets it: FLA's
                      chunk_gated_delta_rule with flash_qla importable and FLA_FLASH_QLA unset;
                      the kernels that ran are read back with torch.profiler and checked. A
                      contract FLA's dispatch does not send to FlashQLA (fla-layer) is said on
                      its row with FLA's own reason.
  transformer_engine  cuDNN frontend's gated_delta_net, the op Transformer Engine's
                      GatedDeltaNetAttention runs (Megatron-Core's `transformer_engine` backend).

Every backend makes the call of the contract gdn-bench ran (the manifest's "contract"):
grouped and mcore pass q, k, v, g, beta (mcore's q and k normalised and repeated by gdn-bench,
"l2norm": false); fla-layer passes a, b, A_log, dt_bias with use_gate_in_kernel and
use_beta_sigmoid_in_kernel, as FLA 0.6's GatedDeltaNet layer does.

The short convolution's backends (`conv`) run the peer's causal depthwise conv with SiLU on
mixed_qkv, then the rest of gdn-bench's conv op in PyTorch (the split, the l2norm of q and k, the
gates g and beta), so that their outputs and gradients are those of our `fused`:
  fla                 FLA's Triton causal_conv1d (backend="triton"), pinned:
                      FLA_DISABLE_BACKEND_DISPATCH=1 (no Gluon or other FLA backend can take the
                      call) and `tilelang` / `flash_qla` refused at import; checked from the
                      kernels that ran.
  causal_conv1d       Dao-AILab's causal-conv1d (causal_conv1d_fn, CUDA), where installed.

The top level needs only the standard library: without PyTorch every row says "not installed".
Exit codes: 0 (also when a backend could not run: its row says why), 2 bad arguments or inputs.
"""
import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import struct
import subprocess
import sys
import threading
import time

SCHEMA = "qwen-recipe gdn-peers 1"
TENSORS_FORMAT = "qwen-recipe gdn-bench tensors 1"
BACKENDS = {"gdn": ("fla", "flash_qla", "transformer_engine"), "conv": ("fla", "causal_conv1d")}
MODES = {"gdn": ("fwd", "fwd-train", "bwd", "fwdbwd"), "conv": ("fwd", "bwd", "fwdbwd")}

# What each backend imports, and the install hint of its row when that is missing (with a note
# on the package, or "").
NEEDS = {
    "gdn": {
        "fla": [("fla", "pip install flash-linear-attention", "")],
        "flash_qla": [("flash_qla", "pip install flash-qla", ""),
                      ("tilelang", "pip install tilelang", ""),
                      ("fla", "pip install flash-linear-attention", "")],
        "transformer_engine": [("cudnn", "pip install nvidia-cudnn-frontend", "")],
    },
    "conv": {
        "fla": [("fla", "pip install flash-linear-attention", "")],
        "causal_conv1d": [("causal_conv1d", "pip install causal-conv1d",
                           "; PyPI has its source only: installing compiles its CUDA extension "
                           "against the installed PyTorch")],
    },
}
# Distribution names whose versions a row reports.
VERSIONS = {
    "gdn": {
        "fla": ["torch", "triton", "flash-linear-attention", "fla-core"],
        "flash_qla": ["torch", "triton", "flash-linear-attention", "fla-core", "flash-qla",
                      "tilelang", "apache-tvm-ffi"],
        "transformer_engine": ["torch", "nvidia-cudnn-frontend", "transformer-engine",
                               "nvidia-cutlass-dsl", "cuda-tile"],
    },
    "conv": {
        "fla": ["torch", "triton", "flash-linear-attention", "fla-core"],
        "causal_conv1d": ["torch", "causal-conv1d"],
    },
}
BLOCKED_FOR_FLA = ("tilelang", "flash_qla")
KERNEL_PROFILE_STEPS = 5  # training steps torch.profiler averages the per-kernel times over
# The tensors of each op's inputs.json (conv: "bias" too when the manifest says bias: true).
INPUT_TENSORS = {
    "gdn": ("q", "k", "v", "g", "beta", "do"),
    "conv": ("x", "weight", "a", "b", "A_log", "dt_bias", "dq", "dk", "dv", "dg", "dbeta"),
}
# How gdn-bench calls the op (its --contract, the manifest's "contract"; docs/gdn/bench.md,
# "Contracts"): grouped and mcore differ only in the tensors (mcore's q and k come normalised and
# repeated to Hv heads, "l2norm": false); fla-layer passes the gate's inputs for the kernel to
# form g = -exp(A_log) softplus(a + dt_bias) and beta = sigmoid(b).
CONTRACTS = ("grouped", "mcore", "fla-layer")
GATE_INPUT_TENSORS = ("q", "k", "v", "a", "b", "A_log", "dt_bias", "do")


class Unavailable(Exception):
    """A backend that cannot make the contract's call: its row says why, status unavailable."""


def log(msg):
    print(f"gdn-peers: {msg}", file=sys.stderr, flush=True)


def versions(op, backend):
    out = {}
    for dist in VERSIONS[op][backend]:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def missing_reason(op, backend):
    """The row's reason when a package the backend imports is not installed, else None."""
    for module, hint, note in [("torch", "pip install torch", "")] + NEEDS[op][backend]:
        if importlib.util.find_spec(module) is None:
            return f"not installed: {hint} (no module '{module}'{note})"
    return None


def atomic_write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------------------
# The tensor files: NAME.json (manifest) + NAME.bin (raw little-endian bytes, back to back).
# Manifest: {"format": TENSORS_FORMAT, "shape": {"name", "B", "T", "Hk", "Hv", "D", and "N" when
# it packs N sequences}, "tensors": [{"name", "dtype" (bf16 | f32 | i32), "shape": [...], "offset",
# "bytes"}], ...}. gdn-bench writes inputs.json/.bin (q, k, v, g, beta, do, and h0, dht with
# --initial-state; with --varlen the offsets cu_seqlens and one state per sequence; --op conv:
# "op": "conv", "bias", and the INPUT_TENSORS); a backend's outputs come back the same way.

def gdn_inputs(B, T, Hk, Hv, D, states=False, sequences=None, gate=False):
    """The tensors of a GDN shape's inputs.json, [(name, dtype, dims)], as gdn-bench writes them
    (peers.cpp, gdn_input_layout; h0 and dht with --initial-state, one state per sequence: B, or
    `sequences` packed ones; packed, the int32 offsets cu_seqlens; `gate`, the fla-layer
    contract: the gate's inputs a, b, A_log, dt_bias in place of g and beta), and the scale it
    writes: float32 Dk^-0.5 printed with 9 digits.
    peers_warm.py builds the same inputs, since the peers compile dtypes and the scale into their
    kernels: a scale that differs in the last digit is another FlashQLA kernel."""
    n = B if sequences is None else sequences
    tensors = [("q", "bf16", [B, T, Hk, D]), ("k", "bf16", [B, T, Hk, D]),
               ("v", "bf16", [B, T, Hv, D])]
    if gate:
        tensors += [("a", "bf16", [B, T, Hv]), ("b", "bf16", [B, T, Hv]), ("A_log", "f32", [Hv]),
                    ("dt_bias", "f32", [Hv])]
    else:
        tensors += [("g", "f32", [B, T, Hv]), ("beta", "bf16", [B, T, Hv])]
    tensors.append(("do", "bf16", [B, T, Hv, D]))
    if states:
        tensors += [("h0", "f32", [n, Hv, D, D]), ("dht", "f32", [n, Hv, D, D])]
    if sequences is not None:
        tensors.append(("cu_seqlens", "i32", [n + 1]))
    sqrt_d = struct.unpack("f", struct.pack("f", math.sqrt(D)))[0]  # as C++ float math rounds
    scale = float("%.9g" % struct.unpack("f", struct.pack("f", 1.0 / sqrt_d))[0])
    return tensors, scale


def read_manifest(folder, op="gdn"):
    path = os.path.join(folder, "inputs.json")
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --inputs {folder}: cannot read inputs.json: {e}")
    if m.get("format") != TENSORS_FORMAT:
        raise SystemExit(f"error: --inputs {folder}: inputs.json is not a '{TENSORS_FORMAT}' file")
    if m.get("op", "gdn") != op:
        raise SystemExit(f"error: --inputs {folder}: inputs.json holds the inputs of op "
                         f"'{m.get('op', 'gdn')}', not of '{op}'")
    for key in ("shape", "tensors") + (("scale", "l2norm") if op == "gdn" else ("bias",)):
        if key not in m:
            raise SystemExit(f"error: --inputs {folder}: inputs.json has no '{key}'")
    names = {t["name"] for t in m["tensors"]}
    if op == "gdn" and m.get("contract", "grouped") not in CONTRACTS:
        raise SystemExit(f"error: --inputs {folder}: inputs.json's contract {m['contract']!r} is "
                         f"none of {', '.join(CONTRACTS)}")
    gate = op == "gdn" and m.get("contract") == "fla-layer"
    for need in (GATE_INPUT_TENSORS if gate else INPUT_TENSORS[op]) + (
            ("bias",) if op == "conv" and m["bias"] else ()):
        if need not in names:
            raise SystemExit(f"error: --inputs {folder}: inputs.json has no tensor '{need}'")
    if op == "gdn":  # the layout peers_warm.py compiles the peers' kernels for
        dims = [m["shape"].get(k) for k in ("B", "T", "Hk", "Hv", "D")]
        if not all(isinstance(d, int) for d in dims):
            raise SystemExit(f"error: --inputs {folder}: inputs.json's shape needs integers B, T, "
                             "Hk, Hv and D")
        sequences = m["shape"].get("N")
        if sequences is not None:
            if not isinstance(sequences, int) or isinstance(sequences, bool) or sequences < 1:
                raise SystemExit(f"error: --inputs {folder}: inputs.json's shape N (packed "
                                 f"sequences) is {sequences!r}, not a positive integer")
            if dims[0] != 1:
                raise SystemExit(f"error: --inputs {folder}: inputs.json packs N = {sequences} "
                                 f"sequences at B = {dims[0]}: packed sequences need B = 1")
        elif "cu_seqlens" in names:
            raise SystemExit(f"error: --inputs {folder}: inputs.json has a tensor 'cu_seqlens' "
                             "but its shape has no N (the packed sequences)")
        want, _ = gdn_inputs(*dims, states="h0" in names, sequences=sequences, gate=gate)
        got = {t["name"]: (t["dtype"], t["shape"]) for t in m["tensors"]}
        for name, dtype, dims in want:
            if got.get(name) != (dtype, dims):
                have = got.get(name, ("absent", []))
                raise SystemExit(f"error: --inputs {folder}: inputs.json's tensor '{name}' is "
                                 f"{have[0]} {have[1]}, not {dtype} {dims} as gdn-bench writes it")
        if sequences is not None:
            check_offsets(folder, m, sequences)
    return m


def check_offsets(folder, m, sequences):
    """The packed offsets in inputs.bin: N + 1 int32 values rising strictly from 0 to T, the
    convention of gdn-bench, FLA and FlashQLA (read with the standard library, before any worker
    starts, so that bad offsets end the driver with one error line)."""
    where = f"error: --inputs {folder}: inputs.json's cu_seqlens"
    t = next(t for t in m["tensors"] if t["name"] == "cu_seqlens")
    count, T = sequences + 1, m["shape"]["T"]
    if t.get("bytes") != 4 * count or not isinstance(t.get("offset"), int) or t["offset"] < 0:
        raise SystemExit(f"{where} has offset {t.get('offset')!r} and {t.get('bytes')!r} bytes, "
                         f"not the {4 * count} bytes of i32 [{count}]")
    try:
        with open(os.path.join(folder, "inputs.bin"), "rb") as f:
            f.seek(t["offset"])
            raw = f.read(4 * count)
    except OSError as e:
        raise SystemExit(f"{where}: cannot read inputs.bin: {e}")
    if len(raw) != 4 * count:
        raise SystemExit(f"{where} lie past the end of inputs.bin")
    cu = struct.unpack(f"<{count}i", raw)
    if cu[0] != 0:
        raise SystemExit(f"{where} start at {cu[0]}, not 0")
    for i in range(1, count):
        if cu[i] <= cu[i - 1]:
            raise SystemExit(f"{where} do not rise: cu_seqlens[{i}] = {cu[i]} after "
                             f"cu_seqlens[{i - 1}] = {cu[i - 1]}")
    if cu[-1] != T:
        raise SystemExit(f"{where} end at {cu[-1]}, not at T = {T}")


def load_tensors(folder, manifest, device):
    import torch
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32}
    out = {}
    with open(os.path.join(folder, "inputs.bin"), "rb") as f:
        for t in manifest["tensors"]:
            f.seek(t["offset"])
            raw = bytearray(f.read(t["bytes"]))
            x = torch.frombuffer(raw, dtype=torch.uint8).view(dtypes[t["dtype"]])
            out[t["name"]] = x.reshape(t["shape"]).to(device)
    return out


def write_tensors(path_stem, shape, tensors):
    """tensors: [(name, tensor)], bf16 or f32, written contiguous."""
    import torch
    names = {torch.bfloat16: "bf16", torch.float32: "f32"}
    entries, offset = [], 0
    with open(path_stem + ".bin.tmp", "wb") as f:
        for name, t in tensors:
            t = t.detach()
            if t.dtype not in names:
                t = t.float()
            raw = t.contiguous().cpu().view(torch.uint8).numpy().tobytes()
            f.write(raw)
            entries.append({"name": name, "dtype": names[t.dtype], "shape": list(t.shape),
                            "offset": offset, "bytes": len(raw)})
            offset += len(raw)
    os.replace(path_stem + ".bin.tmp", path_stem + ".bin")
    atomic_write(path_stem + ".json", json.dumps(
        {"format": TENSORS_FORMAT, "shape": shape, "tensors": entries}, indent=1) + "\n")


# ------------------------------------------------------------------------------------------------
# Worker: one backend, one or more shapes, in a process of its own.

class BlockImports:
    """A meta-path finder that refuses some top-level packages: FLA then finds them absent
    (its find_spec_cached turns ModuleNotFoundError for the name into None)."""

    def __init__(self, names):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named '{fullname}' (blocked by gdn_peers.py)",
                                      name=fullname)
        return None


def pin_backend(op, backend):
    """Pins `backend` to the kernels its row says it runs, in this process, before its package is
    imported (FLA reads the variables at import and at its first dispatch): FLA to its Triton
    kernels, with FLA_FLASH_QLA=0 and tilelang / flash_qla refused, for the conv also
    FLA_DISABLE_BACKEND_DISPATCH=1 (its @dispatch then keeps its Triton functions, no Gluon). The
    workers and peers_warm.py both call it, so that the cache filler compiles what a worker runs."""
    if backend != "fla":
        return
    os.environ["FLA_FLASH_QLA"] = "0"
    if op == "conv":
        os.environ["FLA_DISABLE_BACKEND_DISPATCH"] = "1"
    sys.meta_path.insert(0, BlockImports(BLOCKED_FOR_FLA))


def triton_kernel_names(prefix):
    """Names of the Triton kernels defined by the loaded modules under `prefix`."""
    from triton.runtime.jit import JITFunction, KernelInterface
    names = set()
    for mname, mod in list(sys.modules.items()):
        if not mname.startswith(prefix) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            cur, depth = obj, 0
            while isinstance(cur, KernelInterface) and depth < 8:
                if isinstance(cur, JITFunction):
                    names.add(cur.fn.__name__)
                    break
                cur, depth = getattr(cur, "fn", None), depth + 1
    return names


def fla_call(q, k, v, g, beta, h0, scale, l2norm, cu_seqlens, gate):
    """FLA's chunk_gated_delta_rule (its dispatch picks the kernels), as the contract calls it:
    with `gate` = (A_log, dt_bias), g and beta are the raw a and b, and the kernel forms the gate
    and beta's sigmoid, as FLA 0.6's GatedDeltaNet layer calls it."""
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    extra = {} if gate is None else dict(use_gate_in_kernel=True, A_log=gate[0], dt_bias=gate[1],
                                         use_beta_sigmoid_in_kernel=True)
    return chunk_gated_delta_rule(q, k, v, g, beta, scale=scale, initial_state=h0,
                                  output_final_state=True, use_qk_l2norm_in_kernel=l2norm,
                                  cu_seqlens=cu_seqlens, **extra)


def flash_qla_refusal(gate, l2norm):
    """Why FLA's dispatch would not send the contract's call to FlashQLA (FLA's own verifier), or
    None; the verifier looks only at flags, dtypes and head dims, so small stand-ins serve."""
    import torch
    from fla.ops.gated_delta_rule.backends.flash_qla import FlashQLABackend
    x = torch.empty(1, 64, 1, 128, dtype=torch.bfloat16, device="cuda")
    g = torch.empty(1, 64, 1, dtype=torch.float32, device="cuda")
    beta = torch.empty(1, 64, 1, dtype=torch.bfloat16, device="cuda")
    flags = dict(use_qk_l2norm_in_kernel=l2norm)
    if gate:
        flags.update(use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True)
    ok, why = FlashQLABackend().chunk_gated_delta_rule_verifier(x, x, x, g, beta, **flags)
    return None if ok else why


# Names of FlashQLA's TileLang kernels as torch.profiler lists them (its Hopper forward: cumsum,
# kkt_solve, prepare_h, fused_chunk_gdr_fwd; backward: prepare_dh, fused_chunk_gdr_bwd).
FLASH_QLA_KERNELS = ("fused_chunk_gdr", "kkt_solve", "prepare_h", "prepare_dh")


def flash_qla_ran(kernels):
    """How the run shows that FLA's dispatch ran FlashQLA: its kernels among the kernels of a
    training step, and flash_qla imported."""
    ran = sorted(k for k in kernels if any(n in k for n in FLASH_QLA_KERNELS))
    ok = bool(ran) and "flash_qla" in sys.modules
    return {"verified": ok, "flash_qla_kernels": ran,
            "text": (f"{len(ran)} FlashQLA kernels ran through FLA's dispatch "
                     f"({', '.join(ran[:3])}{', ...' if len(ran) > 3 else ''})")}


def make_backend(name, cc, gate=False, l2norm=True):
    """Returns (call, note): call(q, k, v, g, beta, h0, scale, l2norm, cu_seqlens, gate) ->
    (o, ht); cu_seqlens None (a dense batch) or the int32 offsets of packed sequences (B = 1; h0
    and ht one state per sequence: gdn-bench --varlen / --packed, peers_warm.py --varlen); gate
    None, or (A_log, dt_bias) at the fla-layer contract (g and beta are then the raw a and b).
    Raises Unavailable when the backend cannot make the contract's call (`gate`, `l2norm`)."""
    if name == "fla":
        import fla.ops.common.chunk_o as chunk_o
        note = "FLA Triton: FLA_FLASH_QLA=0, tilelang and flash_qla refused at import"
        if cc[0] == 9 and getattr(chunk_o, "TRITON_ABOVE_3_7_1", True) is False:
            # FLA refuses its gated backward on Hopper with Triton >= 3.4, < 3.7.1 (FLA #640, a
            # Triton miscompile of dbeta / dg). Lifted so it can be timed; gdn-bench's check of
            # the gradients against `reference` then says whether they come out right.
            chunk_o.TRITON_ABOVE_3_7_1 = True
            note += "; FLA's Hopper guard for Triton < 3.7.1 (FLA #640) lifted, gradients checked"

        return fla_call, note
    if name == "flash_qla":
        importlib.import_module("flash_qla")  # FLA's dispatch finds it importable
        os.environ.pop("FLA_FLASH_QLA", None)  # the default: on
        why = flash_qla_refusal(gate, l2norm)
        if why:
            raise Unavailable(f"FLA's dispatch runs its Triton kernels at this contract, not "
                              f"FlashQLA: {why}")
        return fla_call, ("FlashQLA through FLA's dispatch (fla.ops.gated_delta_rule."
                          "chunk_gated_delta_rule, FLA_FLASH_QLA unset), as a user gets it")
    if name == "transformer_engine":
        import torch
        from cudnn.linear_attention import gated_delta_net
        te = importlib.util.find_spec("transformer_engine") is not None
        note = ("cuDNN frontend gated_delta_net, the op Transformer Engine's GatedDeltaNetAttention "
                "runs")
        if not te:
            note += (" (Transformer Engine itself not installed: PyPI has no wheel of "
                     "transformer-engine-torch, only its source; docs/gdn/peers.md)")

        if gate:
            raise Unavailable("cuDNN frontend's gated_delta_net takes g and beta: it has no gate "
                              "or beta sigmoid in the kernel")

        def call(q, k, v, g, beta, h0, scale, l2norm, cu_seqlens, gate):
            B, T = q.shape[0], q.shape[1]
            cu = cu_seqlens if cu_seqlens is not None else torch.arange(
                0, (B + 1) * T, T, dtype=torch.int32, device=q.device)
            flat = [x.reshape(B * T, *x.shape[2:]) for x in (q, k, v, g, beta)]
            # cuDNN's states are [N, H, V, K]; ours and FLA's [N, H, K, V].
            s0 = None if h0 is None else h0.transpose(-1, -2).contiguous()
            o, ht = gated_delta_net(*flat, cu, scale=scale, initial_state=s0,
                                    output_final_state=True, use_qk_l2norm_in_kernel=l2norm)
            return o.reshape(B, T, *o.shape[1:]), ht.transpose(-1, -2)
        return call, note
    raise ValueError(name)


def make_conv_backend(name):
    """Returns (conv, note, own): conv(x [B,T,C], weight [C,W], bias [C] | None) -> silu(causal
    depthwise conv) [B,T,C]; own(kernel name) says whether a CUDA kernel is the peer's own."""
    if name == "fla":
        import fla.backends
        from fla.modules.causal_conv1d import causal_conv1d
        if not fla.backends._DISPATCH_DISABLED:
            raise RuntimeError("FLA's backend dispatch is on (FLA_DISABLE_BACKEND_DISPATCH=1 was "
                               "not seen at import): its causal_conv1d may not be Triton")
        fla_triton = triton_kernel_names("fla.modules.causal_conv1d.ops")

        def conv(x, weight, bias):
            return causal_conv1d(x, weight, bias, activation="silu", backend="triton")[0]
        return conv, ("FLA Triton causal_conv1d (backend='triton', silu; "
                      "FLA_DISABLE_BACKEND_DISPATCH=1, tilelang and flash_qla refused at import); "
                      "split, q/k l2norm and gates in PyTorch"), lambda k: k in fla_triton
    if name == "causal_conv1d":
        from causal_conv1d import causal_conv1d_fn

        def conv(x, weight, bias):  # x [B, T, C] as [B, C, T] with channels last, as FLA calls it
            return causal_conv1d_fn(x.transpose(1, 2), weight, bias,
                                    activation="silu").transpose(1, 2)
        return conv, ("causal-conv1d causal_conv1d_fn (CUDA, silu, channels-last x); split, q/k "
                      "l2norm and gates in PyTorch"), lambda k: "causal_conv1d" in k
    raise ValueError(name)


class Heartbeat:
    """Prints a line every `every` seconds while a long first call (compile, autotune) runs."""

    def __init__(self, what, every=20.0):
        self.what, self.every = what, every
        self.stop = threading.Event()
        self.t0 = time.time()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.wait(self.every):
            log(f"{self.what}: still busy ({time.time() - self.t0:.0f} s)")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()


def worker(args):
    # The parent reads "prepared" from this process's stdout; libraries that print (TileLang
    # does) go to stderr instead.
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    pin_backend(args.op, args.backend)
    import torch
    dev = torch.device("cuda")
    cc = torch.cuda.get_device_capability()
    result = {"backend": args.backend, "shapes": []}
    own = None  # conv: which CUDA kernels are the peer's own
    # The contract is the same for every shape of a run (gdn-bench writes it per shape).
    first = read_manifest(args.inputs[0], args.op) if args.inputs else {}
    gate, l2norm = first.get("contract") == "fla-layer", first.get("l2norm", True)
    try:
        log(f"{args.backend}: importing")
        with Heartbeat(f"{args.backend}: importing"):
            if args.op == "conv":
                call, note, own = make_conv_backend(args.backend)
            else:
                call, note = make_backend(args.backend, cc, gate, l2norm)
    except Unavailable as e:
        result["unavailable"] = str(e)
        log(f"{args.backend}: {e}")
        atomic_write(args.result, json.dumps(result))
        print("prepared", file=proto, flush=True)
        return 0
    except Exception as e:  # the library's own reason, verbatim
        result["error"] = f"{type(e).__name__}: {e}"
        log(f"{args.backend}: {result['error']}")
        atomic_write(args.result, json.dumps(result))
        print("prepared", file=proto, flush=True)
        return 0
    if args.import_only:
        return 0
    result["runs"] = note
    problems = []
    for folder in args.inputs:
        m = read_manifest(folder, args.op)
        name = m["shape"]["name"]
        entry = {"shape": m["shape"], "input": folder}
        result["shapes"].append(entry)
        try:
            ins = load_tensors(folder, m, dev)
            p = (ConvProblem(call, ins, m["shape"], m["bias"]) if args.op == "conv" else
                 Problem(call, ins, m["scale"], m["l2norm"], m.get("contract") == "fla-layer"))
            t0 = time.time()
            log(f"{args.backend} {name}: first calls (compile / autotune)")
            with Heartbeat(f"{args.backend} {name}: compiling / autotuning"):
                p.first_calls()
            entry["first_call_s"] = round(time.time() - t0, 1)
            log(f"{args.backend} {name}: first calls took {entry['first_call_s']} s")
            problems.append((entry, p, folder))
        except Exception as e:
            entry["error"] = f"{type(e).__name__}: {e}".strip()
            log(f"{args.backend} {name}: {entry['error']}")
    # Everything compiled: wait for our turn on the GPU, so no timing overlaps another worker's.
    print("prepared", file=proto, flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    for entry, p, folder in problems:
        name = entry["shape"]["name"]

        def attempt(what, fn):  # a step that fails loses only itself; the row says which
            try:
                return fn()
            except Exception as e:
                text = f"{what}: {type(e).__name__}: {e}".strip()
                entry.setdefault("step_errors", []).append(text)
                log(f"{args.backend} {name}: {text}")
                return None

        log(f"{args.backend} {name}: outputs, memory, kernels")
        stem = os.path.join(args.out, f"{args.backend}-{os.path.basename(folder)}")
        attempt("outputs", lambda: write_tensors(stem, entry["shape"], p.outputs()))
        if os.path.exists(stem + ".json"):
            entry["outputs"] = stem + ".json"
        entry["memory"] = attempt("memory", p.memory)
        entry["kernels"], entry["kernel_times"] = attempt("kernels", p.kernels) or ([], [])
        if own is not None and entry["kernel_times"]:  # conv: the peer's kernels' share of a step
            entry["own_kernels_ms"] = round(sum(
                t["us"] for t in entry["kernel_times"] if own(t["name"])) / 1e3, 4)
        if args.backend == "fla":
            entry["pinned"] = attempt("kernel check", lambda: (
                fla_conv_pinned(entry["kernels"]) if args.op == "conv" else
                fla_pinned(entry["kernels"])))
        if args.backend == "flash_qla":
            entry["pinned"] = attempt("kernel check", lambda: flash_qla_ran(entry["kernels"]))
        entry["times"] = {}
        for mode in args.modes:
            log(f"{args.backend} {name}: timing {mode}")
            t = attempt(f"timing {mode}", lambda: p.time(mode, args.warmup, args.iters))
            if t:
                entry["times"][mode] = t
        p.clear()
        torch.cuda.empty_cache()
    atomic_write(args.result, json.dumps(result))
    return 0


def fla_pinned(kernels):
    """How the run shows that FLA ran its Triton kernels: the names that ran against the Triton
    kernels FLA defines, and that neither tilelang nor flash_qla was imported."""
    fla_triton = triton_kernel_names("fla")
    ran = sorted(k for k in kernels if k in fla_triton)
    imported = [m for m in BLOCKED_FOR_FLA if m in sys.modules]
    ok = bool(ran) and not imported
    return {"verified": ok, "fla_triton_kernels": ran, "other_kernels": len(kernels) - len(ran),
            "imported": imported,
            "text": (f"{len(ran)} FLA Triton kernels ran ({', '.join(ran[:4])}{', ...' if len(ran) > 4 else ''}); "
                     f"tilelang / flash_qla imported: {', '.join(imported) or 'no'}")}


def fla_conv_pinned(kernels):
    """How the run shows that FLA ran its Triton causal_conv1d: its dispatch was off (so FLA's
    @dispatch registered nothing and no Gluon kernel, whose names are the same, could run), the
    Triton kernels of fla.modules.causal_conv1d.ops that ran, and neither tilelang nor flash_qla
    imported."""
    import fla.backends
    fla_triton = triton_kernel_names("fla.modules.causal_conv1d.ops")
    ran = sorted(k for k in kernels if k in fla_triton)
    imported = [m for m in BLOCKED_FOR_FLA if m in sys.modules]
    disabled = bool(fla.backends._DISPATCH_DISABLED) and not fla.backends._function_registries
    ok = bool(ran) and disabled and not imported
    return {"verified": ok, "fla_triton_kernels": ran, "other_kernels": len(kernels) - len(ran),
            "imported": imported,
            "text": (f"{len(ran)} FLA Triton conv kernels ran ({', '.join(ran)}); FLA dispatch "
                     f"{'off' if disabled else 'ON'}; tilelang / flash_qla imported: "
                     f"{', '.join(imported) or 'no'}")}


class Problem:
    """One shape's tensors for one backend, and the measurements gdn-bench makes of ours. fwd()
    returns the outputs, bwd(*outputs) runs the backward from them. Every call of the peer goes
    through fwd_infer() or fwdbwd(), which FIRST_CALLS makes first; peers_warm.py makes them on a
    Problem of its own to fill the compile caches. With ins["cu_seqlens"] (packed sequences, B = 1)
    every call gets those offsets, h0 and dht hold one state per sequence, and so do ht and dh0."""

    # The first calls, which compile and autotune: an inference forward, then a training step.
    FIRST_CALLS = ("fwd", "fwd+bwd")

    def __init__(self, call, ins, scale, l2norm, gate=False):
        import torch
        self.torch = torch
        self.call, self.scale, self.l2norm = call, scale, l2norm
        self.cu_seqlens = ins.get("cu_seqlens")
        self.do, self.dht = ins["do"], ins.get("dht")
        # fla-layer: a and b stand where g and beta do, A_log and dt_bias are leaves too.
        self.names = GATE_INPUT_TENSORS[:-1] if gate else ("q", "k", "v", "g", "beta")
        self.leaves = [ins[n].clone().requires_grad_(True) for n in self.names]
        self.h0 = ins.get("h0")
        if self.h0 is not None:
            self.h0 = self.h0.clone().requires_grad_(True)
            self.leaves.append(self.h0)
        self.base = self.leaves[:5]
        self.gate = tuple(self.leaves[5:7]) if gate else None
        props = torch.cuda.get_device_properties(0)
        self.flush = torch.empty(2 * max(getattr(props, "L2_cache_size", 0), 64 << 20),
                                 dtype=torch.uint8, device="cuda")

    def clear(self):
        for t in self.leaves:
            t.grad = None

    def fwd(self):
        return self.call(*self.base, self.h0, self.scale, self.l2norm, self.cu_seqlens, self.gate)

    def fwd_infer(self):
        with self.torch.no_grad():
            return self.fwd()

    def bwd(self, o, ht):
        outs, grads = [o], [self.do]
        if self.dht is not None:
            outs.append(ht)
            grads.append(self.dht)
        self.torch.autograd.backward(outs, grads, retain_graph=True)

    def fwdbwd(self):
        self.clear()
        self.bwd(*self.fwd())

    def first_call(self, name):
        {"fwd": self.fwd_infer, "fwd+bwd": self.fwdbwd}[name]()
        self.clear()
        self.torch.cuda.synchronize()

    def first_calls(self):
        for name in self.FIRST_CALLS:
            self.first_call(name)

    def outputs(self):
        self.clear()
        o, ht = self.fwd()
        self.bwd(o, ht)
        self.torch.cuda.synchronize()
        names = ["d" + n for n in self.names] + (["dh0"] if self.h0 is not None else [])
        out = [("o", o), ("ht", ht)] + [(n, t.grad) for n, t in zip(names, self.leaves)]
        self.clear()
        return [(n, t) for n, t in out if t is not None]  # a missing one fails gdn-bench's check

    def memory(self):
        """Bytes kept from a training forward for the backward (allocated after it, less the
        outputs), and the peak of a training step above what was allocated before it."""
        torch = self.torch
        self.clear()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        outs = self.fwd()
        torch.cuda.synchronize()
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                    for t in outs if t is not None}  # views (conv: v of y) counted once
        saved = torch.cuda.memory_allocated() - base - sum(storages.values())
        del outs
        self.clear()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        self.fwdbwd()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        self.clear()
        return {"saved_bytes": int(saved), "peak_bytes": int(peak)}

    def kernels(self, steps=KERNEL_PROFILE_STEPS):
        """The GPU work of a training step, from torch.profiler over `steps` steps: the kernel
        names, and per name the launches and GPU microseconds per step, longest first."""
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                self.fwdbwd()
            self.torch.cuda.synchronize()
        self.clear()
        ran = [e for e in prof.key_averages() if (getattr(e, "device_time_total", 0) or 0) > 0]
        times = [{"name": e.key, "calls": e.count / steps, "us": e.device_time_total / steps}
                 for e in ran]
        return sorted(e.key for e in ran), sorted(times, key=lambda t: (-t["us"], t["name"]))

    def time(self, mode, warmup, iters):
        """{"graph": {median, min, max} | None, "graph_error", "eager": {...}} in milliseconds."""
        torch = self.torch
        ctx = {}

        def prep_bwd():  # the backward reads what a training forward just kept
            self.clear()
            ctx["outs"] = self.fwd()

        run, pre = {
            "fwd": (self.fwd_infer, None),
            "fwd-train": (self.fwd, None),
            "bwd": (lambda: self.bwd(*ctx["outs"]), prep_bwd),
            "fwdbwd": (self.fwdbwd, None),
        }[mode]
        out = {"eager": stats(self.eager(run, pre, warmup, iters))}
        # Drop the eager runs' autograd graph first: its AccumulateGrad nodes belong to the
        # default stream, and a capture on another stream must not reuse them.
        ctx.clear()
        self.clear()
        try:
            out["graph"] = stats(self.graph(run, pre, warmup, iters))
        except Exception as e:
            out["graph"] = None
            out["graph_error"] = f"{type(e).__name__}: {e}".strip()
        ctx.clear()
        self.clear()
        torch.cuda.synchronize()
        return out

    def eager(self, run, pre, warmup, iters):
        torch = self.torch
        for _ in range(warmup):
            if pre:
                pre()
            run()
        ev = []
        for _ in range(iters):
            if pre:
                pre()
            self.flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            run()
            e.record()
            ev.append((s, e))
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in ev]

    def graph(self, run, pre, warmup, iters):
        torch = self.torch
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                if pre:
                    pre()
                run()
            if pre:
                pre()  # on the capture stream, so the backward's kernels follow it there
        torch.cuda.current_stream().wait_stream(stream)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            run()
        for _ in range(warmup):
            g.replay()
        ev = []
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            ev.append((s, e))
        torch.cuda.synchronize()
        del g
        return [s.elapsed_time(e) for s, e in ev]


class ConvProblem(Problem):
    """gdn-bench's conv op on one shape's tensors, the conv (with SiLU) by the peer: y = conv(x),
    q, k, v = split(y) with q, k l2-normalised per head (x / sqrt(|x|^2 + 1e-6), fp32), g =
    -exp(A_log) softplus(a + dt_bias) (fp32), beta = sigmoid(b); the backward from dq, dk, dv,
    dg, dbeta to x, weight, (bias), a, b, A_log, dt_bias."""

    def __init__(self, conv, ins, shape, bias):
        import torch
        self.torch = torch
        self.conv = conv
        self.Hk, self.Hv, self.D = shape["Hk"], shape["Hv"], shape["D"]
        self.grads_in = [ins[n] for n in ("dq", "dk", "dv", "dg", "dbeta")]
        self.names = ["x", "weight"] + (["bias"] if bias else []) + ["a", "b", "A_log", "dt_bias"]
        self.leaves = [ins[n].clone().requires_grad_(True) for n in self.names]
        props = torch.cuda.get_device_properties(0)
        self.flush = torch.empty(2 * max(getattr(props, "L2_cache_size", 0), 64 << 20),
                                 dtype=torch.uint8, device="cuda")

    def fwd(self):
        torch = self.torch
        t = dict(zip(self.names, self.leaves))
        y = self.conv(t["x"], t["weight"], t.get("bias"))
        B, T = y.shape[0], y.shape[1]
        kd, vd = self.Hk * self.D, self.Hv * self.D
        q, k, v = y.split([kd, kd, vd], dim=-1)

        def l2norm(h):
            h = h.reshape(B, T, -1, self.D).float()
            return (h * torch.rsqrt(h.square().sum(-1, keepdim=True) + 1e-6)).to(y.dtype)
        g = -t["A_log"].float().exp() * torch.nn.functional.softplus(t["a"].float() + t["dt_bias"])
        return (l2norm(q), l2norm(k), v.reshape(B, T, self.Hv, self.D), g,
                torch.sigmoid(t["b"]))

    def bwd(self, *outs):
        self.torch.autograd.backward(list(outs), self.grads_in, retain_graph=True)

    def outputs(self):
        self.clear()
        outs = self.fwd()
        self.bwd(*outs)
        self.torch.cuda.synchronize()
        out = list(zip(("q", "k", "v", "g", "beta"), outs)) + \
            [("d" + n, t.grad) for n, t in zip(self.names, self.leaves)]
        self.clear()
        return [(n, t) for n, t in out if t is not None]  # a missing one fails gdn-bench's check


def stats(ms):
    ms = sorted(ms)
    n = len(ms)
    med = ms[n // 2] if n % 2 else 0.5 * (ms[n // 2 - 1] + ms[n // 2])
    return {"median": med, "min": ms[0], "max": ms[-1], "n": n}


# ------------------------------------------------------------------------------------------------
# Top level: which backends can run, one worker process each, their GPU turns one at a time.

def run_peers(args):
    """The `gdn` and `conv` subcommands (args.cmd is the op)."""
    op = args.cmd
    manifests = [read_manifest(d, op) for d in args.inputs]
    os.makedirs(args.out, exist_ok=True)
    env_info = {"python": sys.version.split()[0]}
    rows, workers = [], []
    for backend in args.backend:
        reason = missing_reason(op, backend)
        vers = versions(op, backend)
        if reason:
            log(f"{backend}: {reason}")
            rows += [{"backend": backend, "shape": m["shape"], "status": "unavailable",
                      "reason": reason, "versions": vers} for m in manifests]
            continue
        # One process per shape: the first calls (TileLang's compiles, FLA's Triton autotuning)
        # run side by side; the timed runs then take the GPU one process at a time.
        for i, folder in enumerate(args.inputs):
            result = os.path.join(args.out, f"{backend}-{i}.result.json")
            cmd = [sys.executable, os.path.abspath(__file__), "worker", "--backend", backend,
                   "--result", result, "--out", args.out, "--modes", ",".join(args.modes),
                   "--warmup", str(args.warmup), "--iters", str(args.iters), "--inputs", folder,
                   "--op", op]
            workers.append({"backend": backend, "cmd": cmd, "result": result,
                            "versions": vers, "group": [folder]})
    deadline = time.time() + args.prepare_timeout if args.prepare_timeout else None
    start = lambda w: subprocess.Popen(w["cmd"], stdin=subprocess.PIPE,  # noqa
                                       stdout=subprocess.PIPE, text=True)
    for w in workers:
        if w["backend"] != "flash_qla":
            w["proc"] = start(w)
    if any(w["backend"] == "flash_qla" for w in workers):
        # Importing TileLang's runtime (tvm-ffi) the first time JIT-compiles its torch DLPack
        # addon into its cache when torch-c-dlpack-ext has none prebuilt for this torch (minutes
        # of C++, which TileLang's kernels need): once, here, not racing in every worker.
        w0 = next(w for w in workers if w["backend"] == "flash_qla")
        log("flash_qla: importing once first (tvm-ffi may build its torch addon)")
        with Heartbeat("flash_qla: importing once first"):
            try:
                imp = subprocess.run(w0["cmd"][:2] + ["worker", "--backend", "flash_qla",
                                                      "--import-only"] + w0["cmd"][5:],
                                     stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     timeout=None if deadline is None else
                                     max(1.0, deadline - time.time()))
                log(f"flash_qla: import done (exit code {imp.returncode})")
            except subprocess.TimeoutExpired:
                log("flash_qla: import still running at --prepare-timeout")
        for w in workers:
            if w["backend"] == "flash_qla":
                w["proc"] = start(w)
    # All workers compile at once; then each gets the GPU to itself in turn. One that is not
    # ready by --prepare-timeout is stopped, and its rows say so.
    def wait_prepared(w):
        for line in w["proc"].stdout:
            if line.strip() == "prepared":
                w["ready"].set()
                return
    for w in workers:
        w["ready"] = threading.Event()
        threading.Thread(target=wait_prepared, args=(w,), daemon=True).start()
    for w in workers:
        w["prepared"] = w["ready"].wait(None if deadline is None else
                                        max(0.0, deadline - time.time()))
        if not w["prepared"] and w["proc"].poll() is None:
            w["proc"].kill()
            w["late"] = (f"not ready after --prepare-timeout {args.prepare_timeout} s (still "
                         "importing, compiling or autotuning); stopped, not timed")
            log(f"{w['backend']}: {w['late']}")
    for w in workers:
        try:  # a worker that already exited (its result says why) must not end the driver
            if w["prepared"]:
                w["proc"].stdin.write("go\n")
                w["proc"].stdin.flush()
            w["proc"].stdin.close()
        except OSError:
            pass
        w["proc"].wait()
        rows += worker_rows(w, manifests, args.inputs)
    order = {b: i for i, b in enumerate(args.backend)}
    names = [m["shape"]["name"] for m in manifests]
    rows.sort(key=lambda r: (order[r["backend"]], names.index(r["shape"]["name"])))
    doc = {"schema": SCHEMA, "op": op, "env": env_info, "modes": list(args.modes),
           "warmup": args.warmup, "iters": args.iters, "rows": rows}
    atomic_write(os.path.join(args.out, "peers.json"), json.dumps(doc, indent=1) + "\n")
    return 0


def worker_rows(w, manifests, inputs):
    by_folder = {d: m for d, m in zip(inputs, manifests)}
    try:
        with open(w["result"]) as f:
            res = json.load(f)
    except (OSError, ValueError):
        res = {"error": w.get("late") or f"worker exited with code {w['proc'].returncode} before "
                                          "writing results (its stderr is above)"}
    rows = []
    shapes = {e["input"]: e for e in res.get("shapes", [])}
    for folder in w["group"]:
        row = {"backend": w["backend"], "shape": by_folder[folder]["shape"],
               "versions": w["versions"]}
        e = shapes.get(folder, {})
        err = res.get("error") or e.get("error")
        if res.get("unavailable"):
            row.update(status="unavailable", reason=res["unavailable"])
        elif err:
            row.update(status="error", reason=err)
        else:
            runs = res.get("runs", "")
            if e.get("step_errors"):
                runs += "; failed steps: " + " | ".join(e["step_errors"])
            row.update(status="ok", runs=runs)
            for key in ("first_call_s", "outputs", "memory", "kernels", "kernel_times", "pinned",
                        "times", "own_kernels_ms"):
                if e.get(key) is not None:
                    row[key] = e[key]
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------
# The plot of gdn-bench's JSON: bars per backend and shape for fwd and fwdbwd (graph medians), or
# with several sequence lengths per shape, time against sequence length.

def plot(args):
    try:
        with open(args.json) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --json {args.json}: {e}")
    if not args.out.endswith((".png", ".svg")):
        raise SystemExit(f"error: --out {args.out}: the plot is a .png or .svg file")
    if importlib.util.find_spec("matplotlib") is None:
        raise SystemExit("error: the plot needs matplotlib: not installed: pip install matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    # `reference` is the fp32 oracle, a hundred times slower: not a candidate, left out.
    rows = [r for r in doc.get("backends", []) if r.get("status") == "ok" and
            r.get("backend") != "reference"]
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    lens = {s: sorted({r["T"] for r in rows if r["shape"] == s}) for s in shapes}
    modes = ["fwd", "fwdbwd"]
    label = {"fwd": "fwd (inference)", "fwdbwd": "fwd+bwd (training step)"}

    def ms(r, mode):
        t = r.get("times", {}).get(mode, {}).get("graph_ms")
        return t["median"] if t else None

    what = "Short convolution" if doc.get("op") == "conv" else "GatedDeltaNet"
    title = f"{what}, {doc.get('device', '?')}, CUDA-graph medians ({doc.get('date', '')})"
    if any(len(v) > 1 for v in lens.values()):
        fig, axes = plt.subplots(len(shapes), len(modes), figsize=(11, 4 * len(shapes)),
                                 squeeze=False)
        for i, s in enumerate(shapes):
            for j, mode in enumerate(modes):
                ax = axes[i][j]
                for b in backends:
                    pts = sorted((r["T"], ms(r, mode)) for r in rows
                                 if r["backend"] == b and r["shape"] == s and ms(r, mode))
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=b)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xticks(lens[s])
                ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
                ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
                ax.yaxis.set_minor_formatter(ticker.NullFormatter())
                ax.set_xlabel("sequence length T")
                ax.set_ylabel("ms (lower is better)")
                ax.set_title(f"{s}: {label[mode]}")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend()
    else:
        fig, axes = plt.subplots(1, len(modes), figsize=(6 * len(modes), 4.5), squeeze=False)
        width = 0.8 / max(1, len(backends))
        for j, mode in enumerate(modes):
            ax = axes[0][j]
            for k, b in enumerate(backends):
                xs, ys = [], []
                for i, s in enumerate(shapes):
                    v = [ms(r, mode) for r in rows if r["backend"] == b and r["shape"] == s]
                    if v and v[0]:
                        xs.append(i + (k - (len(backends) - 1) / 2) * width)
                        ys.append(v[0])
                bars = ax.bar(xs, ys, width, label=b)
                ax.bar_label(bars, fmt="%.2f", fontsize=7)
            ax.set_xticks(range(len(shapes)))
            ax.set_xticklabels(shapes)
            ax.set_ylabel("ms (lower is better)")
            ax.set_title(label[mode])
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    tmp = args.out + ".tmp" + os.path.splitext(args.out)[1]
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, args.out)
    log(f"plot written to {args.out}")
    return 0


# ------------------------------------------------------------------------------------------------

def csv_choice(allowed, what):
    def parse(text):
        items = [x for x in text.split(",") if x]
        if "all" in items:
            return list(allowed)
        for x in items:
            if x not in allowed:
                raise argparse.ArgumentTypeError(
                    f"unknown {what} '{x}' (one of {', '.join(allowed)} or all)")
        if not items:
            raise argparse.ArgumentTypeError(f"needs at least one {what}")
        return list(dict.fromkeys(items))
    return parse


def positive(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return v


def non_negative(text):
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a non-negative integer")
    return v


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv=None):
    ap = Parser(prog="gdn_peers.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    helps = {"gdn": "time the GatedDeltaNet peer backends on gdn-bench's inputs",
             "conv": "time the short convolution's peer backends on gdn-bench --op conv's inputs",
             "worker": argparse.SUPPRESS}
    for name in ("gdn", "conv", "worker"):
        p = sub.add_parser(name, help=helps[name])
        p.add_argument("--inputs", action="append", required=True,
                       help="a folder with inputs.json / inputs.bin (repeatable: one per shape)")
        p.add_argument("--out", required=True, help="folder for peers.json and the outputs")
        modes = MODES.get(name, MODES["gdn"])
        p.add_argument("--modes", type=csv_choice(modes, "mode"), default=list(modes))
        p.add_argument("--warmup", type=non_negative, default=3)
        p.add_argument("--iters", type=positive, default=20)
        if name != "worker":
            p.add_argument("--backend", type=csv_choice(BACKENDS[name], "backend"),
                           default=list(BACKENDS[name]))
            p.add_argument("--prepare-timeout", type=non_negative, default=0,
                           help="seconds the first calls may take, 0 for no limit")
        else:
            p.add_argument("--op", choices=tuple(BACKENDS), default="gdn")
            p.add_argument("--backend", choices=sorted({b for v in BACKENDS.values() for b in v}),
                           required=True)
            p.add_argument("--result")
            p.add_argument("--import-only", action="store_true")
    p = sub.add_parser("plot", help="plot gdn-bench's --json file")
    p.add_argument("--json", required=True)
    p.add_argument("--out", required=True, help="FILE.png or FILE.svg")
    args = ap.parse_args(argv)
    try:
        return {"gdn": run_peers, "conv": run_peers, "worker": worker, "plot": plot}[args.cmd](args)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
