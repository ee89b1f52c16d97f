#!/usr/bin/env python3
"""CI tests of gdn-bench's peers driver (kernels/bench/peers/gdn_peers.py) that need no GPU and no
PyTorch: argument handling, the rows of backends whose packages are missing, and the schema of
peers.json, for the GatedDeltaNet (`gdn`) and the short convolution (`conv`) subcommands. Run by
CTest: peers_driver_test.py DRIVER WORKDIR."""
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

from gdn_inputs_fixture import write_inputs

DRIVER, WORK = sys.argv[1], sys.argv[2]
FAILURES = []
QUIET = [False]  # while checking that a malformed document is refused


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        if not QUIET[0]:
            print(f"FAIL: {what}", file=sys.stderr)


def run(args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, DRIVER] + args, capture_output=True, text=True, env=env,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def one_error_line(rc, err, needle, what):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    check(rc == 2, f"{what}: exit code {rc}, expected 2")
    check(len(lines) == 1 and lines[0].startswith("error: "),
          f"{what}: expected one 'error:' line, got {err!r}")
    check(needle in err, f"{what}: {needle!r} not in {err!r}")


def packed_tests():
    """gdn-bench --varlen's inputs: the offsets are checked before any worker starts (one error
    line, exit 2, no peers.json); valid packed inputs give rows with the shape's N."""
    def cu_entry(m):
        return next(t for t in m["tensors"] if t["name"] == "cu_seqlens")

    def set_n(n):
        return lambda m: m["shape"].update(N=n)

    cases = [
        ("dtype", dict(offsets=[0, 1, 4], change=lambda m: cu_entry(m).update(dtype="f32")),
         "tensor 'cu_seqlens' is f32 [3], not i32 [3] as gdn-bench writes it"),
        ("count", dict(offsets=[0, 1, 2, 4], change=set_n(2)),
         "tensor 'cu_seqlens' is i32 [4], not i32 [3] as gdn-bench writes it"),
        ("bytes", dict(offsets=[0, 1, 4], change=lambda m: cu_entry(m).update(bytes=8)),
         "cu_seqlens has offset 240 and 8 bytes, not the 12 bytes of i32 [3]"),
        ("past the .bin", dict(offsets=[0, 1, 4],
                               change=lambda m: cu_entry(m).update(offset=1 << 20)),
         "cu_seqlens lie past the end of inputs.bin"),
        ("not from 0", dict(offsets=[1, 2, 4]), "cu_seqlens start at 1, not 0"),
        ("not rising", dict(offsets=[0, 3, 2, 4]),
         "cu_seqlens do not rise: cu_seqlens[2] = 2 after cu_seqlens[1] = 3"),
        ("an empty sequence", dict(offsets=[0, 2, 2, 4]),
         "cu_seqlens do not rise: cu_seqlens[2] = 2 after cu_seqlens[1] = 2"),
        ("not ending at T", dict(offsets=[0, 1, 3]), "cu_seqlens end at 3, not at T = 4"),
        ("past T", dict(offsets=[0, 1, 5]), "cu_seqlens end at 5, not at T = 4"),
        ("per-batch states", dict(offsets=[0, 1, 4], states=True,
                                  change=lambda m: [t["shape"].__setitem__(0, 1)
                                                    for t in m["tensors"]
                                                    if t["name"] in ("h0", "dht")]),
         "tensor 'h0' is f32 [1, 2, 4, 4], not f32 [2, 2, 4, 4] as gdn-bench writes it"),
        ("no offsets", dict(offsets=[0, 1, 4],
                            change=lambda m: m["tensors"].remove(cu_entry(m))),
         "tensor 'cu_seqlens' is absent [], not i32 [3] as gdn-bench writes it"),
        ("offsets without N", dict(offsets=[0, 1, 4], change=lambda m: m["shape"].pop("N")),
         "has a tensor 'cu_seqlens' but its shape has no N"),
        ("N not a count", dict(offsets=[0, 1, 4], change=set_n(0)),
         "shape N (packed sequences) is 0, not a positive integer"),
        ("B 2", dict(B=2, offsets=[0, 1, 4]),
         "inputs.json packs N = 2 sequences at B = 2: packed sequences need B = 1"),
    ]
    for what, kw, needle in cases:
        folder = os.path.join(WORK, "packed-" + what.replace(" ", "-"))
        write_inputs(folder, T=4, **kw)
        out = folder + "-out"
        rc, _, err = run(["gdn", "--inputs", folder, "--out", out])
        one_error_line(rc, err, needle, f"packed inputs: {what}")
        check(not os.path.exists(out + "/peers.json"), f"packed inputs: {what}: wrote peers.json")

    # Valid packed inputs (states too; a single-token sequence): accepted, rows carry N.
    stub = os.path.join(WORK, "packed-stub")
    os.makedirs(os.path.join(stub, "torch"), exist_ok=True)
    open(os.path.join(stub, "torch", "__init__.py"), "w").close()
    for states in (False, True):
        folder = os.path.join(WORK, f"packed-ok-{states}")
        write_inputs(folder, name="custom+N3", T=4, states=states, offsets=[0, 1, 3, 4])
        out = os.path.join(WORK, f"packed-ok-{states}-out")
        rc, _, err = run(["gdn", "--inputs", folder, "--out", out], {"PYTHONPATH": stub})
        check(rc == 0, f"packed inputs (states {states}): rc {rc}: {err}")
        doc = read_peers(out, f"packed inputs (states {states})", {"rows": []})
        validate_peers(doc, f"packed inputs (states {states})")
        check([r["shape"].get("N") for r in doc["rows"]] == [3, 3, 3],
              f"packed inputs (states {states}): rows with N: {doc['rows']}")


