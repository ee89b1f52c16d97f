#!/usr/bin/env python3
"""Hostile values in every field that reaches a generated script or YAML, run for real.

Each case builds a launch (Slurm and torchrun) or a config with one hostile value (line breaks
LF, CR, NEL, U+2028, U+2029; NUL; quotes; $(...); backquotes; `;`; a leading `-`; blanks) in one
field: --job-name, -A, -p, -t, -o, --config, --container-image, --container-mounts,
--megatron-bridge, --reservation, --sbatch-arg, --srun-arg, --segment, a site variable (--export
and an --env-file line), an env value (raw in the override, and as a YAML escape that puts the byte in
the value itself), and a model key of a --recipes-dir catalogue; invalid UTF-8 in every option of
--format json. Then either:

- the command refused: exit 2, one `error:` line, and the work directory as it was; or
- it succeeded, and running what it wrote under stand-in `sbatch`, `srun`, `scontrol`,
  `torchrun`, `python` and `python3` (each logs its argv) ran exactly the intended commands and
  nothing else (a canary file that every payload tries to create never appears), the entry point
  got the literal values (the env value, the config path, the container image and mounts as srun
  saw them, the #SBATCH values as sbatch parses them), and every YAML written loads in PyYAML (and
  OmegaConf, when installed) with the same keys as a clean build: no value became structure.

usage: launch_hostile.py QWEN_RECIPE RECIPES_DIR WORKDIR
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import yaml

CANARY = "PWNED"
PAYLOADS = {
    "newline": "a\ntouch PWNED #",
    "cr": "a\rtouch PWNED #",
    "nel": "a\u0085b",
    "ls": "a\u2028b",
    "ps": "a\u2029b",
    "dquote": 'a"b',
    "squote": "a'b",
    "subst": "$(touch PWNED)",
    "backquote": "`touch PWNED`",
    "semicolon": "a;touch PWNED",
    "dash": "-x",
    "blank": "a b",
    "backslash": "a\\b",
    "hash": "a #b",
    "dollar": "$HOME",
}
LINE_BREAKS = ("newline", "cr", "nel", "ls", "ps")

RUN_SCRIPT = '''
import json, os, sys
def get_perf_recipe_by_name(**kwargs):
    raise SystemExit("the loader did not replace get_perf_recipe_by_name")
def main():
    recipe = get_perf_recipe_by_name(model_recipe_name="x", task="pretrain", num_gpus=1, gpu="g",
                                     precision="bf16")
    with open(os.environ["QR_RESULT"], "w") as f:
        json.dump({"recipe": recipe.path, "argv": sys.argv, "FOO": os.environ.get("FOO")}, f)
'''
CONFIG_PY = '''
import yaml
class ConfigContainer:
    def __init__(self, path):
        self.path = path
    @classmethod
    def from_yaml(cls, path):
        return cls(path)
    def to_dict(self):
        with open(self.path) as f:
            return yaml.safe_load(f)
'''
# Every stand-in logs its argv as one JSON line; srun and torchrun then drop their options and
# run the rest, python runs the real interpreter, sbatch parses #SBATCH lines as sbatch does
# (one line each, blanks outside double quotes separate options) and runs the script.
STANDIN = '''#!{python}
import json, os, subprocess, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["QR_CALLS"], "a") as log:
    log.write(json.dumps([name] + sys.argv[1:]) + "\\n")
args = sys.argv[1:]
if name == "scontrol":
    print("node-a\\nnode-b")
elif name in ("srun", "torchrun"):
    while args and args[0].startswith("--"):
        args.pop(0)
    os.execvp(args[0], args)
elif name in ("python", "python3"):
    os.execv("{python}", ["{python}"] + args)
elif name == "sbatch":
    opts = []
    for line in open(args[0], encoding="utf-8", errors="surrogateescape"):
        if not line.startswith("#SBATCH "):
            continue
        word, quoted, words = "", False, []
        for c in line[len("#SBATCH "):].rstrip("\\n"):
            if c == '"':
                quoted = not quoted
            elif c in " \\t" and not quoted:
                words, word = words + [word] if word else words, ""
            else:
                word += c
        opts += words + ([word] if word else [])
    with open(os.environ["QR_SBATCH"], "w") as f:
        json.dump(opts, f)
    xtrace = ["-x"] if os.environ.get("QR_XTRACE") else []
    sys.exit(subprocess.run(["bash", *xtrace, args[0]]).returncode)
'''


class Env:
    def __init__(self, binary, recipes, root):
        self.binary, self.recipes, self.root = binary, recipes, root
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        self.bridge = root / "mbridge"
        (self.bridge / "scripts/performance").mkdir(parents=True)
        (self.bridge / "scripts/performance/run_script.py").write_text(RUN_SCRIPT)
        pkg = root / "py/megatron/bridge/training"
        pkg.mkdir(parents=True)
        for d in ("megatron", "megatron/bridge", "megatron/bridge/training"):
            (root / "py" / d / "__init__.py").write_text("")
        (pkg / "config.py").write_text(CONFIG_PY)
        self.bin = root / "bin"
        self.bin.mkdir()
        for name in ("sbatch", "srun", "scontrol", "torchrun", "python", "python3"):
            (self.bin / name).write_text(STANDIN.format(python=sys.executable))
            (self.bin / name).chmod(0o755)
        self.clean_keys = None
        self.failures = []
        self.cases = 0

    def fail(self, case, what):
        self.failures.append(f"{case}: {what}")

    def qwen_recipe(self, args, cwd):
        return subprocess.run([self.binary, "-q", *args], cwd=cwd, capture_output=True)

    def yaml_keys(self, path):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        try:
            from omegaconf import OmegaConf
            assert OmegaConf.to_container(OmegaConf.load(path)) == data, "OmegaConf differs"
        except ImportError:
            pass
        return data

    def check_yaml(self, case, path, foo=None):
        data = self.yaml_keys(path)
        if self.clean_keys is None:
            return data
        if set(data) != self.clean_keys:
            self.fail(case, f"{path.name}: top-level keys {sorted(set(data) ^ self.clean_keys)}")
        env = data.get("env_vars") or {}
        if foo is not None and env.get("FOO") != foo:
            self.fail(case, f"{path.name}: env_vars.FOO is {env.get('FOO')!r}, want {foo!r}")
        if set(env) - {"FOO"} != self.clean_env:
            self.fail(case, f"{path.name}: env_vars keys {sorted(set(env) ^ self.clean_env)}")
        return data

    def run_case(self, case, args, fmt, want):
        """Runs one launch; `want` maps what must reach the entry point (or None: refusal ok)."""
        self.cases += 1
        work = self.root / "cases" / case / fmt
        work.mkdir(parents=True)
        script = want.pop("-o", "job.sh")
        argv = ["launch", *args, "--format", fmt]
        if not want.pop("bridge", False):
            argv += ["--megatron-bridge", str(self.bridge)]
        if "-o" not in args:
            argv += ["-o", script]
        if "--recipes-dir" in want:
            argv = ["--recipes-dir", want.pop("--recipes-dir")] + argv
        gen = self.qwen_recipe(argv, work)
        if gen.returncode != 0:
            err = gen.stderr.decode("utf-8", "replace")
            if gen.returncode != 2 or not err.startswith("error: ") or err.count("\n") != 1:
                self.fail(case, f"{fmt}: exit {gen.returncode}, stderr {err!r}")
            if want.get("must_succeed"):
                self.fail(case, f"{fmt}: refused {err!r}")
            if list(work.iterdir()):
                self.fail(case, f"{fmt}: refused but left {[p.name for p in work.iterdir()]}")
            return
        if want.get("must_refuse"):
            self.fail(case, f"{fmt}: accepted")
        if fmt == "json":
            return  # nothing to run
        config = pathlib.Path(want.get("config", pathlib.Path(script).with_suffix(".yaml")))
        self.execute(case, work, work / script, work / config, fmt, want)

    def run_sweep(self, case, args, fmt, foos):
        """launch --multirun over env_vars.FOO: every run's script runs with its own value."""
        self.cases += 1
        work = self.root / "cases" / case / fmt
        work.mkdir(parents=True)
        argv = ["launch", *args, "--format", fmt, "--megatron-bridge", str(self.bridge),
                "--multirun", "--out-dir", "runs"]
        gen = self.qwen_recipe(argv, work)
        if gen.returncode != 0:
            self.fail(case, f"{fmt}: refused {gen.stderr.decode('utf-8', 'replace')!r}")
            return
        index = yaml.safe_load((work / "runs" / "multirun.yaml").read_text(encoding="utf-8"))
        if len(index["runs"]) != len(foos):
            self.fail(case, f"{fmt}: {len(index['runs'])} runs, want {len(foos)}")
            return
        for run, foo in zip(index["runs"], foos):
            if "/" in run["config"] or "/" in run["launch"]:
                self.fail(case, f"{fmt}: a run's file name holds '/': {run['config']!r}")
                continue
            self.execute(case, work / "runs", work / "runs" / run["launch"],
                         work / "runs" / run["config"], fmt, {"FOO": foo})

    def execute(self, case, work, script, config, fmt, want):
        """Runs a written launch under the stand-ins and checks what reached the entry point."""
        try:
            if want.get("FOO") == "as in the YAML":
                want["FOO"] = str(self.yaml_keys(config)["env_vars"]["FOO"])
            self.check_yaml(case, config, want.get("FOO"))
        except Exception as err:  # a header or value that broke the YAML
            self.fail(case, f"{fmt}: {config.name} does not load: {str(err)[:80]!r}")
        calls, result, sbatch = (work / (script.stem + n) for n in
                                 (".calls.jsonl", ".result.json", ".sbatch.json"))
        env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}",
                   PYTHONPATH=str(self.root / "py"), QR_CALLS=str(calls), QR_RESULT=str(result),
                   QR_SBATCH=str(sbatch), SLURM_JOB_NODELIST="node-[a-b]", SLURM_JOB_ID="4242",
                   NODE_RANK="0", MASTER_ADDR="node-a")
        env.pop("FOO", None)
        env.update(want.get("job_env", {}))
        xtrace = want.get("xtrace", False)
        if xtrace:
            env["QR_XTRACE"] = "1"
        # Submitted from another directory than the one it was written in.
        elsewhere = work / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        first = ["sbatch"] if fmt == "slurm" else ["bash"] + (["-x"] if xtrace else [])
        run = subprocess.run(first + [str(script)], cwd=elsewhere, env=env,
                             capture_output=True)
        for p in work.rglob(CANARY):
            self.fail(case, f"{fmt}: {p} was created: a payload ran")
        if want.get("script_stops"):
            names = [json.loads(line)[0] for line in calls.read_text().splitlines()] \
                if calls.exists() else []
            if run.returncode == 0 or "srun" in names or "python" in names:
                self.fail(case, f"{fmt}: the script ran {names}, exit {run.returncode}; want a "
                                "stop before srun")
            return
        if run.returncode != 0:
            self.fail(case, f"{fmt}: the script failed: {run.stderr.decode(errors='replace')}")
            return
        names = [json.loads(line)[0] for line in calls.read_text().splitlines()]
        want_calls = ["sbatch", "scontrol", "srun", "python"] if fmt == "slurm" \
            else ["torchrun", "python"]
        if names != want_calls:
            self.fail(case, f"{fmt}: ran {names}, want {want_calls}")
        got = json.loads(result.read_text())
        if got["recipe"] != str(config.resolve()):
            self.fail(case, f"{fmt}: config {got['recipe']!r}, want {str(config.resolve())!r}")
        # A site variable (--export, --env-file) reaches the entry point, not the YAML.
        foo = want.get("site", want.get("FOO"))
        if got["FOO"] != foo:
            self.fail(case, f"{fmt}: FOO={got['FOO']!r}, want {foo!r}")
        if fmt == "slurm":
            opts = json.loads(sbatch.read_text())
            for opt, value in want.get("sbatch", {}).items():
                if f"{opt}={value}" not in opts:
                    self.fail(case, f"sbatch read {opts}, want {opt}={value!r}")
            for opt in want.get("sbatch_absent", []):
                if opt in opts:
                    self.fail(case, f"sbatch read {opts}, want no {opt!r}")
            srun = [json.loads(line) for line in calls.read_text().splitlines()][2]
            for arg in want.get("srun", []):
                if arg not in srun:
                    self.fail(case, f"srun got {srun[1:4]}, want {arg!r}")
            # srun's options, exactly: no word of launch's taken as an option's value.
            folder = os.path.abspath(config.parent)
            options = [o.replace("{mounts}", f"{folder}:{folder}")
                       for o in want.get("srun_options", [])]
            if options and srun[1:srun.index("python")] != options:
                self.fail(case, f"srun's options are {srun[1:srun.index('python')]}, want "
                                f"{options}")
            if "mount" in want and not any(a.startswith("--container-mounts=") and
                                           a.endswith("," + want["mount"]) for a in srun):
                self.fail(case, f"srun got {srun[1:4]}, want the mount {want['mount']!r}")


