#!/usr/bin/env python3
"""Runs one bad-input case (test/errors/*.case) against qwen-recipe, as a user would meet it.

A case file is a few directives, then the input files it needs:

    # What the case checks (one or more comment lines).
    args: build --base in.yaml --pipeline benchmark-common     (shell quoting)
    stderr: ^error: in\\.yaml:2:1: ...                          (a Python regex, searched)
    exit: 2                                                    (optional; 2 is the default)
    sparse: big.yaml 300M                                      (a sparse file: no disk blocks)
    repeat: deep.yaml "model:\\n" 1 "- " 5000 "x" 1          (text made by repetition; \\n, \\t)
    symlink: out.yaml /dev/full                                (a symbolic link)
    chmod: in.yaml 000                                         (root loses its DAC override)
    mkdir: some/dir
    --- in.yaml
    model:
    <TAB>_target_: x

Every case must: exit with the expected code, print nothing on stdout, print exactly one line
on stderr that starts with 'error: ' and matches the regex, and leave the work directory as it
found it (no output file, no temporary file). A `build` case without -o (or --multirun) runs a
second time with `-o out.yaml` appended, which must fail with the same line and leave no out.yaml (nor its
temporary file). It runs in its own empty directory, which is removed afterwards.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

SIZES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_case(path):
    directives, files, current = [], {}, None
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        for line in f.read().split("\n")[:-1]:  # every line, including the last, ends in \n
            if line.startswith("--- "):
                current = line[4:].strip()
                files[current] = ""
            elif current is not None:
                files[current] += line + "\n"
            elif line.strip() and not line.startswith("#"):
                key, _, value = line.partition(":")
                directives.append((key.strip(), value.strip()))
    return directives, files


def snapshot(root):
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def remove_tree(root):
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
    shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--workdir", required=True)
    opts = ap.parse_args()

    directives, files = parse_case(opts.case)
    work = opts.workdir
    remove_tree(work)
    os.makedirs(work)

    args, pattern, want_rc, drop_dac = None, None, 2, False
    for key, value in directives:
        if key == "args":
            args = shlex.split(value)
        elif key == "stderr":
            pattern = value
        elif key == "exit":
            want_rc = int(value)
        elif key == "mkdir":
            os.makedirs(os.path.join(work, value))
        elif key == "sparse":
            name, size = value.split()
            with open(os.path.join(work, name), "wb") as f:
                f.truncate(int(size[:-1]) * SIZES[size[-1]] if size[-1] in SIZES else int(size))
        elif key == "repeat":
            name, *parts = shlex.split(value)
            text = "".join(t.replace("\\n", "\n").replace("\\t", "\t") * int(n)
                           for t, n in zip(parts[0::2], parts[1::2]))
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(text)
        elif key == "symlink":
            name, target = value.split()
            os.symlink(target, os.path.join(work, name))
        elif key != "chmod":
            sys.exit(f"{opts.case}: unknown directive '{key}'")
    for name, text in files.items():
        with open(os.path.join(work, name), "w", encoding="utf-8", errors="surrogateescape",
                  newline="") as f:
            f.write(text)
    for key, value in directives:  # after the files exist
        if key == "chmod":
            name, mode = value.split()
            os.chmod(os.path.join(work, name), int(mode, 8))
            drop_dac = True
    if args is None or pattern is None:
        sys.exit(f"{opts.case}: needs 'args:' and 'stderr:'")

    command = [opts.bin] + args
    if drop_dac and os.geteuid() == 0:
        # Root reads and writes through any mode bits; without these capabilities it cannot.
        caps = "-dac_override,-dac_read_search"
        command = ["setpriv", "--inh-caps=" + caps, "--bounding-set=" + caps] + command

    def run(argv):
        """Runs the command; returns (problems, first stderr line)."""
        before = snapshot(work)
        try:
            r = subprocess.run(command[:len(command) - len(args)] + argv, cwd=work,
                               capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return [f"no answer within 120 s: qwen-recipe {shlex.join(argv)}"], ""
        after = snapshot(work)
        err = r.stderr.decode("utf-8", "replace")
        lines = err.split("\n")
        problems = []
        if r.returncode != want_rc:
            problems.append(f"exit code {r.returncode}, expected {want_rc}")
        if r.stdout:
            problems.append(f"stdout is not empty: {r.stdout[:200]!r}")
        if len(lines) != 2 or lines[1] != "":
            problems.append("stderr is not exactly one line")
        if not err.startswith("error: "):
            problems.append("stderr does not start with 'error: '")
        if not re.search(pattern, lines[0]):
            problems.append(f"stderr does not match: {pattern}")
        if after != before:
            problems.append(f"files left behind: {sorted(after - before)}")
        if problems:
            problems = [f"qwen-recipe {shlex.join(argv)}"] + problems + [f"stderr: {err[:4000]}"]
        return problems, lines[0]

    problems, line = run(args)
    # A build that fails must fail the same with -o, and leave no output file behind (a
    # --multirun build takes no -o: its case multirun-with-output says so).
    if not problems and "build" in args and "-o" not in args and "--multirun" not in args:
        with_output, line_o = run(args + ["-o", "out.yaml"])
        problems = with_output
        if not problems and line_o != line:
            problems = [f"with -o out.yaml the message differs: {line_o}"]

    if problems:
        for key, value in directives:  # no big file stays on disk, even on failure
            if key == "sparse":
                os.remove(os.path.join(work, value.split()[0]))
        print("FAIL: " + "\n  ".join(problems))
        return 1
    remove_tree(work)
    print(f"ok: {line[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
