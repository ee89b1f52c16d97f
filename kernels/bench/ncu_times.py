#!/usr/bin/env python3
"""Per-kernel GPU times from `ncu --csv --metrics gpu__time_duration.sum ...` (gpu_suite.sh,
gpu_bar.sh): one line per kernel, in order of its first launch, with its launches and the median,
least and largest time in microseconds; where the CSV also holds `dram__bytes_read.sum` and
`dram__bytes_write.sum`, the median launch's DRAM traffic (MB) and the bandwidth it took (TB/s:
median bytes over median time), and where it holds tensor-pipe operation counts
(`sm__ops_path_tensor_*`, summed per launch), the tensor TFLOP/s (an operation is a flop: padding
and recomputed products count).

    ncu_times.py [CSV_FILE]        (stdin when no file is given)

A kernel is named as ncu names it less the return type, namespaces and arguments, its template
arguments kept (`bwd_scan_hopper_kernel<2, false>`): ours live in anonymous namespaces, whose
"(anonymous namespace)" a plain cut at the first parenthesis would take for the argument list
(ncu 2025 writes `unnamed>::` instead, with no opening bracket).
Lines that are not ncu's CSV rows (the program's own output, ==PROF== notes) are skipped. Times
in ns, us, ms or s (and ncu's older nsecond, usecond, msecond, second) are accepted; bytes in
byte or B with an SI prefix (Kbyte, MB, ...); counts with or without one (Kinst). Input without
a gpu__time_duration.sum row, or with a unit or value it cannot read, is an error: one line
naming it, exit 2."""
import csv
import re
import statistics
import sys

METRIC = "gpu__time_duration.sum"
BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
OPS = "sm__ops_path_tensor"  # the prefix of the tensor pipe's operation counts
TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "s": 1e6, "second": 1e6}
SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def kernel_name(full):
    """`void a::(anonymous namespace)::k<x::Y, 2>(A, B)` -> `k<x::Y, 2>`. ncu 2025 names the
    anonymous namespace `unnamed>` (its `<` dropped), which would unbalance the brackets."""
    name = re.sub(r"\(anonymous namespace\)::|<?unnamed>::", "", full)
    if name.startswith("void "):
        name = name[len("void "):]
    depth, start = 0, 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0 and c == "(" and i > 0:  # the arguments
            return name[start:i]
        elif depth == 0 and name.startswith("::", i):
            start = i + 2
    return name[start:]


def number(metric, unit, value):
    """A row's value in µs (the time), bytes or a plain count."""
    if metric == METRIC:
        if unit not in TO_US:
            raise ValueError(f"unit '{unit}' of {metric} is not one of {', '.join(TO_US)}")
        scale = TO_US[unit]
    else:
        m = re.fullmatch(r"([KMGT]?)(byte|B)" if metric in BYTES else r"([KMGT]?)([a-z]*)", unit)
        if not m:
            raise ValueError(f"unit '{unit}' of {metric} is not "
                             f"{'bytes' if metric in BYTES else 'a count'}")
        scale = SI[m.group(1)]
    try:
        return float(value.replace(",", "")) * scale
    except ValueError:
        raise ValueError(f"value '{value}' of {metric} is not a number") from None


def kernel_launches(lines):
    """{kernel: [{"us": µs, "bytes": DRAM bytes, "ops": tensor operations}, ...]} in order of
    first launch, from ncu's CSV lines; a launch has the keys of the metrics its rows give."""
    rows = csv.reader(line for line in lines if line.startswith('"'))
    header = next(rows, None)
    if header is None or not {"ID", "Kernel Name", "Metric Name", "Metric Unit",
                              "Metric Value"} <= set(header):
        raise ValueError("no ncu CSV header (ID, ..., Kernel Name, ..., Metric Value) in the input")
    col = {name: header.index(name) for name in
           ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
    launches = {}  # (kernel, ID) -> the launch's figures, in order of first row
    for row in rows:
        if len(row) != len(header):
            continue
        metric = row[col["Metric Name"]]
        key = "us" if metric == METRIC else "bytes" if metric in BYTES else \
            "ops" if metric.startswith(OPS) else None
        if key is None:
            continue
        x = number(metric, row[col["Metric Unit"]], row[col["Metric Value"]])
        launch = launches.setdefault((kernel_name(row[col["Kernel Name"]]), row[col["ID"]]), {})
        launch[key] = launch.get(key, 0.0) + x
    kernels = {}
    for (name, _), launch in launches.items():
        kernels.setdefault(name, []).append(launch)
    if not any("us" in launch for launch in launches.values()):
        raise ValueError(f"no {METRIC} rows in the input")
    return kernels


def main(argv):
    if len(argv) > 2:
        print("usage: ncu_times.py [CSV_FILE]", file=sys.stderr)
        return 2
    source = argv[1] if len(argv) == 2 else "stdin"
    try:
        if len(argv) == 2:
            with open(argv[1], encoding="utf-8", errors="replace") as f:
                kernels = kernel_launches(f.read().splitlines())
        else:
            kernels = kernel_launches(sys.stdin.read().splitlines())
    except (OSError, ValueError) as e:
        print(f"error: {source}: {e}", file=sys.stderr)
        return 2
    kernels = {name: ls for name, ls in kernels.items() if any("us" in x for x in ls)}
    width = max(len(name) for name in kernels)
    for name, launches in kernels.items():
        us = [x["us"] for x in launches if "us" in x]
        t = statistics.median(us)
        line = f"{name:{width}}  x{len(us):<3d} median {t:9.1f} us  ({min(us):.1f} - {max(us):.1f})"
        for key, text in (("bytes", lambda b: f"{b / 1e6:9.1f} MB {b / t / 1e6:5.2f} TB/s"),
                          ("ops", lambda n: f"{n / t / 1e6:7.1f} TFLOP/s")):
            values = [x[key] for x in launches if key in x]
            if values:
                line += "  " + text(statistics.median(values))
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
