#!/usr/bin/env python3
"""Fills the peers' compile caches for one shape, so that a later machine given the same caches
skips the minutes of compiling and autotuning (docs/gdn-bench.md, "Carrying the peers"):
TileLang's (TILELANG_CACHE_DIR) with FlashQLA's kernels, Triton's (TRITON_CACHE_DIR) with FLA's
kernels and their autotuning results (FLA keeps them there by default), and inductor's
(TORCHINDUCTOR_CACHE_DIR) with FlashQLA's torch.compile'd l2norm.

    peers_warm.py --backend flash_qla|fla --shape B,T,Hk,Hv,D [--states] [--scale X]
                  [--modes fwd,fwd+bwd] [--varlen L,L,...]...

Makes the calls gdn-bench's peers driver makes: an inference forward, then a training forward and
its backward, bf16 with the l2norm in the kernel, and prints the seconds each first call took.
FlashQLA's kernels take the token and batch counts as run-time values, but its scale, head counts,
whether there is an initial state, and whether sequences are packed (cu_seqlens) or split across
SMs (its automatic intra-card context parallelism) are compiled in. --scale defaults to the value
gdn-bench writes for Dk = 128 (float32 Dk^-0.5 printed with 9 digits); `none` leaves it to
FlashQLA (Dk^-0.5 in float64), a different kernel. Each --varlen is one set of packed sequence
lengths summing to T (B must be 1), called after the dense shape: a set that compiles again shows
as a first call of compile length.
"""
import argparse
import difflib
import sys
import time

from gdn_peers import Parser  # the driver beside this script: its one-line, exit-2 errors

GDN_BENCH_SCALE = "0.0883883476"
MODES = ("fwd", "fwd+bwd")


def shape(text):
    parts = text.split(",")
    if len(parts) != 5 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"'{text}' is not B,T,Hk,Hv,D")
    return tuple(int(p) for p in parts)


def scale_arg(text):
    try:
        if text == "none" or float(text) > 0:
            return text
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"'{text}' is not a positive number or 'none'")


def lengths(text):
    parts = text.split(",")
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of positive lengths")
    return [int(p) for p in parts]


def modes(text):
    parts = text.split(",")
    for p in parts:
        if p not in MODES:
            near = difflib.get_close_matches(p, MODES, n=1)
            raise argparse.ArgumentTypeError(
                f"unknown mode '{p}'" + (f" (did you mean '{near[0]}'?)" if near else "") +
                f"; modes: {', '.join(MODES)}")
    return parts


def main(argv=None):
    ap = Parser(prog="peers_warm.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("flash_qla", "fla"), required=True)
    ap.add_argument("--shape", type=shape, required=True)
    ap.add_argument("--modes", type=modes, default=list(MODES))
    ap.add_argument("--states", action="store_true", help="an initial state and its gradient")
    ap.add_argument("--scale", type=scale_arg, default=GDN_BENCH_SCALE)
    ap.add_argument("--varlen", type=lengths, action="append", default=[])
    args = ap.parse_args(argv)
    B, T, Hk, Hv, D = args.shape
    for lens in args.varlen:
        if B != 1 or sum(lens) != T:
            ap.error(f"--varlen {','.join(map(str, lens))}: needs B = 1 and lengths summing to "
                     f"T = {T}")

    import torch
    if args.backend == "flash_qla":
        from flash_qla import chunk_gated_delta_rule
    else:
        import fla.ops.common.chunk_o as chunk_o
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
        chunk_o.TRITON_ABOVE_3_7_1 = True  # as the driver does on Hopper (FLA #640)

    tag = f"{args.backend} B{B} T{T} Hk{Hk} Hv{Hv} D{D}" + (" states" if args.states else "")
    scale = None if args.scale == "none" else float(args.scale)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def randn(*dims, dtype=torch.bfloat16, mul=1.0):
        return (torch.randn(*dims, generator=gen, device="cuda") * mul).to(dtype)

    q, k = randn(B, T, Hk, D), randn(B, T, Hk, D)
    v = randn(B, T, Hv, D)
    g = torch.nn.functional.logsigmoid(randn(B, T, Hv, dtype=torch.float32))
    beta = torch.sigmoid(randn(B, T, Hv))
    do = randn(B, T, Hv, D)

    def step(what, cu=None):
        n = B if cu is None else len(cu) - 1
        h0 = torch.randn(n, Hv, D, D, device="cuda") if args.states else None
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v, g, beta)]
        if h0 is not None:
            h0.requires_grad_(True)
        cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32, device="cuda")

        def fwd():
            return chunk_gated_delta_rule(*leaves, scale=scale, initial_state=h0,
                                          output_final_state=True, use_qk_l2norm_in_kernel=True,
                                          cu_seqlens=cu_t)
        for mode in args.modes:
            t0 = time.time()
            if mode == "fwd":
                with torch.no_grad():
                    fwd()
            else:
                o, ht = fwd()
                torch.autograd.backward([o], [do])
            torch.cuda.synchronize()
            print(f"{tag} {what} {mode}: first call {time.time() - t0:.1f} s", flush=True)

    step("dense")
    for lens in args.varlen:
        cu = [0]
        for n in lens:
            cu.append(cu[-1] + n)
        step(f"varlen {','.join(map(str, lens))}", cu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
