#!/usr/bin/env python3
"""Megatron-Core's own GatedDeltaNet on one GPU (torch.distributed world 1, TP = CP = 1, a layer
spec without Transformer Engine: ColumnParallelLinear, torch RMSNorm, RowParallelLinear), three
ways on the same weights:

  stock     the layer as Megatron-Core builds it, FLA's chunk_gated_delta_rule (FlashQLA on
            Hopper when flash_qla is installed and FLA_FLASH_QLA is not 0)
  enable    qwen_gdn.enable(): the same layer, our kernels behind FLA's function
  megatron  qwen_gdn.megatron.enable(): the layer's forward patched (grouped q/k, L2 norm in the
            kernel, packed offsets as cu_seqlens)

numerics  forward + backward, dense (B = 2, sbhd) and packed (PackedSeqParams THD, uneven
          lengths), against the layer in fp32 with an fp32 token-by-token recurrence: the output,
          the input's gradient and every parameter's gradient of each variant, within
          twice the stock layer's error (at least 5e-3, at most 2e-2)
timing    the layer step (forward + backward) at qwen35_35b (B4 T4096, hidden 2048, Hk16 Hv32)
          and qwen35_397b (B1 T4096, hidden 4096, Hk16 Hv64), dense and packed (the same tokens
          as uneven sequences), eager (steps back to back) and CUDA-graphed, medians; the peak
          memory of an eager step

usage: python3 -m pytest python/qwen_gdn -k megatron_gpu        (numerics; skips without a GPU,
                                                                 Megatron-Core or FLA)
       python3 test_megatron_gpu.py OUT_DIR [--sections numerics,timing] [--deadline SECONDS]
       python3 test_megatron_gpu.py --warm SHAPE   (one stock step, to fill the compile caches)
The script writes OUT_DIR/megatron_gpu.json and prints a table; exit 1 if a check failed.
"""

import argparse
import json
import os
import statistics
import sys
import time
import traceback
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import qwen_gdn  # noqa: E402
from qwen_gdn import megatron as qwen_megatron  # noqa: E402

DEV = "cuda"
VARIANTS = ("stock", "enable", "megatron")
SHAPES = {"qwen35_35b": dict(hidden=2048, Hk=16, Hv=32, B=4, T=4096),
          "qwen35_397b": dict(hidden=4096, Hk=16, Hv=64, B=1, T=4096)}
RESULTS = {}
ROWS = []  # (section, check, value, limit, ok)
START = time.time()
OUT = []  # the script's output folder, once known


def save():
    """Writes what is known so far (a run stopped at its time limit keeps it)."""
    if OUT:
        with open(os.path.join(OUT[0], "megatron_gpu.json"), "w") as f:
            json.dump(dict(RESULTS, rows=ROWS), f, indent=1, default=str)


def _why_not():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
        return "needs a GPU of sm_90 or newer"
    for name in ("megatron.core", "fla"):
        try:
            __import__(name)
        except Exception as e:  # noqa: BLE001 (any import failure means: not here)
            return f"{name} is not importable ({e})"
    try:
        qwen_gdn.library_path()
    except (OSError, RuntimeError) as e:
        return str(e)
    return None


def record(section, check, value, limit, ok=None):
    ok = (value <= limit) if ok is None else ok
    ROWS.append((section, check, value, limit, bool(ok)))
    return ok


def rel(a, b):
    a, b = a.detach().float(), b.detach().float()
    return (a - b).norm().item() / max(b.norm().item(), 1e-30)


def init_distributed():
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    if not torch.distributed.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(20000 + os.getpid() % 20000))
        torch.cuda.set_device(0)
        torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(1234)