# Values bash would evaluate as code in arithmetic ($(( )) reads a variable's value as an
# expression: an array subscript runs $(...) and backquotes), under `bash -x` (PS4), or at start-up.
ARITHMETIC = {"subscript": "PATH[$(touch PWNED)]", "backquote": "PATH[`touch PWNED`]",
              "nested": "x[$(touch PWNED)]+1"}
INTERPRETED = ["SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SRUN_CONTAINER_IMAGE", "PS4", "PS1",
               "PROMPT_COMMAND", "BASH_ENV", "ENV", "IFS", "SHELLOPTS", "BASHOPTS", "CDPATH",
               "GLOBIGNORE", "PATH", "LD_PRELOAD", "BASH_XTRACEFD", "MASTER_PORT"]
# Extra srun/sbatch words that take the next word, abbreviate or alias a launch-owned option,
# or are unknown without a value: each refused, nothing written.
SRUN_REFUSED = ["-o", "--output", "-J", "--", "--job-name", "-l", "--ntasks=1",
                "--ntasks-per-node=1", "--tasks-per-node=1", "--nod=1", "--multi-prog",
                "--container-im=x", "--container-mounts=/etc:/x", "--no-container-mount-home",
                "--export=NONE", "--exp=NONE", "--gpus=1", "--ou", "--cpu", "-n4",
                "--label=yes", "--unknown-flag", "--w", "--container=/b", "--seg=2"]
