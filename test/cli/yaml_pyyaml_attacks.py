#!/usr/bin/env python3
"""Configs that PyYAML's safe_load (what Megatron-Bridge trains on) reads otherwise than a reader
that ignores its rules: `validate`, `diff` and `launch FILE` must refuse each with one error line
naming file:line:col, exit 2, nothing on stdout and no file written (issue 41, item 2).

    yaml_pyyaml_attacks.py QWEN_RECIPE GOLDEN.yaml WORKDIR CASE

GOLDEN is a config `build` wrote (with its header, so that `launch FILE` takes it). Each case
edits a copy; the test first checks with PyYAML that the edit is an attack (PyYAML reads another
value, or refuses the file), then runs the three subcommands on it.
"""

import os
import re
import shutil
import subprocess
import sys

import yaml

GBS = "\n  global_batch_size: 512\n"  # in train:, where the hidden key lands

# name: (edit of the golden text, the regex the error's reason must match)
CASES = {
    # A comment that PyYAML ends at U+2028 and that hides a key from other readers.
    "comment-line-separator": (
        lambda t: t.replace(GBS, GBS + "  # reviewed\u2028  global_batch_size: 7\n", 1),
        r"U\+2028"),
    "comment-paragraph-separator": (
        lambda t: t.replace(GBS, GBS + "  # reviewed\u2029  global_batch_size: 7\n", 1),
        r"U\+2029"),
    "comment-next-line": (
        lambda t: t.replace(GBS, GBS + "  # reviewed\x85  global_batch_size: 7\n", 1),
        r"U\+0085"),
    "value-line-separator": (
        lambda t: t.replace("  async_strategy: mcore\n", "  async_strategy: mcore\u2028x\n", 1),
        r"U\+2028"),
    "tab-after-value": (
        lambda t: t.replace("  async_strategy: mcore\n", "  async_strategy: mcore\t\n", 1),
        r"a tab"),
    "tab-inside-value": (
        lambda t: t.replace("  async_strategy: mcore\n", "  async_strategy: mc\tore\n", 1),
        r"a tab"),
    "value-equals": (
        lambda t: t.replace("  async_strategy: mcore\n", "  async_strategy: =\n", 1),
        r"'=' is YAML 1\.1's value key"),
    "value-merge": (
        lambda t: t.replace("  async_strategy: mcore\n", "  async_strategy: <<\n", 1),
        r"'<<' is YAML 1\.1's merge key"),
}


def line_breaks_only(binary, golden, work):
    """A value made only of line breaks ("\n", which we write as '\n\n  ') must not read as ''
    (on 4ec57ab `diff` found no difference between the two)."""
    with open(golden, encoding="utf-8") as f:
        original = f.read()
    texts = {"breaks.yaml": "  async_strategy: '\n\n    '\n", "empty.yaml": "  async_strategy: ''\n"}
    for name, line in texts.items():
        with open(os.path.join(work, name), "w", encoding="utf-8") as f:
            f.write(original.replace("  async_strategy: mcore\n", line, 1))
        with open(os.path.join(work, name), encoding="utf-8") as f:
            want = "\n" if name == "breaks.yaml" else ""
            if yaml.safe_load(f)["checkpoint"]["async_strategy"] != want:
                return ["PyYAML reads %s otherwise than this test assumes" % name]
    r = run(binary, ["diff", "breaks.yaml", "empty.yaml"], work)
    if r.returncode != 1 or "checkpoint.async_strategy" not in r.stdout:
        return ["diff breaks.yaml empty.yaml: exit %d, stdout %r, stderr %r (want exit 1 and "
                "the difference in checkpoint.async_strategy)" % (r.returncode, r.stdout[-300:],
                                                                   r.stderr[-300:])]
    return []


def run(binary, args, cwd):
    return subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True,
                          errors="replace", check=False)


def main():
    binary, golden, workdir, case = sys.argv[1:5]
    binary = os.path.abspath(binary)
    work = os.path.join(workdir, "yaml-attack-" + case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if case == "line-breaks-only":
        failures = line_breaks_only(binary, golden, work)
        shutil.rmtree(work, ignore_errors=True)
        print("\n".join(failures + ["%s: %s" % (case, "FAILED" if failures else "ok")]))
        return 1 if failures else 0
    edit, reason = CASES[case]
    with open(golden, encoding="utf-8") as f:
        original = f.read()
    attacked = edit(original)
    if attacked == original:
        sys.exit("error: the edit of case %s changed nothing in %s" % (case, golden))
    try:
        if yaml.safe_load(attacked) == yaml.safe_load(original):
            sys.exit("error: PyYAML reads case %s as the original: not an attack" % case)
    except yaml.YAMLError:
        pass  # PyYAML refuses the file: so must we
    for name, text in (("c.yaml", original), ("attacked.yaml", attacked)):
        with open(os.path.join(work, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    failures = []
    for args in (["validate", "attacked.yaml"], ["diff", "c.yaml", "attacked.yaml"],
                 ["launch", "attacked.yaml", "-o", "j.sbatch"]):
        before = set(os.listdir(work))
        r = run(binary, args, work)
        pattern = r"error: attacked\.yaml:\d+:\d+: .*" + reason
        lines = r.stderr.splitlines()
        if r.returncode != 2 or r.stdout or len(lines) != 1 or not re.match(pattern, lines[0]):
            failures.append("%s: exit %d, stdout %r, stderr %r (want exit 2, one line matching %r)"
                            % (" ".join(args), r.returncode, r.stdout[:200], r.stderr[:300],
                               pattern))
        if set(os.listdir(work)) != before:
            failures.append("%s left %s" % (" ".join(args), sorted(set(os.listdir(work)) - before)))
    shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(failure)
    print("%s: %s" % (case, "FAILED" if failures else "refused by validate, diff and launch"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
