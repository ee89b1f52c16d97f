#!/usr/bin/env python3
"""Whether two builds of the kernels carry the same SASS, kernel by kernel: for a source move or
a rename that must not change generated code (no GPU needed).

    sass_compare.py [--rename OLD=NEW ...] [--cuobjdump PATH] BEFORE AFTER

    sass_compare.py --rename qr::gdn::chunked::Geo=qr::gdn::geometry::Geo \
        before/kernels/libqr_gdn.a build/kernels/libqr_gdn.a

BEFORE and AFTER are anything cuobjdump reads (an object, a static library, a shared library or
an executable) or a saved `cuobjdump -sass` listing (a file ending in .sass). Each kernel's
listing is normalised (the instruction addresses and the member / file names dropped; the
instructions and their encodings kept) and keyed by its demangled name (cu++filt, else c++filt), in which
every --rename OLD=NEW replaces the text OLD by NEW in BEFORE's names (a moved namespace or
type). Prints the kernels only in one build and the kernels whose SASS differs, then a summary
line; exits 0 when every kernel of BEFORE is in AFTER with identical SASS and AFTER has no
other, 1 when they differ, 2 on bad input (one `error:` line)."""
import argparse
import collections
import re
import shutil
import subprocess
import sys

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")
ENCODING = re.compile(r"^/\*\s*0x[0-9a-f]+\s*\*/$")


def listing(path, cuobjdump):
    if path.endswith(".sass"):
        with open(path, encoding="utf-8") as f:
            return f.read()
    run = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True)
    if run.returncode != 0:
        raise ValueError(f"cuobjdump -sass {path}: {run.stderr.strip() or run.returncode}")
    return run.stdout


def kernels(text):
    """{mangled name: [normalised listings]} (a name may occur in several objects)."""
    found = collections.defaultdict(list)
    name, body = None, []
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            if name:
                found[name].append("\n".join(body))
            name, body = m.group(1), []
            continue
        if name is None:
            continue
        s = line.strip()
        if not s or s.startswith(("member ", "Fatbin ", "=====", "arch =", "code version",
                                  "host =", "compile_size", "code for", "identifier")):
            if s.startswith(("member ", "Fatbin ")) and body:
                found[name].append("\n".join(body))
                name, body = None, []
            continue
        s = ADDRESS.sub("", s).strip()
        body.append(" ".join(s.split()) if not ENCODING.match(s) else s.replace(" ", ""))
    if name:
        found[name].append("\n".join(body))
    return found


def demangle(names):
    names = sorted(names)
    filt = shutil.which("cu++filt") or shutil.which("c++filt")
    if not filt or not names:
        return dict(zip(names, names))
    run = subprocess.run([filt], input="\n".join(names) + "\n", capture_output=True, text=True)
    out = run.stdout.splitlines()
    return dict(zip(names, out)) if run.returncode == 0 and len(out) == len(names) else dict(
        zip(names, names))


def keyed(found, renames):
    plain = demangle(found)
    out = collections.defaultdict(list)
    for mangled, bodies in found.items():
        name = plain[mangled]
        for old, new in renames:
            name = name.replace(old, new)
        out[name].extend(bodies)
    return {name: sorted(bodies) for name, bodies in out.items()}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("before")
    ap.add_argument("after")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    renames = []
    for r in args.rename:
        if "=" not in r or not r.split("=", 1)[0]:
            print(f"error: --rename {r!r}: expected OLD=NEW", file=sys.stderr)
            return 2
        renames.append(tuple(r.split("=", 1)))
    try:
        before = keyed(kernels(listing(args.before, args.cuobjdump)), renames)
        after = keyed(kernels(listing(args.after, args.cuobjdump)), [])
    except (OSError, ValueError) as e:
        print(f"error: {e}".replace("\n", " "), file=sys.stderr)
        return 2
    if not before:
        print(f"error: {args.before}: no kernels in its SASS", file=sys.stderr)
        return 2
    only_before = sorted(set(before) - set(after))
    only_after = sorted(set(after) - set(before))
    differ = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    for n in only_before:
        print(f"only before: {n}")
    for n in only_after:
        print(f"only after: {n}")
    for n in differ:
        print(f"SASS differs: {n}")
    same = len(set(before) & set(after)) - len(differ)
    print(f"{same} kernels identical, {len(differ)} differ, {len(only_before)} only before, "
          f"{len(only_after)} only after")
    return 1 if differ or only_before or only_after else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
