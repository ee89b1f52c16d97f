#!/usr/bin/env python3
"""CI tests of the GPU-machine scripts kernels/bench/peers/gpu_peers_cache.sh and gpu_peers.sh,
with no GPU and no PyTorch: `python3`, `nvidia-smi` and qwen-recipe are stand-ins on PATH that
record what they were started with. Checks that the cache filler starts one process per job with
the cache variables and the backend's path, stops a job past its time, packs the caches (an
earlier pack included, TileLang's temporary files not), and that gpu_peers.sh points the three
cache variables at a carried pack only when none is set.
Run by CTest: peers_scripts_test.py PEERS_SCRIPT_DIR WORKDIR."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

SCRIPTS, WORK = sys.argv[1], sys.argv[2]
FAILURES = []

# Stands in for python3: the scripts' pip install and peers_warm.py jobs print their arguments and
# environment; a job whose arguments name 32768 tokens runs until stopped. Anything else (the
# comparison script gpu_peers.sh feeds on stdin) goes to the real interpreter.
PYTHON_STUB = f"""#!{sys.executable}
import json, os, sys, time
args = sys.argv[1:]
if args[:2] == ["-m", "pip"]:
    sys.exit(0)
if args and args[0].endswith("peers_warm.py"):
    keys = ("PYTHONPATH", "FLA_FLASH_QLA", "TILELANG_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
            "TRITON_CACHE_DIR")
    print("JOB " + json.dumps({{"args": args[1:], "env": {{k: os.environ.get(k) for k in keys}}}}))
    print("[TileLang] TileLang begins to compile kernel `k`")
    cache = os.environ["TILELANG_CACHE_DIR"]
    open(os.path.join(cache, ".kernel.123_abc.tmp"), "w").close()  # what a stopped job leaves
    sys.stdout.flush()
    if any("32768" in a for a in args):
        time.sleep(600)
    sys.exit(0)
os.execv({sys.executable!r}, [{sys.executable!r}] + args)
"""

# Stands in for qwen-recipe: records its arguments and the cache variables, writes the JSON file.
BIN_STUB = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
keys = ("PYTHONPATH", "TILELANG_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({{"args": args, "env": {{k: os.environ.get(k) for k in keys}}}}) + "\\n")
out = args[args.index("--json") + 1]
json.dump({{"backends": [{{"backend": "fused", "shape": "s", "T": 1,
                          "times": {{"fwd": {{"graph_ms": {{"median": 1.0}}}}}}}}]}}, open(out, "w"))
print("table")
"""


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def write(path, text, mode=0o755):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def pack(path, files):
    """A .tar.xz of {name: text}, as the scripts' packs are (members under ./)."""
    stage = path + ".d"
    os.makedirs(stage)
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(stage, name)), exist_ok=True)
        write(os.path.join(stage, name), text, 0o644)
    with tarfile.open(path, "w:xz") as t:
        t.add(stage, arcname=".")
    shutil.rmtree(stage)


def setup(root):
    shutil.rmtree(root, ignore_errors=True)
    bindir, peers = os.path.join(root, "bin"), os.path.join(root, "peers")
    os.makedirs(bindir)
    os.makedirs(peers)
    write(os.path.join(bindir, "python3"), PYTHON_STUB)
    write(os.path.join(bindir, "nvidia-smi"), "#!/bin/sh\necho 'stub GPU'\n")
    write(os.path.join(root, "qwen-recipe"), BIN_STUB)
    pack(os.path.join(peers, "flashqla-site.tar.xz"), {"flash_qla/__init__.py": ""})
    for wheel in ("fla_core-0.6.0-py3-none-any.whl", "flash_linear_attention-0.6.0-py3-none-any.whl"):
        write(os.path.join(peers, wheel), "", 0o644)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TILELANG_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
                        "TRITON_CACHE_DIR")}
    env.update(PATH=bindir + os.pathsep + env.get("PATH", ""), PEERS_TMP=os.path.join(root, "tmp"),
               STUB_LOG=os.path.join(root, "bin.log"))
    return peers, env


