#!/usr/bin/env python3
"""check_layers.py -- fails (exit 1) when the library's sources break the layering.

The layers of src/, each allowed to include only itself and the layers below it:
    base < device < matrix < reorder < band < btd < precond < krylov < solver
Checked:
  1. every internal include names its layer ("device/device.h") or is a header in the
     including file's own directory, and never points to a higher layer;
  2. no include cycle between files;
  3. SAP_HAVE_CUDA appears only inside src/device/ (the only code that knows CUDA);
  4. tools/ and examples/ include no internal header (public API only).
Usage: scripts/check_layers.py [repository root]"""
import os
import re
import sys

LAYERS = ["base", "device", "matrix", "reorder", "band", "btd", "precond", "krylov", "solver"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(top, exts=(".c", ".h", ".cu", ".cpp")):
    for d, _, names in os.walk(top):
        for n in sorted(names):
            if n.endswith(exts):
                yield os.path.join(d, n)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    src = os.path.join(root, "src")
    errors = []
    graph = {}
    for path in sources(src):
        rel = os.path.relpath(path, src)
        layer = rel.split(os.sep)[0]
        if layer not in RANK:
            errors.append(f"src/{rel}: directory '{layer}' is not a known layer ({', '.join(LAYERS)})")
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        if "SAP_HAVE_CUDA" in text and layer != "device":
            errors.append(f"src/{rel}: mentions SAP_HAVE_CUDA outside src/device/")
        deps = []
        for inc in INCLUDE.findall(text):
            if inc == "sap.h":
                continue
            local = os.path.join(os.path.dirname(path), inc)
            if "/" not in inc and os.path.exists(local):
                target = os.path.relpath(local, src)
            elif os.path.exists(os.path.join(src, inc)):
                target = inc
            else:
                errors.append(f"src/{rel}: include \"{inc}\" is neither a layer path nor a header beside the file")
                continue
            tl = target.split(os.sep)[0]
            if tl in RANK and RANK[tl] > RANK[layer]:
                errors.append(f"src/{rel}: includes {target} of the higher layer '{tl}' ('{layer}' may use: "
                              f"{', '.join(LAYERS[:RANK[layer] + 1])})")
            deps.append(target)
        graph[rel] = deps
    # include cycles between files (depth-first search)
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cyc = stack[stack.index(nxt):] + [nxt]
                errors.append("include cycle: " + " -> ".join(cyc))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    for top in ("tools", "examples"):
        for path in sources(os.path.join(root, top)):
            text = open(path, encoding="utf-8", errors="replace").read()
            for inc in INCLUDE.findall(text):
                if "/" in inc or inc in ("base.h", "device.h"):
                    errors.append(f"{os.path.relpath(path, root)}: includes internal header \"{inc}\"")
    for e in errors:
        print("check_layers:", e)
    print(f"check_layers: {len(graph)} files in {len(LAYERS)} layers, {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
