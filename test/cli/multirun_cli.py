#!/usr/bin/env python3
"""Sweeps (--multirun) and the launcher shortcuts (--tp ...) as a user meets them.

usage: multirun_cli.py QWEN_RECIPE WORKDIR
Each run's config must be byte for byte what a single build with that run's overrides writes;
multirun.yaml must index them in Hydra's order; a failing sweep must leave the directory as it
was; launch --multirun must write one script per config that names it.
"""

import os
import shutil
import subprocess
import sys

BIN, WORK = (os.path.abspath(a) for a in sys.argv[1:3])
failures = []


def run(*args, cwd=None):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, cwd=cwd or WORK)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what, detail=""):
    if not cond:
        failures.append(f"{what}\n{detail}")


def read(path):
    with open(os.path.join(WORK, path), encoding="utf-8") as f:
        return f.read()


def listing(d):
    return sorted(os.listdir(os.path.join(WORK, d)))


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

# build --multirun: 2 x 2 runs, the first axis slowest, names from the swept values.
rc, out, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "--multirun", "--out-dir", "s",
                   "train.global_batch_size=256,512", "train.train_iters=10",
                   "model.tensor_model_parallel_size=range(1,3)")
expect(rc == 0 and out == "", "build --multirun: exit 0, nothing on stdout", err)
names = ["global_batch_size=%d,tensor_model_parallel_size=%d" % (g, t)
         for g in (256, 512) for t in (1, 2)]
expect(listing("s") == sorted([n + ".yaml" for n in names] + ["multirun.yaml"]),
       "build --multirun: one config per combination and the index", str(listing("s")))
for g in (256, 512):
    for t in (1, 2):
        rc, single, err = run("build", "qwen3_30b", "--gpu", "b200", "-q",
                              f"train.global_batch_size={g}", "train.train_iters=10",
                              f"model.tensor_model_parallel_size={t}")
        name = "global_batch_size=%d,tensor_model_parallel_size=%d.yaml" % (g, t)
        expect(rc == 0 and read(os.path.join("s", name)) == single,
               f"{name}: byte for byte the single build with its overrides", err)
index = read("s/multirun.yaml")
expect(index.startswith("runs:\n- choices:\n  - train.global_batch_size=256\n"
                        "  - model.tensor_model_parallel_size=1\n"
                        "  config: global_batch_size=256,tensor_model_parallel_size=1.yaml\n"),
       "multirun.yaml lists the runs in order", index)
expect(index.endswith("sweep:\n- key: train.global_batch_size\n  values:\n  - '256'\n  - '512'\n"
                      "- key: model.tensor_model_parallel_size\n  values:\n  - '1'\n  - '2'\n"),
       "multirun.yaml lists the axes", index)

# The same sweep again is deterministic, byte for byte.
before = {n: read(os.path.join("s", n)) for n in listing("s")}
rc, _, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "--multirun", "--out-dir", "s",
                 "train.global_batch_size=256,512", "train.train_iters=10",
                 "model.tensor_model_parallel_size=range(1,3)")
expect(rc == 0 and {n: read(os.path.join("s", n)) for n in listing("s")} == before,
       "a sweep run twice writes the same bytes", err)

# A sweep one of whose runs fails writes nothing, into an existing directory too.
rc, out, err = run("build", "qwen35_397b", "--gpu", "gb300", "-q", "--multirun", "--out-dir", "s",
                   "train.train_iters=5", "model.tensor_model_parallel_size=range(1,4)")
expect(rc == 2 and out == "" and err.count("\n") == 1 and
       err.startswith("error: sweep run 'tensor_model_parallel_size=3' (3 of 3): check "),
       "a failing run: exit 2, one error line naming the run", err)
expect({n: read(os.path.join("s", n)) for n in listing("s")} == before,
       "a failing sweep leaves the directory as it was", str(listing("s")))

# Quoted values with commas are one value; names encode what a file name cannot hold.
rc, _, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "-m", "--out-dir", "q",
                 "+env_vars.MY_TEXT='a,b',c/d")
expect(rc == 0 and listing("q") == ["MY_TEXT=%27a%2Cb%27.yaml", "MY_TEXT=c%2Fd.yaml",
                                    "multirun.yaml"], "quoted and encoded names", err + str(
                                        listing("q") if rc == 0 else ""))
if rc == 0:
    expect("  MY_TEXT: a,b\n" in read("q/MY_TEXT=%27a%2Cb%27.yaml"), "'a,b' is one value")

