#!/usr/bin/env python3
"""Differential test: our YAML reader against PyYAML's safe_load, over a generated corpus.

    pyyaml_differential.py QR_YAML_JSON --workdir DIR [--count N] [--seed S] [--keep]

Generates documents (a fixed seed: the same corpus on every run) from scalars of every YAML 1.1
resolver class, keys, comments, the quoting and block styles and flow collections, then mutates
some with the characters where readers disagree: U+2028, U+2029 and U+0085 (PyYAML's extra line
breaks), CR, CRLF, tabs, a byte-order mark, controls. For each document PyYAML's result (or its
error) and ours (qr-yaml-json: canonical JSON, or an error) must be one of:

  same value      the same tree, types included (1 is not 1.0, "1" is not 1, True is not 1);
  both refuse     PyYAML raises, we print an error naming the file, line and column;
  we refuse       PyYAML reads a value we do not represent (a date, a bool or float key, an int
                  past 64 bits) or a construct we refuse on purpose (merge keys, duplicate keys,
                  raw U+2028/U+2029/U+0085), and our error names the file, line and column.

Anything else is a divergence: we accept what PyYAML refuses, or read another value. The clean
part of the corpus (config-like documents, no hazard characters) must read as PyYAML reads it,
without a refusal. Exits 1 listing the first divergences.
"""

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys

import yaml

INT64 = (-(1 << 63), (1 << 63) - 1)

# Plain scalars of every resolver class PyYAML's safe_load knows (YAML 1.1), and near misses.
PLAIN = [
    "abc", "x y", "a b  c", "é", "日本", "a'b", 'a"b', "a#b", "a:b", "a,b", "a=b", "-a", "a-",
    "?a", ":a", "_x_", "x.y", "/p/q", "yes", "Yes", "YES", "yEs", "no", "No", "NO", "on", "On",
    "ON", "off", "Off", "OFF", "true", "True", "TRUE", "tRUE", "false", "False", "FALSE", "y",
    "n", "null", "Null", "NULL", "nULL", "~", "0", "-0", "+0", "+1", "-1", "12", "1_000",
    "1__0", "_1", "1_", "012", "08", "09", "0_", "0o17", "0x1F", "0x1f", "0X1F", "0x_", "0x",
    "-0x1F", "0b101", "0b_", "0b", "-0b1", "+0b1_1", "0b2", "1:30", "-1:30:45", "+1:00",
    "1:30.5", "190:20:30", "190:20:30.15", "1:60", "1:5", "01:30", "0:30", "1:3:0", "1.5",
    "1.", ".5", "-.5", "+.5", "-1.5", "+1.5", "1e5", "1E5", "1.0e5", "1.0e+5", "1.0E+5",
    "1.0e-05", "1.e-5", "1_0.5", "1.5_5", "1,5", ".inf", "-.Inf", "+.INF", ".INF", ".Inf",
    "inf", "-inf", ".nan", ".NaN", ".NAN", "nan", "NaN", "-.nan", ".5e+3", "._5",
    "2002-12-14", "2002-1-14", "2002-12-1", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 Z", "2001-12-14T21:59:43Z", "2001-12-15 2:59:43.10",
    "2002-02-30", "2002-13-01", "=", "<<", "<<a", "==", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1.0e+999",
    "-1.0e+999", "1.0e-999", "0x7fffffffffffffff", "0xffffffffffffffff", "0777777777777777777777",
    "0b" + "1" * 64, "1" * 30, "3.14159265358979323846", "1.7976931348623157e+308",
    "%x", "@x", "`x", "!x", "&x", "*x", "|", ">", "-", "?", ":", "#x", "[", "]", "{", "}",
    ",", "a [b]", "a {b}", "a: b", "a :b", "- a", "a -", "...", "---", "a ... b", "a --- b",
]

# Text that quoted and block scalars carry.
TEXT = [
    "", " ", "a", "a b", "  a  ", "a\nb", "a\n\nb", "\n", "\n\n", "\n\n\n", " \n ", "a\n",
    "\na", "a\tb", "\t", "'", "''", '"', "\\", "\\n", "#", " # ", ": ", "- ", "yes", "1",
    "1.5", "null", "~", "", "é", "\U0001F600", "\xa0",
]
# Text with the characters where readers disagree, for the documents that are not clean.
HAZARD_TEXT = ["\u2028", "\u2029", "\x85", "a\u2028b", "a\r\nb", "a\rb", "\x07", "\x1b[31m",
               "\ufeff", "\x7f", "\x9f"]

