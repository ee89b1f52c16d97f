#!/usr/bin/env python3
"""Checks lib/'s layering: the folder -> target graph the build wrote (LAYERS: lines
`folder target: linked targets...`) has no cycle, every folder of LIB_DIR is a target, and every
`#include "folder/..."` of one folder's files names its own folder or one its target links.
With ROOT and CONSUMERS (lines `dir target: linked targets...`: apps/, bench/, the tests), each
consumer directory's includes of lib folders name folders its target links itself, not through
another target, so that it says what it uses.
Usage: check_layers.py LIB_DIR LAYERS [ROOT CONSUMERS]. Prints each problem as `error: ...`;
exit 1 if any."""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]*"', re.M)


def read_layers(path):
    target_of, links = {}, {}
    for line in Path(path).read_text().splitlines():
        head, _, deps = line.partition(":")
        folder, target = head.split()
        target_of[folder] = target
        links[target] = deps.split()
    return target_of, links


def find_cycle(links):
    state, stack = {}, []

    def visit(t):
        state[t] = "open"
        stack.append(t)
        for d in links.get(t, []):
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[t] = "done"
        return None

    for t in sorted(links):
        if t not in state:
            found = visit(t)
            if found:
                return found
    return None


def check_consumers(root, consumers, target_of, errors):
    _, links = read_layers(consumers)
    count = 0
    for line in Path(consumers).read_text().splitlines():
        directory, target = line.partition(":")[0].split()
        count += 1
        for src in sorted((root / directory).rglob("*")):
            if not src.is_file() or src.suffix not in (".c", ".cpp", ".cu", ".h", ".cuh"):
                continue
            for used in INCLUDE.findall(src.read_text(errors="replace")):
                if used in target_of and target_of[used] not in links[target]:
                    rel = src.relative_to(root)
                    errors.append(f"{rel} includes {used}/ but {target} does not link "
                                  f"{target_of[used]} itself")
    return count


def main():
    lib, layers = Path(sys.argv[1]), sys.argv[2]
    target_of, links = read_layers(layers)
    errors = []
    cycle = find_cycle(links)
    if cycle:
        errors.append("cycle between targets: " + " -> ".join(cycle))
    for folder in sorted(p.name for p in lib.iterdir() if p.is_dir()):
        if folder not in target_of:
            errors.append(f"lib/{folder}/ is no target of the build")
            continue
        target = target_of[folder]
        visible = {folder} | {f for f, t in target_of.items() if t in links[target]}
        for src in sorted((lib / folder).rglob("*")):
            if not src.is_file():
                continue
            for used in INCLUDE.findall(src.read_text(errors="replace")):
                if used in target_of and used not in visible:
                    rel = src.relative_to(lib)
                    errors.append(f"lib/{rel} includes {used}/ but {target} does not link "
                                  f"{target_of[used]}")
    consumers = 0
    if len(sys.argv) > 4:
        consumers = check_consumers(Path(sys.argv[3]), sys.argv[4], target_of, errors)
    for e in errors:
        print("error: " + e)
    if not errors:
        print(f"layers ok: {len(target_of)} folders, no cycle, every include linked"
              + (f"; {consumers} consumers link what they include" if consumers else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
