#!/usr/bin/env python3
"""`qwen-recipe check` as CI meets it: exit codes, reports (human, JSON, JUnit), --update.

usage: check_cli.py QWEN_RECIPE GOLDEN_DIR WORKDIR
Builds small manifests in WORKDIR over copies of the project's goldens, some edited to differ.
"""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

BIN, GOLDEN, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
failures = []


def run(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, cwd=WORK)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what, detail=""):
    if not cond:
        failures.append(f"{what}\n{detail}")


def write(name, text):
    path = os.path.join(WORK, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def read(name):
    with open(os.path.join(WORK, name), encoding="utf-8") as f:
        return f.read()


def listing():
    return sorted(os.path.relpath(os.path.join(d, f), WORK) for d, _, fs in os.walk(WORK) for f in fs)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
good = open(os.path.join(GOLDEN, "pinned", "qwen3_30b-b200-bf16.yaml"), encoding="utf-8").read()
gdn = open(os.path.join(GOLDEN, "gdn", "qwen35_35b-gb300-bf16.yaml"), encoding="utf-8").read()
assert "micro_batch_size: 1\n" in good or "micro_batch_size: 2\n" in good
write("g/ok.yaml", good)
write("g/gdn.yaml", gdn)
# A mismatch: one field edited, another field's value spelled with XML's markup characters.
drifted = good.replace("train_iters: 50\n", "train_iters: 49\n", 1)
assert drifted != good
write("g/drift.yaml", drifted)
MANIFEST = """goldens:
  - spec: qwen3_30b@b200:bf16
    golden: g/ok.yaml
  - spec: qwen35_35b@gb300
    mcore: gdn
    golden: g/gdn.yaml
  - {spec: qwen3_30b@b200, golden: g/drift.yaml}
"""
write("m.yaml", MANIFEST)
write("ok.yaml", "goldens:\n  - {spec: qwen3_30b@b200, golden: g/ok.yaml}\n")

# All match: exit 0.
rc, out, err = run("check", "ok.yaml")
expect(rc == 0 and out == "g/ok.yaml: match\ncheck ok.yaml: 1 golden: 1 match, 0 mismatches\n",
       "all match: exit 0 and the one-line report", out + err)

# A mismatch: exit 1, the semantic diff names the field.
rc, out, err = run("check", "m.yaml")
expect(rc == 1, f"mismatch: exit 1, got {rc}", out + err)
expect("g/drift.yaml: mismatch\n\nbetween g/drift.yaml\n    and qwen-recipe build qwen3_30b --gpu b200"
       in out and "\ntrain.train_iters\n  ± value change\n    - 49\n    + 50\n" in out,
       "mismatch: the diff command's layout, naming the field", out)
expect(out.endswith("check m.yaml: 3 goldens: 2 match, 1 mismatch\n"), "summary line", out)

# JSON: the documented schema, pinned.
rc, out, err = run("check", "m.yaml", "--format", "json")
doc = json.loads(out)
expect(rc == 1 and list(doc) == ["manifest", "updated", "goldens", "summary"], "json: top keys", out)
expect(doc["summary"] == {"goldens": 3, "match": 2, "mismatch": 1, "missing": 0}, "json: summary", out)
expect([list(g) for g in doc["goldens"]][0] == ["golden", "where", "build", "status"],
       "json: a match's keys", out)
d = doc["goldens"][2]
expect(list(d) == ["golden", "where", "build", "status", "differences", "text_only"]
       and d["status"] == "mismatch" and d["where"] == "m.yaml:7:6"
       and d["differences"] == [{"path": "train.train_iters", "change": "value"}]
       and d["text_only"] is False, "json: a mismatch", out)

# JUnit: well-formed, one testcase per entry, a failure per mismatch; names XML-escaped.
write("g/a&b<c>.yaml", drifted)
write("x.yaml", MANIFEST + "  - {spec: qwen3_30b@b200, golden: 'g/a&b<c>.yaml'}\n")
rc, out, err = run("check", "x.yaml", "--junit", "junit.xml")
expect(rc == 1, "junit run: exit 1", err)
root = ET.parse(os.path.join(WORK, "junit.xml")).getroot()
suite = root.find("testsuite")
cases = suite.findall("testcase")
expect(root.tag == "testsuites" and suite.get("tests") == "4" and suite.get("failures") == "2",
       "junit: counts", read("junit.xml"))
expect([c.get("name") for c in cases] == ["g/ok.yaml", "g/gdn.yaml", "g/drift.yaml", "g/a&b<c>.yaml"],
       "junit: one testcase per entry, in order, names escaped and read back", read("junit.xml"))
fail = cases[3].find("failure")
expect(fail is not None and fail.get("type") == "mismatch" and "train.train_iters" in fail.text
       and cases[0].find("failure") is None, "junit: a failure per mismatch", read("junit.xml"))

# --update: rewrites only what differs, atomically (no temporary file left), reports it; the
# rewritten golden then matches.
before = listing()
rc, out, err = run("check", "m.yaml", "--update")
expect(rc == 0 and "g/drift.yaml: updated\n" in out and "    - 49\n    + 50\n" in out
       and out.endswith("3 goldens: 2 match, 1 updated\n"), "--update: exit 0, reports the change",
       out + err)
expect(read("g/drift.yaml") == good and listing() == before, "--update: golden rewritten, nothing else",
       str(listing()))
rc, out, err = run("check", "m.yaml")
expect(rc == 0, "after --update: all match", out + err)

# --update creates a missing golden; without --update a missing golden is an error.
write("new.yaml", "goldens:\n  - {spec: qwen3_30b@b200, golden: g/new.yaml}\n")
rc, out, err = run("check", "new.yaml")
expect(rc == 2 and out == "" and err == "error: new.yaml:2:6: g/new.yaml: no such golden file "
       "(check --update creates it)\n", "missing golden: exit 2, one line, empty stdout", out + err)
rc, out, err = run("check", "new.yaml", "--update")
expect(rc == 0 and "g/new.yaml: created\n" in out and read("g/new.yaml") == good, "--update creates",
       out + err)

# An entry that does not build: exit 2, one line naming the entry, nothing written (even with
# --update and --junit), stdout empty.
write("g/drift.yaml", drifted)
write("bad.yaml", MANIFEST + "  - {spec: qwen3_30b@b200, overrides: [train.micro_batch_size=x], "
      "golden: g/bad.yaml}\n")
rc, out, err = run("check", "bad.yaml", "--update", "--junit", "bad-junit.xml")
expect(rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: bad.yaml:8:6: g/bad.yaml: ")
       and "expected int?, got 'x'" in err, "build error: exit 2, one line", out + err)
expect(read("g/drift.yaml") == drifted and not os.path.exists(os.path.join(WORK, "bad-junit.xml"))
       and not os.path.exists(os.path.join(WORK, "g/bad.yaml")), "build error: nothing written")

# A start-up check that fails is a build error too.
write("val.yaml", "goldens:\n  - {spec: qwen3_30b@b200, overrides: [train.global_batch_size=500], "
      "golden: g/ok.yaml}\n")
rc, out, err = run("check", "val.yaml")
expect(rc == 2 and out == "" and "check 'global-batch-divisible' failed" in err,
       "start-up check failure: exit 2", out + err)

# --junit into a missing directory fails before any golden is rewritten.
rc, out, err = run("check", "m.yaml", "--update", "--junit", "no/such/dir/j.xml")
expect(rc == 2 and out == "" and read("g/drift.yaml") == drifted, "bad --junit: nothing rewritten",
       out + err)

# --update with a golden in a missing directory fails before rewriting any.
write("nodir.yaml", MANIFEST + "  - {spec: qwen3_30b@b200, golden: no/such/dir/g.yaml}\n")
rc, out, err = run("check", "nodir.yaml", "--update")
expect(rc == 2 and out == "" and read("g/drift.yaml") == drifted
       and err == "error: nodir.yaml:8:6: no/such/dir/g.yaml: no/such/dir is not a directory\n",
       "--update into a missing directory: nothing rewritten", out + err)

# A golden that differs only in a comment: no semantic differences, the text diff shows it.
write("g/comment.yaml", good.replace("\n", "\n# a note\n", 3))
write("c.yaml", "goldens:\n  - {spec: qwen3_30b@b200, golden: g/comment.yaml}\n")
rc, out, err = run("check", "c.yaml")
expect(rc == 1 and "no differences as values; the text differs" in out and "-# a note" in out,
       "comment-only mismatch", out + err)

# Paths are relative to the manifest, wherever check runs from; the report names the manifest as given.
os.makedirs(os.path.join(WORK, "sub"), exist_ok=True)
p = subprocess.run([BIN, "check", "../ok.yaml"], capture_output=True, text=True,
                   cwd=os.path.join(WORK, "sub"))
expect(p.returncode == 0 and p.stdout.endswith("check ../ok.yaml: 1 golden: 1 match, 0 mismatches\n"),
       "paths relative to the manifest", p.stdout + p.stderr)

# An entry's overrides_file is relative to the manifest and applied before its overrides.
write("sub/ov.yaml", "train: {train_iters: 49, global_batch_size: 256}\n")
write("sub/of.yaml", "goldens:\n  - {spec: qwen3_30b@b200, overrides_file: ov.yaml, "
      "overrides: [train.global_batch_size=128], golden: of-golden.yaml}\n")
rc, out, err = run("check", "sub/of.yaml", "--update")
made = read("sub/of-golden.yaml")
expect(rc == 0 and made.startswith("# qwen-recipe build qwen3_30b --gpu b200 --precision bf16 --mcore "
       "pinned train.train_iters=49 train.global_batch_size=256 train.global_batch_size=128\n")
       and "  train_iters: 49\n" in made and "  global_batch_size: 128\n" in made,
       "overrides_file: relative to the manifest, before overrides", out + err + made[:300])

for f in failures:
    print("FAIL:", f)
print(f"{'failed' if failures else 'passed'}")
sys.exit(1 if failures else 0)
