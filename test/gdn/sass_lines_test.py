#!/usr/bin/env python3
"""CI tests of kernels/bench/sass_lines.py (a kernel's SASS instructions per source line, from
`nvdisasm -c -gi`), no GPU: an inlined helper's instructions count at the outermost line of the
named file, instructions with no place in it count as "elsewhere", what follows a function's last
EXIT is counted apart, --kernel / --lines / --min select, and input or options it cannot use get
one `error:` line and exit code 2. Run by CTest: sass_lines_test.py SCRIPT WORKDIR."""
import os
import subprocess
import sys

SCRIPT, WORK = sys.argv[1], sys.argv[2]
FAILURES = []
K = "/src/kernels/gdn/k.cu"
H = "/src/kernels/gdn/hopper_wgmma.cuh"

# Two functions as nvdisasm -c -gi prints them: in the first, line 10 of k.cu holds two
# instructions of its own and two of a helper inlined from hopper_wgmma.cuh through another of its
# lines; a k.cu helper (line 5) inlined into hopper_wgmma.cuh code inlined at line 20 counts at
# line 20; line 12 holds two EXITs; one instruction has no place in k.cu; a retry path follows the
# last EXIT.
SASS = f"""\t.target\tsm_90a
//--------------------- .text._Z4kernA --------------------------
\t.section\t.text._Z4kernA,"ax",@progbits
.text._Z4kernA:
\t//## File "{K}", line 10
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 FFMA R2, R3, R4, R5 ;
\t//## File "{H}", line 51 inlined at "{H}", line 200
\t//## File "{H}", line 200 inlined at "{K}", line 10
        /*0020*/                   R2UR UR4, R2 ;
        /*0030*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
\t//## File "{K}", line 5 inlined at "{H}", line 300
\t//## File "{H}", line 300 inlined at "{K}", line 20
        /*0038*/                   FMUL R8, R9, R10 ;
\t//## File "{K}", line 12
        /*0040*/               @P1 EXIT ;
\t//## File "{H}", line 88
        /*0050*/                   SHFL.BFLY PT, R6, R7, 0x1, 0x1f ;
\t//## File "{K}", line 12
        /*0060*/                   EXIT ;
.L_x_1:
\t//## File "{K}", line 10
        /*0070*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R2+URZ], R3 ;
        /*0080*/                   BRA `(.L_x_1) ;
//--------------------- .text._Z4kernB --------------------------
.text._Z4kernB:
\t//## File "{K}", line 30
        /*0000*/                   FADD R1, R2, R3 ;
        /*0010*/                   EXIT ;
"""


def run(text, *args):
    path = os.path.join(WORK, "k.sass")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([sys.executable, SCRIPT, *args, path], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout, r.stderr


def expect(cond, what):
    if not cond:
        FAILURES.append(what)


def listed(out, where):
    """{count, mix} of the listing's row for `where` (k.cu:N or elsewhere), or None."""
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == where:
            return int(parts[1]), (parts[2] if len(parts) > 2 else "")
    return None


os.makedirs(WORK, exist_ok=True)

rc, out, err = run(SASS, "--file", "k.cu")
expect(rc == 0 and err == "", f"a good dump: rc {rc}, stderr {err!r}")
expect("_Z4kernA: 8 instructions to its last EXIT, 2 after it" in out,
       f"kernA's counts, the retry path after its last EXIT apart: {out!r}")
row10 = listed(out, "k.cu:10")
expect(row10 is not None and row10[0] == 4, f"line 10 holds its 2 and the inlined 2: {row10}")
expect(row10 is not None and "HGMMA 1" in row10[1] and "R2UR 1" in row10[1],
       f"line 10's opcodes by base name: {row10}")
expect(listed(out, "k.cu:12") == (2, "EXIT 2"), f"line 12: {listed(out, 'k.cu:12')}")
expect(listed(out, "k.cu:20") == (1, "FMUL 1") and listed(out, "k.cu:5") is None,
       f"the outermost place in k.cu, not the innermost: {out!r}")
expect(listed(out, "elsewhere") == (1, "SHFL 1"), f"no place in k.cu: {listed(out, 'elsewhere')}")
expect("_Z4kernB: 2 instructions to its last EXIT, 0 after it" in out, f"kernB: {out!r}")
expect("all lines: 8 instructions" in out, f"kernA's total: {out!r}")

rc, out, err = run(SASS, "--file", "k.cu", "--kernel", "kernB")
expect(rc == 0 and "_Z4kernA" not in out and "_Z4kernB" in out, f"--kernel selects: {out!r}")

rc, out, err = run(SASS, "--file", "k.cu", "--kernel", "kernA", "--lines", "11-12")
expect(rc == 0 and listed(out, "k.cu:10") is None and listed(out, "k.cu:12") is not None
       and listed(out, "k.cu:20") is None and listed(out, "elsewhere") is None
       and "lines 11-12: 2 instructions" in out,
       f"--lines keeps only its range in the listing and the total: {out!r}")

rc, out, err = run(SASS, "--file", "k.cu", "--kernel", "kernA", "--min", "3")
expect(rc == 0 and listed(out, "k.cu:10") is not None and listed(out, "k.cu:12") is None
       and "all lines: 8 instructions" in out,
       f"--min lists fewer lines, the total keeps them all: {out!r}")

# Another file's lines: the same instructions count where that file placed them.
rc, out, err = run(SASS, "--file", "hopper_wgmma.cuh", "--kernel", "kernA")
expect(rc == 0 and listed(out, "hopper_wgmma.cuh:200") == (2, "R2UR 1, HGMMA 1")
       and listed(out, "hopper_wgmma.cuh:88") == (1, "SHFL 1")
       and listed(out, "hopper_wgmma.cuh:300") == (1, "FMUL 1"),
       f"--file hopper_wgmma.cuh: the outermost place in it: {out!r}")

for args, text, what in (
    (["--file", "k.cu"], "just text\n", "no instructions"),
    (["--file", "k.cu", "--kernel", "nothing"], SASS, "no function matched"),
    (["--file", "k.cu", "--lines", "9-3"], SASS, "a reversed range"),
    (["--file", "k.cu", "--lines", "ten"], SASS, "a range that is not one"),
    (["--file", "k.cu", "--bogus"], SASS, "an unknown option"),
    (["--kernel", "kernA"], SASS, "no --file"),
):
    rc, out, err = run(text, *args)
    expect(rc == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1,
           f"{what}: rc {rc}, stdout {out!r}, stderr {err!r}")

r = subprocess.run([sys.executable, SCRIPT, "--file", "k.cu", os.path.join(WORK, "absent.sass")],
                   capture_output=True, text=True, timeout=60)
expect(r.returncode == 2 and "absent.sass" in r.stderr and r.stderr.count("\n") == 1,
       f"a missing input names it: {r.returncode}, {r.stderr!r}")

for failure in FAILURES:
    print("FAIL:", failure)
if FAILURES:
    sys.exit(1)
print("sass_lines.py: all checks passed")
