#!/usr/bin/env python3
"""The scripts `qwen-recipe launch` writes, run by a real one-node Slurm.

Starts munge and Slurm (slurmctld and slurmd on localhost, Debian's Slurm 22.05) from a generated
slurm.conf with all state in WORKDIR, writes launches with `qwen-recipe launch` (no container
image, so the ranks run the node's own Python), submits them with the real `sbatch`, lets the
real `srun` start one rank per GPU, and checks what ran. The entry point is a stand-in for
Megatron-Bridge's run_script.py (test/slurm/megatron-bridge) that loads the config with PyYAML
and records its argv, environment and rank variables.

Launches:
- default: a plain launch with --export, --env-file, --srun-arg, --sbatch-arg, -p and -t;
- hostile: values with line breaks (LF, CR, U+2028), quotes, $(), backquotes, `PATH[$(...)]`,
  `;`, `#`, blanks... in env_vars (YAML escapes), --export, --env-file, --job-name,
  --sbatch-arg, --srun-arg, and in the paths of the launch file, the config and
  --megatron-bridge; each must arrive byte for byte and nothing of it may run (every payload
  tries to create a canary file);
- sweep: --multirun over a hostile env value: each run's job loads its own config;
- dropped-key: the stand-in's from_yaml loses a key; the loader must stop the job, and Slurm
  must report it failed;
- refused: a line break in --export, --job-name, --sbatch-arg or --srun-arg is refused (exit 2,
  one error line, nothing written), as docs/launch.md says;
- REGRESSION_CASES: cases that once broke under a real Slurm, each naming how (see that list).

Every job must end COMPLETED with exit code 0:0 (but the one meant to fail), with one task per
GPU (SLURM_PROCID 0-7 and SLURM_LOCALID 0-7 on the node's 8 GPUs), the entry point's argv as
`launch --format json` states it, the config by its absolute path, and every variable exactly
as given. The daemons are stopped, and every process they started is gone, also on failure.

Exits 77 (reported as skipped) when it cannot run Slurm here: not root, or the packages
(slurmctld slurmd slurm-client munge, installed by scripts/setup) are missing.

usage: real_slurm_test.py QWEN_RECIPE WORKDIR
"""
import ctypes
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import yaml

SKIP = 77
HERE = pathlib.Path(__file__).resolve().parent
STANDIN = HERE / "megatron-bridge"
RECIPE = ["qwen35_35b", "--gpu", "b200"]  # 8 GPUs: one node of 8 (HGX)
GPUS = 8
NODE = "qrnode"
# A process of this test (daemons, job steps, ranks) carries this variable; teardown looks for
# any still running.
MARKER = "QR_REAL_SLURM_TEST"
JOB_TIMEOUT_S = 150


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


def daemon(name):
    """A Slurm or munge program's path: the daemons are in /usr/sbin, which PATH may lack."""
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def die_with_parent():
    """A daemon gets SIGTERM when this test dies, even by SIGKILL (a CTest timeout)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Cluster:
    """munged, slurmctld and slurmd in the foreground, as children of this process."""

    def __init__(self, root):
        self.root = root
        self.conf = root / "etc" / "slurm.conf"
        self.log = root / "log"
        self.daemons = []  # (name, Popen), in start order
        self.env = dict(os.environ, SLURM_CONF=str(self.conf), **{MARKER: str(root)})

    def write_config(self):
        etc, state, spool, dev = (self.root / d for d in ("etc", "state", "spool", "dev"))
        for d in (etc, state, spool / NODE, dev, self.log):
            d.mkdir(parents=True, exist_ok=True)
        key = etc / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        # Slurm 22.05's gres/gpu drops a GPU without a device file, so each count-only GPU is
        # a link to /dev/null: nothing opens it (task/none constrains no devices).
        for i in range(GPUS):
            (dev / f"gpu{i}").symlink_to("/dev/null")
        ctld_port, slurmd_port = free_ports(2)
        memory_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
        host = socket.gethostname().split(".")[0]
        # The node is declared with at least one CPU per GPU, as a GPU node has; the machine
        # running the test may have fewer (CI has 2), which config_overrides allows. Slurm
        # refuses --ntasks-per-node above the CPU count, even with --overcommit.
        cpus = max(os.cpu_count() or 1, GPUS)
        self.conf.write_text(f"""\
