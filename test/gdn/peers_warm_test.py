#!/usr/bin/env python3
"""CI tests of kernels/bench/peers/peers_warm.py (the peers' compile-cache filler) that need no GPU
and no PyTorch: each bad argument gets one `error:` line naming it and exit code 2, before
anything is imported. Run by CTest: peers_warm_test.py SCRIPT."""
import os
import subprocess
import sys

SCRIPT = sys.argv[1]
FAILURES = []

CASES = [  # arguments, what the one error line must name
    (["--shape", "4,4096,16,32,128"], "--backend"),
    (["--backend", "flashqla", "--shape", "4,4096,16,32,128"], "'flashqla'"),
    (["--backend", "fla"], "--shape"),
    (["--backend", "fla", "--shape", "4,4096,16,32"], "'4,4096,16,32' is not B,T,Hk,Hv,D"),
    (["--backend", "fla", "--shape", "4,4096,0,32,128"], "'4,4096,0,32,128'"),
    (["--backend", "fla", "--shape", "4,4096,16,32,128", "--modes", "fwd,fwdbwd"],
     "unknown mode 'fwdbwd' (did you mean 'fwd+bwd'?)"),
    (["--backend", "fla", "--shape", "4,4096,16,32,128", "--scale", "-1"], "'-1'"),
    (["--backend", "fla", "--shape", "4,4096,16,32,128", "--scale", "x"], "'x'"),
    (["--backend", "fla", "--shape", "4,4096,16,32,128", "--varlen", "4096"],
     "--varlen 4096: needs B = 1"),
    (["--backend", "fla", "--shape", "1,4096,16,32,128", "--varlen", "4000,90"],
     "--varlen 4000,90: needs B = 1 and lengths summing to T = 4096"),
    (["--backend", "fla", "--shape", "1,4096,16,32,128", "--varlen", "4096,-1"], "'4096,-1'"),
    (["--backend", "fla", "--shape", "1,4096,16,32,128", "--bogus"], "--bogus"),
]


def main():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for args, needle in CASES:
        p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True,
                           env=env, timeout=60)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        what = " ".join(args)
        if p.returncode != 2:
            FAILURES.append(f"{what}: exit code {p.returncode}, expected 2")
        if len(lines) != 1 or not lines[0].startswith("error: "):
            FAILURES.append(f"{what}: expected one 'error:' line, got {p.stderr!r}")
        elif needle not in lines[0]:
            FAILURES.append(f"{what}: {needle!r} not in {lines[0]!r}")
        if p.stdout:
            FAILURES.append(f"{what}: printed {p.stdout!r} on stdout")
    for f in FAILURES:
        print(f"FAIL: {f}", file=sys.stderr)
    if FAILURES:
        return 1
    print(f"peers_warm.py: {len(CASES)} argument checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
