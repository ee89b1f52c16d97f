"""The default hot path makes no host synchronisation and no data-dependent allocation, shown by
reading its source (no torch, no GPU needed): every function reachable from the ops' forward and
backward (and FLA's patched function, and the Megatron-Core layer's patched forward) through calls within the package makes
none of the calls that wait for the device or size a result by its data, except the two allowed
behind their conditions: the opt-in QWEN_GDN_SYNC_CHECKS=1 wait, and the report of an error the
device already flagged. test_gpu.py checks the same on the device (the host runs ahead of a busy
stream; a CUDA graph captures forward and backward with the defaults)."""

import ast
import os

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "qwen_gdn")

# Calls that wait for the device (a copy to the host, a sync) or allocate by the data's values.
WAITS = {"item", "cpu", "tolist", "numpy", "synchronize", "equal", "input_error", "nonzero",
         "masked_select", "unique", "unique_consecutive", "argwhere", "bincount",
         "repeat_interleave", "cudaStreamSynchronize", "cudaDeviceSynchronize"}
# Functions that wait, allowed only under an `if` whose test holds the given text.
GUARDED = {"_sync_check": "mode == 'sync'", "_report": "int(host[0])"}


class Module:
    def __init__(self, name):
        self.name = name
        with open(os.path.join(SOURCE, name + ".py")) as f:
            self.tree = ast.parse(f.read())
        self.functions, self.aliases = {}, {}
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self.functions[f"{node.name}.{item.name}"] = item
        for node in ast.walk(self.tree):  # imports inside functions too (torch-free modules)
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                for alias in node.names:
                    if node.module is None:  # from . import _lib
                        self.aliases[alias.asname or alias.name] = (alias.name, None)
                    else:  # from ._torch import chunk_gated_delta_rule as _ours
                        self.aliases[alias.asname or alias.name] = (node.module, alias.name)


MODULES = {}


def module(name):
    if name not in MODULES:
        MODULES[name] = Module(name)
    return MODULES[name]


class Walker(ast.NodeVisitor):
    """Follows the calls of one function; records forbidden and unguarded ones."""

    def __init__(self, mod, todo):
        self.mod, self.todo, self.tests, self.found = mod, todo, [], []

    def visit_If(self, node):
        self.visit(node.test)
        self.tests.append(ast.unparse(node.test))
        for child in node.body:
            self.visit(child)
        self.tests.pop()
        for child in node.orelse:
            self.visit(child)

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        where = f"{self.mod.name}.py:{node.lineno}: {ast.unparse(func)}"
        if name in WAITS:
            self.found.append(where)
        elif name in GUARDED:
            if not any(GUARDED[name] in test for test in self.tests):
                self.found.append(where + f" outside `if ...{GUARDED[name]}...`")
        else:
            self.follow(func, name)
        for arg in node.args:  # a function passed along, as _launch(_lib.forward, ...)
            if isinstance(arg, (ast.Attribute, ast.Name)):
                self.follow(arg, arg.attr if isinstance(arg, ast.Attribute) else arg.id)
        self.generic_visit(node)

    def follow(self, func, name):
        if isinstance(func, ast.Name) and name in self.mod.aliases:
            target, attr = self.mod.aliases[name]
            if attr is not None:
                self.todo.append((target, attr))
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.mod.aliases:
            target, attr = self.mod.aliases[func.value.id]
            if attr is None:
                self.todo.append((target, name))
        elif name in self.mod.functions:
            self.todo.append((self.mod.name, name))
        elif isinstance(func, ast.Attribute) and func.attr == "apply" \
                and isinstance(func.value, ast.Name):  # an autograd.Function of this module
            for method in ("forward", "backward"):
                self.todo.append((self.mod.name, f"{func.value.id}.{method}"))


def reachable_waits(entries):
    todo, seen, found = list(entries), set(), []
    while todo:
        mod_name, fn_name = todo.pop()
        if (mod_name, fn_name) in seen:
            continue
        seen.add((mod_name, fn_name))
        mod = module(mod_name)
        if fn_name not in mod.functions:
            continue
        walker = Walker(mod, todo)
        for stmt in mod.functions[fn_name].body:
            walker.visit(stmt)
        found += walker.found
    return seen, found


OPS = [("_torch", "chunk_gated_delta_rule"), ("_torch", "chunk_fwd"), ("_torch", "chunk_bwd"),
       ("_torch", "ChunkGatedDeltaRule.forward"), ("_torch", "ChunkGatedDeltaRule.backward")]


def test_the_ops_forward_and_backward_never_wait():
    seen, found = reachable_waits(OPS)
    assert ("_torch", "_launch") in seen and ("_lib", "forward") in seen  # the walk got there
    assert found == []


def test_the_fla_drop_in_never_waits():
    seen, found = reachable_waits([("_fla", "_not_covered"), ("_fla", "_adapted")])
    assert ("_torch", "chunk_gated_delta_rule") in seen
    assert found == []


def test_the_megatron_layer_forward_never_waits():
    seen, found = reachable_waits([("megatron", "_forward")])
    assert {("_torch", "chunk_gated_delta_rule"), ("_torch", "_launch"), ("megatron", "_conv_silu"),
            ("megatron", "_gates"), ("megatron", "check_packed")} <= seen
    assert found == []


def test_the_walk_finds_a_wait(tmp_path, monkeypatch):
    """The walk itself: a wait two calls down, and an unguarded sync check, are found."""
    (tmp_path / "a.py").write_text(
        "from . import b\n"
        "def entry(x):\n    return helper(x)\n"
        "def helper(x):\n    _sync_check(x)\n    return b.leaf(x)\n")
    (tmp_path / "b.py").write_text("def leaf(x):\n    return x.sum().item()\n")
    monkeypatch.setattr(__import__(__name__), "SOURCE", str(tmp_path))
    MODULES.clear()
    try:
        _, found = reachable_waits([("a", "entry")])
    finally:
        MODULES.clear()
    assert found == ["a.py:5: _sync_check outside `if ...mode == 'sync'...`",
                     "b.py:2: x.sum().item"]
