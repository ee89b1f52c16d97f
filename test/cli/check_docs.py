#!/usr/bin/env python3
"""Runs the examples in docs/*.md and compares their output, so the docs never drift.

An example is a ```console block: lines starting with `$ qwen-recipe ...` are run (in a fresh
scratch directory holding docs/examples/ and its folders, split into arguments as a shell would;
the pages show it as /home/user/jobs), and the lines after each, up to the next `$ ` line or the
end of the block, are its expected standard output.

usage: check_docs.py QWEN_RECIPE SCRATCH_DIR DOC.md... [--update]
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

BLOCK = re.compile(r"```console\n(.*?)```", re.S)
EXAMPLE_DIR = "/home/user/jobs"  # where the pages say their examples run


def run(binary, scratch, command):
    argv = shlex.split(command)
    assert argv[0] == "qwen-recipe", command
    result = subprocess.run([binary, *argv[1:]], cwd=scratch, capture_output=True, text=True)
    # Absolute paths (launch's config) show the scratch directory as the pages' example one.
    return result.stdout.replace(os.path.realpath(scratch), EXAMPLE_DIR)


def check(binary, scratch, path, update):
    text = open(path).read()
    failures = []

    def redo(match):
        lines = match.group(1).splitlines(keepends=True)
        out, i = [], 0
        while i < len(lines):
            line = lines[i]
            i += 1
            out.append(line)
            if not line.startswith("$ qwen-recipe"):
                continue
            expected = []
            while i < len(lines) and not lines[i].startswith("$ "):
                expected.append(lines[i])
                i += 1
            got = run(binary, scratch, line[2:].strip())
            if got != "".join(expected):
                failures.append(f"{path}: `{line[2:].strip()}` printed:\n{got}")
            out.append(got)
        return "```console\n" + "".join(out) + "```"

    new = BLOCK.sub(redo, text)
    if update and new != text:
        open(path, "w").write(new)
        return []
    return failures


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv
    binary, scratch, docs = args[0], args[1], args[2:]
    shutil.rmtree(scratch, ignore_errors=True)  # launch refuses to replace files
    os.makedirs(scratch)
    # Input files the examples name (an environment for --env) live in docs/examples/.
    for doc in docs:
        examples = os.path.join(os.path.dirname(doc), "examples")
        for name in os.listdir(examples) if os.path.isdir(examples) else []:
            src = os.path.join(examples, name)
            if os.path.isdir(src):  # a folder of files, e.g. user-recipes/
                shutil.copytree(src, os.path.join(scratch, name), dirs_exist_ok=True)
            else:
                shutil.copy(src, scratch)
    failures = [f for doc in docs for f in check(binary, scratch, doc, update)]
    if failures:
        sys.exit("\n".join(failures) + "\n(regenerate: check_docs.py ... --update, then review)")


if __name__ == "__main__":
    main()
