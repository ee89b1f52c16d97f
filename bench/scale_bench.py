#!/usr/bin/env python3
"""scale_bench: how qwen-recipe's time and memory grow with the size of its input.

usage: scale_bench.py QWEN_RECIPE GOLDEN_YAML [--sizes 10000,40000,100000,400000]

For each size N it times, as whole processes (wall seconds, peak MiB):
  diff       two configs whose env_vars hold N keys, every value changed (human, unified)
  overrides  build --base GOLDEN with an --overrides list of N '+env_vars.K=V' entries
Not a test: test/cli/complexity.py asserts the growth; this prints the figures, by hand.
"""
import argparse
import os
import pathlib
import subprocess
import tempfile
import time


def timed(argv, cwd):
    start = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    return time.monotonic() - start, usage.ru_maxrss / 1024, status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("golden")
    ap.add_argument("--sizes", default="10000,40000,100000,400000")
    opts = ap.parse_args()
    binary = os.path.abspath(opts.binary)
    text = pathlib.Path(opts.golden).read_text()
    print(f"{'what':<13} {'keys':>8} {'seconds':>9} {'peak MiB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        (work / "base.yaml").write_text(text)
        for n in (int(s) for s in opts.sizes.split(",")):
            for which, value in (("a", lambda i: i), ("b", lambda i: i + 1)):
                keys = "".join(f"  QR_K{i:07d}: {value(i)}\n" for i in range(n))
                (work / f"{which}.yaml").write_text(text.replace("env_vars:\n",
                                                                 "env_vars:\n" + keys, 1))
            for fmt in ("human", "unified"):
                secs, mib, _ = timed([binary, "-q", "diff", "a.yaml", "b.yaml", "-o", fmt],
                                     work)
                print(f"{'diff ' + fmt:<13} {n:>8} {secs:>9.2f} {mib:>9.0f}")
            (work / "o.yaml").write_text(
                "".join(f"- +env_vars.K{i}={i % 10}\n" for i in range(n)))
            if (work / "o.yaml").stat().st_size <= 1 << 20:  # the --overrides file's cap
                secs, mib, _ = timed([binary, "-q", "build", "--base", "base.yaml",
                                      "--pipeline", "benchmark-common", "--overrides", "o.yaml"],
                                     work)
                print(f"{'overrides':<13} {n:>8} {secs:>9.2f} {mib:>9.0f}")


if __name__ == "__main__":
    main()
