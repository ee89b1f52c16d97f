#!/usr/bin/env python3
"""CI tests of the GPU-machine scripts kernels/bench/peers/gpu_peers_cache.sh, gpu_peers.sh,
gpu_bar.sh, gpu_contract.sh and pack_cache.sh, with no GPU and no PyTorch: `python3`, `nvidia-smi`, `ncu`,
`compute-sanitizer`, qwen-recipe and the kernels-only build's gdn-bench and gdn-gpu-tests are
stand-ins that record what they were started with. Checks that the cache filler starts one process
per job with the cache variables and the backend's path, stops a job past its time, packs the
caches (an earlier pack included, TileLang's temporary files not); that gpu_peers.sh points the
three cache variables at its own folder, with a carried pack unpacked there, only when the caller
set none, and then packs what its runs compiled; that gpu_bar.sh runs nothing on a card other than
the one the bar is for, and on that card the bench with FlashQLA, every check and ncu, failing when
a check fails, and packs its own cache folder, not the caller's; that gpu_contract.sh runs fused
beside FlashQLA at the mcore contract (dense and packed) and the grouped one, printing each run's
rows and packing the cache after each; and that pack_cache.sh's parts join to the pack.
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

# Stands in for qwen-recipe: records its arguments and the cache variables, "compiles" a kernel
# named after its --backend into TILELANG_CACHE_DIR (and a Triton kernel, and what a stopped
# compile leaves), writes the JSON file.
BIN_STUB = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
keys = ("PYTHONPATH", "TILELANG_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({{"args": args, "env": {{k: os.environ.get(k) for k in keys}}}}) + "\\n")
backend = args[args.index("--backend") + 1]
for var, name in (("TILELANG_CACHE_DIR", "0.1.15/kernels/" + backend + "/kernel.txt"),
                  ("TRITON_CACHE_DIR", backend + "/kernel.cubin"),
                  ("TILELANG_CACHE_DIR", "0.1.15/kernels/.stopped.tmp123/partial.cu")):
    if os.environ.get(var):
        path = os.path.join(os.environ[var], name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write("compiled by the " + backend + " run")
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
    write(os.path.join(bindir, "nvidia-smi"), "#!/bin/sh\necho \"${STUB_CARD:-stub GPU}\"\n")
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
    check(len(jobs) == 15, f"15 jobs started, got {len(jobs)}")
    cache = os.path.join(tmp, "peers-cache")
    for j in jobs:
        e, args = j["env"], j["args"]
        check(e["TILELANG_CACHE_DIR"] == cache and
              e["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(cache, "inductor") and
              e["TRITON_CACHE_DIR"] == os.path.join(cache, "triton"),
              f"{args}: the three cache variables name one folder: {e}")
        # The driver's path (gpu_peers.sh), and no FLA setting of the script's own: the warm pins
        # FLA as the driver's worker does (peers_warm_calls_test.py checks that).
        check(e["PYTHONPATH"] == f"{tmp}/peers-site:{tmp}/peers-qla",
              f"{args}: PYTHONPATH {e['PYTHONPATH']}")
        check(e["FLA_FLASH_QLA"] is None, f"{args}: FLA_FLASH_QLA {e['FLA_FLASH_QLA']}")
    varlen = [j["args"] for j in jobs if "--varlen" in j["args"]]
    check(varlen and varlen[0].count("--varlen") == 3 and "1024,3072,12288" in varlen[0],
          f"the varlen job gets all its arguments: {varlen}")
    # gdn-bench --varlen 8's packed inputs at 16k tokens, both peers, both long shapes, every mode
    eight = ",".join(["2048"] * 8)
    packed8 = sorted((a[a.index("--backend") + 1], a[a.index("--shape") + 1]) for a in varlen
                     if a[a.index("--varlen") + 1] == eight and "--modes" not in a)
    check(packed8 == [(b, s) for b in ("fla", "flash_qla")
                      for s in ("1,16384,16,32,128", "1,16384,16,64,128")],
          f"the jobs of gdn-bench --varlen 8: {packed8}")
    summary = [line for line in log.splitlines() if line.startswith("job ")]
    stopped = [line for line in summary if "NOT DONE within 4 s" in line]
    check(len(stopped) == 2 and all("32768" in line for line in stopped),
          f"the two 32768-token jobs are stopped and say so: {stopped}")
    check(all("TileLang compiles: 1" in line for line in summary), "compiles counted per job")
    check(len(summary) == 15 and all(("exit 0" in line) != ("NOT DONE" in line) for line in summary),
          f"one summary line per job: {summary}")
    with tarfile.open(os.path.join(out, "tilelang-cache.tar.xz")) as t:
        names = t.getnames()
    check("./0.1.15/earlier/kernel.txt" in names, f"the earlier pack is in the new one: {names}")
    check("./inductor" in names and "./triton" in names, f"inductor/ and triton/ packed: {names}")
    check(not any(".tmp" in n for n in names), f"temporary files left out: {names}")


def pack_names(out):
    """The member names of OUT/tilelang-cache.tar.xz, or None where there is none."""
    path = os.path.join(out, "tilelang-cache.tar.xz")
    if not os.path.exists(path):
        return None
    with tarfile.open(path) as t:
        return t.getnames()


def test_runner():
    root = os.path.join(WORK, "runner")
    peers, env = setup(root)
    bin_, tmp, log = os.path.join(root, "qwen-recipe"), env["PEERS_TMP"], env["STUB_LOG"]
    out = os.path.join(root, "out")

    def run(extra_env=None):
        if os.path.exists(log):
            os.remove(log)
        shutil.rmtree(out, ignore_errors=True)
        e = dict(env, **(extra_env or {}))
        p = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_peers.sh"), bin_, peers, out,
                            "--shape", "1,64,1,1,128"],
                           capture_output=True, text=True, env=e, timeout=120)
        check(p.returncode == 0, f"gpu_peers.sh: exit code {p.returncode}: {p.stderr}")
        calls = [json.loads(line) for line in open(log)]
        check(len(calls) == 2 and [c["args"][c["args"].index("--backend") + 1] for c in calls] ==
              ["fused", "all"], f"fused alone, then all: {calls}")
        check("all backends 1.000 ms, alone 1.000 ms: +0.0%" in p.stdout,
              f"the two runs' fused figures compared: {p.stdout!r}")
        check(not [n for n in os.listdir(out) if ".part" in n or n.endswith(".tmp")],
              f"a small pack is one file: {os.listdir(out)}")
        return calls[-1]["env"]

    cache = os.path.join(tmp, "peers-cache")
    own = {"TILELANG_CACHE_DIR": cache, "TORCHINDUCTOR_CACHE_DIR": cache + "/inductor",
           "TRITON_CACHE_DIR": cache + "/triton"}
    compiled = ["./0.1.15/kernels/fused/kernel.txt", "./0.1.15/kernels/all/kernel.txt",
                "./triton/all/kernel.cubin"]
    e = run()
    check({k: e[k] for k in own} == own, f"no pack carried: its own cache folder: {e}")
    check(e["PYTHONPATH"] == f"{tmp}/peers-site:{tmp}/peers-qla", f"PYTHONPATH {e['PYTHONPATH']}")
    names = pack_names(out) or []
    check(all(n in names for n in compiled), f"the pack holds what both runs compiled: {names}")
    check(not any(".tmp" in n for n in names), f"temporary files left out: {names}")
    shutil.rmtree(cache)
    pack(os.path.join(peers, "tilelang-cache.tar.xz"), {"0.1.15/k/kernel.txt": "carried"})
    e = run()
    check({k: e[k] for k in own} == own, f"a carried pack is used: {e}")
    check(os.path.exists(os.path.join(cache, "0.1.15/k/kernel.txt")), "the pack is unpacked there")
    names = pack_names(out) or []
    check("./0.1.15/k/kernel.txt" in names and all(n in names for n in compiled),
          f"the refreshed pack holds the carried kernels and the runs' own: {names}")
    mine = os.path.join(root, "mine")
    e = run({"TILELANG_CACHE_DIR": mine})
    check(e["TILELANG_CACHE_DIR"] == mine and e["TRITON_CACHE_DIR"] is None,
          f"a cache the caller set wins over the pack: {e}")
    check(os.path.exists(os.path.join(mine, "0.1.15/kernels/all/kernel.txt")),
          "the stand-in compiled into the caller's folder")
    check(pack_names(out) is None, f"the caller's own cache is not packed: {os.listdir(out)}")
    e = run({"TRITON_CACHE_DIR": mine})
    check(e["TRITON_CACHE_DIR"] == mine and e["TILELANG_CACHE_DIR"] is None,
          f"any cache variable the caller set keeps the script's folder out: {e}")
    check(pack_names(out) is None, f"nor is it packed then: {os.listdir(out)}")


# Stand in for the kernels-only build's gdn-bench and gdn-gpu-tests, ncu and compute-sanitizer
# (gpu_bar.sh): each records its name, arguments and PYTHONPATH; gdn-bench --check prints rows of
# outputs checked, a bench writes its JSON and a time row per backend, ncu prints one kernel's CSV
# rows in base units, gdn-gpu-tests exits with STUB_TESTS_RC.
TOOL_STUB = f"""#!{sys.executable}
import json, os, sys
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({{"tool": name, "args": args,
                        "PYTHONPATH": os.environ.get("PYTHONPATH")}}) + "\\n")