def build(hidden, Hk, Hv, dtype=torch.bfloat16, seed=0):
    """Megatron-Core's GatedDeltaNet with local (non-TE) linear layers and torch's RMSNorm."""
    from megatron.core.process_groups_config import ProcessGroupCollection
    from megatron.core.ssm.gated_delta_net import GatedDeltaNet, GatedDeltaNetSubmodules
    from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer import TransformerConfig
    from megatron.core.transformer.torch_norm import WrappedTorchNorm
    torch.manual_seed(seed)
    model_parallel_cuda_manual_seed(seed)
    config = TransformerConfig(
        num_layers=1, hidden_size=hidden, num_attention_heads=16, linear_key_head_dim=128,
        linear_value_head_dim=128, linear_num_key_heads=Hk, linear_num_value_heads=Hv,
        linear_conv_kernel_dim=4, normalization="RMSNorm", layernorm_epsilon=1e-6,
        bf16=dtype == torch.bfloat16, params_dtype=dtype, activation_func=F.silu,
        add_bias_linear=False)
    submodules = GatedDeltaNetSubmodules(in_proj=ColumnParallelLinear, out_norm=WrappedTorchNorm,
                                         out_proj=RowParallelLinear)
    layer = GatedDeltaNet(config, submodules, layer_number=1,
                          pg_collection=ProcessGroupCollection.use_mpu_process_groups())
    return layer.to(DEV)


def packed_params(lengths):
    from megatron.core.packed_seq_params import PackedSeqParams
    cu = torch.tensor([0] + list(lengths), dtype=torch.int32).cumsum(0).to(torch.int32).to(DEV)
    return PackedSeqParams(qkv_format="thd", cu_seqlens_q=cu, cu_seqlens_kv=cu,
                           max_seqlen_q=max(lengths), max_seqlen_kv=max(lengths))


def uneven(total):
    """Uneven sequence lengths summing to `total`: a long one, a 1-token one, odd sizes."""
    a, b = int(total * 0.41), int(total * 0.23) + 7
    return [a, 1, b, 63, total - a - 1 - b - 63]


