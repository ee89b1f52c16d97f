#!/usr/bin/env python3
"""The dotlist round trip through the CLI, as a user runs it:

    qwen-recipe build A $(qwen-recipe diff A B -o dotlist)  ==  qwen-recipe build B

(one token per line, so no word splitting), comparing YAML bodies without the comment header.
Also diffs a built file read from standard input against the recipe it came from.

usage: dotlist_roundtrip.py QWEN_RECIPE A B [--mcore PROFILE]
"""
import subprocess
import sys


def run(argv, stdin=None):
    return subprocess.run(argv, input=stdin, capture_output=True, text=True)


def main():
    binary, a, b = sys.argv[1:4]
    extra = sys.argv[4:]
    diff = run([binary, "-q", "diff", a, b, "-o", "dotlist", *extra])
    if diff.returncode != 1 or not diff.stdout:
        sys.exit(f"diff {a} {b} -o dotlist: exit {diff.returncode}, expected 1 with overrides\n"
                 f"{diff.stdout}{diff.stderr}")
    tokens = diff.stdout.splitlines()
    again = run([binary, "-q", "build", a, "--no-header", *extra, *tokens])
    want = run([binary, "-q", "build", b, "--no-header", *extra])
    if again.returncode != 0 or want.returncode != 0:
        sys.exit(f"build failed:\n{again.stderr}{want.stderr}")
    if again.stdout != want.stdout:
        sys.exit(f"build {a} + dotlist differs from build {b}; tokens:\n" + "\n".join(tokens))
    # The file as built, from standard input, is the recipe it came from.
    same = run([binary, "-q", "diff", "-", b, *extra], stdin=want.stdout)
    if same.returncode != 0 or "returned no differences" not in same.stdout:
        sys.exit(f"diff - {b} of its own build: exit {same.returncode}\n{same.stdout}{same.stderr}")
    print(f"{a} -> {b}: {len(tokens)} overrides reproduce it")


if __name__ == "__main__":
    main()