if name == "gdn-gpu-tests":
    print("All tests passed (12 assertions in 3 test cases)")
    sys.exit(int(os.environ.get("STUB_TESTS_RC", "0")))
if name == "compute-sanitizer":
    print("========= ERROR SUMMARY: 0 errors")
elif name == "ncu":
    h = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
    print("==PROF== Connected")
    print(h)
    for metric, unit, value in (("gpu__time_duration.sum", "ns", "675000"),
                                ("dram__bytes_read.sum", "byte", "1000000000"),
                                ("dram__bytes_write.sum", "byte", "547000000"),
                                ("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum", "", "1.249e11")):
        print(f'"0","void unnamed>::bwd_intra_ws_kernel(Geo)","{{metric}}","{{unit}}","{{value}}"')
elif "--check" in args:
    for out in ("o", "dq"):
        print(f"fused @ custom (B1 T300 Hk2 Hv6 D128)  {{out}}  1e-3  1e-3  0 ok")
else:
    backends = args[args.index("--backend") + 1].split(",")
    json.dump({{"backends": []}}, open(args[args.index("--json") + 1], "w"))
    for b in backends:
        print(f"{{b:18s}} custom 4x4096x16/32x128        fwdbwd             1.000      1.000     1.00")
    print("\\nper backend (graph medians)")
    for b in backends:
        print(f"{{b:20s}} custom  ok  0.500  1.000  1.00  saved 1.0  peak 2.0")
    print("\\nper kernel")
    print("recommendation for custom (contract " + args[args.index("--contract") + 1] + "): x"
          if "--contract" in args else "recommendation for custom: x")
    sys.exit(int(os.environ.get("STUB_BENCH_RC", "0")))
