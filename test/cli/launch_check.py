#!/usr/bin/env python3
"""Runs a script from `qwen-recipe launch` the way Slurm (or torchrun) would, with stand-ins for
srun, scontrol, torchrun and Megatron-Bridge, and checks what reaches the entry point: the
recipe's environment, the config's absolute path, run_script.py's flags, and that run_script's
recipe look-up returns the config (ConfigContainer.from_yaml).

With `dropped`, the stand-in from_yaml drops model.gdn_kernel_backend of a --mcore gdn config (a
container whose Megatron-Core lacks it): the torchrun script must stop, naming the key and --mcore.

usage: launch_check.py QWEN_RECIPE WORKDIR slurm|torchrun|dropped
"""
import os
import pathlib
import stat
import subprocess
import sys

FAKE_RUN_SCRIPT = '''
import json, os, sys
def get_perf_recipe_by_name(**kwargs):
    raise SystemExit("the loader did not replace get_perf_recipe_by_name")
def main():
    recipe = get_perf_recipe_by_name(model_recipe_name="x", task="pretrain", num_gpus=1, gpu="g",
                                     precision="bf16")
    out = {"recipe": str(recipe), "argv": sys.argv,
           "env": {k: os.environ.get(k) for k in ("PYTORCH_CUDA_ALLOC_CONF", "USE_MNNVL",
                                                  "TORCH_NCCL_HIGH_PRIORITY", "MASTER_ADDR")}}
    print(json.dumps(out))
'''
# Like Megatron-Bridge's lenient from_yaml: keys its classes lack are dropped (HF sub-configs'
# model_type always; QR_DROP names more, as an older Megatron-Core would).
FAKE_CONFIG = '''
import os, yaml
class ConfigContainer:
    def __init__(self, path):
        self.path = path
    def __str__(self):
        return "from_yaml:" + self.path
    @classmethod
    def from_yaml(cls, path):
        return cls(path)
    def to_dict(self):
        drop = set(filter(None, os.environ.get("QR_DROP", "").split(",")))
        def strip(d, prefix=""):
            return {k: strip(v, prefix + str(k) + ".") for k, v in d.items()
                    if k != "model_type" and prefix + str(k) not in drop} if isinstance(d, dict) else d
        with open(self.path) as f:
            return strip(yaml.safe_load(f))
'''


def shim(path, body):
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def main():
    binary, workdir, fmt = sys.argv[1], pathlib.Path(sys.argv[2]) / ("launch-" + sys.argv[3]), sys.argv[3]
    workdir.mkdir(parents=True, exist_ok=True)
    bridge = workdir / "mbridge"
    (bridge / "scripts/performance").mkdir(parents=True, exist_ok=True)
    (bridge / "scripts/performance/run_script.py").write_text(FAKE_RUN_SCRIPT)
    pkg = workdir / "py/megatron/bridge/training"
    pkg.mkdir(parents=True, exist_ok=True)
    for d in ("megatron", "megatron/bridge", "megatron/bridge/training"):
        (workdir / "py" / d / "__init__.py").write_text("")
    (pkg / "config.py").write_text(FAKE_CONFIG)
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim(bin_dir / "python", 'exec python3 "$@"')
    shim(bin_dir / "scontrol", 'echo node-a; echo node-b')
    shim(bin_dir / "srun", 'while [[ "$1" == --* ]]; do shift; done; exec "$@"')
    shim(bin_dir / "torchrun", 'while [[ "$1" == --* ]]; do shift; done; exec "$@"')
    dropped = fmt == "dropped"
    fmt = "torchrun" if dropped else fmt
    script = workdir / ("job." + ("sbatch" if fmt == "slurm" else "sh"))
    gen = subprocess.run([binary, "-q", "launch", "qwen35_397b@gb300", "--format", fmt,
                          *(["--mcore", "gdn"] if dropped else []),
                          "--megatron-bridge", str(bridge), "--container-image", "img:1",
                          "--force", "-o", str(script.name)],
                         cwd=workdir, capture_output=True, text=True)
    if gen.returncode != 0:
        sys.exit("launch failed: " + gen.stderr)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(workdir / "py"),
               SLURM_JOB_NODELIST="node-[a-b]", SLURM_JOB_ID="4242", NODE_RANK="0",
               MASTER_ADDR="node-a", USE_MNNVL="0")
    if dropped:
        env["QR_DROP"] = "model.gdn_kernel_backend"
    run = subprocess.run(["bash", str(script)], cwd=workdir, env=env, capture_output=True, text=True)
    if dropped:
        want = ("did not load model.gdn_kernel_backend from", "it was built with --mcore gdn")
        if run.returncode == 0 or not all(w in run.stderr for w in want) or run.stdout:
            sys.exit(f"a partly loaded config was not refused: {run.returncode} {run.stderr}")
        print("the loader refused a config that from_yaml did not load whole: " + run.stderr)
        return
    if run.returncode != 0:
        sys.exit(f"the {fmt} script failed:\n{run.stdout}{run.stderr}")
    import json
    got = json.loads(run.stdout)
    config = str((workdir / "job.yaml").resolve())
    want_argv = ["run_script.py", "--domain", "qwen3vl", "-m", "qwen_vl", "-mr",
                 "qwen35_vl_397b_a17b", "--task", "pretrain", "-ng", "64", "-g", "gb300", "-c",
                 "bf16"]
    checks = [
        (got["recipe"] == "from_yaml:" + config, "recipe look-up returns the config"),
        (got["argv"] == want_argv, "run_script flags"),
        (got["env"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True", "recipe env"),
        (got["env"]["TORCH_NCCL_HIGH_PRIORITY"] == "1", "recipe env"),
        (got["env"]["USE_MNNVL"] == "0", "a variable already set wins"),
        (got["env"]["MASTER_ADDR"] == "node-a", "rendezvous address"),
        ((workdir / "job.yaml").read_text().startswith("# qwen-recipe build qwen35_397b"), "config"),
    ]
    failed = [what for ok, what in checks if not ok]
    if failed:
        sys.exit(f"{fmt}: wrong {', '.join(failed)}: {got}")
    print(f"{fmt} script ran the entry point on {config}")


if __name__ == "__main__":
    main()