SBATCH_REFUSED = ["--job-nam=x", "--partit=x", "--tasks-per-node=2", "--ntasks-per-n=2",
                  "--nod=2", "--acc=x", "--time=1", "--tim=1", "--reserv=r", "--seg=2",
                  "--gpus=8", "--gpus-per-no=8", "--ntasks=4", "--output", "--out", "-J",
                  "--", "--container-image=x", "--container-i=x", "--container=/b",
                  "--contiguous=yes", "--unknown-flag", "--mem"]


def issue41_cases(e, root, recipe):
    hostile = root / "launch-hostile"
    (hostile / "env-files").mkdir(parents=True, exist_ok=True)
    # Arithmetic and interpreted names, through --export, an env file and the recipe's env_vars.
    for name, payload in ARITHMETIC.items():
        for fmt in ("slurm", "torchrun"):
            e.run_case(f"arith-export-{name}", recipe + ["--export", "SLURM_JOB_ID=" + payload],
                       fmt, {"must_refuse": True, "xtrace": True})
            env_file = hostile / "env-files" / f"arith-{name}.env"
            env_file.write_text(f"SLURM_JOB_ID={payload}\n")
            e.run_case(f"arith-env-file-{name}", recipe + ["--env-file", str(env_file)], fmt,
                       {"must_refuse": True})
            e.run_case(f"arith-env-vars-{name}",
                       recipe + ["+env_vars.SLURM_JOB_ID=" + yaml_escape(payload)], fmt,
                       {"must_refuse": True})
        # The job's own environment (what Slurm hands the script) holds the payload: the script
        # stops before srun, and nothing runs.
        e.run_case(f"arith-job-env-{name}", recipe, "slurm",
                   {"job_env": {"SLURM_JOB_ID": payload}, "script_stops": True,
                    "must_succeed": True})
    for var in INTERPRETED:
        for fmt in ("slurm", "torchrun"):
            e.run_case(f"name-export-{var}", recipe + ["--export", f"{var}=$(touch PWNED)"], fmt,
                       {"must_refuse": True, "xtrace": True})
        env_file = hostile / "env-files" / f"name-{var}.env"
        env_file.write_text(f"{var}=$(touch PWNED)\n")
        e.run_case(f"name-env-file-{var}", recipe + ["--env-file", str(env_file)], "slurm",
                   {"must_refuse": True, "xtrace": True})
        e.run_case(f"name-env-vars-{var}",
                   recipe + [f"+env_vars.{var}=" + yaml_escape("$(touch PWNED)")], "slurm",
                   {"must_refuse": True, "xtrace": True})
    # A job id of digits still works, leading zeros included (read in base 10, not octal).
    e.run_case("job-id-leading-zero", recipe, "slurm",
               {"job_env": {"SLURM_JOB_ID": "0089"}, "must_succeed": True, "xtrace": True})
    # srun and sbatch options that would take the next word, or set launch's own options in
    # another spelling: refused.
    for arg in SRUN_REFUSED:
        e.run_case(f"srun-refused-{arg}", recipe + ["--container-image", "img",
                                                    "--srun-arg=" + arg], "slurm",
                   {"must_refuse": True})
    for arg in SBATCH_REFUSED:
        e.run_case(f"sbatch-refused-{arg}", recipe + ["--sbatch-arg=" + arg], "slurm",
                   {"must_refuse": True})
    # Accepted: srun sees exactly these options and then launch's; an abbreviation of --output
    # replaces launch's default rather than adding a second one.
    for args in (["--label"], ["--cpu-bind=none", "--kill-on-bad-exit"], ["--kill-on-bad-exit=1"],
                 ["--mpi=pmix", "--some-future-option=1"]):
        e.run_case(f"srun-ok-{'_'.join(args)}",
                   recipe + ["--container-image", "img"] + ["--srun-arg=" + a for a in args],
                   "slurm", {"must_succeed": True, "srun_options": args + [
                       "--container-image=img", "--container-mounts=" + "{mounts}",
                       "--container-writable"]})
    e.run_case("sbatch-out-abbrev", recipe + ["--sbatch-arg=--out=logs-%j.out",
                                              "--sbatch-arg=--exclusive=user"], "slurm",
               {"must_succeed": True, "sbatch": {"--out": "logs-%j.out"},
                "sbatch_absent": ["--output=%x-%j.out", "--exclusive"]})
    # Pyxis separators (and what enroot's fstab reads) in a path that reaches --container-mounts.
    for name, folder in {"comma": "a,b", "colon": "a:b", "blank": "a b", "dollar": "a$HOME",
                         "hash": "a#b", "issue": "a,/etc:/mnt/x"}.items():
        work = hostile / "cases" / f"pyxis-{name}"
        (work / folder).mkdir(parents=True)
        for opt in ("-o", "--config"):
            e.cases += 1
            target = f"{folder}/j.sbatch" if opt == "-o" else f"{folder}/j.yaml"
            extra = [] if opt == "-o" else ["-o", "j.sbatch"]
            gen = e.qwen_recipe(["launch", *recipe, "--container-image", "img", opt, target,
                                 *extra], work)
            refused_cleanly(e, f"pyxis-{name}{opt}", gen, work, {folder})
    for mount in ("/a,/etc:/x", "/a b:/x", "/a:/b:ro:x", "/a:/b:r o", "/a$HOME:/x", "/a:/x#y"):
        e.run_case(f"mount-{mount}", recipe + ["--container-image", "img", "--container-mounts",
                                               mount], "slurm", {"must_refuse": True})
    file_cases(e, hostile, recipe)


