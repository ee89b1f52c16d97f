#!/usr/bin/env python3
"""CI test that kernels/bench/peers/peers_warm.py (the peers' compile-cache filler) makes exactly
the calls of FlashQLA and FLA that gdn-bench's peers driver (gdn_peers.py) makes, with no GPU and
no PyTorch: stand-ins for torch, flash_qla, fla and tilelang on PYTHONPATH record every call of
chunk_gated_delta_rule (each tensor's dtype, shape and requires_grad, the scale to the last bit,
initial_state, output_final_state, cu_seqlens, grad mode, and for FLA the pinning it saw) and
every backward (the gradients given for o and ht). The peers compile all of that into their
kernels (FlashQLA also decides its intra-card context parallelism from it), so a call the warm
does not make is a kernel the driver compiles in its timed run.

The driver runs every mode (fwd, fwd-train, bwd, fwdbwd, the memory measure, the outputs, CUDA
graph capture) on inputs.json files as gdn-bench writes them, dense and packed (gdn-bench
--varlen: the offsets cu_seqlens and one state per sequence); the warm runs at the same shapes,
dense and with the same packed sequences (--varlen), and must make the driver's calls of each.
The driver's packed calls must be its dense calls at B = 1 with the offsets (their values) and
one state per sequence. Run by CTest: peers_warm_calls_test.py PEERS_SCRIPT_DIR WORKDIR."""
import json
import os
import shutil
import subprocess
import sys

from gdn_inputs_fixture import write_inputs

SCRIPTS, WORK = sys.argv[1], sys.argv[2]
FAILURES = []
# The scale gdn-bench writes into inputs.json at D = 128 (gdn_bench.cu, write_inputs: float32
# 128^-0.5 printed with %.9g); FlashQLA's kernels of 2026-12-01's driver runs carry this value.
GDN_BENCH_SCALE_D128 = 0.0883883461

TORCH = '''"""Stand-in for torch: tensors are shapes and dtypes; the grad mode is tracked."""
import contextlib, json, os, struct


class dtype:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __repr__(self):
        return "torch." + self.name


bfloat16, float32, uint8, int32 = (dtype("bfloat16", 2), dtype("float32", 4), dtype("uint8", 1),
                                   dtype("int32", 4))
_GRAD = [True]


class _Storage:
    def __init__(self, t):
        self.t = t

    def data_ptr(self):
        return id(self.t)

    def nbytes(self):
        return 0


class Tensor:
    def __init__(self, shape, dt, values=None):
        self.shape, self.dtype, self.values = tuple(shape), dt, values
        self.requires_grad, self.grad, self.producer = False, None, None

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def clone(self):
        return Tensor(self.shape, self.dtype, self.values)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def to(self, x):
        return Tensor(self.shape, x, self.values) if isinstance(x, dtype) else self

    def view(self, dt):
        n = self.numel() * self.dtype.itemsize // dt.itemsize
        # The offsets' values are part of a peer's call (FlashQLA decides its kernels from them).
        values = (list(struct.unpack(f"<{n}i", self.values))
                  if dt is int32 and isinstance(self.values, bytes) else None)
        return Tensor((n,), dt, values)

    def reshape(self, shape):
        return Tensor(shape, self.dtype, self.values)

    def contiguous(self):
        return self

    def detach(self):
        return self

    def zero_(self):
        return self

    def float(self):
        return self.to(float32)

    def __mul__(self, other):
        return self

    def untyped_storage(self):
        return _Storage(self)


def device(name):
    return name


def frombuffer(raw, dtype):
    return Tensor((len(raw),), dtype, bytes(raw))


def randn(*dims, generator=None, device=None):
    return Tensor(dims, float32)


def empty(*dims, dtype=float32, device=None):
    return Tensor(dims, dtype)


def tensor(values, dtype, device=None):
    return Tensor((len(values),), dtype, list(values))


def sigmoid(x):
    return Tensor(x.shape, x.dtype)


class nn:
    class functional:
        logsigmoid = staticmethod(sigmoid)


class Generator:
    def __init__(self, device=None):
        pass

    def manual_seed(self, seed):
        return self


def is_grad_enabled():
    return _GRAD[0]


@contextlib.contextmanager
def no_grad():
    before, _GRAD[0] = _GRAD[0], False
    try:
        yield
    finally:
        _GRAD[0] = before


class autograd:
    @staticmethod
    def backward(tensors, grad_tensors, retain_graph=False):
        """Records the backward of the call that made the outputs, and the gradients given."""
        calls = {t.producer[0] for t in tensors}
        assert len(calls) == 1, "one call's outputs per backward"
        grads = sorted([t.producer[1], repr(g.dtype), list(g.shape)]
                       for t, g in zip(tensors, grad_tensors))
        with open(os.environ["PEER_RECORD"], "a") as f:
            f.write(json.dumps({"backward": calls.pop(), "grads": grads}) + "\\n")


class _Event:
    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def elapsed_time(self, end):
        return 1.0


class _Stream:
    def wait_stream(self, other):
        pass


class _Props:
    L2_cache_size = 50 << 20


class cuda:
    Event = _Event
    Stream = _Stream

    class CUDAGraph:
        def replay(self):
            pass

    @staticmethod
    def get_device_capability():
        return (9, 0)

    @staticmethod
    def get_device_properties(index=0):
        return _Props()

    @staticmethod
    def current_stream():
        return _Stream()

    @staticmethod
    @contextlib.contextmanager
    def stream(s):
        yield

    @staticmethod
    @contextlib.contextmanager
    def graph(g, stream=None):
        yield

    synchronize = empty_cache = reset_peak_memory_stats = staticmethod(lambda: None)
    memory_allocated = max_memory_allocated = staticmethod(lambda: 0)
'''