# launch --multirun: a script per config, naming it; refuses to replace without --force.
rc, out, err = run("launch", "qwen3_30b", "--gpu", "b200", "-q", "-A", "acct", "-p", "batch",
                   "--multirun", "--out-dir", "l", "train.train_iters=10,20", "--tp", "2")
expect(rc == 0 and out == "", "launch --multirun: exit 0, nothing on stdout", err)
expect(listing("l") == ["multirun.yaml", "train_iters=10.sbatch", "train_iters=10.yaml",
                        "train_iters=20.sbatch", "train_iters=20.yaml"],
       "launch --multirun writes a config and a script per run", str(listing("l")))
if rc == 0:
    script = read("l/train_iters=20.sbatch")
    config = os.path.join(WORK, "l", "train_iters=20.yaml")
    expect(f"CONFIG={config}\n" in script, "the script names its own config", script[:600])
    expect("#SBATCH --job-name=qwen3_30b-b200-bf16-train_iters=20\n" in script,
           "the job name ends with the run's name")
    expect(read("l/train_iters=20.yaml").startswith(
        "# qwen-recipe build qwen3_30b --gpu b200 --precision bf16 --mcore pinned --tp 2 "
        "train.train_iters=20\n"), "the run's header rebuilds it, shortcut included")
    expect("  launch: train_iters=10.sbatch\n" in read("l/multirun.yaml"),
           "the index names each launch file")
rc, _, err = run("launch", "qwen3_30b", "--gpu", "b200", "-q", "--multirun", "--out-dir", "l",
                 "train.train_iters=10,20", "--force", "--format", "torchrun")
expect(rc == 0 and "train_iters=20.sh" in listing("l"), "--force writes over, torchrun .sh", err)

# Shortcuts: their own step in --print-pipeline and explain; the dotlist comes after them.
rc, out, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "--print-pipeline", "--tp", "2",
                   "--gbs", "256", "train.train_iters=5")
expect(rc == 0 and "shortcuts: --tp 2 --gbs 256    (launcher shortcuts" in out and
       "overrides: train.train_iters=5" in out, "--print-pipeline shows the shortcuts step", out)
rc, out, err = run("explain", "qwen3_30b", "--gpu", "b200", "-q", "--tp", "2",
                   "model.sequence_parallel", "env_vars.CUDA_DEVICE_MAX_CONNECTIONS")
expect(rc == 0 and "  shortcut '--tp 2': false -> true\n" in out and
       "env_vars.CUDA_DEVICE_MAX_CONNECTIONS: 32\n" in out, "explain names the shortcut", out)
rc, out, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "--tp", "2",
                   "model.sequence_parallel=false")
expect(rc == 0 and "  sequence_parallel: false\n" in out, "the dotlist wins over a shortcut",
       err)

# The shortcuts sweep too (--tp 1,2), each run with what follows its value.
rc, _, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "-m", "--out-dir", "t", "--tp", "1,2",
                 "--gbs", "256")
expect(rc == 0 and listing("t") == ["multirun.yaml", "tp=1.yaml", "tp=2.yaml"],
       "--multirun --tp 1,2: a config per TP", err + str(listing("t") if rc == 0 else ""))
if rc == 0:
    for tp, sp in ((1, "false"), (2, "true")):
        rc, single, err = run("build", "qwen3_30b", "--gpu", "b200", "-q", "--tp", str(tp),
                              "--gbs", "256")
        expect(read(f"t/tp={tp}.yaml") == single and f"  sequence_parallel: {sp}\n" in single,
               f"tp={tp}.yaml: the single build with --tp {tp}", err)
    expect("  - --tp 1\n" in read("t/multirun.yaml") and "- key: --tp\n" in read("t/multirun.yaml"),
           "the index names the shortcut sweep", read("t/multirun.yaml"))

# --overrides on explain and launch, as on build.
with open(os.path.join(WORK, "o.yaml"), "w", encoding="utf-8") as f:
    f.write("train:\n  train_iters: 7\n")
rc, out, err = run("explain", "qwen3_30b", "--gpu", "b200", "-q", "--overrides", "o.yaml",
                   "train.train_iters")
expect(rc == 0 and "override 'train.train_iters=7': 50 -> 7" in out, "explain --overrides", out)
rc, out, err = run("launch", "qwen3_30b", "--gpu", "b200", "-q", "--overrides", "o.yaml",
                   "-o", "one.sbatch")
expect(rc == 0 and "  train_iters: 7\n" in read("one.yaml"), "launch --overrides", err)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