"""


def test_bar():
    root = os.path.join(WORK, "bar")
    peers, env = setup(root)
    bins = os.path.join(root, "kbin")
    os.makedirs(bins)
    for name in ("gdn-bench", "gdn-gpu-tests"):
        write(os.path.join(bins, name), TOOL_STUB)
    for name in ("ncu", "compute-sanitizer"):
        write(os.path.join(root, "bin", name), TOOL_STUB)
    log, out, tmp = env["STUB_LOG"], os.path.join(root, "out"), env["PEERS_TMP"]

    def run(extra):
        if os.path.exists(log):
            os.remove(log)
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_bar.sh"), bins, peers, out],
                           capture_output=True, text=True, env=dict(env, **extra), timeout=120)
        calls = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
        return p, calls

    p, calls = run({"STUB_CARD": "NVIDIA H100 80GB HBM3"})
    check(p.returncode == 3 and "not an H200" in p.stdout and not calls and
          not os.path.exists(os.path.join(tmp, "peers-site")),
          f"another card: exit 3, nothing installed or run: {p.returncode} {p.stdout!r} {calls}")

    p, calls = run({"STUB_CARD": "NVIDIA H200"})
    check(p.returncode == 0, f"gpu_bar.sh on the H200: exit code {p.returncode}: {p.stderr}")
    bench = [c for c in calls if c["tool"] == "gdn-bench" and "--check" not in c["args"]]
    check(len(bench) == 1, f"one bench: {bench}")
    if bench:
        a = bench[0]["args"]
        check(a[a.index("--backend") + 1] == "flash_qla,fused" and
              a[a.index("--baseline") + 1] == "flash_qla" and
              a[a.index("--peers-driver") + 1] ==
              os.path.join(os.path.realpath(SCRIPTS), "gdn_peers.py") and
              [a[i + 1] for i, x in enumerate(a) if x == "--shape"] ==
              ["4,4096,16,32,128", "1,4096,16,64,128", "1,16384,16,32,128", "1,16384,16,64,128"],
              f"FlashQLA beside fused at the four shapes, as the baseline: {a}")
        check(bench[0]["PYTHONPATH"] == f"{tmp}/peers-site:{tmp}/peers-qla",
              f"the peers on the path: {bench[0]['PYTHONPATH']}")
    checks = [c["args"] for c in calls if c["tool"] == "gdn-bench" and "--check" in c["args"]]
    check(len(checks) == 6 and sum("--varlen" in a for a in checks) == 4 and
          all("--initial-state" in a for a in checks), f"six checks, four packed: {checks}")
    tools = [c["args"][c["args"].index("--tool") + 1] for c in calls
             if c["tool"] == "compute-sanitizer"]
    check(tools == ["memcheck", "synccheck"], f"memcheck and synccheck: {tools}")
    ncu = [c["args"] for c in calls if c["tool"] == "ncu"]
    check(len(ncu) == 2 and all("--print-units" in a and "dram__bytes_read.sum" in
                                a[a.index("--metrics") + 1] for a in ncu), f"ncu twice: {ncu}")
    check(sorted(os.listdir(out)) ==
          ["bar.json", "bar.txt", "checks.txt", "ncu.csv", "tilelang-cache.tar.xz"],
          f"five files: {os.listdir(out)}")
    names = pack_names(out) or []
    check("./inductor" in names and "./triton" in names,
          f"its own cache folder packed, as gpu_peers.sh packs it: {names}")
    check("fused              custom 4x4096x16/32x128" in p.stdout and
          "gdn-gpu-tests: rc=0" in p.stdout and "rc=0, 2 outputs ok, 0 failed" in p.stdout and
          "ERROR SUMMARY: 0 errors" in p.stdout and "1547.0 MB  2.29 TB/s" in p.stdout,
          f"the bench's rows, the checks and the per-kernel table printed: {p.stdout!r}")

    mine = os.path.join(root, "my-cache")
    p, calls = run({"STUB_CARD": "NVIDIA H100 80GB HBM3", "BAR_CARD": "", "BAR_FLA": "1",
                    "STUB_TESTS_RC": "1", "TILELANG_CACHE_DIR": mine})
    check(pack_names(out) is None and "the caller's own" in p.stdout,
          f"a cache the caller set is not packed: {os.listdir(out)}")
    a = next((c["args"] for c in calls if c["tool"] == "gdn-bench"), [])
    check("--backend" in a and a[a.index("--backend") + 1] == "fla,flash_qla,fused",
          f"BAR_FLA=1 adds FLA: {a}")
    check(p.returncode == 1 and "gdn-gpu-tests: rc=1" in p.stdout,
          f"BAR_CARD= runs on any card, and a failed check fails the run: {p.returncode}")


def test_contract():
    """gpu_contract.sh: ours beside FlashQLA at mcore (dense, then packed into 4 uneven
    sequences) and at the grouped call, each run's rows printed and the cache packed after it."""
    root = os.path.join(WORK, "contract")
    peers, env = setup(root)
    bins = os.path.join(root, "kbin")
    os.makedirs(bins)
    write(os.path.join(bins, "gdn-bench"), TOOL_STUB)
    log, out = env["STUB_LOG"], os.path.join(root, "out")

    def run(extra):
        if os.path.exists(log):
            os.remove(log)
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_contract.sh"), bins, peers, out],
                           capture_output=True, text=True, env=dict(env, **extra), timeout=120)
        calls = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
        return p, [c["args"] for c in calls if c["tool"] == "gdn-bench"]

    def opt(a, name):
        return [a[i + 1] for i, x in enumerate(a) if x == name]

    p, runs = run({"STUB_CARD": "NVIDIA H100 80GB HBM3"})
    check(p.returncode == 0, f"gpu_contract.sh: exit code {p.returncode}: {p.stderr}")
    check([(opt(a, "--contract"), opt(a, "--packed"), opt(a, "--shape")) for a in runs] ==
          [(["mcore"], [], ["4,4096,16,32,128", "1,4096,16,64,128"]),
           (["mcore"], ["4"], ["4,4096,16,32,128"]),
           (["grouped"], [], ["4,4096,16,32,128"])],
          f"mcore dense at 35B and 397B, packed into 4 at 35B, grouped at 35B: {runs}")
    for a in runs:
        check(opt(a, "--backend") == ["flash_qla,fused"] and opt(a, "--baseline") == ["flash_qla"]
              and opt(a, "--mode") == ["fwd,fwdbwd"] and opt(a, "--peers-budget") == ["150"] and
              opt(a, "--peers-driver") == [os.path.join(os.path.realpath(SCRIPTS), "gdn_peers.py")],
              f"FlashQLA beside fused, fwd and fwd+bwd, the driver beside the script: {a}")
    check(sorted(os.listdir(out)) ==
          ["grouped.json", "grouped.txt", "mcore.json", "mcore.txt", "packed.json", "packed.txt",
           "tilelang-cache.tar.xz", "warm.log"],
          f"a table and a JSON per run, the warm's log and the pack: {os.listdir(out)}")
    jobs = sorted(json.loads(line[4:])["args"] for line in open(os.path.join(out, "warm.log"))
                  if line.startswith("JOB "))
    check(jobs == sorted([["--backend", "flash_qla", "--shape", "4,4096,32,32,128", "--no-l2norm"],
                          ["--backend", "flash_qla", "--shape", "1,4096,64,64,128", "--no-l2norm"],
                          ["--backend", "flash_qla", "--shape", "1,16384,32,32,128",
                           "--no-l2norm", "--varlen", "6553,4915,3277,1639"],
                          ["--backend", "flash_qla", "--shape", "4,4096,16,32,128"]]),
          f"first the runs' FlashQLA configurations warmed side by side: {jobs}")
    check(p.stdout.count("per backend (graph medians)") == 3 and
          "recommendation for custom (contract mcore): x" in p.stdout and
          "recommendation for custom (contract grouped): x" in p.stdout and
          "per kernel" not in p.stdout and "fused                custom  ok" in p.stdout,
          f"each run's per-backend rows and recommendation printed, nothing else: {p.stdout!r}")
    names = pack_names(out) or []
    check("./inductor" in names and "./triton" in names, f"the cache packed: {names}")

    p, runs = run({"CONTRACT_FLA_LAYER": "1", "CONTRACT_BUDGET": "900", "STUB_BENCH_RC": "2"})
    check(p.returncode == 1 and len(runs) == 4 and opt(runs[3], "--contract") == ["fla-layer"] and
          opt(runs[3], "--backend") == ["fla,flash_qla,fused"] and
          all(opt(a, "--peers-budget") == ["900"] for a in runs),
          f"CONTRACT_FLA_LAYER=1 adds fla-layer, CONTRACT_BUDGET sets the budget, a failed run "
          f"fails the call: {p.returncode} {runs}")
    p, runs = run({"CONTRACT_WARM": "0"})
    check(p.returncode == 0 and len(runs) == 3 and "warm.log" not in os.listdir(out),
          f"CONTRACT_WARM=0: no warm: {p.returncode} {os.listdir(out)}")
    p, runs = run({"CONTRACT_BUDGET": "2m"})
    check(p.returncode == 2 and not runs and "CONTRACT_BUDGET '2m'" in p.stderr,
          f"a budget that is not a number: exit 2, nothing run: {p.returncode} {p.stderr!r}")


