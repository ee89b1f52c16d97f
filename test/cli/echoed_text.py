#!/usr/bin/env python3
"""What qwen-recipe echoes of a user's text is escaped: one `error:` line, no terminal controls.

usage: echoed_text.py QWEN_RECIPE WORKDIR

A raw line break (LF, CR, NEL, U+2028, U+2029) in a recipe name, an option's value, a path, an
override key, a sweep function, a pipeline or a golden's name could forge a second `error:` line,
and ESC/BEL could retitle or clear the terminal, and a bidi override reorder the line. For each
case: exit 2, nothing on stdout, stderr exactly one line that starts with `error: ` (no `info:`
or `warning:` before it, at most 4 KiB) and holds none of those characters; check's report (stdout) holds none
of them either.
"""
import os
import pathlib
import shutil
import subprocess
import sys

FORGE = "\nerror: forged line"
TERM = "\x1b]0;pwned\x07\x1b[2J\x9b1m"
BREAKS = "\r\x85\u2028\u2029"
BIDI = "\u202e\u2066\u200f"
BAD = set(chr(c) for c in list(range(0x20)) + [0x7f] + list(range(0x80, 0xa0))) | set(
    "\u2028\u2029\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean(text):
    return not any(ch in BAD for ch in text)


def main():
    binary, work = os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]) / "echoed-text"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hostile = [FORGE, TERM, BREAKS, BIDI]
    cases = []
    for h in hostile:
        cases += [
            ["build", "qwen35_35b" + h, "--gpu", "gb300"],
            ["build", "qwen35_35b", "--gpu", "gb300" + h],
            ["build", "qwen35_35b", "--gpu", "gb300", "--precision", "bf16" + h],
            ["build", "qwen35_35b", "--gpu", "gb300", "train.global_batch_size" + h + "=1"],
            ["build", "qwen35_35b", "--gpu", "gb300", "train.no_such" + h + "=1"],
            ["build", "qwen35_35b", "--gpu", "gb300", "train.global_batch_size=x" + h],
            ["build", "qwen35_35b", "--gpu", "gb300", "--tp", "2" + h],
            ["build", "qwen35_35b", "--gpu", "gb300", "--multirun", "--out-dir", "runs",
             "train.global_batch_size=rang" + h + "e(1,3)"],
            ["build", "qwen35_35b", "--gpu", "gb300", "--pipeline", "benchmark-common" + h],
            ["build", "--base", "no-such" + h + ".yaml", "--pipeline", "benchmark-common"],
            ["build", "qwen35_35b", "--gpu", "gb300", "--overrides", "none" + h + ".yaml"],
            ["build", "qwen35_35b", "--gpu", "gb300", "--no-such-option" + h],
            ["no-such-command" + h],
            ["validate", "no-such" + h + ".yaml"],
            ["validate", "qwen35_35b@gb300", "--env", "none" + h + ".txt"],
            ["diff", "no-such" + h + ".yaml", "qwen35_35b@gb300"],
            ["explain", "qwen35_35b" + h, "--gpu", "gb300", "train.global_batch_size"],
            ["explain", "qwen35_35b", "--gpu", "gb300", "train.no_such" + h],
            ["launch", "qwen35_35b", "--gpu", "gb300", "--tp", "2", "--partition",
             "p" + (h if h != BIDI else "\n")],
            ["launch", "qwen35_35b", "--gpu", "gb300", "--env-file", "none" + h + ".env"],
            ["launch", "no-such" + h + ".yaml"],
            ["check", "no-such" + h + ".yaml"],
            ["--recipes-dir", "no-such" + h, "list"],
        ]
    # However long the text, the line is bounded (4 KiB and a note of what was cut).
    cases += [["build", "qwen35_35b", "--gpu", "gb300", "--precision", "x" * 100_000],
              ["validate", "y" * 4000 + "/" + "z" * 200 + ".yaml"]]
    failures = []
    for argv in cases:
        r = subprocess.run([binary, *argv], cwd=work, capture_output=True, stdin=subprocess.DEVNULL)
        err = r.stderr.decode("utf-8", "surrogateescape")
        lines = err.split("\n")
        problems = []
        if r.returncode != 2:
            problems.append(f"exit {r.returncode}")
        if r.stdout:
            problems.append("stdout not empty")
        if len(lines) != 2 or lines[1] != "" or not err.startswith("error: "):
            problems.append("stderr is not one error: line")
        if len(err) > 4200:
            problems.append(f"{len(err)} bytes")
        if not clean(lines[0]):
            problems.append("raw control, line break or bidi character echoed")
        if problems:
            failures.append(f"{argv!r}: {', '.join(problems)}: {err[:300]!r}")

    # check's report names goldens: escaped there too, and in the error for a missing one.
    name = "g" + TERM + FORGE.replace("\n", "") + ".yaml"
    (work / name).write_text("train:\n  global_batch_size: 1\n")
    (work / "manifest.yaml").write_text(
        'goldens:\n  - spec: qwen35_35b@gb300\n    golden: "g\\e]0;pwned\\a\\e[2J\\x9b1merror: '
        'forged line.yaml"\n')
    r = subprocess.run([binary, "check", "manifest.yaml", "-j", "1"], cwd=work,
                       capture_output=True, stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "surrogateescape")
    if r.returncode != 1 or not clean(out.replace("\n", "")) or "\\x1B" not in out:
        failures.append(f"check report: exit {r.returncode}: {out[:300]!r}")
    os.remove(work / name)
    r = subprocess.run([binary, "check", "manifest.yaml", "-j", "1"], cwd=work,
                       capture_output=True, stdin=subprocess.DEVNULL)
    err = r.stderr.decode("utf-8", "surrogateescape")
    if r.returncode != 2 or err.count("\n") != 1 or not clean(err[:-1]):
        failures.append(f"check, missing golden: exit {r.returncode}: {err[:300]!r}")

    if failures:
        print(f"FAIL: {len(failures)} of {len(cases) + 2} cases:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"echoed text: {len(cases) + 2} cases ok")


if __name__ == "__main__":
    main()