def recurrence_op(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                  use_qk_l2norm_in_kernel=False, cu_seqlens=None, **_):
    """FLA's chunk_gated_delta_rule in fp32, token by token (the reference)."""
    def one(q, k, v, g, beta):
        q, k, v, g, beta = (x.float() for x in (q, k, v, g, beta))
        if use_qk_l2norm_in_kernel:
            q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6)
            k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        B, T, Hk, K = q.shape
        Hv = v.shape[2]
        q = q.repeat_interleave(Hv // Hk, dim=2) * (scale or K ** -0.5)
        k = k.repeat_interleave(Hv // Hk, dim=2)
        S = q.new_zeros(B, Hv, K, v.shape[3])
        outs = []
        for t in range(T):
            S = S * g[:, t].exp()[..., None, None]
            delta = (v[:, t] - torch.einsum("bhk,bhkv->bhv", k[:, t], S)) * beta[:, t, :, None]
            S = S + k[:, t, :, :, None] * delta[:, :, None, :]
            outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
        return torch.stack(outs, 1)
    if cu_seqlens is None:
        return one(q, k, v, g, beta).to(v.dtype), None
    bounds = cu_seqlens.tolist()
    parts = [one(*(x[:, s:e] for x in (q, k, v, g, beta))) for s, e in zip(bounds, bounds[1:])]
    return torch.cat(parts, 1).to(v.dtype), None


def use(layer, variant, fla_op):
    """Points the layer at one variant (the drop-in needs the patched function on the instance:
    the layer binds FLA's function when it is built)."""
    qwen_megatron.disable()
    qwen_gdn.disable()
    layer.gated_delta_rule = fla_op
    if variant == "enable":
        qwen_gdn.enable()
        import megatron.core.ssm.gated_delta_net.common as common
        layer.gated_delta_rule = common.chunk_gated_delta_rule
        assert getattr(layer.gated_delta_rule, "qwen_gdn_original", None) is fla_op
    elif variant == "megatron":
        assert qwen_megatron.enable(), "qwen_gdn.megatron refused this Megatron-Core"


def grads(layer, x, dout, packed):
    for p in layer.parameters():
        p.grad = None
    x = x.detach().clone().requires_grad_(True)
    out, _ = layer(x, None, packed_seq_params=packed)
    out.backward(dout)
    torch.cuda.synchronize()
    return {"out": out.detach(), "dx": x.grad,
            **{f"d{name}": p.grad for name, p in layer.named_parameters()}}


def lift_fla_hopper_guard():
    """FLA refuses its Triton chunk backward on Hopper with Triton < 3.7.1 (FLA #640), the only
    Triton on the GPU machine; the fp32 comparison says whether its gradients come out right."""
    import fla.ops.common.chunk_o as chunk_o
    if hasattr(chunk_o, "TRITON_ABOVE_3_7_1"):
        RESULTS.setdefault("env", {})["fla_triton_guard_lifted"] = not chunk_o.TRITON_ABOVE_3_7_1
        chunk_o.TRITON_ABOVE_3_7_1 = True


def numerics(hidden=512, Hk=2, Hv=4, T=300, B=2):
    """Every variant against the fp32 layer; returns ok. FLA's autotuners pinned as in
    test_gpu.py (configs do not change what is computed, only how fast)."""
    from test_gpu import setup_fla
    setup_fla()
    lift_fla_hopper_guard()
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla
    fla = getattr(fla, "qwen_gdn_original", fla)
    ok = True
    layer = build(hidden, Hk, Hv)
    ref = build(hidden, Hk, Hv, dtype=torch.float32)
    ref.load_state_dict({k: (v.float() if torch.is_tensor(v) and v.is_floating_point() else v)
                         for k, v in layer.state_dict().items()})
    ref.gated_delta_rule = recurrence_op
    gen = torch.Generator(device=DEV).manual_seed(5)
    for mode, shape, packed in (
            ("dense", (T, B, hidden), None),
            ("packed", (B * T, 1, hidden), packed_params(uneven(B * T)))):
        x = torch.randn(*shape, device=DEV, generator=gen).bfloat16()
        dout = torch.randn(*shape, device=DEV, generator=gen).bfloat16()
        want = grads(ref, x.float(), dout.float(), packed)
        got = {}
        for variant in VARIANTS:
            use(layer, variant, fla)
            got[variant] = grads(layer, x, dout, packed)
        use(layer, "stock", fla)
        table = RESULTS.setdefault("numerics", {}).setdefault(mode, {})
        for name in want:
            errors = {v: rel(got[v][name], want[name]) for v in VARIANTS}
            # FLA's own error against fp32, doubled, at least 5e-3 and at most 2e-2 (a broken
            # stock figure does not loosen the bar past that).
            limit = min(max(2 * errors["stock"], 5e-3), 2e-2)
            table[name] = dict(errors, limit=limit)
            for variant in ("enable", "megatron"):
                ok &= record("numerics", f"{mode} {name} {variant} (stock {errors['stock']:.1e})",
                             errors[variant], limit)
    return ok


def step_fn(layer, x, dout, packed):
    def step():
        out, _ = layer(x, None, packed_seq_params=packed)
        out.backward(dout)
    return step


def time_steps(fn, warmup=3, windows=5, steps=5):
    """Median over windows of `steps` back-to-back calls (the host may run ahead), ms per call."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(windows):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(steps):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / steps)
    return statistics.median(times)


def peak_mb(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 1e6


def graphed(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def timing(shapes=tuple(SHAPES), modes=("dense", "packed")):
    lift_fla_hopper_guard()  # in case FlashQLA is missing and FLA falls back to Triton
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla
    fla = getattr(fla, "qwen_gdn_original", fla)
    ok = True
    for shape in shapes:
        s = SHAPES[shape]
        layer = build(s["hidden"], s["Hk"], s["Hv"])
        for mode in modes:
            if mode == "dense":
                x_shape, packed = (s["T"], s["B"], s["hidden"]), None
            else:
                x_shape = (s["B"] * s["T"], 1, s["hidden"])
                packed = packed_params(uneven(s["B"] * s["T"]))
            x = torch.randn(*x_shape, device=DEV).bfloat16().requires_grad_(True)
            dout = torch.randn(*x_shape, device=DEV).bfloat16()
            row = RESULTS.setdefault("timing", {}).setdefault(f"{shape} {mode}", {})
            for variant in VARIANTS:
                use(layer, variant, fla)
                fn = step_fn(layer, x, dout, packed)
                cell = row.setdefault(variant, {})
                try:
                    cell["eager_ms"] = time_steps(fn)
                    cell["peak_mb"] = peak_mb(fn)
                except Exception:  # noqa: BLE001 (recorded; the other cells still run)
                    cell["eager_error"] = traceback.format_exc(limit=3)
                if packed is not None and variant != "megatron":
                    # The stock forward reads cu_seqlens[-1] on the host (_resolve_cu_seqlens)
                    # and FLA's varlen kernels size their grids from the offsets: no capture.
                    cell["graph"] = "not capturable (host reads of cu_seqlens)"
                else:
                    try:
                        cell["graph_ms"] = time_steps(graphed(fn))
                    except Exception:  # noqa: BLE001
                        cell["graph_error"] = traceback.format_exc(limit=3)
                print(f"[{time.time() - START:6.1f}s] {shape} {mode} {variant}: {cell}",
                      flush=True)
                save()
            use(layer, "stock", fla)
            stock = row["stock"]
            for variant in ("enable", "megatron"):
                for kind in ("eager_ms", "graph_ms"):
                    if kind in row[variant] and kind in stock:
                        row[variant][kind.replace("_ms", "_ratio")] = (
                            row[variant][kind] / stock[kind])
            for kind in ("eager", "graph"):
                ratio = row["megatron"].get(f"{kind}_ratio")
                if ratio is not None:
                    ok &= record("timing", f"{shape} {mode} {kind}: integration / stock", ratio,
                                 0.85)
            if "peak_mb" in row["megatron"] and "peak_mb" in stock:
                ok &= record("timing", f"{shape} {mode} peak MB: integration / stock",
                             row["megatron"]["peak_mb"] / stock["peak_mb"], 1.0)
        del layer
        torch.cuda.empty_cache()
    return ok


def warm(shape_mode):
    """One stock step at a recipe shape: FlashQLA's and FLA's compile caches for the timing run."""
    shape, mode = shape_mode.split(":")
    s = SHAPES[shape]
    init_distributed()
    layer = build(s["hidden"], s["Hk"], s["Hv"])
    if mode == "dense":
        x_shape, packed = (s["T"], s["B"], s["hidden"]), None
    else:
        x_shape, packed = (s["B"] * s["T"], 1, s["hidden"]), packed_params(uneven(s["B"] * s["T"]))
    x = torch.randn(*x_shape, device=DEV).bfloat16().requires_grad_(True)
    lift_fla_hopper_guard()
    t0 = time.time()
    step_fn(layer, x, torch.randn_like(x), packed)()
    torch.cuda.synchronize()
    print(f"warm {shape_mode}: {time.time() - t0:.1f} s", flush=True)


def environment():
    import fla
    import megatron.core
    env = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "fla": fla.__version__, "qwen_gdn": qwen_gdn.__version__,
           "library": qwen_gdn.library_path(),
           "megatron_core": getattr(megatron.core, "__version__", "?"),
           "megatron_path": os.path.dirname(megatron.core.__file__),
           "FLA_FLASH_QLA": os.environ.get("FLA_FLASH_QLA", "(unset)")}
    try:
        import flash_qla
        env["flash_qla"] = getattr(flash_qla, "__version__", "importable")
    except Exception as e:  # noqa: BLE001
        env["flash_qla"] = f"not importable: {e}"
    return env


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_numerics_against_the_stock_layer():
    init_distributed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = numerics()
    bad = [row for row in ROWS if row[0] == "numerics" and not row[4]]
    assert ok and not bad, bad


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out", nargs="?")
    p.add_argument("--sections", default="numerics,timing")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--deadline", type=float, default=1e9, help="seconds; later sections skipped")
    p.add_argument("--warm", help="SHAPE:dense|packed: one stock step, nothing else")
    a = p.parse_args()
    if a.warm:
        warm(a.warm)
        return 0
    os.makedirs(a.out, exist_ok=True)
    OUT.append(a.out)
    init_distributed()
    RESULTS["env"] = environment()
    print(RESULTS["env"], flush=True)
    failed = []
    for name in a.sections.split(","):
        if time.time() - START > a.deadline:
            RESULTS.setdefault("skipped", []).append(name)
            continue
        try:
            ok = numerics() if name == "numerics" else timing(tuple(a.shapes.split(",")))
        except Exception:  # noqa: BLE001 (reported; the next section still runs)
            ok = False
            RESULTS.setdefault("errors", {})[name] = traceback.format_exc()
            print(RESULTS["errors"][name], flush=True)
        if not ok:
            failed.append(name)
        print(f"[{time.time() - START:6.1f}s] {name}: {'ok' if ok else 'FAILED'}", flush=True)
        save()
    for section, check, value, limit, ok in ROWS:
        print(f"{section:9} {'ok ' if ok else 'BAD'} {value:10.3e} <= {limit:.1e}  {check}")
    print("failed:", failed, "skipped:", RESULTS.get("skipped", []))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