ClusterName=qrtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.root}/munge.socket
StateSaveLocation={state}
SlurmdSpoolDir={spool}/%n
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd.pid
SlurmctldLogFile={self.log}/slurmctld.log
SlurmdLogFile={self.log}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=3600
GresTypes=gpu
NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mib} \
Gres=gpu:{GPUS} State=UNKNOWN
PartitionName=gpus Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
        (etc / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={NODE} Name=gpu File={dev}/gpu[0-{GPUS - 1}]\n")

    def start(self, name, argv):
        with open(self.log / f"{name}.out", "wb") as out:
            self.daemons.append((name, subprocess.Popen(argv, env=self.env, stdout=out,
                                                        stderr=subprocess.STDOUT,
                                                        preexec_fn=die_with_parent)))

    def wait_for(self, what, test, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for name, proc in self.daemons:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}{self.logs()}")
            if test():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} did not happen in {timeout} s{self.logs()}")

    def logs(self):
        text = ""
        for f in sorted(self.log.glob("*")):
            lines = f.read_text(errors="replace").splitlines()[-15:]
            text += f"\n--- {f.name}\n" + "\n".join(lines)
        return text

    def slurm(self, *argv, check=True):
        run = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if check and run.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {run.returncode}: {run.stderr.strip()}")
        return run.stdout

    def __enter__(self):
        try:
            return self.start_all()
        except BaseException:
            self.stop()
            raise

    def start_all(self):
        self.write_config()
        etc = self.root / "etc"
        self.start("munged", [daemon("munged"), "--foreground", "--force",
                              f"--socket={self.root}/munge.socket",
                              f"--key-file={etc}/munge.key", f"--log-file={self.log}/munged.log",
                              f"--pid-file={self.root}/munged.pid",
                              f"--seed-file={self.root}/munged.seed"])
        self.wait_for("munged's socket", lambda: (self.root / "munge.socket").exists())
        self.start("slurmctld", [daemon("slurmctld"), "-D", "-f", str(self.conf)])
        self.wait_for("slurmctld answering",
                      lambda: self.slurm("scontrol", "ping", check=False).count("UP") > 0)
        self.start("slurmd", [daemon("slurmd"), "-D", "-f", str(self.conf), "-N", NODE])
        self.wait_for("the node idle", lambda: self.slurm(
            "sinfo", "--noheader", "--format=%T", check=False).strip() == "idle")
        return self

    def __exit__(self, *exc):
        stray = self.stop()
        if stray and exc[0] is None:
            raise RuntimeError(f"processes left running after teardown, killed: {stray}")

    def stop(self):
        """Cancels every job, stops the daemons, kills whatever of theirs still runs."""
        try:
            self.slurm("scancel", "--full", "--user=root", check=False)
            end = time.monotonic() + 15
            while time.monotonic() < end and self.slurm(
                    "squeue", "--noheader", "--states=RUNNING,COMPLETING,PENDING",
                    check=False).strip():
                time.sleep(0.2)
        except (OSError, subprocess.SubprocessError):
            pass
        for name, proc in reversed(self.daemons):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        return kill_marked(str(self.root))


def kill_marked(root):
    """Kills the processes whose environment carries MARKER=root (a slurmstepd or a rank that
    outlived its daemons); returns what it killed."""
    found = []
    needle = f"{MARKER}={root}".encode()
    for pid_dir in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            if needle in pid_dir.joinpath("environ").read_bytes().split(b"\0"):
                pid = int(pid_dir.name)
                if pid != os.getpid():
                    os.kill(pid, signal.SIGKILL)
                    found.append(f"{pid} {pid_dir.joinpath('comm').read_text().strip()}")
        except (OSError, ValueError):
            continue
    return found


