#!/usr/bin/env python3
"""PyYAML and OmegaConf load every golden YAML to the same values (no string read as a number,
no float read as a string), and the header names a command that reproduces the file."""
import glob
import math
import os
import sys

import yaml
from omegaconf import OmegaConf


def same(a, b, path="") -> list:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(map(str, a)) != set(map(str, b)):
            return [f"{path}: keys differ"]
        out = []
        bs = {str(k): v for k, v in b.items()}
        for k, v in a.items():
            out += same(v, bs[str(k)], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths differ"]
        return [e for i, (x, y) in enumerate(zip(a, b)) for e in same(x, y, f"{path}[{i}]")]
    if type(a) is not type(b):
        return [f"{path}: PyYAML {type(a).__name__} {a!r}, OmegaConf {type(b).__name__} {b!r}"]
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b else [f"{path}: PyYAML {a!r}, OmegaConf {b!r}"]


def main() -> int:
    # Goldens live in one directory per Megatron-Core profile; manifest.yaml beside them is not one.
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.yaml")))
    bad = 0
    for f in files:
        text = open(f, encoding="utf-8").read()
        if not text.startswith("# qwen-recipe build "):
            print(f"{f}: no reproducing command in the header")
            bad += 1
        py = yaml.safe_load(text)
        oc = OmegaConf.to_container(OmegaConf.create(text))
        diffs = same(py, oc)
        for d in diffs[:5]:
            print(f"{f}: {d}")
        bad += bool(diffs)
    print(f"{len(files) - bad} passed, {bad} failed")
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
