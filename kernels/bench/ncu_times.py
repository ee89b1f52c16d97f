#!/usr/bin/env python3
"""Per-kernel GPU times from `ncu --csv --metrics gpu__time_duration.sum ...` (gpu_suite.sh):
one line per kernel, in order of its first launch, with its launches and the median, least and
largest time in microseconds.

    ncu_times.py [CSV_FILE]        (stdin when no file is given)

A kernel is named as ncu names it less the return type, namespaces and arguments, its template
arguments kept (`bwd_scan_hopper_kernel<2, false>`): ours live in anonymous namespaces, whose
"(anonymous namespace)" a plain cut at the first parenthesis would take for the argument list
(ncu 2025 writes `unnamed>::` instead, with no opening bracket).
Lines that are not ncu's CSV rows (the program's own output, ==PROF== notes) are skipped. Times
in ns, us, ms or s (and ncu's older nsecond, usecond, msecond, second) are accepted. Input
without a gpu__time_duration.sum row, or with a unit or value it cannot read, is an error: one
line naming it, exit 2."""
import csv
import re
import statistics
import sys

METRIC = "gpu__time_duration.sum"
TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "s": 1e6, "second": 1e6}


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


def kernel_times(lines):
    """{kernel: [µs, ...]} in order of first launch, from ncu's CSV lines."""
    rows = csv.reader(line for line in lines if line.startswith('"'))
    header = next(rows, None)
    if header is None or not {"Kernel Name", "Metric Name", "Metric Unit",
                              "Metric Value"} <= set(header):
        raise ValueError("no ncu CSV header (ID, ..., Kernel Name, ..., Metric Value) in the input")
    col = {name: header.index(name) for name in
           ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
    times = {}
    for row in rows:
        if len(row) != len(header) or row[col["Metric Name"]] != METRIC:
            continue
        unit, value = row[col["Metric Unit"]], row[col["Metric Value"]]
        if unit not in TO_US:
            raise ValueError(f"unit '{unit}' of {METRIC} is not one of {', '.join(TO_US)}")
        try:
            us = float(value.replace(",", "")) * TO_US[unit]
        except ValueError:
            raise ValueError(f"value '{value}' of {METRIC} is not a number") from None
        times.setdefault(kernel_name(row[col["Kernel Name"]]), []).append(us)
    if not times:
        raise ValueError(f"no {METRIC} rows in the input")
    return times


def main(argv):
    if len(argv) > 2:
        print("usage: ncu_times.py [CSV_FILE]", file=sys.stderr)
        return 2
    source = argv[1] if len(argv) == 2 else "stdin"
    try:
        if len(argv) == 2:
            with open(argv[1], encoding="utf-8", errors="replace") as f:
                times = kernel_times(f.read().splitlines())
        else:
            times = kernel_times(sys.stdin.read().splitlines())
    except (OSError, ValueError) as e:
        print(f"error: {source}: {e}", file=sys.stderr)
        return 2
    width = max(len(name) for name in times)
    for name, us in times.items():
        print(f"{name:{width}}  x{len(us):<3d} median {statistics.median(us):9.1f} us  "
              f"({min(us):.1f} - {max(us):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
