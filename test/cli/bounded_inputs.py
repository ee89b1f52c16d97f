#!/usr/bin/env python3
"""Worst bounded inputs, signals during writes, long names and links: one case per run.

usage: bounded_inputs.py QWEN_RECIPE GOLDEN_YAML WORKDIR CASE
CASE: deep-flow (60 MB of '[' fails fast and small), wide-map (a 100k-key mapping loads fast),
      env-zero (--env /dev/zero is refused), signals (SIGINT/SIGTERM/SIGHUP during launch's
      write leave no temporary file; needs strace), sweep-signals (the same during a sweep's 33
      files), long-name (a 250-byte file name), links (-o naming a symbolic link),
      operands-endless (every file operand and option naming /dev/zero stops at the cap),
      operands-sparse (a sparse 10 GiB file is refused by its size, unread), stdin-endless
      (`yes | ... -` stops at the cap), amplify (a recipe variable repeated 10,000 times, 1,000
      aliases of a 1 MB scalar: one short error, fast), other-signals (SIGQUIT, SIGPIPE, SIGUSR1,
      SIGALRM, SIGXFSZ during launch's write, and a real `ulimit -f`, leave no temporary file),
      check-goldens (a mismatch against a big file outside the manifest's folder prints a bounded
      diff; two spellings of one golden, through a linked folder, are refused)
"""
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import time


def run(binary, args, cwd):
    start = time.monotonic()
    r = subprocess.run([binary, "-q", *args], cwd=cwd, capture_output=True, text=True)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return r, time.monotonic() - start, peak_mib


# What an unbounded reader would take is capped here, so that a regression fails the test (as a
# std::bad_alloc, or the timeout) instead of filling the machine's memory.
ADDRESS_SPACE = 1536 << 20


def built_with_asan(binary):
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def run_bounded(binary, args, cwd, stdin=subprocess.DEVNULL, timeout=60):
    """One command under a memory cap: (returncode, stderr, seconds). AddressSanitizer reserves
    terabytes of address space for its shadow, so an ASan build is capped by resident size
    instead (ASan aborts past it, which fails the check as a bad_alloc would)."""
    env = None
    if built_with_asan(binary):
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""),
                                                      f"hard_rss_limit_mb={ADDRESS_SPACE >> 20}"]))

    def limit():
        if env is None:
            resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    start = time.monotonic()
    p = subprocess.Popen([binary, "-q", *args], cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=limit, env=env)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return None, f"no answer within {timeout} s", timeout
    return p.returncode, err.decode("utf-8", "replace"), time.monotonic() - start


def one_error_line(rc, err):
    return rc == 2 and err.startswith("error: ") and err.count("\n") == 1 and len(err) <= 4200


# Every operand and option that names a file (F.yaml; a --recipes-dir D holds D/mine.yaml), and what
# its error says.
FILE_OPERANDS = [
    (["validate", "F.yaml"], "larger than the 64 MiB"),
    (["diff", "F.yaml", "qwen35_35b@gb300"], "larger than the 64 MiB"),
    (["diff", "qwen35_35b@gb300", "F.yaml"], "larger than the 64 MiB"),
    (["launch", "F.yaml"], "larger than the 64 MiB"),
    (["build", "--base", "F.yaml", "--pipeline", "benchmark-common"], "larger than the 64 MiB"),
    (["build", "qwen35_35b@gb300", "--overrides", "F.yaml"], "larger than the 1 MiB"),
    (["validate", "qwen35_35b@gb300", "--env", "F.yaml"], "larger than the 64 MiB"),
    (["launch", "qwen35_35b", "--gpu", "gb300", "--env-file", "F.yaml"], "larger than the 64 MiB"),
    # A folder's listing takes its regular files only: a link to a device is not read at all.
    (["--recipes-dir", "D", "list"], ("larger than the 64 MiB", "no .yaml files")),
    (["check", "F.yaml"], "larger than the 4 MiB"),
]


def file_operand_case(binary, work, make, what, prefix=""):
    """Runs every FILE_OPERANDS entry, F.yaml and D/mine.yaml made by make(path); the error must
    say prefix + its message, within 10 s."""
    failures = []
    for i, (args, message) in enumerate(FILE_OPERANDS):
        run_dir = work / f"operand{i}"
        (run_dir / "D").mkdir(parents=True)
        make(run_dir / "F.yaml")
        make(run_dir / "D" / "mine.yaml")
        rc, err, secs = run_bounded(binary, args, run_dir)
        wanted = (message,) if isinstance(message, str) else message
        if not (one_error_line(rc, err) and any(prefix + m in err for m in wanted)) or secs > 10:
            failures.append(f"{what}: {args}: exit {rc} after {secs:.1f} s: {err[:200]!r}")
        for f in (run_dir / "F.yaml", run_dir / "D" / "mine.yaml"):
            f.unlink()
    expect(not failures, "\n  ".join(failures))


def expect(ok, what):
    if not ok:
        sys.exit("FAIL: " + what)


