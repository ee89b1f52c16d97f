"""Stand-in for Megatron-Bridge's scripts/performance/run_script.py, for the launch tests.

Like the real one it builds its recipe through the module-level get_perf_recipe_by_name (which
the launch script's loader replaces with the config it loaded) and is started through main().
Instead of training, each rank writes one JSON record of what it was given, to
$QR_RECORD_DIR/<job>-<rank>.json (torchrun-<RANK>.json under torchrun): argv, the whole
environment, its rank variables, its working directory, and the config the look-up returned
(path and PyYAML's reading of it).
"""
import json
import os
import sys

RANK_VARIABLES = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS",
                  "SLURM_STEP_NUM_TASKS", "RANK", "LOCAL_RANK", "WORLD_SIZE",
                  "LOCAL_WORLD_SIZE", "GROUP_RANK")


def get_perf_recipe_by_name(**kwargs):
    raise SystemExit("stand-in run_script.py: the loader did not replace get_perf_recipe_by_name")


def main():
    config = get_perf_recipe_by_name(model_recipe_name="unused", task="pretrain", num_gpus=0,
                                     gpu="unused", precision="bf16")
    # A torchrun worker (which may run inside a Slurm allocation) by its torchrun rank, an srun
    # task by its job and Slurm rank.
    if "TORCHELASTIC_RUN_ID" in os.environ:
        job, rank = "torchrun", os.environ["RANK"]
    else:
        job, rank = os.environ["SLURM_JOB_ID"], os.environ["SLURM_PROCID"]
    record = {
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "ranks": {name: os.environ.get(name) for name in RANK_VARIABLES},
        "config": config.path,
        "config_data": config.to_dict(),
    }
    path = os.path.join(os.environ["QR_RECORD_DIR"], f"{job}-{rank}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)