BREAKS = ["\n", "\r\n", "\r", "\x85", "\u2028", "\u2029"]
HAZARDS = BREAKS + ["\t", "\ufeff", "\x00", "\x01", "\x07", "\x1b", "\x7f", "\x80", "\x9f",
                    "\xa0", "\ufffe", "\U0001F600", "#", " #", ":", ": ", "'", '"', "\\",
                    "\t#", "- ", "? ", "&", "*", "!", "|", ">", "[", "]", "{", "}", ","]

KEYS = ["a", "b", "key", "global_batch_size", "train", "model", "x_y", "k1", "k2", "name",
        "micro_batch_size", "lr", "seq_length", "_target_"]
ODD_KEYS = ["yes", "on", "null", "~", "1", "-1", "0x10", "1.5", "1:30", "2002-12-14", "=",
            "<<", "x y", "é", "1" * 30, "k" * 127, "k" * 128, "k" * 200, "k" * 1023, "k" * 1030, "a#b", "a:b"]


# Whether the document being generated may hold hazards (set per document by generate()).
HAZARDOUS = [False]


def text_pool():
    return TEXT + HAZARD_TEXT if HAZARDOUS[0] else TEXT


def single_quoted(rng, text, brk="\n"):
    """text in single quotes, its line breaks folded the way a YAML writer writes them."""
    body = text.replace("'", "''")
    if "\n" in body and rng.random() < 0.7:
        # A break in the value is written as a blank line (folding).
        body = body.replace("\n", brk + brk + "  ")
    return "'" + body + "'"


def double_quoted(rng, text):
    out = []
    for ch in text:
        r = rng.random()
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append(rng.choice(["\\n", "\\x0a", "\\u000a", "\\\n  \\n"]))
        elif ch == "\t":
            out.append(rng.choice(["\\t", "\t", "\\x09"]))
        elif ord(ch) < 0x20 or ch in "\x7f\x85\u2028\u2029\ufeff" or r < 0.1:
            code = ord(ch)
            named = {0: "\\0", 7: "\\a", 8: "\\b", 0x1b: "\\e", 0x85: "\\N", 0xa0: "\\_",
                     0x2028: "\\L", 0x2029: "\\P", 0x0b: "\\v", 0x0c: "\\f", 0x0d: "\\r"}
            if code in named and r < 0.5:
                out.append(named[code])
            elif code <= 0xff:
                out.append("\\x%02x" % code)
            elif code <= 0xffff:
                out.append("\\u%04x" % code)
            else:
                out.append("\\U%08x" % code)
        else:
            out.append(ch)
    extra = rng.random()
    if extra < 0.05 and HAZARDOUS[0]:
        out.append(rng.choice(["\\/", "\\ ", "\\\t", "\\ud800", "\\q", "\\x4", "\\U0011ffff",
                               "\\udfff\\ud800"]))
    return '"' + "".join(out) + '"'


def block_scalar(rng, text, indent):
    """A literal or folded block scalar: header, then the lines indented by `indent`."""
    style = rng.choice("|>")
    chomp = rng.choice(["", "-", "+"])
    explicit = rng.random() < 0.2
    header = style + (str(rng.randint(1, 3)) if explicit else "") + chomp
    if rng.random() < 0.2:
        header += rng.choice([" # c", "\t# c", " #\u2028x: 1"] if HAZARDOUS[0] else [" # c"])
    lines = text.split("\n") if text else ["x"]
    pad = " " * indent
    body = "".join((pad + line if line else "") + "\n" for line in lines)
    if rng.random() < 0.2:
        body += rng.choice(["\n", pad + "\n", pad + "  more\n"] +
                           ([pad + " \tx\n"] if HAZARDOUS[0] else []))
    return header, body


PROPERTIES = ["&a ", "&b ", "!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "!!binary ",
              "!local ", "&a !!str ", "!!str &a "]


def scalar(rng, indent, in_flow=False):
    """(inline text, following block lines) for one scalar value."""
    if HAZARDOUS[0] and rng.random() < 0.06:
        return rng.choice(["*a", "*b", "*a ", "<<", "*c"]), ""
    if HAZARDOUS[0] and rng.random() < 0.08:
        text, block = scalar(rng, indent, in_flow)
        return rng.choice(PROPERTIES) + text, block
    r = rng.random()
    if r < 0.45:
        return rng.choice(PLAIN), ""
    text = rng.choice(text_pool()) if rng.random() < 0.7 else rng.choice(PLAIN)
    if r < 0.65:
        return single_quoted(rng, text, rng.choice(BREAKS[:2])), ""
    if r < 0.85 or in_flow:
        return double_quoted(rng, text), ""
    header, body = block_scalar(rng, text, indent + rng.choice([1, 2, 2, 4]))
    return header, body