# The peers' entry points: record the call, return o [B, T, Hv, D] and ht [N, Hv, D, D] made by it.
RECORD = '''import json, os
import torch


def describe(x):
    if isinstance(x, torch.Tensor):
        return {"dtype": repr(x.dtype), "shape": list(x.shape), "requires_grad": x.requires_grad,
                "values": x.values}
    return x


def call(peer, args, kwargs, seen=None):
    rec = {"peer": peer, "grad_enabled": torch.is_grad_enabled(),
           "args": [describe(a) for a in args],
           "kwargs": {k: describe(v) for k, v in sorted(kwargs.items())}, "seen": seen}
    key = json.dumps(rec, sort_keys=True)
    with open(os.environ["PEER_RECORD"], "a") as f:
        f.write(json.dumps({"call": key}) + "\\n")
    q, v, h0, cu = args[0], args[2], kwargs.get("initial_state"), kwargs.get("cu_seqlens")
    n = q.shape[0] if cu is None else cu.shape[0] - 1
    o = torch.Tensor(v.shape, q.dtype)
    ht = torch.Tensor((n, v.shape[2], v.shape[3], v.shape[3]), torch.float32)
    o.producer, ht.producer = (key, 0), (key, 1)
    return o, ht
'''

FLASH_QLA = '''import peer_record


def chunk_gated_delta_rule(*args, **kwargs):
    return peer_record.call("flash_qla", args, kwargs)
'''

# FLA's dispatch, as FLA 0.6 makes it: to FlashQLA when it is importable, FLA_FLASH_QLA is not 0
# and FlashQLA's verifier takes the call (the flags it refuses: the gate and beta's sigmoid in
# the kernel), else FLA's own kernels.
FLA_QLA_BACKEND = '''class FlashQLABackend:
    def chunk_gated_delta_rule_verifier(self, q, k, v, g, beta, **kwargs):
        if kwargs.get("use_gate_in_kernel"):
            return False, "FlashQLA does not support use_gate_in_kernel"
        if kwargs.get("use_beta_sigmoid_in_kernel"):
            return False, "FlashQLA does not support use_beta_sigmoid_in_kernel"
        return True, None
'''

