#!/usr/bin/env python3
"""Bash completion as a user meets it: an interactive bash on a pseudo-terminal, the script of
`qwen-recipe completion bash` sourced, text typed, TAB pressed, and the command line read back.

Unlike setting COMP_WORDS by hand, this goes through readline and bash's own word splitting at
COMP_WORDBREAKS (which holds '@', ':' and '='), the part that cuts recipe specs and pipeline text.

usage: completion_pty.py QWEN_RECIPE WORKDIR
"""
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time

# What is typed (TAB once) -> the command line afterwards. A trailing space means bash took the
# completion as a whole word; none means it stopped at a common prefix (or was told nospace).
CASES = [
    ("qwen-recipe va\t", "qwen-recipe validate "),
    ("qwen-recipe build qwen35_397b@gb3\t", "qwen-recipe build qwen35_397b@gb300"),
    ("qwen-recipe build qwen35_397b@gb300:fp8m\t", "qwen-recipe build qwen35_397b@gb300:fp8mx "),
    ("qwen-recipe explain qwen35_35b@gb200:b\t", "qwen-recipe explain qwen35_35b@gb200:bf16 "),
    ("qwen-recipe validate qwen35_397b@b2\t", "qwen-recipe validate qwen35_397b@b200"),
    ("qwen-recipe diff qwen35_35b@gb300:bf16 qwen35_35b@gb300:fp8c\t",
     "qwen-recipe diff qwen35_35b@gb300:bf16 qwen35_35b@gb300:fp8cs "),
    ("qwen-recipe build qwen35_397b --gpu gb300 --pipeline precision{p=bf16},qwen35-vl-com\t",
     "qwen-recipe build qwen35_397b --gpu gb300 --pipeline precision{p=bf16},qwen35-vl-common"),
    ("qwen-recipe build qwen35_397b --gpu gb300 --pipeline=precision{p=bf16},benchmark-c\t",
     "qwen-recipe build qwen35_397b --gpu gb300 --pipeline=precision{p=bf16},benchmark-common"),
    ("qwen-recipe build qwen35_397b --gpu=gb3\t", "qwen-recipe build qwen35_397b --gpu=gb300 "),
    # In quotes, readline closes the quote after the one match.
    ("qwen-recipe build x --pipeline 'precision{p=bf16},qwen35-vl-com\t",
     "qwen-recipe build x --pipeline 'precision{p=bf16},qwen35-vl-common'"),
    ("qwen-recipe build x --pipeline='benchmark-common,qwen35-vl-p\t",
     "qwen-recipe build x --pipeline='benchmark-common,qwen35-vl-post"),
    ('qwen-recipe validate "qwen35_397b@gb300:fp8\t', 'qwen-recipe validate "qwen35_397b@gb300:fp8'),
    ("qwen-recipe build x --precision fp8m\t", "qwen-recipe build x --precision fp8mx "),
    ("qwen-recipe validate x --str\t", "qwen-recipe validate x --strict "),
    ("qwen-recipe validate x --format j\t", "qwen-recipe validate x --format json "),
    ("qwen-recipe launch x --format tor\t", "qwen-recipe launch x --format torchrun "),
    ("qwen-recipe diff a b -o dot\t", "qwen-recipe diff a b -o dotlist "),
]

MARK = re.compile(rb"<<LINE:(.*?)>>")


def read_until(fd, pattern, timeout=10.0):
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            m = pattern.search(buf)
            if m:
                return m, buf
    return None, buf


def main():
    binary, workdir = sys.argv[1], sys.argv[2]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    script = os.path.join(workdir, "qwen-recipe.bash")
    with open(script, "w") as f:
        f.write(subprocess.run([binary, "completion", "bash"], check=True, capture_output=True,
                               text=True).stdout)
    inputrc = os.path.join(workdir, "inputrc")
    with open(inputrc, "w") as f:
        f.write("set bell-style none\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": workdir, "TERM": "dumb",
           "INPUTRC": inputrc, "PS1": "$ ", "LC_ALL": "C"}
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(workdir)
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
    failures = []
    try:
        # Ctrl-X Ctrl-P prints the line being edited, then Ctrl-U clears it for the next case.
        setup = (f"source {script}; bind -x '\"\\C-x\\C-p\": printf \"<<LINE:%s>>\\n\" "
                 "\"$READLINE_LINE\"'; echo ready-$((6*7))\n")
        os.write(fd, setup.encode())
        m, out = read_until(fd, re.compile(rb"ready-42"))
        if m is None:
            print("bash did not start:\n" + out.decode(errors="replace"))
            return 1
        for typed, expected in CASES:
            os.write(fd, typed.encode())
            time.sleep(0.3)  # let readline run the completion before the next key
            os.write(fd, b"\x18\x10")
            m, out = read_until(fd, MARK)
            os.write(fd, b"\x15")
            got = m.group(1).decode(errors="replace") if m else None
            if got != expected:
                failures.append(f"typed {typed!r}: got {got!r}, expected {expected!r}")
        os.write(fd, b"exit\n")
    finally:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    for f in failures:
        print(f)
    print(f"{len(CASES) - len(failures)} of {len(CASES)} completions as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
