#!/usr/bin/env python3
"""CI tests of kernels/bench/ncu_times.py (gpu_suite.sh's and gpu_bar.sh's per-kernel times from
ncu's CSV), no GPU: kernels in anonymous namespaces keep their names and template arguments, each
unit ncu writes is read, launches are grouped per kernel in order of first launch with their
median, a launch's DRAM bytes and tensor operations give MB, TB/s and TFLOP/s where the CSV has
them (and nothing where it has not), other metrics are skipped, and input it cannot read gets one
`error:` line naming the input and exit code 2. Run by CTest: ncu_times_test.py SCRIPT WORKDIR."""
import os
import subprocess
import sys

SCRIPT, WORK = sys.argv[1], sys.argv[2]
FAILURES = []
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def row(i, kernel, unit, value, metric="gpu__time_duration.sum"):
    return (f'"{i}","7","gdn-bench","gpu","{kernel}","1","13","(512, 1, 1)","(1, 128, 1)","0",'
            f'"9.0","Command line profiler metrics","{metric}","{unit}","{value}"')


SCAN = ("void qr::gdn::fused::(anonymous namespace)::scan_hopper_kernel<(qr::gdn::fused::Scan)1, "
        "2>(qr::gdn::chunked::Geo, qr::gdn::fused::Workspace, int)")
BWD = ("void qr::gdn::fused::(anonymous namespace)::bwd_scan_hopper_kernel<2, false>"
       "(qr::gdn::chunked::Geo, qr::gdn::fused::Workspace, const float *)")
PREP = "void qr::gdn::fused::(anonymous namespace)::prep_kernel<(qr::gdn::fused::Prep)1>(int)"
# as ncu 2025 (CUDA 13) writes a kernel in an anonymous namespace
INTRA = "void unnamed>::bwd_intra_ws_kernel(Geo, FwdInputs, Workspace, Ref<float>, Pipeline)"


def run(text, *args):
    path = os.path.join(WORK, "ncu.csv")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([sys.executable, SCRIPT, *(args or (path,))], capture_output=True,
                       text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def expect(cond, what):
    if not cond:
        FAILURES.append(what)


os.makedirs(WORK, exist_ok=True)

# ncu's notes and the program's output around the rows; units old and new; a thousands comma.
good = "\n".join([
    "==PROF== Connected to process 7",
    "gdn-bench: custom (B4 T4096 Hk16 Hv32 D128): timing fused fwdbwd",
    HEADER,
    row(0, PREP, "us", "195.20"),
    row(1, SCAN, "ns", "206,400"),
    row(2, BWD, "usecond", "264.5"),
    row(3, SCAN, "msecond", "0.2042"),
    row(4, SCAN, "ns", "210000"),
    # the backward scan's traffic and tensor operations, in base units (ncu --print-units base)
    row(2, BWD, "byte", "600,000,000", metric="dram__bytes_read.sum"),
    row(2, BWD, "byte", "131000000", metric="dram__bytes_write.sum"),
    row(2, BWD, "", "72000000000", metric="sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"),
    row(2, BWD, "", "0", metric="sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum"),
    row(2, BWD, "cycle", "500000", metric="sm__cycles_elapsed.avg"),  # another metric: skipped
    row(6, INTRA, "us", "674.9"),
    row(6, INTRA, "Mbyte", "1,000", metric="dram__bytes_read.sum"),  # scaled units
    row(6, INTRA, "GB", "0.547", metric="dram__bytes_write.sum"),
    row(6, INTRA, "Ginst", "124.9", metric="sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"),
    "==PROF== Disconnected from process 7",
]) + "\n"
rc, out, err = run(good)
lines = out.splitlines()
expect(rc == 0 and err == "", f"good input: rc {rc}, stderr {err!r}")
expect(len(lines) == 4, f"good input: 4 kernels expected, got {lines}")
if len(lines) == 4:
    expect(lines[0].split()[0] == "prep_kernel<(qr::gdn::fused::Prep)1>", f"first: {lines[0]}")
    expect(lines[1].startswith("scan_hopper_kernel<(qr::gdn::fused::Scan)1, 2> "),
           f"the scan keeps its template arguments: {lines[1]}")
    expect(" x3 " in lines[1] and "median     206.4 us" in lines[1] and "(204.2 - 210.0)"
           in lines[1], f"the scan's three launches, median and range: {lines[1]}")
    expect(lines[2].startswith("bwd_scan_hopper_kernel<2, false> ") and " x1 " in lines[2]
           and "median     264.5 us" in lines[2], f"the backward scan: {lines[2]}")
    expect(lines[2].endswith("(264.5 - 264.5)      731.0 MB  2.76 TB/s    272.2 TFLOP/s"),
           f"the backward scan's bytes read and written, bandwidth and tensor rate: {lines[2]}")
    expect(lines[3].startswith("bwd_intra_ws_kernel ") and "median     674.9 us" in lines[3],
           f"ncu 2025's `unnamed>::`: {lines[3]}")
    expect(lines[3].endswith("1547.0 MB  2.29 TB/s    185.1 TFLOP/s"),
           f"scaled units: {lines[3]}")
    expect(lines[1].endswith("(204.2 - 210.0)") and lines[0].endswith(")"),
           f"no traffic columns where the CSV has no bytes: {lines[:2]}")
    expect(not any("fused::" in l.split("<")[0] for l in lines), f"namespaces left: {lines}")

# The same rows on stdin.
r = subprocess.run([sys.executable, SCRIPT], input=good, capture_output=True, text=True,
                   timeout=60)
expect(r.returncode == 0 and r.stdout == out, f"stdin: rc {r.returncode}, {r.stdout!r}")

for text, names in [
    ("gdn-bench: no CUDA device\n", ["ncu.csv", "no ncu CSV header"]),
    (HEADER + "\n", ["ncu.csv", "no gpu__time_duration.sum rows"]),
    (HEADER + "\n" + row(0, SCAN, "cycle", "5") + "\n", ["ncu.csv", "unit 'cycle'"]),
    (HEADER + "\n" + row(0, SCAN, "us", "n/a") + "\n", ["ncu.csv", "value 'n/a'"]),
    (HEADER + "\n" + row(0, SCAN, "us", "1") + "\n" +
     row(0, SCAN, "ns", "1", metric="dram__bytes_read.sum") + "\n",
     ["ncu.csv", "unit 'ns' of dram__bytes_read.sum is not bytes"]),
    (HEADER + "\n" + row(0, SCAN, "byte", "1", metric="dram__bytes_read.sum") + "\n",
     ["ncu.csv", "no gpu__time_duration.sum rows"]),
]:
    rc, out, err = run(text)
    expect(rc == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")
           and all(n in err for n in names), f"bad input {text[:40]!r}: rc {rc}, stderr {err!r}")

rc, out, err = run(good, os.path.join(WORK, "missing.csv"))
expect(rc == 2 and "missing.csv" in err and len(err.splitlines()) == 1, f"missing file: {err!r}")

if FAILURES:
    print("\n".join("FAIL: " + f for f in FAILURES))
    sys.exit(1)
print("ncu_times.py: all checks passed")