FLA_GDN = '''import os
import peer_record
import fla.ops.common.chunk_o as chunk_o
from fla.ops.gated_delta_rule.backends.flash_qla import FlashQLABackend


def chunk_gated_delta_rule(*args, **kwargs):
    if os.environ.get("FLA_FLASH_QLA") != "0" and \\
            FlashQLABackend().chunk_gated_delta_rule_verifier(*args, **kwargs)[0]:
        try:
            import flash_qla
            return flash_qla.chunk_gated_delta_rule(*args, **kwargs)
        except ModuleNotFoundError:
            pass
    try:
        import tilelang  # noqa: F401
        tilelang_seen = "importable"
    except ModuleNotFoundError:
        tilelang_seen = "refused"
    seen = {"FLA_FLASH_QLA": os.environ.get("FLA_FLASH_QLA"), "tilelang": tilelang_seen,
            "TRITON_ABOVE_3_7_1": chunk_o.TRITON_ABOVE_3_7_1}
    return peer_record.call("fla", args, kwargs, seen)
'''


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def stand_ins(root):
    files = {"torch/__init__.py": TORCH, "peer_record.py": RECORD,
             "flash_qla/__init__.py": FLASH_QLA, "tilelang/__init__.py": "",
             "fla/__init__.py": "", "fla/ops/__init__.py": "", "fla/ops/common/__init__.py": "",
             "fla/ops/common/chunk_o.py": "TRITON_ABOVE_3_7_1 = False  # as with Triton 3.6\n",
             "fla/ops/gated_delta_rule/__init__.py": FLA_GDN,
             "fla/ops/gated_delta_rule/backends/__init__.py": "",
             "fla/ops/gated_delta_rule/backends/flash_qla.py": FLA_QLA_BACKEND}
    for name, text in files.items():
        write(os.path.join(root, name), text)


def recorded(path, env, argv):
    """Runs argv with the stand-ins; returns, per peer, the distinct records {line: the call it
    is (a backward: the call it runs the backward of)} and the calls in order; and the process."""
    if os.path.exists(path):
        os.remove(path)
    p = subprocess.run([sys.executable] + argv, capture_output=True, text=True,
                       env=dict(env, PEER_RECORD=path), timeout=120)
    out = {}
    for line in open(path) if os.path.exists(path) else []:
        rec = json.loads(line)
        call = json.loads(rec.get("call") or rec["backward"])
        records, order = out.setdefault(call["peer"], ({}, []))
        records[line.strip()] = call
        if "call" in rec:
            order.append(call)
    return out, p


def packed(call, offsets):
    """A dense call at B = 1 turned into the call with these packed sequences."""
    call = json.loads(json.dumps(call))
    call["kwargs"]["cu_seqlens"] = {"dtype": "torch.int32", "shape": [len(offsets)],
                                    "requires_grad": False, "values": offsets}
    h0 = call["kwargs"].get("initial_state")
    if h0:
        h0["shape"][0] = len(offsets) - 1
    return call