def write_conv_inputs(folder, name="custom", B=1, T=3, Hk=1, Hv=2, D=4, bias=False,
                      leave_out=()):
    """A conv inputs.json / inputs.bin pair, as gdn-bench --op conv writes them."""
    os.makedirs(folder, exist_ok=True)
    C = 2 * Hk * D + Hv * D
    specs = [("x", "bf16", [B, T, C]), ("weight", "bf16", [C, 4]), ("a", "bf16", [B, T, Hv]),
             ("b", "bf16", [B, T, Hv]), ("A_log", "f32", [Hv]), ("dt_bias", "f32", [Hv]),
             ("dq", "bf16", [B, T, Hk, D]), ("dk", "bf16", [B, T, Hk, D]),
             ("dv", "bf16", [B, T, Hv, D]), ("dg", "f32", [B, T, Hv]),
             ("dbeta", "bf16", [B, T, Hv])]
    if bias:
        specs.append(("bias", "bf16", [C]))
    tensors, blob = [], b""
    for tname, dtype, shape in specs:
        if tname in leave_out:
            continue
        n = 1
        for d in shape:
            n *= d
        raw = struct.pack(f"<{n}f", *([0.25] * n)) if dtype == "f32" else b"\x80\x3f" * n
        tensors.append({"name": tname, "dtype": dtype, "shape": shape, "offset": len(blob),
                        "bytes": len(raw)})
        blob += raw
    with open(os.path.join(folder, "inputs.bin"), "wb") as f:
        f.write(blob)
    with open(os.path.join(folder, "inputs.json"), "w") as f:
        json.dump({"format": "qwen-recipe gdn-bench tensors 1",
                   "shape": {"name": name, "B": B, "T": T, "Hk": Hk, "Hv": Hv, "D": D},
                   "op": "conv", "bias": bias, "tensors": tensors}, f)


BACKENDS = {"gdn": ("fla", "flash_qla", "transformer_engine"), "conv": ("fla", "causal_conv1d")}


def read_peers(out, where, empty):
    """peers.json under `out`, or `empty` and a failed check when the driver wrote none."""
    try:
        with open(os.path.join(out, "peers.json")) as f:
            return json.load(f)
    except OSError as e:
        check(False, f"{where}: no peers.json: {e}")
        return empty