def test_cache_filler():
    root = os.path.join(WORK, "cache")
    peers, env = setup(root)
    pack(os.path.join(peers, "tilelang-cache.tar.xz"), {"0.1.15/earlier/kernel.txt": "seed"})
    out, tmp = os.path.join(root, "out"), env["PEERS_TMP"]
    p = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_peers_cache.sh"), peers, out, "4"],
                       capture_output=True, text=True, env=env, timeout=120)
    check(p.returncode == 0, f"gpu_peers_cache.sh: exit code {p.returncode}: {p.stderr}")
    log = open(os.path.join(out, "warm.log")).read()
    jobs = [json.loads(line[4:]) for line in log.splitlines() if line.startswith("JOB ")]
    check(len(jobs) == 11, f"11 jobs started, got {len(jobs)}")
    cache = os.path.join(tmp, "peers-cache")
    for j in jobs:
        e, args = j["env"], j["args"]
        check(e["TILELANG_CACHE_DIR"] == cache and
              e["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(cache, "inductor") and
              e["TRITON_CACHE_DIR"] == os.path.join(cache, "triton"),
              f"{args}: the three cache variables name one folder: {e}")
        fla = args[:2] == ["--backend", "fla"]
        check(e["PYTHONPATH"] == os.path.join(tmp, "peers-site" if fla else "peers-qla"),
              f"{args}: PYTHONPATH {e['PYTHONPATH']}")
        check((e["FLA_FLASH_QLA"] == "0") == fla, f"{args}: FLA_FLASH_QLA {e['FLA_FLASH_QLA']}")
    varlen = [j["args"] for j in jobs if "--varlen" in j["args"]]
    check(varlen and varlen[0].count("--varlen") == 3 and "1024,3072,12288" in varlen[0],
          f"the varlen job gets all its arguments: {varlen}")
    summary = [line for line in log.splitlines() if line.startswith("job ")]
    stopped = [line for line in summary if "NOT DONE within 4 s" in line]
    check(len(stopped) == 2 and all("32768" in line for line in stopped),
          f"the two 32768-token jobs are stopped and say so: {stopped}")
    check(all("TileLang compiles: 1" in line for line in summary), "compiles counted per job")
    check(len(summary) == 11 and all(("exit 0" in line) != ("NOT DONE" in line) for line in summary),
          f"one summary line per job: {summary}")
    with tarfile.open(os.path.join(out, "tilelang-cache.tar.xz")) as t:
        names = t.getnames()
    check("./0.1.15/earlier/kernel.txt" in names, f"the earlier pack is in the new one: {names}")
    check("./inductor" in names and "./triton" in names, f"inductor/ and triton/ packed: {names}")
    check(not any(".tmp" in n for n in names), f"temporary files left out: {names}")


def test_runner():
    root = os.path.join(WORK, "runner")
    peers, env = setup(root)
    bin_, tmp, log = os.path.join(root, "qwen-recipe"), env["PEERS_TMP"], env["STUB_LOG"]

    def run(extra_env=None):
        if os.path.exists(log):
            os.remove(log)
        e = dict(env, **(extra_env or {}))
        p = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_peers.sh"), bin_, peers,
                            os.path.join(root, "out"), "--shape", "1,64,1,1,128"],
                           capture_output=True, text=True, env=e, timeout=120)
        check(p.returncode == 0, f"gpu_peers.sh: exit code {p.returncode}: {p.stderr}")
        calls = [json.loads(line) for line in open(log)]
        check(len(calls) == 2 and [c["args"][c["args"].index("--backend") + 1] for c in calls] ==
              ["fused", "all"], f"fused alone, then all: {calls}")
        check("all backends 1.000 ms, alone 1.000 ms: +0.0%" in p.stdout,
              f"the two runs' fused figures compared: {p.stdout!r}")
        return calls[-1]["env"]

    e = run()
    check(e["TILELANG_CACHE_DIR"] is None and e["TRITON_CACHE_DIR"] is None,
          f"no pack carried: no cache variables: {e}")
    check(e["PYTHONPATH"] == f"{tmp}/peers-site:{tmp}/peers-qla", f"PYTHONPATH {e['PYTHONPATH']}")
    pack(os.path.join(peers, "tilelang-cache.tar.xz"), {"0.1.15/k/kernel.txt": "carried"})
    e = run()
    cache = os.path.join(tmp, "peers-cache")
    check(e["TILELANG_CACHE_DIR"] == cache and e["TRITON_CACHE_DIR"] == cache + "/triton" and
          e["TORCHINDUCTOR_CACHE_DIR"] == cache + "/inductor", f"a carried pack is used: {e}")
    check(os.path.exists(os.path.join(cache, "0.1.15/k/kernel.txt")), "the pack is unpacked there")
    e = run({"TILELANG_CACHE_DIR": os.path.join(root, "mine")})
    check(e["TILELANG_CACHE_DIR"] == os.path.join(root, "mine") and e["TRITON_CACHE_DIR"] is None,
          f"a cache the caller set wins over the pack: {e}")


def main():
    test_cache_filler()
    test_runner()
    if FAILURES:
        print(f"{len(FAILURES)} failures", file=sys.stderr)
        return 1
    print("peers scripts: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
