#!/usr/bin/env python3
"""Worst bounded inputs, signals during writes, long names and links: one case per run.

usage: bounded_inputs.py QWEN_RECIPE GOLDEN_YAML WORKDIR CASE
CASE: deep-flow (60 MB of '[' fails fast and small), wide-map (a 100k-key mapping loads fast),
      env-zero (--env /dev/zero is refused), signals (SIGINT/SIGTERM/SIGHUP during launch's
      write leave no temporary file; needs strace), sweep-signals (the same during a sweep's 33
      files), long-name (a 250-byte file name), links (-o naming a symbolic link)
"""
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import time


def run(binary, args, cwd):
    start = time.monotonic()
    r = subprocess.run([binary, "-q", *args], cwd=cwd, capture_output=True, text=True)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return r, time.monotonic() - start, peak_mib


def expect(ok, what):
    if not ok:
        sys.exit("FAIL: " + what)


def main():
    binary, golden, work, case = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
    work = work / ("bounded-" + case)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = ["--pipeline", "benchmark-common"]
    if case == "deep-flow":
        (work / "deep.yaml").write_text("model: " + "[" * 60_000_000)
        r, secs, mib = run(binary, ["build", "--base", "deep.yaml", *base], work)
        expect(r.returncode == 2 and "deep.yaml:1:507: nesting deeper than 500 levels" in r.stderr,
               f"deep-flow: {r.returncode} {r.stderr[:200]}")
        expect(mib < 1024 and secs < 10, f"deep-flow took {secs:.2f} s and {mib:.0f} MiB")
    elif case == "wide-map":
        text = pathlib.Path(golden).read_text()
        keys = "".join(f"  K{i}: {i}\n" for i in range(100_000))
        (work / "wide.yaml").write_text(text.replace("env_vars:\n", "env_vars:\n" + keys, 1))
        r, secs, mib = run(binary, ["build", "--base", "wide.yaml", *base, "-o", "out.yaml"], work)
        expect(r.returncode == 0, f"wide-map: {r.stderr[:200]}")
        expect(secs < 10, f"wide-map took {secs:.2f} s (quadratic?)")
    elif case == "env-zero":
        r, secs, mib = run(binary, ["validate", "qwen35_35b@gb300", "--env", "/dev/zero"], work)
        expect(r.returncode == 2 and "/dev/zero: larger than the 64 MiB" in r.stderr,
               f"env-zero: {r.returncode} {r.stderr[:200]}")
        expect(mib < 1024, f"env-zero took {mib:.0f} MiB")
    elif case == "signals":
        # strace delivers the signal at a chosen system call of the write (each fsync of a
        # temporary file, each rename), so the temporary files exist when it lands.
        # Killed before both files are in place, the pair is as it was: none (new files), or
        # the old contents (with --force over existing ones).
        launch = ["launch", "qwen35_35b", "--gpu", "gb300", "-o", "job.sbatch"]
        for sig in ("SIGINT", "SIGTERM", "SIGHUP"):
            for point in ("fsync:when=1", "fsync:when=2", "rename,renameat2:when=1",
                          "rename,renameat2:when=2"):
                for force in (False, True):
                    call, when = point.split(":")
                    run_dir = work / f"{sig}-{call.replace(',', '-')}-{when}-{force}"
                    run_dir.mkdir()
                    if force:
                        for name in ("job.yaml", "job.sbatch"):
                            (run_dir / name).write_text("old\n")
                    r = subprocess.run(["strace", "-f", "-o", os.devnull, "-e", "trace=" + call,
                                        "-e", f"inject={call}:signal={sig}:{when}", binary,
                                        "-q", *launch, *(["--force"] if force else [])],
                                       cwd=run_dir, capture_output=True, text=True)
                    what = f"signals: {sig} at {point}{' with --force' if force else ''}"
                    expect(r.returncode != 0, f"{what} did not stop launch")
                    left = sorted(os.listdir(run_dir))
                    want = ["job.sbatch", "job.yaml"] if force else []
                    expect(left == want, f"{what} left {left}")
                    for name in want:
                        expect((run_dir / name).read_text() == "old\n", f"{what} changed {name}")
    elif case == "sweep-signals":
        # A sweep's 33 files (16 runs) use more signal slots than a pair: killed at the 20th
        # fsync or rename, the directory is as it was (empty, or the old files with --force).
        sweep = ["launch", "qwen35_35b", "--gpu", "gb300", "--multirun", "--out-dir", "runs",
                 "train.global_batch_size=range(256,4352,256)"]
        names = sorted([f"global_batch_size={g}{ext}" for g in range(256, 4352, 256)
                        for ext in (".sbatch", ".yaml")] + ["multirun.yaml"])
        for sig in ("SIGINT", "SIGTERM"):
            for point in ("fsync:when=20", "rename,renameat2:when=20"):
                for force in (False, True):
                    call, when = point.split(":")
                    run_dir = work / f"{sig}-{call.replace(',', '-')}-{when}-{force}"
                    (run_dir / "runs").mkdir(parents=True)
                    if force:
                        for name in names:
                            (run_dir / "runs" / name).write_text("old\n")
                    r = subprocess.run(["strace", "-f", "-o", os.devnull, "-e", "trace=" + call,
                                        "-e", f"inject={call}:signal={sig}:{when}", binary,
                                        "-q", *sweep, *(["--force"] if force else [])],
                                       cwd=run_dir, capture_output=True, text=True)
                    what = f"sweep-signals: {sig} at {point}{' with --force' if force else ''}"
                    expect(r.returncode != 0, f"{what} did not stop launch")
                    left = sorted(os.listdir(run_dir / "runs"))
                    expect(left == (names if force else []), f"{what} left {left[:4]}...")
                    for name in left if force else []:
                        expect((run_dir / "runs" / name).read_text() == "old\n",
                               f"{what} changed {name}")
        r, _, _ = run(binary, sweep + ["--force"], work)
        expect(r.returncode == 0 and sorted(os.listdir(work / "runs")) == names,
               f"sweep-signals: the sweep itself: {r.stderr[:200]}")
    elif case == "long-name":
        name = "a" * 245 + ".yaml"  # 250 bytes: name.tmp.XXXXXX would be 261
        r, _, _ = run(binary, ["build", "qwen3_30b", "--gpu", "gb200", "-o", name], work)
        expect(r.returncode == 0 and (work / name).is_file(), f"long-name: {r.stderr[:200]}")
    elif case == "links":
        (work / "target.txt").write_text("mine\n")
        os.symlink("target.txt", work / "job.sbatch")
        launch = ["launch", "qwen35_35b", "--gpu", "gb300", "-o", "job.sbatch"]
        r, _, _ = run(binary, launch, work)
        expect(r.returncode == 2 and "job.sbatch: already exists; give --force" in r.stderr,
               f"links without --force: {r.returncode} {r.stderr[:200]}")
        expect(not (work / "job.yaml").exists(), "links: the config was written")
        r, _, _ = run(binary, launch + ["--force"], work)
        expect(r.returncode == 0, f"links with --force: {r.stderr[:200]}")
        expect(not (work / "job.sbatch").is_symlink(), "links: the link was not replaced")
        expect((work / "target.txt").read_text() == "mine\n", "links: the link's target changed")
    else:
        sys.exit("unknown case " + case)
    print(case + ": ok")


if __name__ == "__main__":
    main()