class Test:
    def __init__(self, binary, root, cluster):
        self.binary, self.root, self.cluster = binary, root, cluster
        self.canary = root / "PWNED"
        self.records = root / "records"
        self.records.mkdir(parents=True)
        self.bin = root / "bin"
        self.bin.mkdir()
        # The node's own Python, as `python` (Debian names it python3).
        (self.bin / "python").symlink_to(sys.executable)
        self.failures = {}  # case -> what failed
        self.canaries = {"hostile values": self.canary}  # case -> a file its payloads create
        self.jobs = {}  # job id -> (case, script, what its ranks must have seen)

    def fail(self, case, what):
        self.failures.setdefault(case, []).append(what)

    def payloads(self):
        c = self.canary
        return {
            "lf": f"a\nb $(touch {c})",
            "cr": f"a\rb `touch {c}`",
            "ls": "a\u2028b",
            "dquote": 'a"b',
            "squote": "a'b",
            "subst": f"$(touch {c})",
            "backquote": f"`touch {c}`",
            "arith": f"PATH[$(touch {c})]",
            "semicolon": f"a;touch {c}",
            "dollar": "$HOME ${PATH}",
            "hash": "a #b",
            "blank": " a  b ",
            "backslash": "a\\b",
            "dash": "-x",
            "glob": "*",
        }

    def qwen_recipe(self, argv, cwd):
        return subprocess.run([self.binary, "-q", *argv], cwd=cwd, capture_output=True,
                              timeout=60)

    def launch(self, case, argv, cwd):
        """Writes a launch; False (and a failure) if launch refused it."""
        cwd.mkdir(parents=True, exist_ok=True)
        gen = self.qwen_recipe(["launch", *argv], cwd)
        if gen.returncode != 0:
            self.fail(case, f"launch refused: {gen.stderr.decode(errors='replace').strip()}")
        return gen.returncode == 0

    def expected_argv(self, argv):
        """The entry point's argv as `launch --format json` states it."""
        scratch = self.root / "plans" / str(len(list(self.root.glob("plans/*"))))
        scratch.mkdir(parents=True)
        plan = self.qwen_recipe(["launch", *argv, "--format", "json", "--config", "plan.yaml"],
                                scratch)
        return ["run_script.py", *json.loads(plan.stdout)["entry_args"]]

    def submit(self, case, script, expect):
        """sbatch SCRIPT from its own folder; `expect` says what its ranks must have seen."""
        env = dict(self.cluster.env, PATH=f"{self.bin}:{os.environ['PATH']}",
                   QR_RECORD_DIR=str(self.records), PYTHONDONTWRITEBYTECODE="1")
        run = subprocess.run(["sbatch", "--parsable", script.name], cwd=script.parent, env=env,
                             capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            self.fail(case, f"sbatch {script}: exit {run.returncode}: {run.stderr.strip()}")
            return
        job = run.stdout.strip().split(";")[0]
        self.jobs[job] = (case, script, expect)

    def wait(self):
        end = time.monotonic() + JOB_TIMEOUT_S
        while time.monotonic() < end:
            if not self.cluster.slurm("squeue", "--noheader", "--states=PENDING,RUNNING,COMPLETING",
                                      check=False).strip():
                return
            time.sleep(0.3)
        self.fail("jobs", f"not all done in {JOB_TIMEOUT_S} s:\n" +
                  self.cluster.slurm("squeue", "--states=all", check=False))

    def job_field(self, job, fmt):
        return self.cluster.slurm("squeue", "--noheader", "--states=all", f"--jobs={job}",
                                  f"--format={fmt}").rstrip("\n")

    def check_job(self, job, case, script, expect):
        info = self.cluster.slurm("scontrol", "show", "job", "--oneliner", job)
        state = re.search(r"\bJobState=(\S+)", info).group(1)
        exit_code = re.search(r"\bExitCode=(\S+)", info).group(1)
        log_name = expect.get("log", "{name}-{job}.out")  # launch's --output=%x-%j.out
        out_file = script.parent / log_name.format(name=expect.get("job_name"), job=job)
        if not out_file.exists():
            self.fail(case, f"job {job} wrote no {out_file.name} (#SBATCH --output)")
        output = out_file.read_text(errors="replace") if out_file.exists() else "(no output file)"
        want_state, want_exit = expect.get("state", ("COMPLETED", "0:0"))
        if (state, exit_code) != (want_state, want_exit):
            self.fail(case, f"job {job} {state} exit {exit_code}, want {want_state} "
                            f"{want_exit}; its output:\n{output[-2000:]}")
        for text in expect.get("output", []):
            if text not in output:
                self.fail(case, f"the job's output lacks {text!r}:\n{output[-2000:]}")
        if "job_name" in expect and self.job_field(job, "%j") != expect["job_name"]:
            self.fail(case, f"job name {self.job_field(job, '%j')!r}, want {expect['job_name']!r}")
        if "comment" in expect and self.job_field(job, "%k") != expect["comment"]:
            self.fail(case, f"comment {self.job_field(job, '%k')!r}, want {expect['comment']!r}")
        for name, want in expect.get("slurm", {}).items():
            got = re.search(rf"\b{name}=(\S+)", info)
            if got is None or got.group(1) != want:
                self.fail(case, f"job {job}: Slurm has {name}={got and got.group(1)!r}, "
                                f"want {want!r}")
        records = sorted(self.records.glob(f"{job}-*.json"))
        if want_state != "COMPLETED":
            if records:
                self.fail(case, f"job {job} was to stop before the entry point, yet "
                                f"{len(records)} ranks ran it")
            return
        ranks = [json.loads(r.read_text()) for r in records]
        if len(ranks) != GPUS:
            self.fail(case, f"job {job}: {len(ranks)} ranks ran the entry point, want {GPUS}")
            return
        self.check_ranks(case, job, ranks, expect)

    def check_ranks(self, case, job, ranks, expect):
        # As the record carries it: through JSON (whose keys are strings).
        want_data = json.loads(json.dumps(
            yaml.safe_load(expect["config"].read_text(encoding="utf-8"))))
        procids = sorted(int(r["ranks"]["SLURM_PROCID"]) for r in ranks)
        localids = sorted(int(r["ranks"]["SLURM_LOCALID"]) for r in ranks)
        if procids != list(range(GPUS)) or localids != list(range(GPUS)):
            self.fail(case, f"SLURM_PROCID {procids}, SLURM_LOCALID {localids}: want 0-{GPUS - 1}")
        for r in ranks:
            rank, env = r["ranks"]["SLURM_PROCID"], r["env"]
            where = f"job {job} rank {rank}"
            # One task per GPU: the step has 8 tasks on one node that holds the job's 8 GPUs.
            for name, want in (("SLURM_NTASKS", str(GPUS)), ("SLURM_STEP_NUM_TASKS", str(GPUS)),
                               ("SLURM_JOB_NUM_NODES", "1"), ("SLURM_GPUS_ON_NODE", str(GPUS)),
                               ("SLURM_GPUS_PER_NODE", str(GPUS)),
                               ("SLURM_TASKS_PER_NODE", str(GPUS)), ("MASTER_ADDR", NODE),
                               ("MASTER_PORT", str(20000 + int(job) % 20000))):
                if env.get(name) != want:
                    self.fail(case, f"{where}: {name}={env.get(name)!r}, want {want!r}")
            if "cwd" in expect and r["cwd"] != expect["cwd"]:  # srun's --chdir
                self.fail(case, f"{where}: ran in {r['cwd']!r}, want {expect['cwd']!r}")
            if r["argv"] != expect["argv"]:
                self.fail(case, f"{where}: argv {r['argv']}, want {expect['argv']}")
            if r["config"] != str(expect["config"]):
                self.fail(case, f"{where}: config {r['config']!r}, want {str(expect['config'])!r}")
            if r["config_data"] != want_data:
                self.fail(case, f"{where}: the config it loaded differs from {expect['config']}")
            for name, want in expect.get("env", {}).items():
                if env.get(name) != want:
                    self.fail(case, f"{where}: {name}={env.get(name)!r}, want {want!r}")
            for name, want in want_data.get("env_vars", {}).items():
                if name not in expect.get("env", {}) and env.get(name) != str(want):
                    self.fail(case, f"{where}: env_vars {name}={env.get(name)!r}, want {want!r}")

    def check_canaries(self):
        for case, canary in self.canaries.items():
            if canary.exists():
                self.fail(case, f"{canary} was created: a payload ran")
        for p in self.root.rglob("PWNED"):
            if p != self.canary:
                self.fail("hostile values", f"{p} was created: a payload ran")


def site_env_file(path, variables):
    path.write_bytes(b"# site variables\n" + b"".join(
        f"{k}={v}".encode() + (b"\r\n" if k.endswith("CRLF") else b"\n")
        for k, v in variables.items()))


def cases(t):
    """Writes and submits every launch."""
    jobs = t.root / "jobs"
    jobs.mkdir()
    standin_src = STANDIN / "src"
    # default: cluster options as a site gives them.
    cwd = jobs / "default"
    site = {"QR_SITE_PROXY": "http://proxy:3128", "QR_SITE_CRLF": "dropped-cr",
            "QR_OVERRIDDEN": "from-file"}
    site_env_file(jobs / "site.env", site)
    argv = [*RECIPE, "--megatron-bridge", str(STANDIN), "-p", "gpus", "-t", "00:05:00",
            "--env-file", str(jobs / "site.env"), "--export", f"PYTHONPATH={standin_src}",
            "--export", "NCCL_SOCKET_IFNAME=lo", "--export", "QR_OVERRIDDEN=from-export",
            "--srun-arg=--cpu-bind=none", f"--srun-arg=--chdir={jobs}",
            "--sbatch-arg=--comment=qwen-recipe real Slurm test", "-o", "job.sbatch"]
    if t.launch("default", argv, cwd):
        t.submit("default", cwd / "job.sbatch", {
            "argv": t.expected_argv(argv[:-2]), "config": cwd / "job.yaml",
            "job_name": "qwen35_35b-b200-bf16", "comment": "qwen-recipe real Slurm test",
            "slurm": {"Partition": "gpus", "TimeLimit": "00:05:00", "NumNodes": "1",
                      "NumTasks": str(GPUS), "TresPerNode": f"gres:gpu:{GPUS}",
                      "OverSubscribe": "NO"},  # --exclusive
            "env": {"QR_SITE_PROXY": "http://proxy:3128", "QR_SITE_CRLF": "dropped-cr",
                    "QR_OVERRIDDEN": "from-export", "NCCL_SOCKET_IFNAME": "lo",
                    "PYTHONPATH": str(standin_src)},
            "cwd": str(jobs)})

    # hostile: every payload through each route that accepts it, in one job. In a file name
    # (the job's output file is named after the job) the payloads create PWNED in the folder
    # they run in, which is under the test's folder too.
    p = t.payloads()
    one_line = {k: v for k, v in p.items() if k not in ("lf", "cr", "ls")}
    cwd = jobs / "dir $(touch PWNED) `touch PWNED` a'b"
    bridge = t.root / "bridge $(touch PWNED) a'b;c"
    shutil.copytree(STANDIN, bridge)
    site_env_file(jobs / "hostile.env", {f"QR_FILE_{k.upper()}": v for k, v in one_line.items()})
    # sbatch reads an #SBATCH value between double quotes (launch refuses `"` and `\`).
    sbatch_safe = "c $(touch PWNED) `touch PWNED` a'b #c;d PATH[$(touch PWNED)]"
    rank_dir = t.root / "ranks $(touch PWNED) `touch PWNED` a'b;c #d"
    rank_dir.mkdir()
    argv = [*RECIPE, "--megatron-bridge", str(bridge), "--export", f"PYTHONPATH={bridge}/src",
            "--env-file", str(jobs / "hostile.env"), "--job-name", sbatch_safe,
            f"--sbatch-arg=--comment={sbatch_safe}",
            f"--srun-arg=--chdir={rank_dir}"]
    for k, v in p.items():
        argv.append(f"+env_vars.QR_YAML_{k.upper()}={json.dumps(v)}")
    for k, v in one_line.items():
        argv += ["--export", f"QR_EXPORT_{k.upper()}={v}"]
    script = cwd / "job $(touch PWNED) 'q'.sbatch"
    argv += ["-o", str(script)]
    if t.launch("hostile", argv, cwd):
        env = {f"QR_YAML_{k.upper()}": v for k, v in p.items()}
        env.update({f"QR_EXPORT_{k.upper()}": v for k, v in one_line.items()})
        env.update({f"QR_FILE_{k.upper()}": v for k, v in one_line.items()})
        env["SLURM_JOB_NAME"] = sbatch_safe
        t.submit("hostile", script, {
            "argv": t.expected_argv(argv[:-2]), "config": script.with_suffix(".yaml"),
            "job_name": sbatch_safe, "comment": sbatch_safe, "env": env, "cwd": str(rank_dir)})

    # A line break in a value that reaches a command line or #SBATCH line is refused, as the
    # docs say; refused means nothing written.
    for opt in ("--export=QR_X=", "--job-name=", "--sbatch-arg=--comment=", "--srun-arg=--x="):
        for k in ("lf", "cr", "ls"):
            refused = jobs / f"refused-{k}"
            refused.mkdir(parents=True, exist_ok=True)
            gen = t.qwen_recipe(["launch", *RECIPE, opt + p[k], "-o", "r.sbatch"], refused)
            err = gen.stderr.decode(errors="replace")
            if gen.returncode != 2 or not err.startswith("error: ") or err.count("\n") != 1 \
                    or list(refused.iterdir()):
                t.fail("refused", f"{opt}{p[k]!r}: exit {gen.returncode}, {err!r}")

    # sweep: one job per value, each with its own config.
    values = [p["lf"], p["arith"]]
    cwd = jobs / "sweep"
    argv = [*RECIPE, "--megatron-bridge", str(STANDIN), "--export", f"PYTHONPATH={standin_src}",
            "--srun-arg=--cpu-bind=none", "--sbatch-arg=--output=sweep-%j.log",
            "+env_vars.QR_SWEEP=" + ",".join(map(json.dumps, values)),
            "--multirun", "--out-dir", "runs"]
    if t.launch("sweep", argv, cwd):
        plan = t.expected_argv(argv[:-4])
        index = yaml.safe_load((cwd / "runs" / "multirun.yaml").read_text(encoding="utf-8"))
        if len(index["runs"]) != len(values):
            t.fail("sweep", f"{len(index['runs'])} runs, want {len(values)}")
        for run in index["runs"]:
            config = cwd / "runs" / run["config"]
            value = yaml.safe_load(config.read_text(encoding="utf-8"))["env_vars"]["QR_SWEEP"]
            if value not in values:
                t.fail("sweep", f"{run['config']}: QR_SWEEP={value!r}, not one of the sweep's")
            script = cwd / "runs" / run["launch"]
            name = re.search(r"^#SBATCH --job-name=(.*)$", script.read_text(), re.M).group(1)
            t.submit("sweep", script, {
                "argv": plan, 
                "config": config, "job_name": name.strip('"'), "env": {"QR_SWEEP": value},
                "log": "sweep-{job}.log"})

    # dropped-key: the loader stops the job before the entry point runs; Slurm says it failed.
    cwd = jobs / "dropped"
    argv = [*RECIPE, "--megatron-bridge", str(STANDIN), "--export", f"PYTHONPATH={standin_src}",
            "--export", "QR_STANDIN_DROP=train.global_batch_size", "-o", "job.sbatch"]
    if t.launch("dropped-key", argv, cwd):
        t.submit("dropped-key", cwd / "job.sbatch", {
            "state": ("FAILED", "1:0"), "job_name": "qwen35_35b-b200-bf16",
            "output": ["did not load train.global_batch_size from " + str(cwd / "job.yaml")]})


# Cases that once got past launch and broke under a real Slurm (the stand-ins missed the last),
# each with the launch options it adds to a plain launch. Each must now be refused (exit 2, one
# error line, nothing written) or run as launched with nothing of the value executed.
# - export-slurm-job-id (issue 41, item 1): the script computed MASTER_PORT with
#   $((20000 + SLURM_JOB_ID % 20000)), and bash evaluated the exported value as an arithmetic
#   expression: the $(...) ran on the node (creating PWNED-export-slurm-job-id).
# - srun-arg-swallows (issue 41, item 5): `--srun-arg=-o` made the real srun take the next word of
#   the script (`python`) as -o's value: the job failed and no rank started.
# - job-name-slash: `#SBATCH --output=%x-%j.out` made a job name holding `/` a path: Slurm could
#   not open `sub/x-JOB.out`, so the job failed (exit code 0:53) before its script ran, with no log.
REGRESSION_CASES = {
    "export-slurm-job-id": ["--export", "SLURM_JOB_ID=PATH[$(touch {canary})]"],
    "srun-arg-swallows": ["--srun-arg=-o"],
    "job-name-slash": ["--job-name", "sub/x"],
}


def regression_cases(t):
    """Writes and submits the REGRESSION_CASES (checked with the others)."""
    for case, options in REGRESSION_CASES.items():
        canary = t.root / f"PWNED-{case}"
        cwd = t.root / "jobs" / case
        cwd.mkdir(parents=True)
        argv = [*RECIPE, "--megatron-bridge", str(STANDIN), "--export",
                f"PYTHONPATH={STANDIN / 'src'}", *(o.format(canary=canary) for o in options),
                "-o", "job.sbatch"]
        t.canaries[case] = canary
        gen = t.qwen_recipe(["launch", *argv], cwd)
        err = gen.stderr.decode(errors="replace")
        if gen.returncode == 0:
            job_name = options[options.index("--job-name") + 1] if "--job-name" in options \
                else "qwen35_35b-b200-bf16"
            t.submit(case, cwd / "job.sbatch", {
                "argv": t.expected_argv(argv[:-2]), "config": cwd / "job.yaml",
                "job_name": job_name})
        elif gen.returncode != 2 or not err.startswith("error: ") or err.count("\n") != 1 \
                or list(cwd.iterdir()):
            t.fail(case, f"refused with exit {gen.returncode}, {err!r}")


def main():
    binary, work = os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
    if os.geteuid() != 0:
        skip("not root: a test Slurm runs slurmd as root (SlurmdUser=root)")
    missing = [b for b in ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue",
                           "scontrol") if daemon(b) is None]
    if missing:
        skip(f"{', '.join(missing)} not installed (Debian: slurmctld slurmd slurm-client munge; "
             "scripts/setup installs them)")
    root = work / "real-slurm"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    root.chmod(0o755)  # munged wants its socket's folders searchable by all
    start = time.monotonic()
    # SIGTERM (and SIGINT) unwind through the teardown.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    with Cluster(root) as cluster:
        t = Test(binary, root, cluster)
        up = time.monotonic()
        cases(t)
        regression_cases(t)
        t.wait()
        ran = time.monotonic()
        for job, (case, script, expect) in t.jobs.items():
            t.check_job(job, case, script, expect)
        t.check_canaries()
    failures = [f"{case}: {w}" for case, what in t.failures.items() for w in what]
    if failures:
        sys.exit(f"{len(failures)} failures:\n" + "\n".join(failures))
    print(f"{len(t.jobs)} jobs ran under a real Slurm as launched; Slurm up in {up - start:.1f} s, "
          f"jobs written and run in {ran - up:.1f} s, all in {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