def main():
    binary, golden, work, case = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
    binary = os.path.abspath(binary)
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
    elif case == "operands-endless":
        file_operand_case(binary, work, lambda p: os.symlink("/dev/zero", p), "/dev/zero")
        # A golden is a regular file: a device is refused before it is read.
        (work / "m.yaml").write_text("goldens:\n  - spec: qwen35_35b@gb300\n    golden: g.yaml\n")
        os.symlink("/dev/zero", work / "g.yaml")
        rc, err, secs = run_bounded(binary, ["check", "m.yaml", "-j", "1"], work)
        expect(one_error_line(rc, err) and "g.yaml: golden is not a regular file" in err,
               f"golden /dev/zero: exit {rc} after {secs:.1f} s: {err[:200]!r}")
    elif case == "operands-sparse":
        def sparse(path):
            with open(path, "wb") as f:
                f.truncate(10 << 30)
        file_operand_case(binary, work, sparse, "sparse 10 GiB", "file is 10240 MiB, ")
    elif case == "stdin-endless":
        for args in (["validate", "-"], ["diff", "-", "qwen35_35b@gb300"],
                     ["diff", "qwen35_35b@gb300", "-"]):
            yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
            rc, err, secs = run_bounded(binary, args, work, stdin=yes.stdout)
            yes.kill()
            yes.wait()
            yes.stdout.close()
            expect(one_error_line(rc, err) and "<stdin>: larger than the 64 MiB" in err
                   and secs < 10,
                   f"yes | {args}: exit {rc} after {secs:.1f} s: {err[:200]!r}")
    elif case == "amplify":
        # A 50 KB recipes file whose pipeline repeats a 10 KB variable 10,000 times.
        (work / "mine").mkdir()
        (work / "mine" / "mine.yaml").write_text(
            "recipes:\n  qwen35_397b@gb300x128:\n    precisions: [bf16]\n"
            "    vars:\n      v: " + "x" * 10_000 + "\n"
            "    pipeline: precision{p=bf16}" + ",${v}" * 10_000 + "\n")
        rc, err, secs = run_bounded(binary, ["--recipes-dir", "mine", "build", "qwen35_397b@gb300"],
                                    work)
        expect(one_error_line(rc, err) and "pipeline grows past 64 KiB" in err and secs < 10,
               f"amplify, recipe variable: exit {rc} after {secs:.1f} s, {len(err)} bytes: "
               f"{err[:200]!r}")
        # A 1 MB --base (a built config) whose 1,000 aliases name one 1 MB scalar.
        (work / "alias.yaml").write_text(pathlib.Path(golden).read_text().replace(
            "env_vars:\n", "env_vars:\n  QR_A: &a " + "y" * 1_000_000 + "\n" +
            "".join(f"  QR_B{i}: *a\n" for i in range(1000)), 1))
        rc, err, secs = run_bounded(binary, ["build", "--base", "alias.yaml", "--pipeline",
                                             "benchmark-common", "-o", "out.yaml"], work)
        expect(one_error_line(rc, err) and "MiB of text through its aliases" in err and secs < 10
               and not (work / "out.yaml").exists(),
               f"amplify, aliases: exit {rc} after {secs:.1f} s, {len(err)} bytes: {err[:200]!r}")
    elif case == "other-signals":
        launch = ["launch", "qwen35_35b", "--gpu", "gb300", "-o", "job.sbatch"]
        for sig in ("SIGQUIT", "SIGPIPE", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGXFSZ"):
            for point in ("fsync:when=1", "fsync:when=2", "rename,renameat2:when=1"):
                call, when = point.split(":")
                run_dir = work / f"{sig}-{call.replace(',', '-')}-{when}"
                run_dir.mkdir()
                r = subprocess.run(["strace", "-f", "-o", os.devnull, "-e", "trace=" + call,
                                    "-e", f"inject={call}:signal={sig}:{when}", binary, "-q",
                                    *launch], cwd=run_dir, capture_output=True, text=True)
                what = f"other-signals: {sig} at {point}"
                expect(r.returncode != 0, f"{what} did not stop launch")
                left = sorted(os.listdir(run_dir))
                expect(left == [], f"{what} left {left}")
        # `ulimit -f`: the kernel sends SIGXFSZ when the config passes the limit.
        run_dir = work / "ulimit-f"
        run_dir.mkdir()
        r = subprocess.run([binary, "-q", *launch], cwd=run_dir, capture_output=True,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                 (4096, 4096)))
        left = sorted(os.listdir(run_dir))
        expect(r.returncode != 0 and left == [], f"ulimit -f: exit {r.returncode}, left {left}")
    elif case == "check-goldens":
        # A golden outside the manifest's folder (absolute paths are used as given) that is a
        # big text file: the mismatch shows a bounded part of it.
        outside = work / "outside.txt"
        outside.write_text("".join(f"line{i}: secret {i}\n" for i in range(5000)))
        (work / "m").mkdir()
        (work / "m" / "manifest.yaml").write_text(
            f"goldens:\n  - spec: qwen35_35b@gb300\n    golden: {outside}\n")
        r, _, _ = run(binary, ["check", "m/manifest.yaml", "-j", "1"], work)
        lines = r.stdout.count("\n")
        expect(r.returncode == 1 and lines < 260 and len(r.stdout) < 64_000
               and "more lines" in r.stdout,
               f"check-goldens: exit {r.returncode}, {lines} lines, {len(r.stdout)} bytes")
        # One golden under two spellings: a/g.yaml and b/g.yaml with b -> a.
        (work / "a").mkdir()
        os.symlink("a", work / "b")
        (work / "two.yaml").write_text(
            "goldens:\n  - spec: qwen35_35b@gb300\n    golden: a/g.yaml\n"
            "  - spec: qwen35_35b@gb200\n    golden: b/g.yaml\n")
        for exists in (False, True):
            if exists:
                (work / "a" / "g.yaml").write_text("x: 1\n")
            r, _, _ = run(binary, ["check", "two.yaml", "--update"], work)
            expect(r.returncode == 2 and "is already the golden of the entry at" in r.stderr
                   and r.stderr.count("\n") == 1,
                   f"check-goldens, linked folder (golden exists: {exists}): exit "
                   f"{r.returncode}: {r.stderr[:200]}")
            expect(sorted(os.listdir(work / "a")) == (["g.yaml"] if exists else []),
                   f"check-goldens: files written: {os.listdir(work / 'a')}")
    else:
        sys.exit("unknown case " + case)
    print(case + ": ok")


if __name__ == "__main__":
    main()