def key_text(rng, odd):
    r = rng.random()
    if odd and r < 0.35:
        return rng.choice(ODD_KEYS)
    if odd and r < 0.45:
        return single_quoted(rng, rng.choice(text_pool() + ODD_KEYS))
    if odd and r < 0.55:
        return double_quoted(rng, rng.choice(text_pool() + ODD_KEYS))
    return rng.choice(KEYS)


def flow(rng, depth):
    if depth > 2 or rng.random() < 0.5:
        text = scalar(rng, 0, in_flow=True)[0]
        # In flow, PyYAML reads a leading '?' or ':' as an indicator, which we refuse on purpose,
        # and `a,b` as two entries (a duplicate key, which we refuse, is easily made so): a clean
        # document quotes them.
        plain = not text.startswith(("'", '"'))
        if HAZARDOUS[0] or not plain or not (text.startswith(("?", ":")) or "," in text):
            return text
        return "'" + text.replace("'", "''") + "'"
    if rng.random() < 0.5:
        items = [flow(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return "[" + rng.choice([", ", ","]).join(items) + "]"
    keys = rng.sample(KEYS, rng.randint(0, 3))
    return "{" + ", ".join(k + ": " + flow(rng, depth + 1) for k in keys) + "}"


def comment(rng, hazards):
    text = rng.choice(["", " c", " reviewed", " a: 1", " 'x", ' "x'])
    if hazards and rng.random() < 0.5:
        text += rng.choice(BREAKS) + rng.choice(["  global_batch_size: 7", "x: 1", "- 1", "", "  "])
    return "#" + text


def mapping(rng, indent, depth, odd, hazards):
    lines = []
    keys = rng.sample(KEYS, rng.randint(1, 4))
    if odd:
        keys = [key_text(rng, odd) for _ in keys]
    pad = " " * indent
    for key in keys:
        if rng.random() < 0.15:
            lines.append(pad + comment(rng, hazards) + "\n")
        explicit = rng.random() < 0.08
        r = rng.random()
        if depth < 3 and r < 0.2:
            head = pad + ("? " + key + "\n" + pad + ":" if explicit else key + ":")
            lines.append(head + "\n" + mapping(rng, indent + 2, depth + 1, odd, hazards))
        elif depth < 3 and r < 0.35:
            lines.append(pad + key + ":\n" + sequence(rng, indent + rng.choice([0, 2]), depth + 1,
                                                     odd, hazards))
        elif r < 0.45:
            lines.append(pad + key + ": " + flow(rng, 0) + "\n")
        else:
            value, block = scalar(rng, indent)
            line = pad + ("? " + key + "\n" + pad + ": " if explicit else key + ": ") + value
            if rng.random() < 0.15 and not block and not value.startswith(("|", ">")):
                line += " " + comment(rng, hazards)
            lines.append(line + "\n" + block)
    return "".join(lines)


def sequence(rng, indent, depth, odd, hazards):
    pad = " " * indent
    lines = []
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if depth < 3 and r < 0.25:
            inner = mapping(rng, indent + 2, depth + 1, odd, hazards)
            lines.append(pad + "- " + inner[indent + 2:])
        elif r < 0.4:
            lines.append(pad + "- " + flow(rng, 0) + "\n")
        else:
            value, block = scalar(rng, indent)
            lines.append(pad + "- " + value + "\n" + block)
    return "".join(lines)


def mutate(rng, text):
    """One of the changes that make readers disagree."""
    r = rng.random()
    if r < 0.15:  # every line break becomes another line break
        return text.replace("\n", rng.choice(BREAKS[1:]))
    if r < 0.25:
        return "\ufeff" + text
    if r < 0.3:
        return rng.choice(["--- ", "---\n", "%YAML 1.1\n---\n"]) + text + rng.choice(
            ["", "...\n", "---\n", "--- x\n", "...\n# c\n"])
    if r < 0.5:  # a space becomes a tab
        spaces = [i for i, ch in enumerate(text) if ch == " "]
        if spaces:
            i = rng.choice(spaces)
            return text[:i] + "\t" + text[i + 1:]
    if r < 0.6 and "\n" in text:  # a line break becomes another one
        breaks = [i for i, ch in enumerate(text) if ch == "\n"]
        i = rng.choice(breaks)
        return text[:i] + rng.choice(BREAKS[1:]) + text[i + 1:]
    i = rng.randint(0, len(text))
    return text[:i] + rng.choice(HAZARDS) + text[i:]


# The cases, and what our own writer writes for awkward values.
FIXED = [
    "train:\n  global_batch_size: 8\n  # reviewed\u2028  global_batch_size: 7\n",
    "train:\n  micro_batch_size: 1  # reviewed\u2028  global_batch_size: 7\n",
    "train:\n  micro_batch_size: 1  # reviewed\u2029global_batch_size: 7\n",
    "train:\n  micro_batch_size: 1  # reviewed\x85  global_batch_size: 7\n",
    "train:\n  micro_batch_size: 1  # reviewed\r  global_batch_size: 7\n",
    "V: a\tb\n", "V: a\t\n", "V:\ta\n", "V: =\n", "V: <<\n", "V: a\u2028b\n", "V: |\n  a\u2028b\n",
    "V: '\n\n  '\n", "V: '\n\n\n  '\n", "V: ''\n", "V: '\r\n\r\n  '\r\n", "? " + "k" * 128 + "\n: 1\n",
    "? 'a\n\n  b'\n: 1\n", "\ufeffV: 1\n", "V: 1\n\ufeff", "V: 1\n...\n", "--- \nV: 1\n",
    "V: \"a\\\n  b\"\n", "V: 'a\n  b'\n", "V: a\n  b\n", "V: a\n\n  b\n", "V: - a\n",
    "V: [a, b]\n", "V: {a: 1}\n", "V: !!str 1\n", "V: !!int '1'\n", "V: !!float 1\n",
    "V: !!bool yes\n", "V: !!null x\n", "V: ! 12\n", "V: !!str {a: 1}\n", "V: !foo x\n",
    "V: !!binary aGVsbG8=\n", "V: !!timestamp 2002-12-14\n", "V: !!map {}\n", "V: !!seq []\n",
    "V: !!omap [a: 1]\n", "V: !!set {a}\n", "V: &a 1\nW: *a\n", "V: *a\n",
    "<<: {a: 1}\nb: 2\n", "a: 1\na: 2\n", "1: a\n'1': b\n", "? [a]\n: 1\n", "? {a: 1}\n: 1\n",
]


def generate(count, seed):
    rng = random.Random(seed)
    corpus = [("fixed", text) for text in FIXED]
    for i in range(count):
        kind = i % 4
        HAZARDOUS[0] = kind != 0
        if kind == 0:  # clean: config-like, no hazards, no odd keys
            text = mapping(rng, 0, 0, False, False)
            corpus.append(("clean", text))
            continue
        odd = kind == 2
        text = mapping(rng, 0, 0, odd, True) if rng.random() < 0.85 else sequence(
            rng, 0, 0, odd, True)
        for _ in range(rng.choice([0, 1, 1, 2]) if kind != 3 else 1):
            text = mutate(rng, text)
        corpus.append(("hazard" if kind != 2 else "odd", text))
    return corpus


class Unrepresentable(Exception):
    pass


def canonical(v):
    """PyYAML's value in qr-yaml-json's canonical form (see yaml_json.cpp)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        if not INT64[0] <= v <= INT64[1]:
            raise Unrepresentable("an int past 64 bits")
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return {"float": "nan"}
        if math.isinf(v):
            return {"float": "inf" if v > 0 else "-inf"}
        return {"float": "%.17g" % v}
    if isinstance(v, list):
        return [canonical(x) for x in v]
    if isinstance(v, dict):
        pairs = []
        for k, x in v.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise Unrepresentable("a %s key" % type(k).__name__)
            pairs.append([canonical(k), canonical(x)])
        return {"map": pairs}
    raise Unrepresentable("a %s" % type(v).__name__)


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def pyyaml(text):
    """('value', canonical) | ('refuse', why) | ('unrepresentable', why)."""
    try:
        value = yaml.load(text, Loader=yaml.SafeLoader)  # what yaml.safe_load does
    except Exception as e:  # YAMLError, and ValueError for e.g. 0b_ and 2002-02-30
        return "refuse", type(e).__name__ + ": " + " ".join(str(e).split())[:160]
    try:
        return "value", canonical(value)
    except Unrepresentable as e:
        return "unrepresentable", str(e)


def writer_corpus():
    """Mappings with keys around PyYAML's 128-character limit for simple keys, keys with line
    breaks, and values made only of line breaks: what safe_dump writes in the explicit form."""
    keys = ["k" * n for n in range(118, 132)] + ["a b " * 40, "é" * 125, "a\nb", "\n", "a\n",
                                                  "", "x" * 300, "'q'\n" * 3]
    values = ["\n", "\n\n", "a\n", "", "v", {"a": 1}, [1, "\n"], None, {"k" * 130: {"a": "\n"}}]
    docs = []
    for i, key in enumerate(keys):
        docs.append({key: values[i % len(values)]})
        docs.append({"top": {key: values[(i + 3) % len(values)], "b": 1}})
    docs += [{"v": v} for v in values]
    return docs


def check_writer(yaml_json, workdir):
    """Our writer, given what our reader makes of PyYAML's safe_dump output, writes it again
    byte for byte. Returns the failures."""
    docs = writer_corpus()
    paths = []
    for i, value in enumerate(docs):
        path = os.path.join(workdir, "w%03d.yaml" % i)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(yaml.safe_dump(value, default_flow_style=False))
        paths.append(path)
    out = subprocess.run([yaml_json, "--dump"] + paths, capture_output=True, check=False)
    failures = []
    for path, line in zip(paths, out.stdout.decode("utf-8").splitlines()):
        ours = json.loads(line)
        with open(path, encoding="utf-8", newline="") as f:
            theirs = f.read()
        if ours.get("yaml") != theirs:
            failures.append("writer: %s\n    PyYAML: %s\n    ours:   %s" % (
                path, ascii(theirs)[:300], ascii(ours.get("yaml", ours.get("error")))[:300]))
    return len(docs), failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("yaml_json")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--count", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--keep", action="store_true", help="keep the corpus files")
    args = ap.parse_args()

    corpus = generate(args.count, args.seed)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    paths = []
    for i, (_, text) in enumerate(corpus):
        path = os.path.join(args.workdir, "d%05d.yaml" % i)
        with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(text)
        paths.append(path)
    ours = []
    for start in range(0, len(paths), 1000):  # argv stays well under the system's limit
        out = subprocess.run([args.yaml_json] + paths[start:start + 1000], capture_output=True,
                             check=False).stdout.decode("utf-8")
        ours += [json.loads(line) for line in out.splitlines()]
    if len(ours) != len(paths):
        sys.exit("error: %s printed %d lines for %d files" % (args.yaml_json, len(ours), len(paths)))

    counts = {"same value": 0, "both refuse": 0, "we refuse": 0}
    divergences = []
    for (kind, text), path, our in zip(corpus, paths, ours):
        theirs, detail = pyyaml(text)
        our_error = our.get("error") if isinstance(our, dict) and "error" in our else None
        positioned = our_error is not None and re.match(re.escape(path) + r":\d+:\d+: ", our_error)
        why = None
        if our_error is None:
            if theirs != "value":
                why = "we read a value where PyYAML %s: %s" % (
                    "refuses" if theirs == "refuse" else "reads " + detail, detail)
            elif not same(our, detail):
                why = "values differ: PyYAML %s" % json.dumps(detail)
            else:
                counts["same value"] += 1
        elif not positioned and not (theirs == "value" and detail is None):
            # Only the refusal of an empty document (PyYAML: None) names no line.
            why = "our error does not name file:line:col"
        elif theirs == "refuse":
            counts["both refuse"] += 1
        elif theirs == "unrepresentable" or kind != "clean" or detail is None:
            counts["we refuse"] += 1
        else:
            why = "we refuse a clean document PyYAML reads as %s" % json.dumps(detail)
        if why:
            divergences.append((kind, text, why, our))

    written, writer_failures = check_writer(args.yaml_json, args.workdir)
    print("pyyaml differential: %d documents (seed %d): %d same value, %d both refuse, "
          "%d we refuse (PyYAML reads them), %d divergences; writer: %d of %d documents "
          "differ from safe_dump" % (
              len(corpus), args.seed, counts["same value"], counts["both refuse"],
              counts["we refuse"], len(divergences), len(writer_failures), written))
    for failure in writer_failures[:10]:
        print("  " + failure)
    for kind, text, why, our in divergences[:25]:
        print("  [%s] %s\n    %s\n    ours: %s" % (kind, ascii(text), why, json.dumps(our)[:300]))
    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 1 if divergences or writer_failures else 0


if __name__ == "__main__":
    sys.exit(main())
