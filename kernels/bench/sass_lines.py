#!/usr/bin/env python3
"""A kernel's instructions per source line, from `nvdisasm -c -gi` (a static profile: what each
line of a kernel's source costs in SASS, before any run). An inlined helper's instructions count
at the line of the source file that called it, so that a product's descriptor arithmetic shows at
the product's line, not inside hopper_wgmma.cuh.

    sass_lines.py --file NAME [--kernel TEXT] [--lines A-B] [--min N] [SASS_FILE]

    nvcc ... -lineinfo -cubin -o k.cubin k.cu && nvdisasm -c -gi k.cubin > k.sass
    sass_lines.py --file fused_bwd_intra_ws.cu --lines 590-820 --min 20 k.sass

--file: the source file (its base name) whose lines the instructions count at: the outermost place
in that file of each instruction's inlining chain; instructions with no place in it count as
"elsewhere". --kernel: only functions whose (mangled) name contains TEXT. --lines: only those
lines in the listing and the total. --min: list only lines with at least N instructions.
Per function it prints its instruction count, then each line's count and its most frequent
opcodes, then the opcode mix of the listed range. ptxas places slow paths (a wait's retry loop,
the fallback of a shuffle it could not prove converged) after the function's last EXIT: they are
counted apart and left out of the lines, as they run rarely. Static counts: a loop body counts
once. Input it cannot read, or an unknown option: one `error:` line and exit 2."""
import argparse
import collections
import os
import re
import sys

FUNCTION = re.compile(r"^\.text\.(\S+):\s*$")
PLACE = re.compile(r'//## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?')
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)")


class Function:
    def __init__(self, name):
        self.name = name
        self.code = []  # (opcode, source line in --file or None)

    def split_at_last_exit(self):
        """(instructions up to and with the last EXIT, those after it)."""
        ends = [i for i, (op, _) in enumerate(self.code) if op == "EXIT"]
        cut = ends[-1] + 1 if ends else len(self.code)
        return self.code[:cut], self.code[cut:]


def outermost_line(chain, base):
    """The line of the outermost place in file `base` of an inlining chain (innermost first)."""
    for file, line, at_file, at_line in reversed(chain):
        if at_file and os.path.basename(at_file) == base:
            return int(at_line)
        if os.path.basename(file) == base:
            return int(line)
    return None


def read_functions(lines, base):
    functions, current, chain, in_chain = [], None, [], False
    for text in lines:
        m = FUNCTION.match(text)
        if m:
            current = Function(m.group(1))
            functions.append(current)
            chain, in_chain = [], False
            continue
        m = PLACE.search(text)
        if m:
            if not in_chain:  # a new chain replaces the last one
                chain = []
            chain.append(m.groups())
            in_chain = True
            continue
        m = INSTRUCTION.match(text)
        if m and current is not None:
            in_chain = False
            current.code.append((m.group(1), outermost_line(chain, base)))
    if not any(f.code for f in functions):
        raise ValueError("no SASS instructions in the input (expected nvdisasm -c -gi output)")
    return functions


def line_range(text):
    m = re.fullmatch(r"(\d+)-(\d+)", text)
    if not m or int(m.group(1)) > int(m.group(2)):
        raise argparse.ArgumentTypeError(f"'{text}' is not a range A-B with A <= B")
    return int(m.group(1)), int(m.group(2))


def report(function, base, lines, least):
    body, outlined = function.split_at_last_exit()
    print(f"{function.name}: {len(body)} instructions to its last EXIT, {len(outlined)} after it "
          f"(not counted below)")
    per_line = collections.defaultdict(collections.Counter)
    for op, line in body:
        per_line[line][op] += 1
    shown = collections.Counter()
    for line in sorted(per_line, key=lambda x: (x is None, x or 0)):
        if lines and (line is None or not lines[0] <= line <= lines[1]):
            continue
        ops = per_line[line]
        shown.update(ops)
        count = sum(ops.values())
        if count >= least:
            where = f"{base}:{line}" if line is not None else "elsewhere"
            mix = ", ".join(f"{op} {n}" for op, n in ops.most_common(6))
            print(f"  {where:32s} {count:6d}  {mix}")
    span = f"lines {lines[0]}-{lines[1]}" if lines else "all lines"
    mix = ", ".join(f"{op} {n}" for op, n in shown.most_common(12))
    print(f"  {span}: {sum(shown.values())} instructions: {mix}")


def main(argv):
    parser = argparse.ArgumentParser(prog="sass_lines.py")
    parser.add_argument("--file", required=True, help="the source file's base name")
    parser.add_argument("--kernel", default="", help="only functions whose name contains this")
    parser.add_argument("--lines", type=line_range, help="A-B: only these lines")
    parser.add_argument("--min", type=int, default=1, help="list lines with at least N")
    parser.add_argument("sass", nargs="?", help="nvdisasm -c -gi output (default: stdin)")

    def fail(message):
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = fail
    args = parser.parse_args(argv[1:])
    source = args.sass or "stdin"
    try:
        if args.sass:
            with open(args.sass, encoding="utf-8", errors="replace") as f:
                text = f.read().splitlines()
        else:
            text = sys.stdin.read().splitlines()
        functions = [f for f in read_functions(text, os.path.basename(args.file))
                     if args.kernel in f.name]
        if not functions:
            raise ValueError(f"no function's name contains '{args.kernel}'")
    except (OSError, ValueError) as e:
        print(f"error: {source}: {e}", file=sys.stderr)
        return 2
    for function in functions:
        report(function, os.path.basename(args.file), args.lines, args.min)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
