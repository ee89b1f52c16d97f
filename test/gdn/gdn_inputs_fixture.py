"""The driver tests' inputs.json / inputs.bin, written as gdn-bench writes them (peers.cpp,
gdn_input_layout; kept apart from the driver's own gdn_inputs, so that the tests check the driver
against the layout rather than against itself)."""
import json
import math
import os
import struct


def gdn_bench_scale(D):
    """float32 Dk^-0.5 printed with 9 digits, as gdn-bench writes it."""
    sqrt_d = struct.unpack("f", struct.pack("f", math.sqrt(D)))[0]
    return float("%.9g" % struct.unpack("f", struct.pack("f", 1.0 / sqrt_d))[0])


def write_inputs(folder, name="custom", B=1, T=2, Hk=1, Hv=2, D=4, states=False, offsets=None,
                 change=None, contract=None):
    """A valid pair in `folder`: q, k, v, g, beta, do; with `states` h0 and dht, one per sequence;
    with `offsets` (gdn-bench --varlen) the shape's N = len(offsets) - 1 and the offsets as int32
    cu_seqlens; with `contract` the manifest's contract (fla-layer: a, b, A_log, dt_bias in place
    of g and beta; mcore: l2norm false). bf16 elements are 1.0, fp32 ones -0.5. `change` edits
    the manifest before it is written."""
    os.makedirs(folder, exist_ok=True)
    n = B if offsets is None else len(offsets) - 1
    specs = [("q", "bf16", [B, T, Hk, D]), ("k", "bf16", [B, T, Hk, D]),
             ("v", "bf16", [B, T, Hv, D])]
    if contract == "fla-layer":
        specs += [("a", "bf16", [B, T, Hv]), ("b", "bf16", [B, T, Hv]), ("A_log", "f32", [Hv]),
                  ("dt_bias", "f32", [Hv])]
    else:
        specs += [("g", "f32", [B, T, Hv]), ("beta", "bf16", [B, T, Hv])]
    specs.append(("do", "bf16", [B, T, Hv, D]))
    if states:
        specs += [("h0", "f32", [n, Hv, D, D]), ("dht", "f32", [n, Hv, D, D])]
    if offsets is not None:
        specs.append(("cu_seqlens", "i32", [len(offsets)]))
    tensors, blob = [], b""
    for tname, dtype, shape in specs:
        count = math.prod(shape)
        raw = (struct.pack(f"<{count}i", *offsets) if dtype == "i32" else
               struct.pack(f"<{count}f", *([-0.5] * count)) if dtype == "f32" else
               b"\x80\x3f" * count)
        tensors.append({"name": tname, "dtype": dtype, "shape": shape, "offset": len(blob),
                        "bytes": len(raw)})
        blob += raw
    m = {"format": "qwen-recipe gdn-bench tensors 1",
         "shape": {"name": name, "B": B, "T": T, "Hk": Hk, "Hv": Hv, "D": D},
         "scale": gdn_bench_scale(D), "l2norm": True, "tensors": tensors}
    if offsets is not None:
        m["shape"]["N"] = n
    if contract:
        m["contract"] = contract
        m["l2norm"] = contract != "mcore"
    if change:
        change(m)
    with open(os.path.join(folder, "inputs.bin"), "wb") as f:
        f.write(blob)
    with open(os.path.join(folder, "inputs.json"), "w") as f:
        json.dump(m, f)
