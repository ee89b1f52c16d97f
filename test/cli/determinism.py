#!/usr/bin/env python3
"""Builds every recipe (each GPU and precision, both Megatron-Core profiles) twice and compares
the bytes: once under LC_ALL=C, once under a decimal-comma locale with the rest of the
environment changed too (time zone, no HOME, umask, working directory, -o instead of stdout).

    determinism.py --bin build/qwen-recipe
"""

import argparse
import concurrent.futures
import json
import locale
import os
import subprocess
import sys
import tempfile

CANDIDATES = ["de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"]


def decimal_comma_locale():
    for name in CANDIDATES:
        try:
            locale.setlocale(locale.LC_ALL, name)
        except locale.Error:
            continue
        comma = locale.localeconv()["decimal_point"] == ","
        locale.setlocale(locale.LC_ALL, "C")
        if comma:
            return name
    return None


def recipes(binary):
    out = subprocess.run([binary, "list", "recipes", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    for recipe in json.loads(out)["recipes"]:
        for precision in recipe["precisions"]:
            yield recipe["model"], recipe["gpu"], precision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    opts = ap.parse_args()
    binary = os.path.abspath(opts.bin)
    comma = decimal_comma_locale()
    if comma is None:
        sys.exit("no decimal-comma locale installed; scripts/setup generates de_DE.UTF-8")

    base = {k: v for k, v in os.environ.items() if k.startswith(("ASAN_", "UBSAN_", "LSAN_"))}
    base["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        plain = dict(base, LC_ALL="C", LANG="C", TZ="UTC", HOME=a)
        other = dict(base, LC_ALL=comma, LANG=comma, LC_NUMERIC=comma, LANGUAGE="de",
                     TZ="Asia/Kathmandu", TMPDIR=b, COLUMNS="37", TERM="dumb")

        def build(spec, profile):
            model, gpu, precision = spec
            args = [binary, "build", model, "--gpu", gpu, "--precision", precision, "--mcore",
                    profile]
            first = subprocess.run(args, cwd=a, env=plain, capture_output=True)
            out = os.path.join(b, f"{model}-{gpu}-{precision}-{profile}.yaml")
            second = subprocess.run(args + ["-o", out], cwd=b, env=other, capture_output=True,
                                    umask=0o077)
            written = b""
            if os.path.exists(out):
                with open(out, "rb") as f:
                    written = f.read()
                os.remove(out)
            same = (first.returncode == second.returncode == 0 and first.stdout == written
                    and first.stderr == second.stderr)
            return " ".join(args[1:]), same, first, second, written

        jobs = [(spec, profile) for spec in recipes(binary) for profile in ("pinned", "gdn")]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda job: build(*job), jobs))

    bad = [r for r in results if not r[1]]
    for command, _, first, second, written in bad[:3]:
        print(f"DIFFERENT: qwen-recipe {command}\n  C: exit {first.returncode}, "
              f"{len(first.stdout)} bytes, stderr {first.stderr[:300]!r}\n  {comma}: exit "
              f"{second.returncode}, {len(written)} bytes, stderr {second.stderr[:300]!r}")
    print(f"{len(results) - len(bad)} of {len(results)} builds (recipe x GPU x precision x "
          f"profile) gave the same bytes under C and {comma} with another environment")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
