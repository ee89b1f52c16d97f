#!/usr/bin/env python3
"""The project's habits, enforced: every tracked C/C++/CUDA file is as clang-format writes it
(.clang-format), every tracked shell script is clean under shellcheck (warnings and errors), and
every tracked Python file is clean under pyflakes (unused imports, undefined names). Files come
from `git ls-files`, so build trees and carried folders are never judged.

usage: check_habits.py clang-format|shellcheck|pyflakes REPO_ROOT
"""
import subprocess
import sys

SHELL_NAMES = ("scripts/setup", "scripts/test", ".ci/run")


def tracked(root, *patterns):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", *patterns],
                         capture_output=True, check=True).stdout
    return [p.decode() for p in out.split(b"\0") if p]


def main():
    habit, root = sys.argv[1], sys.argv[2]
    if habit == "clang-format":
        files = tracked(root, "*.c", "*.h", "*.cpp", "*.hpp", "*.cc", "*.cu", "*.cuh")
        cmd = ["clang-format", "--dry-run", "-Werror"]
    elif habit == "shellcheck":
        files = tracked(root, "*.sh", *SHELL_NAMES)
        cmd = ["shellcheck", "-S", "warning"]
    elif habit == "pyflakes":
        files = tracked(root, "*.py")
        cmd = ["pyflakes3"]
    else:
        sys.exit(f"check_habits.py: unknown habit '{habit}'")
    if not files:
        sys.exit(f"check_habits.py: no tracked files for {habit} under {root}")
    bad = subprocess.run(cmd + files, cwd=root).returncode
    if bad:
        sys.exit(f"{habit}: {len(files)} files checked; fix what it reports above")
    print(f"{habit}: {len(files)} tracked files clean")


if __name__ == "__main__":
    main()