def validate_peers(doc, where, op="gdn"):
    """The schema gdn-bench's reader relies on (kernels/bench/peers.cpp, parse_results)."""
    check(doc.get("schema") == "qwen-recipe gdn-peers 1", f"{where}: schema")
    check(doc.get("op") == op, f"{where}: op")
    check(isinstance(doc.get("modes"), list) and all(isinstance(m, str) for m in doc["modes"]),
          f"{where}: modes")
    check(isinstance(doc.get("warmup"), int) and isinstance(doc.get("iters"), int),
          f"{where}: warmup / iters")
    check(isinstance(doc.get("env"), dict), f"{where}: env")
    rows = doc.get("rows")
    check(isinstance(rows, list) and rows, f"{where}: rows")
    for i, r in enumerate(rows or []):
        w = f"{where}: rows[{i}]"
        check(r.get("backend") in BACKENDS.get(op, ()), f"{w}: backend")
        check(r.get("status") in ("ok", "unavailable", "error"), f"{w}: status")
        s = r.get("shape", {})
        check(isinstance(s.get("name"), str) and all(isinstance(s.get(k), int)
                                                     for k in ("B", "T", "Hk", "Hv", "D")),
              f"{w}: shape")
        v = r.get("versions")
        check(isinstance(v, dict) and all(isinstance(a, str) and isinstance(b, str)
                                          for a, b in v.items()), f"{w}: versions")
        if r.get("status") != "ok":
            check(isinstance(r.get("reason"), str) and r["reason"], f"{w}: reason")
        else:
            check(isinstance(r.get("outputs"), str), f"{w}: outputs")
            kt = r.get("kernel_times", [])
            check(isinstance(kt, list) and all(
                isinstance(k.get("name"), str) and isinstance(k.get("calls"), (int, float)) and
                isinstance(k.get("us"), (int, float)) for k in kt), f"{w}: kernel_times")
            for mode, t in r.get("times", {}).items():
                for method in ("graph", "eager"):
                    x = t.get(method)
                    check(x is None or all(isinstance(x.get(k), (int, float))
                                           for k in ("median", "min", "max")),
                          f"{w}: times.{mode}.{method}")
            if "own_kernels_ms" in r:
                check(isinstance(r["own_kernels_ms"], (int, float)), f"{w}: own_kernels_ms")


def check_arg_errors(cases, out):
    """Each (args, needle, what): one error line naming needle, exit 2, no OUT/peers.json."""
    for args, needle, what in cases:
        rc, _, err = run(args)
        one_error_line(rc, err, needle, what)
        check(not os.path.exists(out + "/peers.json"), f"{what}: wrote peers.json")


def check_no_torch(op, inputs, out, where, backends):
    """Without PyTorch the driver exits 0, prints nothing on stdout (that is gdn-bench's) and
    writes one row per backend, in order, each saying to install torch."""
    rc, stdout, err = run([op, "--inputs", inputs, "--out", out])
    check(rc == 0 and stdout == "", f"{where}: rc {rc}, stdout {stdout!r}: {err}")
    with open(os.path.join(out, "peers.json")) as f:
        doc = json.load(f)
    validate_peers(doc, where, op=op)
    check([r["backend"] for r in doc["rows"]] == backends,
          f"{where}: one row per backend, in order")
    for r in doc["rows"]:
        check(r["status"] == "unavailable" and
              r["reason"] == "not installed: pip install torch (no module 'torch')",
              f"{where}: {r['backend']}: {r.get('reason')!r}")
    return doc


