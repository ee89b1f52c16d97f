#!/usr/bin/env python3
"""CI tests of test/gdn/sass_compare.py (two builds' SASS, kernel by kernel), no GPU, on saved
cuobjdump listings: the same code at other addresses, in other objects and in another order is
identical; a changed instruction or encoding, a kernel only in one build differ; --rename maps a
moved namespace; bad input gets one `error:` line and exit code 2. Run by CTest:
sass_compare_test.py SCRIPT WORKDIR."""
import os
import subprocess
import sys

SCRIPT, WORK = sys.argv[1], sys.argv[2]
FAILURES = []


def function(name, body):
    lines = [f"\t\tFunction : {name}", '\t.headerflags\t@"EF_CUDA_SM90"']
    for i, (instr, enc) in enumerate(body):
        lines.append(f"        /*{16 * i:04x}*/                   {instr} ;   /* {enc} */")
        lines.append("                                                         /* 0x000fe20000000f00 */")
    return "\n".join(lines) + "\n"


def listing(member, *functions):
    return (f"\nFatbin elf code:\n================\narch = sm_90a\ncode version = [1,8]\n"
            f"host = linux\ncompile_size = 64bit\nidentifier = {member}\n\n\tcode for sm_90a\n"
            f"\t.target\tsm_90a\n\n" + "".join(functions))


# _ZN2qr3gdn7chunked4kernENS1_3GeoE = qr::gdn::chunked::kern(qr::gdn::chunked::Geo)
A = "_ZN2qr3gdn7chunked4kernENS1_3GeoE"
A_MOVED = "_ZN2qr3gdn7chunked4kernENS0_8geometry3GeoE"  # kern(qr::gdn::geometry::Geo)
B = "_Z5otherv"
BODY_A = [("LDC R1, c[0x0][0x28]", "0x00000a00ff017b82"), ("EXIT", "0x000000000000794d")]
BODY_B = [("MOV R9, RZ", "0x000000ff00097202"), ("EXIT", "0x000000000000794d")]


def write(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect(what, got, want_rc, want_out=None, want_err=None):
    rc, out, err = got
    ok = rc == want_rc and (want_out is None or want_out in out) and (
        want_err is None or (err.startswith("error: ") and want_err in err and
                             err.count("\n") == 1))
    if not ok:
        FAILURES.append(f"{what}: rc {rc}, stdout {out!r}, stderr {err!r}")


os.makedirs(WORK, exist_ok=True)
before = write("before.sass", listing("a.cu", function(A, BODY_A)) +
               listing("b.cu", function(B, BODY_B)))
# the same kernels in one object, the other order; the code at other addresses (an offset)
after = write("after.sass", listing("x/ab.cu", function(B, BODY_B), function(A, BODY_A)))
expect("moved and reordered", run(before, after), 0, "2 kernels identical, 0 differ")
changed = write("changed.sass", listing("a.cu", function(A, [("LDC R2, c[0x0][0x28]",
                                                               BODY_A[0][1]), BODY_A[1]]),
                                        function(B, BODY_B)))
expect("an instruction changed", run(before, changed), 1, "SASS differs: qr::gdn::chunked::kern")
encoded = write("encoded.sass", listing("a.cu", function(A, [("LDC R1, c[0x0][0x28]",
                                                               "0x00000a00ff017b83"), BODY_A[1]]),
                                        function(B, BODY_B)))
expect("an encoding changed", run(before, encoded), 1, "1 kernels identical, 1 differ")
gone = write("gone.sass", listing("a.cu", function(A, BODY_A)))
expect("a kernel removed", run(before, gone), 1, "only before: other()")
moved = write("moved.sass", listing("a.cu", function(A_MOVED, BODY_A), function(B, BODY_B)))
expect("a namespace moved, unmapped", run(before, moved), 1, "only after: qr::gdn::chunked::kern(qr::gdn::geometry::Geo)")
expect("a namespace moved, mapped",
       run("--rename", "qr::gdn::chunked::Geo=qr::gdn::geometry::Geo", before, moved), 0,
       "2 kernels identical")
expect("a missing file", run(before, os.path.join(WORK, "none.sass")), 2, want_err="none.sass")
expect("a bad --rename", run("--rename", "noequals", before, after), 2, want_err="--rename")
empty = write("empty.sass", "")
expect("no kernels", run(empty, after), 2, want_err="no kernels")

for f in FAILURES:
    print("FAIL", f)
print(f"{'FAILED' if FAILURES else 'PASSED'}")
sys.exit(1 if FAILURES else 0)