def check_contracts(env, driver):
    """Every backend makes the contract's call: at mcore FLA's dispatch hands the normalised,
    repeated q and k to FlashQLA without the norm in the kernel (and peers_warm.py --no-l2norm
    makes those first calls); at fla-layer FLA gets the gate's
    inputs with the gate and the sigmoid in the kernel, and flash_qla's row says, with FLA's own
    reason, that the dispatch does not send that call to FlashQLA. (The stand-ins cannot write
    outputs; gdn-bench's check wants da, db, dA_log and ddt_bias back at fla-layer.)"""
    for contract, backend in (("mcore", "flash_qla"), ("fla-layer", "fla"),
                              ("fla-layer", "flash_qla")):
        what = f"{backend} at {contract}"
        folder = os.path.join(WORK, f"contract-{contract}-{backend}")
        write_inputs(folder, B=1, T=64, Hk=2 if contract == "mcore" else 1, Hv=2, D=128,
                     contract=contract)
        d, p = recorded(os.path.join(WORK, "driver.jsonl"), env, [
            driver, "gdn", "--inputs", folder, "--out", folder + "-out", "--backend", backend,
            "--modes", "fwd,fwdbwd", "--warmup", "1", "--iters", "2"])
        check(p.returncode == 0, f"{what}: driver exit code {p.returncode}: {p.stderr}")
        row = json.load(open(os.path.join(folder + "-out", "peers.json")))["rows"][0]
        calls = d.get(backend, ({}, []))[1]
        if contract == "fla-layer" and backend == "flash_qla":
            check(row["status"] == "unavailable" and row["reason"] ==
                  "FLA's dispatch runs its Triton kernels at this contract, not FlashQLA: FlashQLA "
                  "does not support use_gate_in_kernel" and not d,
                  f"{what}: unavailable, FLA's reason, no call: {row} {d}")
            continue
        check(row["status"] == "ok" and calls, f"{what}: ran: {row}")
        kw = calls[0]["kwargs"] if calls else {}
        if contract == "mcore":  # the warm with --no-l2norm makes the driver's first calls
            w, wp = recorded(os.path.join(WORK, "warm.jsonl"), env, [
                os.path.join(SCRIPTS, "peers_warm.py"), "--backend", backend, "--shape",
                "1,64,2,2,128", "--no-l2norm"])
            check(wp.returncode == 0 and w.get(backend, ({}, []))[1] == calls[:2],
                  f"{what}: peers_warm.py --no-l2norm makes the driver's first calls: "
                  f"{wp.stderr} {w.get(backend)} {calls[:2]}")
            check(kw.get("use_qk_l2norm_in_kernel") is False and
                  "use_gate_in_kernel" not in kw and calls[0]["args"][0]["shape"] == [1, 64, 2, 128]
                  and "FlashQLA through FLA's dispatch" in row.get("runs", ""),
                  f"{what}: no norm in the kernel, q at H = Hv, through FLA's dispatch: {calls[0]}")
        else:
            check(kw.get("use_gate_in_kernel") is True and
                  kw.get("use_beta_sigmoid_in_kernel") is True and
                  kw.get("A_log", {}).get("shape") == [2] and
                  kw.get("dt_bias", {}).get("requires_grad") is True and
                  kw.get("use_qk_l2norm_in_kernel") is True and
                  [calls[0]["args"][i]["dtype"] for i in (3, 4)] == ["torch.bfloat16"] * 2 and
                  all(calls[0]["args"][i]["requires_grad"] for i in (3, 4)),
                  f"{what}: a, b and the gate's parameters, the gate in the kernel: {calls[0]}")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    fake = os.path.join(WORK, "site")
    stand_ins(fake)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "FLA_FLASH_QLA", "FLA_DISABLE_BACKEND_DISPATCH")}
    env["PYTHONPATH"] = fake
    driver, warm = os.path.join(SCRIPTS, "gdn_peers.py"), os.path.join(SCRIPTS, "peers_warm.py")
    check_contracts(env, driver)
    shapes = [("B2 T64", (2, 64, 1, 2, 128), False), ("B2 T64 states", (2, 64, 1, 2, 128), True),
              ("B1 T96", (1, 96, 1, 2, 128), False), ("B1 T96 states", (1, 96, 1, 2, 128), True)]
    for label, dims, states in shapes:
        folder = os.path.join(WORK, label.replace(" ", "-"))
        size = dict(zip(("B", "T", "Hk", "Hv", "D"), dims))
        write_inputs(folder, **size, states=states)
        # gdn-bench --varlen's inputs at B = 1: the same shape with packed sequences.
        sets = [[0, 32, 96], [0, 96]] if dims[0] == 1 else []
        for cu in sets:
            write_inputs(f"{folder}-cu{len(cu) - 1}", **size, states=states, offsets=cu)
        for backend in ("flash_qla", "fla"):
            what = f"{backend} {label}"

            def driver_calls(inputs, what):
                d, p = recorded(os.path.join(WORK, "driver.jsonl"), env, [
                    driver, "gdn", "--inputs", inputs, "--out", inputs + "-out", "--backend",
                    backend, "--modes", "all", "--warmup", "1", "--iters", "2"])
                check(p.returncode == 0, f"{what}: driver exit code {p.returncode}: {p.stderr}")
                doc = json.load(open(os.path.join(inputs + "-out", "peers.json")))
                times = doc["rows"][0].get("times", {})
                check(sorted(times) == ["bwd", "fwd", "fwd-train", "fwdbwd"] and
                      all(t["graph"] for t in times.values()),
                      f"{what}: the driver timed every mode, graphs too: {doc['rows'][0]}")
                drv, order = d.get(backend, ({}, []))
                check(drv and any('"backward"' in r for r in drv), f"{what}: the driver's calls "
                      f"were recorded, backward included: {sorted(drv)}")
                return drv, order

            drv, drv_order = driver_calls(folder, what)
            args = ["--backend", backend, "--shape", ",".join(map(str, dims))]
            args += ["--states"] if states else []
            for cu in sets:
                args += ["--varlen", ",".join(str(b - a) for a, b in zip(cu, cu[1:]))]
            w, p = recorded(os.path.join(WORK, "warm.jsonl"), env, [warm] + args)
            check(p.returncode == 0, f"{what}: warm exit code {p.returncode}: {p.stderr}")
            got, warm_order = w.get(backend, ({}, []))
            # The warm: the driver's two first calls, in order, then the same per --varlen set.
            check(len(drv_order) > 2 and warm_order[:2] == drv_order[:2],
                  f"{what}: the warm's first calls are the driver's first calls, in order:\n"
                  f"  driver {drv_order[:2]}\n  warm   {warm_order[:2]}")

            def offsets_of(call):
                cu = call["kwargs"].get("cu_seqlens")
                return None if cu is None else cu["values"]

            dense = {r for r, call in got.items() if offsets_of(call) is None}
            check(dense == set(drv), f"{what}: the warm's calls are the driver's, every mode's:"
                  f"\n  driver only: {sorted(set(drv) - dense)}\n  warm only: "
                  f"{sorted(dense - set(drv))}")
            check(len(warm_order) == 2 + 2 * len(sets), f"{what}: the warm made "
                  f"{len(warm_order)} calls, expected {2 + 2 * len(sets)}")
            for i, cu in enumerate(sets):
                pwhat = f"{what} packed {cu}"
                pdrv, pdrv_order = driver_calls(f"{folder}-cu{len(cu) - 1}", pwhat)
                # The driver passes the offsets and one state per sequence, nothing else changes.
                check(len(pdrv_order) > 2 and
                      pdrv_order[:2] == [packed(c, cu) for c in drv_order[:2]],
                      f"{pwhat}: the driver's packed calls are its dense calls with the offsets "
                      f"and per-sequence states:\n  dense  {drv_order[:2]}\n  packed "
                      f"{pdrv_order[:2]}")
                check(all(offsets_of(c) == cu for c in pdrv.values()),
                      f"{pwhat}: every driver call has the offsets: "
                      f"{sorted({str(offsets_of(c)) for c in pdrv.values()})}")
                calls = warm_order[2 + 2 * i:4 + 2 * i]
                check(calls == pdrv_order[:2],
                      f"{pwhat}: the warm's --varlen calls are the driver's packed first calls:"
                      f"\n  driver {pdrv_order[:2]}\n  warm   {calls}")
                warm_set = {r for r, call in got.items() if offsets_of(call) == cu}
                check(warm_set == set(pdrv), f"{pwhat}: the warm's calls are the driver's packed "
                      f"calls, every mode's:\n  driver only: {sorted(set(pdrv) - warm_set)}\n"
                      f"  warm only: {sorted(warm_set - set(pdrv))}")
                drv = dict(drv, **pdrv)  # for the pinning and scale checks below
            if backend == "fla":
                seen = {json.dumps(c["seen"], sort_keys=True)
                        for c in list(got.values()) + list(drv.values())}
                check(seen == {json.dumps({"FLA_FLASH_QLA": "0", "tilelang": "refused",
                                           "TRITON_ABOVE_3_7_1": True}, sort_keys=True)},
                      f"{what}: FLA pinned to Triton (and FLA #640's guard lifted): {seen}")
            else:
                scales = {c["kwargs"].get("scale") for c in list(got.values()) +
                          list(drv.values())}
                check(scales == {GDN_BENCH_SCALE_D128}, f"{what}: the scale gdn-bench writes: "
                      f"{scales}")

    # The check can fail: a warm with FlashQLA's own scale makes other calls than the driver.
    folder = os.path.join(WORK, "B2-T64")
    d, _ = recorded(os.path.join(WORK, "driver.jsonl"), env, [
        driver, "gdn", "--inputs", folder, "--out", folder + "-out2", "--backend", "flash_qla"])
    w, _ = recorded(os.path.join(WORK, "warm.jsonl"), env, [
        warm, "--backend", "flash_qla", "--shape", "2,64,1,2,128", "--scale", "none"])
    check(d.get("flash_qla") and w.get("flash_qla") and
          set(d["flash_qla"][0]) != set(w["flash_qla"][0]),
          "the comparison tells a warm at another scale from the driver")

    if FAILURES:
        print(f"{len(FAILURES)} failures", file=sys.stderr)
        return 1
    print(f"peers_warm.py makes the driver's calls: {len(shapes)} shapes x 2 backends, every mode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
