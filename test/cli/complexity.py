#!/usr/bin/env python3
"""diff and overrides scale linearly: the work at 40k keys is compared with the work at 10k.

usage: complexity.py QWEN_RECIPE GOLDEN_YAML WORKDIR CASE
CASE: diff (two configs whose env_vars hold N keys, every value changed), diff-unified (the
      same, as `-o unified`),
      overrides (an --overrides list of N '+env_vars.K=V' entries)

Work is the CPU time of the qwen-recipe process less that of the same command at N = 0 (the
start-up), the least of three runs. Linear work makes the 40k/10k ratio about 4, quadratic work
about 16; the test fails above 8. No absolute time is asserted (bench/scale_bench.py measures).
"""
import os
import pathlib
import resource
import shutil
import subprocess
import sys


def cpu_seconds(argv, cwd, want_rc):
    best = None
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != want_rc:
            sys.exit(f"FAIL: {' '.join(argv)}: exit {r.returncode}: {r.stderr[:300]}")
        spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = spent if best is None else min(best, spent)
    return best


def with_env_vars(golden_text, n, value):
    keys = "".join(f"  QR_K{i:06d}: {value(i)}\n" for i in range(n))
    return golden_text.replace("env_vars:\n", "env_vars:\n" + keys, 1)


def main():
    binary, golden, work, case = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
    binary = os.path.abspath(binary)
    work = work / ("complexity-" + case)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    text = pathlib.Path(golden).read_text()
    work_at = {}
    for n in (0, 10_000, 40_000):
        if case in ("diff", "diff-unified"):
            (work / f"a{n}.yaml").write_text(with_env_vars(text, n, lambda i: i))
            (work / f"b{n}.yaml").write_text(with_env_vars(text, n, lambda i: i + 1))
            argv = [binary, "-q", "diff", f"a{n}.yaml", f"b{n}.yaml"]
            if case == "diff-unified":
                argv += ["-o", "unified"]
            rc = 1 if n else 0
        elif case == "overrides":
            (work / "base.yaml").write_text(text)
            (work / f"o{n}.yaml").write_text(
                "- +env_vars.K=0\n" + "".join(f"- +env_vars.K{i}={i % 10}\n" for i in range(n)))
            argv = [binary, "-q", "build", "--base", "base.yaml", "--pipeline", "benchmark-common",
                    "--overrides", f"o{n}.yaml"]
            rc = 0
        else:
            sys.exit("unknown case " + case)
        work_at[n] = cpu_seconds(argv, work, rc)
    w10 = max(work_at[10_000] - work_at[0], 1e-3)
    w40 = work_at[40_000] - work_at[0]
    ratio = w40 / w10
    print(f"{case}: start-up {work_at[0]:.3f} s, work at 10k {w10:.3f} s, at 40k {w40:.3f} s, "
          f"ratio {ratio:.1f}")
    if ratio > 8:
        sys.exit(f"FAIL: {case}: 4x the keys took {ratio:.1f}x the work (quadratic?)")
    shutil.rmtree(work, ignore_errors=True)
    print(case + ": ok")


if __name__ == "__main__":
    main()
