#!/usr/bin/env python3
"""The header's command, pasted into sh, rebuilds the file byte for byte.

For every golden file, and for builds with quoted override values, a --base file, --pipeline,
--recipes-dir and --mcore: runs the first line's command (after '# ') through `sh -c`, with
qwen-recipe first on the PATH, and compares its output with the file.

usage: reproduce_header.py QWEN_RECIPE GOLDEN_DIR RECIPES_DIR WORKDIR
"""
import difflib
import os
import pathlib
import shutil
import subprocess
import sys


def first_diff_lines(expected, received, expected_label, received_label, limit=60):
    """The first `limit` lines of a unified diff of two byte strings, as text."""
    lines = list(difflib.unified_diff(expected.decode(errors="replace").splitlines(True),
                                      received.decode(errors="replace").splitlines(True),
                                      expected_label, received_label))
    shown = "".join(lines[:limit])
    if len(lines) > limit:
        shown += f"... ({len(lines) - limit} more diff lines)\n"
    return shown.rstrip("\n")


def main():
    binary, golden, recipes, work = (pathlib.Path(a).resolve() for a in sys.argv[1:5])
    work = work / "reproduce-header"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bin_dir = work / "bin"
    bin_dir.mkdir()
    os.symlink(binary.resolve(), bin_dir / "qwen-recipe")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")

    def build(args):
        r = subprocess.run(["qwen-recipe", "-q", "build", *args], cwd=work, env=env, capture_output=True)
        if r.returncode != 0:
            sys.exit(f"build {args} failed: {r.stderr.decode(errors='replace')}")
        return r.stdout

    # The goldens, one directory per profile (manifest.yaml beside them is check's, not a config).
    files = {p.relative_to(golden).as_posix(): p.read_bytes()
             for p in sorted(golden.glob("*/*.yaml"))}
    (work / "my base.yaml").write_bytes(files["pinned/qwen35_35b-gb300-bf16.yaml"])
    built = [
        ["qwen35_35b", "--gpu", "gb300", "env_vars.PYTORCH_CUDA_ALLOC_CONF='expandable_segments:"
         "True,garbage_collection_threshold:0.8'", "+env_vars.A=it's $(x) `y` \"z\" ;"],
        ["--base", "my base.yaml", "--pipeline", "precision{p=bf16},benchmark-common",
         "train.train_iters=7"],
        ["qwen35_397b@gb300:fp8mx", "--mcore", "gdn"],
        # The files' overrides are in the header as tokens: it rebuilds without the file.
        ["qwen3_30b@b200", "--overrides", "my overrides.yaml", "train.train_iters=7"],
    ]
    (work / "my overrides.yaml").write_text(
        "logger:\n  wandb_project: 'it''s $(x) `y` ;'\n  wandb_exp_name: a,b\n"
        "train: {global_batch_size: 256}\n")
    for args in built:
        files[" ".join(args)] = build(args)
    # A --recipes-dir tree that differs from the built-in one: the header must name it.
    mine = work / "my recipes"
    shutil.copytree(recipes, mine)
    b200 = mine / "gpus/b200.yaml"
    b200.write_text(b200.read_text().replace("gbs=512", "gbs=256", 1))
    r = subprocess.run(["qwen-recipe", "-q", "--recipes-dir", str(mine), "build", "qwen3_30b",
                        "--gpu", "b200"], cwd=work, env=env, capture_output=True)
    files["--recipes-dir"] = r.stdout
    failures = []
    for name, text in files.items():
        first = text.split(b"\n", 1)[0].decode()
        if not first.startswith("# qwen-recipe "):
            failures.append(f"{name}: header {first!r}")
            continue
        again = subprocess.run(["sh", "-c", first[2:]], cwd=work, env=env, capture_output=True)
        if again.returncode != 0 or again.stdout != text:
            failure = (f"{name}: `{first[2:]}` exit {again.returncode}, "
                       f"{'same' if again.stdout == text else 'different'} output: "
                       f"{again.stderr.decode(errors='replace')[:200]}")
            if again.stdout != text:
                failure += "\n" + first_diff_lines(text, again.stdout, name,
                                                   "rebuilt by its header")
            failures.append(failure)
    if failures:
        sys.exit(f"{len(failures)} of {len(files)} headers do not rebuild their file:\n" +
                 "\n".join(failures))
    print(f"{len(files)} headers rebuild their files byte for byte")


if __name__ == "__main__":
    main()