def refused_cleanly(e, case, gen, work, keep=()):
    """Exit 2, one escaped error line, nothing on stdout, and no file but `keep` in `work`."""
    err = gen.stderr.decode("utf-8", "replace")
    if gen.returncode != 2 or not err.startswith("error: ") or err.count("\n") != 1:
        e.fail(case, f"exit {gen.returncode}, stderr {err!r}")
    if gen.stdout:
        e.fail(case, f"printed {gen.stdout[:60]!r}")
    left = []
    for top, dirs, files in os.walk(work):
        rel = os.path.relpath(top, work)
        left += [os.path.normpath(os.path.join(rel, f)) for f in files
                 if os.path.normpath(os.path.join(rel, f)) not in keep]
    if left:
        e.fail(case, f"left {left}")


def file_cases(e, hostile, recipe):
    """The pair when the script goes to standard output or a device, and files by identity."""
    binary = [e.binary, "-q", "launch", *recipe]

    def case(name, argv, stdout=subprocess.PIPE, keep=(), shell=None):
        e.cases += 1
        work = hostile / "cases" / f"files-{name}"
        work.mkdir(parents=True)
        for d in keep:
            (work / d).mkdir(parents=True, exist_ok=True)
        if shell:
            gen = subprocess.run(["bash", "-c", shell, "qr", *binary, *argv], cwd=work,
                                 capture_output=True)
        else:
            gen = subprocess.run(binary + argv, cwd=work, stdout=stdout, stderr=subprocess.PIPE)
        return work, gen

    with open("/dev/full", "wb") as full:
        work, gen = case("stdout-full", ["--config", "c.yaml"], stdout=full)
        refused_cleanly(e, "stdout-full", gen, work)
    work, gen = case("dev-full", ["--config", "c.yaml", "-o", "/dev/full"])
    refused_cleanly(e, "dev-full", gen, work)
    # A reader gone before the write (SIGPIPE unless handled), and standard output closed.
    for name, argv in {"closed-pipe": ["--config", "c.yaml"],
                       "closed-pipe-dev-stdout": ["--config", "c.yaml", "-o", "/dev/stdout"]}.items():
        read_end, write_end = os.pipe()
        os.close(read_end)
        work, gen = case(name, argv, stdout=write_end)
        os.close(write_end)
        refused_cleanly(e, name, gen, work)
    work, gen = case("closed-stdout", ["--config", "c.yaml"], shell='exec "$@" >&-')
    refused_cleanly(e, "closed-stdout", gen, work)
    # -o /dev/stdout: the script on standard output, the config JOB-NAME.yaml here.
    work, gen = case("dev-stdout", ["-o", "/dev/stdout", "--job-name", "j"])
    if gen.returncode != 0 or not gen.stdout.startswith(b"#!/bin/bash\n") or \
            not (work / "j.yaml").is_file() or \
            f"CONFIG={work / 'j.yaml'}\n".encode() not in gen.stdout:
        e.fail("dev-stdout", f"exit {gen.returncode}, {gen.stderr!r}, files "
                             f"{[p.name for p in work.iterdir()]}")
    if os.path.exists("/dev/stdout.yaml"):
        e.fail("dev-stdout", "wrote /dev/stdout.yaml")
        os.unlink("/dev/stdout.yaml")
    for name, config in {"dash": "-", "null": "/dev/null", "full": "/dev/full"}.items():
        work, gen = case(f"config-{name}", ["--config", config, "-o", "j.sbatch"])
        refused_cleanly(e, f"config-{name}", gen, work)
    # The same file through a folder that is a symbolic link to the other's.
    work = hostile / "cases" / "files-symlinked-folder"
    (work / "d1").mkdir(parents=True)
    (work / "d2").symlink_to("d1")
    for force in ([], ["--force"]):
        e.cases += 1
        gen = subprocess.run(binary + force + ["-o", "d1/x", "--config", "d2/x"], cwd=work,
                             capture_output=True)
        refused_cleanly(e, f"symlinked-folder{force}", gen, work, {"d1", "d2"})
    # '..' after a symbolic link: the kernel reaches another folder than the spelling.
    work = hostile / "cases" / "files-dotdot"
    (work / "real" / "sub").mkdir(parents=True)
    (work / "link").symlink_to("real/sub")
    e.cases += 1
    gen = subprocess.run(binary + ["-o", "j.sbatch", "--config", "link/../c.yaml"], cwd=work,
                         capture_output=True)
    if gen.returncode == 0:
        text = (work / "j.sbatch").read_text()
        named = next(l for l in text.splitlines() if l.startswith("CONFIG="))[len("CONFIG="):]
        if not os.path.isfile(named):
            e.fail("dotdot", f"the script names {named}, which is not the config written")
    else:
        refused_cleanly(e, "dotdot", gen, work, {"real", "link"})