def conv_tests():
    """The `conv` subcommand: its arguments, inputs, missing packages, pinning env, schema."""
    inputs = os.path.join(WORK, "conv0")
    write_conv_inputs(inputs)
    gdn_inputs = os.path.join(WORK, "shape0")
    check_arg_errors([
        (["conv", "--inputs", inputs, "--out", WORK + "/c1", "--backend", "flash_qla"],
         "unknown backend 'flash_qla' (one of fla, causal_conv1d or all)", "conv: a GDN backend"),
        (["conv", "--inputs", inputs, "--out", WORK + "/c1", "--modes", "fwd-train"],
         "unknown mode 'fwd-train' (one of fwd, bwd, fwdbwd or all)", "conv: a GDN mode"),
        (["conv", "--inputs", inputs, "--out", WORK + "/c1", "--iters", "x"],
         "'x' is not a positive integer", "conv: --iters x"),
        (["conv", "--inputs", inputs, "--out", WORK + "/c1", "--prepare-timeout", "-3"],
         "'-3' is not a non-negative integer", "conv: --prepare-timeout -3"),
        (["conv", "--out", WORK + "/c1"], "--inputs", "conv: missing --inputs"),
        (["conv", "--inputs", gdn_inputs, "--out", WORK + "/c1"],
         "holds the inputs of op 'gdn', not of 'conv'", "conv: GDN inputs"),
        (["gdn", "--inputs", inputs, "--out", WORK + "/c1"],
         "holds the inputs of op 'conv', not of 'gdn'", "gdn: conv inputs"),
    ], WORK + "/c1")
    for folder, kw, needle in [("conv-nodbeta", {"leave_out": ("dbeta",)}, "no tensor 'dbeta'"),
                               ("conv-nobias", {"bias": True, "leave_out": ("bias",)},
                                "no tensor 'bias'")]:
        write_conv_inputs(os.path.join(WORK, folder), **kw)
        rc, _, err = run(["conv", "--inputs", os.path.join(WORK, folder), "--out", WORK + "/c1"])
        one_error_line(rc, err, needle, f"conv: {folder}")

    if importlib.util.find_spec("torch") is None:
        doc = check_no_torch("conv", inputs, os.path.join(WORK, "conv-no-torch"),
                             "conv no torch", ["fla", "causal_conv1d"])
        check(doc["modes"] == ["fwd", "bwd", "fwdbwd"], f"conv no torch: modes {doc['modes']}")

    # PyTorch (a stub) without causal-conv1d: its row names the package, says why there is no
    # wheel to carry, and lists the versions found; per shape, in --backend order.
    stub = os.path.join(WORK, "conv-stub")
    os.makedirs(os.path.join(stub, "torch"))
    open(os.path.join(stub, "torch", "__init__.py"), "w").close()
    dist = os.path.join(stub, "torch-2.11.0.dist-info")
    os.makedirs(dist)
    with open(os.path.join(dist, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n")
    second = os.path.join(WORK, "conv1")
    write_conv_inputs(second, name="qwen35_397b", B=2, T=5, Hv=4)
    out = os.path.join(WORK, "conv-stub-out")
    rc, _, err = run(["conv", "--inputs", inputs, "--inputs", second, "--out", out,
                      "--backend", "causal_conv1d", "--modes", "fwdbwd", "--iters", "4"],
                     {"PYTHONPATH": stub})
    check(rc == 0, f"conv stub torch: rc {rc}: {err}")
    with open(os.path.join(out, "peers.json")) as f:
        doc = json.load(f)
    validate_peers(doc, "conv stub torch", op="conv")
    check(doc["modes"] == ["fwdbwd"] and doc["iters"] == 4, "conv stub torch: modes / iters")
    rows = doc["rows"]
    check([(r["backend"], r["shape"]["name"], r["shape"]["B"]) for r in rows] ==
          [("causal_conv1d", "custom", 1), ("causal_conv1d", "qwen35_397b", 2)],
          f"conv stub torch: rows {[(r['backend'], r['shape']) for r in rows]}")
    if importlib.util.find_spec("causal_conv1d") is None:
        for r in rows:
            check(r["status"] == "unavailable" and r["reason"] ==
                  "not installed: pip install causal-conv1d (no module 'causal_conv1d'; PyPI has "
                  "its source only: installing compiles its CUDA extension against the installed "
                  "PyTorch)", f"conv stub torch: reason {r.get('reason')!r}")
            check(r["versions"].get("torch") == "2.11.0",
                  f"conv stub torch: versions found {r['versions']}")
    check("causal_conv1d: not installed: pip install causal-conv1d" in err,
          "conv stub torch: the reason on stderr too")

    # FLA's conv worker runs with FLA's backend dispatch off and TileLang / FlashQLA refused: a
    # stub fla whose conv module reports what it sees at import (and then fails, so no GPU).
    seen = os.path.join(WORK, "conv-seen")
    for pkg in ("torch", "fla", "fla/modules", "fla/modules/causal_conv1d", "tilelang"):
        os.makedirs(os.path.join(seen, pkg))
    with open(os.path.join(seen, "torch", "__init__.py"), "w") as f:
        f.write("def device(name):\n    return name\n\n"
                "class cuda:\n    @staticmethod\n    def get_device_capability():\n"
                "        return (9, 0)\n")
    for pkg in ("fla", "fla/modules", "tilelang"):
        open(os.path.join(seen, pkg, "__init__.py"), "w").close()
    with open(os.path.join(seen, "fla", "backends.py"), "w") as f:
        f.write("import os\n_DISPATCH_DISABLED = "
                "os.environ.get('FLA_DISABLE_BACKEND_DISPATCH') == '1'\n"
                "_function_registries = {}\n")
    with open(os.path.join(seen, "fla", "modules", "causal_conv1d", "__init__.py"), "w") as f:
        f.write("import os\ntry:\n    import tilelang  # noqa: F401\n    tl = 'imported'\n"
                "except ModuleNotFoundError:\n    tl = 'refused'\n"
                "import fla.backends\n"
                "raise RuntimeError('stub conv: dispatch off ' + "
                "str(fla.backends._DISPATCH_DISABLED) + ', tilelang ' + tl)\n")
    out = os.path.join(WORK, "conv-seen-out")
    rc, _, err = run(["conv", "--inputs", inputs, "--out", out, "--backend", "fla"],
                     {"PYTHONPATH": seen, "FLA_DISABLE_BACKEND_DISPATCH": "0"})
    check(rc == 0, f"conv fla pinning: rc {rc}: {err}")
    doc = read_peers(out, "conv fla pinning", {"rows": []})
    validate_peers(doc, "conv fla pinning", op="conv")
    reasons = [r.get("reason") for r in doc["rows"]]
    check(reasons == ["RuntimeError: stub conv: dispatch off True, tilelang refused"],
          f"conv fla pinning: {reasons}")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    inputs = os.path.join(WORK, "shape0")
    write_inputs(inputs)

    # Argument handling: one error line, exit 2, nothing written.
    rc, _, err = run([])
    check(rc == 2 and "error: " in err, f"no subcommand: rc {rc}, {err!r}")
    check_arg_errors([
        (["gdn", "--inputs", inputs, "--out", WORK + "/o1", "--backend", "flq"],
         "unknown backend 'flq'", "unknown backend"),
        (["gdn", "--inputs", inputs, "--out", WORK + "/o1", "--modes", "fwd,back"],
         "unknown mode 'back'", "unknown mode"),
        (["gdn", "--inputs", inputs, "--out", WORK + "/o1", "--iters", "0"],
         "'0' is not a positive integer", "--iters 0"),
        (["gdn", "--inputs", inputs, "--out", WORK + "/o1", "--warmup", "-1"],
         "'-1' is not a non-negative integer", "--warmup -1"),
        (["gdn", "--inputs", inputs, "--out", WORK + "/o1", "--prepare-timeout", "soon"],
         "'soon' is not a non-negative integer", "--prepare-timeout soon"),
        (["gdn", "--out", WORK + "/o1"], "--inputs", "missing --inputs"),
        (["gdn", "--inputs", WORK + "/nowhere", "--out", WORK + "/o1"],
         "cannot read inputs.json", "missing inputs folder"),
        (["plot", "--json", WORK + "/none.json", "--out", WORK + "/p.png"], "--json", "plot: no json"),
    ], WORK + "/o1")

    bad = os.path.join(WORK, "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "inputs.json"), "w") as f:
        json.dump({"format": "something else"}, f)
    rc, _, err = run(["gdn", "--inputs", bad, "--out", WORK + "/o1"])
    one_error_line(rc, err, "is not a 'qwen-recipe gdn-bench tensors 1' file", "foreign manifest")

    # Inputs of another layout than gdn-bench writes (peers_warm.py warms that layout's kernels).
    for tensor, change, needle in [
            ("beta", {"dtype": "f32"}, "tensor 'beta' is f32 [1, 2, 2], not bf16 [1, 2, 2]"),
            ("g", {"shape": [1, 2, 1]}, "tensor 'g' is f32 [1, 2, 1], not f32 [1, 2, 2]")]:
        other = os.path.join(WORK, "layout-" + tensor)
        write_inputs(other)
        with open(os.path.join(other, "inputs.json")) as f:
            m = json.load(f)
        next(t for t in m["tensors"] if t["name"] == tensor).update(change)
        with open(os.path.join(other, "inputs.json"), "w") as f:
            json.dump(m, f)
        rc, _, err = run(["gdn", "--inputs", other, "--out", WORK + "/o1"])
        one_error_line(rc, err, needle, f"inputs of another layout ({tensor})")
        check(not os.path.exists(WORK + "/o1/peers.json"), f"layout {tensor}: wrote peers.json")

    # The contracts: an unknown one is refused; at fla-layer the gate's inputs stand where g and
    # beta do, and a manifest that says fla-layer but carries g and beta is refused.
    for contract, change, needle, what in [
            ("mcore", lambda m: m.update(contract="megatron"),
             "inputs.json's contract 'megatron' is none of grouped, mcore, fla-layer",
             "an unknown contract"),
            ("grouped", lambda m: m.update(contract="fla-layer"), "has no tensor 'a'",
             "fla-layer without the gate's inputs")]:
        other = os.path.join(WORK, "contract-" + contract)
        write_inputs(other, contract=contract, change=change)
        rc, _, err = run(["gdn", "--inputs", other, "--out", WORK + "/o1"])
        one_error_line(rc, err, needle, what)
    gate = os.path.join(WORK, "contract-fla-layer")
    write_inputs(gate, contract="fla-layer")
    rc, _, err = run(["gdn", "--inputs", gate, "--out", WORK + "/o-gate", "--backend", "fla"])
    check(rc == 0, f"fla-layer inputs as gdn-bench writes them are taken: {rc} {err!r}")

    # What shows that FLA's dispatch ran FlashQLA: its kernels among a step's, flash_qla imported.
    sys.path.insert(0, os.path.dirname(os.path.abspath(DRIVER)))
    import gdn_peers
    sys.modules["flash_qla"] = sys  # any module: imported
    ran = gdn_peers.flash_qla_ran(["chunk_fwd_kernel_o", "fused_chunk_gdr_fwd_kernel_0",
                                   "kkt_solve_kernel"])
    check(ran["verified"] and ran["flash_qla_kernels"] ==
          ["fused_chunk_gdr_fwd_kernel_0", "kkt_solve_kernel"], f"FlashQLA's kernels: {ran}")
    check(not gdn_peers.flash_qla_ran(["chunk_fwd_kernel_o"])["verified"],
          "FLA's Triton kernels alone do not show FlashQLA ran")
    del sys.modules["flash_qla"]
    check(not gdn_peers.flash_qla_ran(["fused_chunk_gdr_fwd_kernel_0"])["verified"],
          "nor do its kernel names without flash_qla imported")

    with open(os.path.join(WORK, "bench.json"), "w") as f:
        json.dump({"backends": []}, f)
    rc, _, err = run(["plot", "--json", WORK + "/bench.json", "--out", WORK + "/p.pdf"])
    one_error_line(rc, err, "a .png or .svg file", "plot to .pdf")
    if importlib.util.find_spec("matplotlib") is None:
        rc, _, err = run(["plot", "--json", WORK + "/bench.json", "--out", WORK + "/p.png"])
        one_error_line(rc, err, "not installed: pip install matplotlib", "plot without matplotlib")

    # Without PyTorch, every row says so (CI has none; skip where the test's Python has it).
    if importlib.util.find_spec("torch") is None:
        check_no_torch("gdn", inputs, os.path.join(WORK, "no-torch"), "no torch",
                       ["fla", "flash_qla", "transformer_engine"])

    # PyTorch present (a stub package here) but not the peers' packages: each row names the
    # package to install, per shape, with the versions found.
    stub = os.path.join(WORK, "stub")
    os.makedirs(os.path.join(stub, "torch"))
    open(os.path.join(stub, "torch", "__init__.py"), "w").close()
    second = os.path.join(WORK, "shape1")
    write_inputs(second, name="qwen35_397b", B=1, T=4, Hk=1, Hv=4)
    out = os.path.join(WORK, "stub-out")
    rc, _, err = run(["gdn", "--inputs", inputs, "--inputs", second, "--out", out,
                      "--backend", "flash_qla,fla,transformer_engine", "--modes", "fwd,fwdbwd",
                      "--iters", "5"], {"PYTHONPATH": stub})
    check(rc == 0, f"stub torch: rc {rc}: {err}")
    with open(os.path.join(out, "peers.json")) as f:
        doc = json.load(f)
    validate_peers(doc, "stub torch")
    check(doc["modes"] == ["fwd", "fwdbwd"] and doc["iters"] == 5, "stub torch: modes / iters")
    rows = doc["rows"]
    check([(r["backend"], r["shape"]["name"]) for r in rows] ==
          [("flash_qla", "custom"), ("flash_qla", "qwen35_397b"), ("fla", "custom"),
           ("fla", "qwen35_397b"), ("transformer_engine", "custom"),
           ("transformer_engine", "qwen35_397b")], "stub torch: rows in --backend order, by shape")
    hints = {"fla": ("fla", "pip install flash-linear-attention"),
             "flash_qla": ("flash_qla", "pip install flash-qla"),
             "transformer_engine": ("cudnn", "pip install nvidia-cudnn-frontend")}
    for r in rows:
        module, hint = hints[r["backend"]]
        if importlib.util.find_spec(module) is None:
            check(r["status"] == "unavailable" and
                  r["reason"] == f"not installed: {hint} (no module '{module}')",
                  f"stub torch: {r['backend']}: {r.get('reason')!r}")
        check(r["shape"]["Hv"] == (2 if r["shape"]["name"] == "custom" else 4),
              f"stub torch: {r['backend']}: the shape of its inputs")
    check(f"{rows[0]['backend']}: not installed" in err, "stub torch: the reason on stderr too")

    # A backend whose import fails: its worker reports the exception and exits before its turn;
    # the driver still writes every row (a worker gone early once ended the driver).
    broken = os.path.join(WORK, "broken")
    os.makedirs(os.path.join(broken, "torch"))
    os.makedirs(os.path.join(broken, "fla"))
    with open(os.path.join(broken, "torch", "__init__.py"), "w") as f:
        f.write("def device(name):\n    return name\n\n"
                "class cuda:\n    @staticmethod\n    def get_device_capability():\n"
                "        return (9, 0)\n")
    with open(os.path.join(broken, "fla", "__init__.py"), "w") as f:
        f.write("raise RuntimeError('stub fla: broken install')\n")
    # cudnn fails a second later, so the fla workers are long gone when their turn comes.
    os.makedirs(os.path.join(broken, "cudnn"))
    with open(os.path.join(broken, "cudnn", "__init__.py"), "w") as f:
        f.write("import time\ntime.sleep(1.5)\nraise RuntimeError('stub cudnn: broken install')\n")
    out = os.path.join(WORK, "broken-out")
    rc, _, err = run(["gdn", "--inputs", inputs, "--inputs", second, "--out", out,
                      "--backend", "fla,transformer_engine"], {"PYTHONPATH": broken})
    check(rc == 0, f"broken fla: rc {rc}: {err}")
    doc = read_peers(out, "broken fla", {})
    if doc:
        validate_peers(doc, "broken fla")
        for r in doc["rows"]:
            stub = "fla" if r["backend"] == "fla" else "cudnn"
            check(r["status"] == "error" and
                  r["reason"] == f"RuntimeError: stub {stub}: broken install",
                  f"broken {stub}: {r['shape']['name']}: {r.get('status')} {r.get('reason')!r}")
        check(len(doc["rows"]) == 4, "broken fla: one row per backend and shape")

    conv_tests()
    packed_tests()

    # A malformed peers.json fails the schema check (the check can fail).
    before = len(FAILURES)
    QUIET[0] = True
    validate_peers({"schema": "x", "rows": [{"backend": "fla", "status": "maybe"}]}, "negative")
    QUIET[0] = False
    negative = FAILURES[before:]
    del FAILURES[before:]
    if not negative:
        FAILURES.append("the schema check accepts a malformed document")
    # ... and an ok row whose per-kernel times are not {name, calls, us} numbers.
    ok_row = {"backend": "flash_qla", "status": "ok", "versions": {}, "outputs": "o.json",
              "shape": {"name": "custom", "B": 1, "T": 2, "Hk": 1, "Hv": 2, "D": 4},
              "kernel_times": [{"name": "k", "calls": 1, "us": "fast"}]}
    before = len(FAILURES)
    QUIET[0] = True
    validate_peers({"schema": "qwen-recipe gdn-peers 1", "op": "gdn", "modes": ["fwd"],
                    "warmup": 1, "iters": 1, "env": {}, "rows": [ok_row]}, "negative")
    QUIET[0] = False
    negative = FAILURES[before:]
    del FAILURES[before:]
    if negative != ["negative: rows[0]: kernel_times"]:  # that check alone fails
        FAILURES.append(f"the schema check of kernel_times: {negative}")
    # A GDN document is not a conv one: its backends are not the conv's.
    before = len(FAILURES)
    QUIET[0] = True
    validate_peers({"schema": "qwen-recipe gdn-peers 1", "op": "gdn", "modes": [], "warmup": 1,
                    "iters": 1, "env": {}, "rows": [{"backend": "flash_qla", "status": "error",
                                                     "reason": "x", "versions": {},
                                                     "shape": {"name": "c", "B": 1, "T": 1,
                                                               "Hk": 1, "Hv": 1, "D": 1}}]},
                   "negative conv", op="conv")
    QUIET[0] = False
    if len(FAILURES) == before:
        FAILURES.append("the conv schema check accepts a GDN document")
    del FAILURES[before:]

    if FAILURES:
        print(f"{len(FAILURES)} failures", file=sys.stderr)
        return 1
    print("peers driver: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