def test_pack_parts():
    """pack_cache.sh splits a pack over its part size, and a later pack replaces earlier parts."""
    root = os.path.join(WORK, "parts")
    shutil.rmtree(root, ignore_errors=True)
    cache, out = os.path.join(root, "cache"), os.path.join(root, "out")
    os.makedirs(os.path.join(cache, "k"))
    os.makedirs(out)
    with open(os.path.join(cache, "k", "kernel.bin"), "wb") as f:
        f.write(os.urandom(40000))  # does not compress: the pack is over 4 parts of 10000 bytes
    p = subprocess.run(["bash", os.path.join(SCRIPTS, "pack_cache.sh"), cache, out, "10000"],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"pack_cache.sh: exit code {p.returncode}: {p.stderr}")
    parts = sorted(n for n in os.listdir(out) if n.startswith("tilelang-cache.tar.xz.part"))
    check(len(parts) >= 5 and "tilelang-cache.tar.xz" not in os.listdir(out),
          f"parts only: {os.listdir(out)}")
    if parts:
        joined = os.path.join(root, "joined.tar.xz")
        with open(joined, "wb") as f:
            for part in parts:
                f.write(open(os.path.join(out, part), "rb").read())
        with tarfile.open(joined) as t:
            data = t.extractfile("./k/kernel.bin").read()
        check(data == open(os.path.join(cache, "k", "kernel.bin"), "rb").read(),
              "the joined parts give the cache back")
    os.remove(os.path.join(cache, "k", "kernel.bin"))
    write(os.path.join(cache, "k", "small.txt"), "small", 0o644)
    p = subprocess.run(["bash", os.path.join(SCRIPTS, "pack_cache.sh"), cache, out],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"pack_cache.sh again: exit code {p.returncode}: {p.stderr}")
    check(os.listdir(out) == ["tilelang-cache.tar.xz"] and
          pack_names(out) == [".", "./k", "./k/small.txt"],
          f"the earlier parts replaced by the new pack: {os.listdir(out)}, {pack_names(out)}")


