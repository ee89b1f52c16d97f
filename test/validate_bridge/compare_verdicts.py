#!/usr/bin/env python3
"""qwen-recipe validate against Megatron-Bridge's own verdicts on the battery.

  python compare_verdicts.py QWEN_RECIPE GOLDEN_DIR VERDICTS.json WORKDIR [--give-num-gpus]

Generates the battery (make_battery.py) into WORKDIR, checks that every config is the one
Megatron-Bridge judged (its SHA-256 in VERDICTS.json, written by bridge_oracle.py), and runs
`qwen-recipe validate FILE` on each: the world size comes from the file's header, or with
--give-num-gpus from --num-gpus (for a qwen-recipe that does not read headers). A config agrees
when both accept it or both refuse it, or when qwen-recipe refuses what Megatron-Core refuses only
later, once the job has its nodes (LATER: every error is one of these checks or invariants). Exit 0 when every
config agrees.
"""
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Checks whose refusals come after runtime_config_update(), once the job has its nodes: where
# (Megatron-Core 2a75ac12, Megatron-Bridge 067f987d; docs/validate.md lists them too).
LATER = {
    "expert-parallel-fits": "megatron/core/parallel_state.py:881 initialize_model_parallel",
    "experts-divisible-by-ep": "megatron/core/transformer/moe/moe_layer.py:185 MoELayer",
    "global-batch-divisible": "megatron/core/num_microbatches_calculator.py:381",
    "virtual-pipeline-needs-pp": "megatron/core/parallel_state.py:829 initialize_model_parallel",
    "pipeline-layers": "megatron/core/transformer/transformer_block.py:150 "
                       "get_num_layers_to_build",
    "virtual-pipeline-layers": "megatron/core/transformer/transformer_block.py:169 "
                               "get_num_layers_to_build",
    "te-rng-tracker-with-graphs": "megatron/bridge/models/gpt_provider.py:235 "
                                  "GPTModelProvider.provide",
}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    give_num_gpus = "--give-num-gpus" in sys.argv
    if len(args) != 4:
        sys.exit(__doc__)
    binary, golden_dir, verdicts_path, workdir = args
    battery = os.path.join(workdir, "battery")
    subprocess.run([sys.executable, os.path.join(HERE, "make_battery.py"), binary, golden_dir,
                    battery], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(battery, "manifest.json")) as f:
        cases = json.load(f)["cases"]
    with open(verdicts_path) as f:
        bridge = json.load(f)["cases"]
    stale, disagree, later = [], [], 0
    counts = {"accept": [0, 0], "refuse": [0, 0]}  # Bridge's verdict: [Bridge, ours]
    for case in cases:
        path = os.path.join(battery, case["file"])
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        theirs = bridge.get(case["name"])
        if theirs is None or theirs["sha256"] != digest:
            stale.append(case["name"])
            continue
        cmd = [binary, "validate", path, "--format", "json"]
        if give_num_gpus:
            cmd += ["--num-gpus", str(case["num_gpus"])]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode not in (0, 2):
            disagree.append(f"{case['name']}: validate failed: {run.stderr.strip()}")
            continue
        if not run.stdout:  # refused while loading: one error line on stderr
            report = {"world_size": case["num_gpus"], "findings": [
                {"level": "error", "check": "load", "message": run.stderr.strip()}]}
        else:
            report = json.loads(run.stdout)
        if not give_num_gpus and report["world_size"] != case["num_gpus"]:
            disagree.append(f"{case['name']}: validate took world size {report['world_size']} "
                            f"from the header, the battery runs it on {case['num_gpus']}")
        errors = [f for f in report["findings"] if f["level"] == "error"]
        ours = "refuse" if errors else "accept"
        counts[theirs["verdict"]][0] += 1
        counts[ours][1] += 1
        if ours == theirs["verdict"]:
            continue
        if ours == "refuse" and all(f["check"] in LATER for f in errors):
            later += 1
            continue
        said = "; ".join(f"{f['check']}: {f['message']}" for f in errors) or "no error"
        disagree.append(f"{case['name']}: Megatron-Bridge {theirs['verdict']}s"
                        f"{' at ' + theirs['where'] if theirs.get('where') else ''}"
                        f"{': ' + theirs['message'] if theirs.get('message') else ''}; "
                        f"qwen-recipe {ours}s ({said})")
    for line in disagree:
        print("disagree: " + line)
    for name in stale:
        print(f"stale: {name}: not the config Megatron-Bridge judged; rerun bridge_oracle.py "
              f"(test/validate_bridge/README.md)")
    print(f"battery: {len(cases)} configs; Megatron-Bridge accepts {counts['accept'][0]}, refuses "
          f"{counts['refuse'][0]}; qwen-recipe accepts {counts['accept'][1]}, refuses "
          f"{counts['refuse'][1]} ({later} of them refused later by Megatron-Core); "
          f"{len(disagree)} disagreements, {len(stale)} stale")
    sys.exit(1 if disagree or stale else 0)


if __name__ == "__main__":
    main()