def yaml_escape(value):
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


def main():
    binary, recipes, root = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    e = Env(binary, recipes, root / "launch-hostile")
    clean = e.qwen_recipe(["build", "qwen35_35b", "--gpu", "b200"], root)
    data = yaml.safe_load(clean.stdout)
    e.clean_keys, e.clean_env = set(data), set(data["env_vars"])
    recipe = ["qwen35_35b", "--gpu", "b200"]
    for name, v in PAYLOADS.items():
        breaks = name in LINE_BREAKS
        for fmt in ("slurm", "torchrun"):
            # An env value, raw in the override (it goes into the header's command too) ...
            e.run_case(f"env-raw-{name}", recipe + ["+env_vars.FOO=" + v], fmt,
                       {"FOO": "as in the YAML", "must_refuse": breaks})
            # ... and as a YAML escape: the byte is in the value, the token is one line.
            e.run_case(f"env-escaped-{name}", recipe + ["+env_vars.FOO=" + yaml_escape(v)], fmt,
                       {"FOO": v, "must_succeed": True})
            e.run_case(f"output-{name}", recipe, fmt, {"-o": v.replace("/", "") + ".sh",
                                                       "must_refuse": breaks})
            e.run_case(f"config-{name}", recipe + ["--config", v + ".yaml"], fmt,
                       {"config": v + ".yaml", "must_refuse": breaks})
            bridge = root / "launch-hostile" / "bridges" / name / v
            if not bridge.exists():
                shutil.copytree(e.bridge, bridge)
            e.run_case(f"bridge-{name}", recipe + ["--megatron-bridge", str(bridge)], fmt,
                       {"bridge": True, "must_refuse": breaks})
            # Site variables: on the command line and as a line of an env file (kept outside
            # the work directory, which a refusal must leave empty).
            e.run_case(f"export-{name}", recipe + ["--export", "FOO=" + v], fmt,
                       {"site": v, "must_refuse": breaks})
            env_file = root / "launch-hostile" / "env-files" / f"{name}.env"
            env_file.parent.mkdir(parents=True, exist_ok=True)
            env_file.write_text(f"# site\nFOO={v}\n", encoding="utf-8")
            e.run_case(f"env-file-{name}", recipe + ["--env-file", str(env_file)], fmt,
                       {"site": v, "must_refuse": breaks})
        e.run_case(f"jobname-{name}", recipe + ["--job-name", v], "slurm",
                   {"sbatch": {"--job-name": v}, "must_refuse": breaks})
        for opt in ("-A", "-p", "-t"):
            long = {"-A": "--account", "-p": "--partition", "-t": "--time"}[opt]
            e.run_case(f"sbatch{opt}-{name}", recipe + [opt, v], "slurm",
                       {"sbatch": {long: v}, "must_refuse": breaks})
        e.run_case(f"reservation-{name}", recipe + ["--reservation", v], "slurm",
                   {"sbatch": {"--reservation": v}, "must_refuse": breaks})
        e.run_case(f"sbatch-arg-{name}", recipe + ["--sbatch-arg=--comment=" + v], "slurm",
                   {"sbatch": {"--comment": v}, "must_refuse": breaks})
        e.run_case(f"srun-arg-{name}", recipe + ["--srun-arg=--comment=" + v], "slurm",
                   {"srun": ["--comment=" + v], "must_refuse": breaks})
        e.run_case(f"segment-{name}", recipe + ["--segment", v], "slurm", {"must_refuse": True})
        e.run_case(f"image-{name}", recipe + ["--container-image", v], "slurm",
                   {"srun": ["--container-image=" + v], "must_refuse": breaks})
        if "," not in v:
            mount = f"/src{v}:/dst"
            e.run_case(f"mounts-{name}", recipe + ["--container-image", "img", "--container-mounts",
                                                   mount], "slurm",
                       {"mount": mount, "must_refuse": breaks})
    # A sweep over hostile env values: each run's file and job name come from its value, and
    # each script passes exactly its own value on.
    for fmt in ("slurm", "torchrun"):
        values = [v for n, v in PAYLOADS.items() if n not in LINE_BREAKS]
        e.run_sweep("multirun-env", recipe + ["+env_vars.FOO=" + ",".join(map(yaml_escape, values))],
                    fmt, values)
    # NUL cannot be in a command line; a YAML escape puts one in the value, which no environment
    # can carry: refused, nothing written.
    for fmt in ("slurm", "torchrun", "json"):
        e.run_case("env-nul", recipe + ['+env_vars.FOO="a\\0b"'], fmt, {"must_refuse": True})
    # Invalid UTF-8 (here byte 0xFF) would make --format json invalid: refused in every option.
    for opt in ("--job-name", "-A", "-p", "-t", "--container-image", "--container-mounts",
                "--megatron-bridge", "--config"):
        e.run_case(f"invalid-utf8{opt}", recipe + [opt, "a\udcffb"], "json", {"must_refuse": True})
    for arg in ("--reservation=a\udcffb", "--sbatch-arg=--comment=a\udcffb",
                "--srun-arg=--comment=a\udcffb", "--export=FOO=a\udcffb"):
        e.run_case(f"invalid-utf8{arg.split('=')[0]}", recipe + [arg], "json",
                   {"must_refuse": True})
    # A model key of a --recipes-dir catalogue.
    for name, v in PAYLOADS.items():
        tree = root / "launch-hostile" / "recipes" / name
        shutil.copytree(recipes, tree)
        for f in [tree / "catalog.yaml", *sorted((tree / "gpus").glob("*.yaml"))]:
            f.write_text(f.read_text().replace("  qwen3_30b:", f"  {yaml_escape(v)}:", 1))
        if v.startswith("-"):
            continue  # the positional RECIPE would read as an option
        e.run_case(f"model-key-{name}", [v, "--gpu", "b200"], "slurm",
                   {"--recipes-dir": str(tree), "sbatch": {"--job-name": v + "-b200-bf16"},
                    "must_refuse": breaks})
    # Built YAML: a value with every payload, and the header, load with the same keys.
    for name, v in PAYLOADS.items():
        e.cases += 1
        out = e.qwen_recipe(["build", *recipe, "+env_vars.FOO=" + yaml_escape(v)], root)
        if out.returncode != 0:
            e.fail(f"build-{name}", out.stderr.decode(errors="replace"))
            continue
        path = root / "launch-hostile" / f"build-{name}.yaml"
        path.write_bytes(out.stdout)
        try:
            e.check_yaml(f"build-{name}", path, v)
        except Exception as err:
            e.fail(f"build-{name}", f"does not load: {str(err)[:80]!r}")
    issue41_cases(e, root, recipe)
    if e.failures:
        sys.exit(f"{len(e.failures)} of {e.cases} cases failed:\n" + "\n".join(e.failures))
    print(f"{e.cases} hostile cases: refused or ran exactly the intended commands")


if __name__ == "__main__":
    main()