def test_pack_leaves_out_triton_stages():
    """pack_cache.sh keeps a Triton kernel's binary and metadata, not its intermediate stages."""
    root = os.path.join(WORK, "stages")
    shutil.rmtree(root, ignore_errors=True)
    cache, out = os.path.join(root, "cache"), os.path.join(root, "out")
    kept = ["./triton/H/k.cubin", "./triton/H/k.json", "./triton/H/__grp__k.json",
            "./0.1.15/linux-x86_64/K/kernel.ptx", "./inductor/x.py"]
    left = ["./triton/H/k.source", "./triton/H/k.ttir", "./triton/H/k.ttgir", "./triton/H/k.llir",
            "./triton/H/k.ptx"]
    for name in kept + left:
        os.makedirs(os.path.dirname(os.path.join(cache, name)), exist_ok=True)
        write(os.path.join(cache, name), name, 0o644)
    os.makedirs(out)
    p = subprocess.run(["bash", os.path.join(SCRIPTS, "pack_cache.sh"), cache, out],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"pack_cache.sh: exit code {p.returncode}: {p.stderr}")
    names = set(pack_names(out) or [])
    check(all(n in names for n in kept), f"binaries, metadata and other caches packed: {names}")
    check(not any(n in names for n in left), f"Triton's intermediate stages left out: {names}")


def main():
    test_cache_filler()
    test_runner()
    test_bar()
    test_contract()
    test_pack_parts()
    test_pack_leaves_out_triton_stages()
    if FAILURES:
        print(f"{len(FAILURES)} failures", file=sys.stderr)
        return 1
    print("peers scripts: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
