#!/usr/bin/env python3
"""Fills the peers' compile caches for one shape, so that a later machine given the same caches
skips the minutes of compiling and autotuning (README.md here, "Carrying the compile caches"):
TileLang's (TILELANG_CACHE_DIR) with FlashQLA's kernels, Triton's (TRITON_CACHE_DIR) with FLA's
kernels and their autotuning results (FLA keeps them there by default), and inductor's
(TORCHINDUCTOR_CACHE_DIR) with FlashQLA's torch.compile'd l2norm.

    peers_warm.py --backend flash_qla|fla --shape B,T,Hk,Hv,D [--states] [--scale X]
                  [--modes fwd,fwd+bwd] [--varlen L,L,...]... [--no-l2norm]

Makes the first calls of gdn-bench's peers driver through the driver's own code (gdn_peers.py:
the backend pinned as its worker pins it, make_backend's call, Problem's first calls) on inputs
of the layout gdn-bench writes (gdn_inputs): an inference forward, then a training step, and
prints the seconds each took. FlashQLA's kernels take the token and batch counts as run-time
values, but its scale, head counts, whether there is an initial state, and whether sequences are
packed (cu_seqlens) or split across SMs (its automatic intra-card context parallelism, which it
decides per call from the sequence lengths and whether a backward follows) are compiled in.
--scale defaults to the value gdn-bench writes (float32 Dk^-0.5 printed with 9 digits); `none`
leaves it to FlashQLA (Dk^-0.5 in float64), a different kernel. Each --varlen is one set of
packed sequence lengths summing to T (B must be 1), called after the dense shape with int32
offsets and one state per sequence, as the driver calls the peers on gdn-bench --varlen's inputs
(gdn-bench --varlen N packs N near-equal lengths, the longer ones first; --packed N uneven ones,
docs/gdn/bench.md, "Contracts"): a set that compiles again shows as a first call of compile
length. --no-l2norm makes the calls without the L2 norm in the kernel, as at gdn-bench's mcore
contract (give Hk = Hv there: q and k come repeated to the value heads).
"""
import argparse
import difflib
import sys
import time

# The driver beside this script: its one-line, exit-2 errors and the calls its workers make.
from gdn_peers import Parser, Problem, gdn_inputs, make_backend, pin_backend

MODES = Problem.FIRST_CALLS


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
    ap.add_argument("--scale", type=scale_arg, help="default: the value gdn-bench writes")
    ap.add_argument("--varlen", type=lengths, action="append", default=[])
    ap.add_argument("--no-l2norm", action="store_true",
                    help="no L2 norm in the kernel (gdn-bench --contract mcore)")
    args = ap.parse_args(argv)
    B, T, Hk, Hv, D = args.shape
    for lens in args.varlen:
        if B != 1 or sum(lens) != T:
            ap.error(f"--varlen {','.join(map(str, lens))}: needs B = 1 and lengths summing to "
                     f"T = {T}")

    pin_backend("gdn", args.backend)
    import torch
    call, _ = make_backend(args.backend, torch.cuda.get_device_capability(),
                           l2norm=not args.no_l2norm)
    tag = f"{args.backend} B{B} T{T} Hk{Hk} Hv{Hv} D{D}" + (" states" if args.states else "")
    gen = torch.Generator(device="cuda").manual_seed(0)
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    # Values in gdn-bench's ranges (g = logsigmoid <= 0, beta in (0, 1)); only the layout and the
    # scale decide which kernels compile.
    values = {"g": torch.nn.functional.logsigmoid, "beta": torch.sigmoid}
    if args.scale is None:
        scale = gdn_inputs(B, T, Hk, Hv, D)[1]
    else:
        scale = None if args.scale == "none" else float(args.scale)

    def step(what, cu=None):
        layout, _ = gdn_inputs(B, T, Hk, Hv, D, states=args.states,
                               sequences=None if cu is None else len(cu) - 1)
        ins = {}
        for name, dtype, dims in layout:
            if name == "cu_seqlens":  # the offsets themselves, as gdn-bench writes them
                ins[name] = torch.tensor(cu, dtype=torch.int32, device="cuda")
                continue
            x = torch.randn(*dims, generator=gen, device="cuda")
            ins[name] = (values[name](x) if name in values else x).to(dtypes[dtype])
        p = Problem(call, ins, scale, not args.no_l2norm)
        for mode in args.modes:
            t0 = time.time()
            p.first_call(mode)
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
