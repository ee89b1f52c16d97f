#!/usr/bin/env python3
"""Megatron-Bridge's own verdict on a battery of configs: each file is loaded with
ConfigContainer.from_yaml and put through runtime_config_update(), the path pretrain() takes before
it builds anything (environment, mixed precision, DP size, comm-overlap setup, validate()).

Run against a source tree of Megatron-Bridge 067f987d (`src/`) and Megatron-LM 2a75ac12
(`megatron/`), never committed here, in a Python with PyTorch (the CPU build is enough),
omegaconf, PyYAML and transformers:

  python bridge_oracle.py --bridge BRIDGE/src --megatron-lm MLM --battery DIR --out VERDICTS.json

DIR is what make_battery.py writes (manifest.json and the configs). Only what needs the cluster is
stubbed, each named in STUBS: the flex dispatcher's GPU-architecture check and Transformer
Engine (an import stub). The verdicts (accept or refuse, the message, the upstream file:line that
raised) go to VERDICTS.json with each config's SHA-256, so that compare_verdicts.py can tell a
stale verdict from a disagreement.
"""
import argparse
import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import io
import json
import logging
import os
import sys
import traceback
import types
import typing
import warnings

# Fields whose value after runtime_config_update() shows one of Bridge's rewrites.
REWRITTEN = [
    "model.sequence_parallel",
    "model.calculate_per_token_loss",
    "model.experimental_attention_variant",
    "model.expert_tensor_parallel_size",
    "model.pipeline_dtype",
    "ddp.bucket_size",
    "ddp.overlap_param_gather_with_optimizer_step",
    "optimizer.overlap_param_gather_with_optimizer_step",
]

STUBS = [
    "transformer_engine: not installable without CUDA; an import stub whose __version__ is "
    "TE_VERSION (so Megatron-Core's version probes see the container's TE) and whose names are "
    "placeholder classes, never called by the configuration path (FusedAdam: the arguments "
    "OptimizerConfig.__post_init__ inspects)",
    "megatron.bridge.training.config.validate_flex_dispatcher_backend: the GPU architecture the "
    "job runs on (torch.cuda.get_device_properties)",
    "typing.override (Python 3.12) for a Python 3.11 interpreter: a no-op decorator",
]

TE_VERSION = "2.20.2"  # Transformer Engine new enough for every version gate of the pins


class _PlaceholderType(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder


class _Placeholder(metaclass=_PlaceholderType):
    """Any Transformer Engine name: a class to subclass, call or read attributes of."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Placeholder()

    def __class_getitem__(cls, item):
        return cls

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder


class _FusedAdam(_Placeholder):
    """TE's FusedAdam as OptimizerConfig.__post_init__ inspects it (TE >= 1.13's arguments)."""

    def __init__(self, params=None, master_weight_dtype=None, exp_avg_dtype=None,
                 exp_avg_sq_dtype=None, use_decoupled_grad=False, **kwargs):
        pass


class _TransformerEngineStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "transformer_engine" or fullname.startswith("transformer_engine."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__version__ = TE_VERSION
        if spec.name == "transformer_engine.pytorch.optimizers":
            module.FusedAdam = _FusedAdam
        module.__getattr__ = lambda name: (
            _Placeholder if not name.startswith("__") else (_ for _ in ()).throw(AttributeError(name)))
        return module

    def exec_module(self, module):
        pass


def install_stubs():
    if not hasattr(typing, "override"):
        typing.override = lambda f: f
    sys.meta_path.insert(0, _TransformerEngineStub())
    import megatron.bridge.training.config as bridge_config

    bridge_config.validate_flex_dispatcher_backend = lambda config: None


def upstream_frame(tb, roots):
    """The innermost frame inside Megatron-Bridge or Megatron-LM, as `package/path.py:line`."""
    where = ""
    for frame in traceback.extract_tb(tb):
        path = os.path.realpath(frame.filename)
        for root in roots:
            if path.startswith(root + os.sep):
                where = f"{os.path.relpath(path, root)}:{frame.lineno}"
    return where


def dotted(cfg, path):
    obj = cfg
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    if isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def judge(path, world_size, roots):
    from megatron.bridge.training.config import ConfigContainer, runtime_config_update

    saved = dict(os.environ)
    os.environ.update({"WORLD_SIZE": str(world_size), "RANK": "0", "LOCAL_RANK": "0"})
    sink = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), \
                contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            cfg = ConfigContainer.from_yaml(path)
            runtime_config_update(cfg)
        return {"verdict": "accept", "after": {f: dotted(cfg, f) for f in REWRITTEN}}
    except Exception as exc:  # every refusal, whatever its type
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        return {"verdict": "refuse", "message": message[:600],
                "where": upstream_frame(exc.__traceback__, roots)}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bridge", required=True, help="Megatron-Bridge's src/ folder")
    ap.add_argument("--megatron-lm", required=True, help="Megatron-LM's root (holds megatron/)")
    ap.add_argument("--battery", required=True, help="the folder make_battery.py wrote")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    roots = [os.path.realpath(args.bridge), os.path.realpath(args.megatron_lm)]
    sys.path[:0] = roots
    logging.disable(logging.CRITICAL)
    install_stubs()
    with open(os.path.join(args.battery, "manifest.json")) as f:
        manifest = json.load(f)
    cases = {}
    for case in manifest["cases"]:
        path = os.path.join(args.battery, case["file"])
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        result = judge(path, case["num_gpus"], roots)
        cases[case["name"]] = {"sha256": digest, **result}
        print(f"{case['name']}: {result['verdict']} {result.get('where', '')} "
              f"{result.get('message', '')[:160]}", flush=True)
    out = {"megatron_bridge": "067f987d", "megatron_lm": "2a75ac12", "stubs": STUBS,
           "cases": cases}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    refused = sum(c["verdict"] == "refuse" for c in cases.values())
    print(f"{len(cases)} configs: {len(cases) - refused} accepted, {refused} refused")


if __name__ == "__main__":
    main()
