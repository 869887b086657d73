#!/usr/bin/env python3
"""The project's include graph, folder by folder, and a check that it has no cycle.

Every `#include "..."` of a C++/CUDA source is resolved the way the build resolves it (beside the
including file, then the project's include folders) and becomes an arrow between the folders that
hold the two files. Folders are the layers (app/gui/..., app/cli, kernels/src/..., core/src/...,
core/include/tilefilter); an arrow back up is an include cycle between folders.

The GUI's folders are also held to their order (LAYERS, top first): a folder may include only
folders below it, so widgets reach the model and the model reaches core, never back up. core/ is
held to its roles' order (CORE_ROLES, top first) the same way: core/src/ROLE and
core/include/tilefilter/ROLE share a role's place, a folder includes only its own role or those
below it, a public header never includes core/src, and no source sits in a folder outside a role.
kernels/ is held to its order (KERNEL_LAYERS, top first) the same way: the backend's devices and lanes
over the FFT stage, over the convolution kernels, over the CUDA helpers, over kernels' public headers;
kernels reaches core only through core's public headers, and nothing in core includes kernels.

The front ends (FRONT_ENDS: the CLI, the C API, the GUI) include core and kernels' public headers,
never one another, and nothing below them includes them.

Usage: tools/include_graph.py [--dot FILE]   exit status 1 when a cycle or an arrow back up exists (printed)
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("app", "core", "kernels")
INCLUDE_DIRS = ["core/include", "core/src", "kernels/include", "kernels/src", "app/gui", "app/cli", "app/capi/include"]
# The front ends over core and kernels' public headers: none includes another, and nothing below
# includes them (app/capi/include holds the C API's header, which only app/capi itself includes; the
# Python package in app/python is not C and binds to the library at run time).
FRONT_ENDS = ["app/cli", "app/capi", "app/gui"]
EXTS = (".cpp", ".hpp", ".h", ".c", ".cu", ".cuh")
# app/gui, top first: each folder includes only those after it (and core, kernels' public headers).
LAYERS = ["app/gui", "app/gui/window", "app/gui/dialogs", "app/gui/panels", "app/gui/views", "app/gui/model",
          "app/gui/platform"]
# core/, top first: batch runs the pipeline over io, io streams files through the engine, the
# engine (scheduler, devices, the CPU device) runs filters over images; util is below everything.
CORE_ROLES = ["batch", "io", "engine", "filters", "image", "util"]
# kernels/, top first: the backend (devices, lanes, chain runner, tile plan, nvJPEG, NVML) runs the FFT
# stage and the convolution kernels; both use the CUDA helpers; the public headers (what the front ends
# include) are at the bottom, over core alone.
KERNEL_LAYERS = ["kernels/src", "kernels/src/fft", "kernels/src/conv", "kernels/src/cuda", "kernels/include/tilefilter"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def files():
    for top in SOURCES:
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith(EXTS):
                    yield os.path.relpath(os.path.join(d, n), ROOT)


def resolve(src, inc):
    for base in [os.path.dirname(src)] + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None


def front_end(folder):
    for f in FRONT_ENDS:
        if folder == f or folder.startswith(f + "/"):
            return f
    return None


def core_role(folder):
    """The index in CORE_ROLES of a core folder, None outside core, -1 for a core folder in no role."""
    for prefix in ("core/src/", "core/include/tilefilter/"):
        if folder.startswith(prefix):
            role = folder[len(prefix):].split("/")[0]
            return CORE_ROLES.index(role) if role in CORE_ROLES else -1
    return None if not folder.startswith("core/") else -1


def main():
    edges = defaultdict(set)
    for f in files():
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            for inc in INCLUDE.findall(fh.read()):
                t = resolve(f, inc)
                a, b = os.path.dirname(f), os.path.dirname(t) if t else None
                if b and a != b:
                    edges[a].add(b)
    if "--dot" in sys.argv:
        with open(sys.argv[sys.argv.index("--dot") + 1], "w") as out:
            out.write("digraph includes {\n  rankdir=TB;\n")
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    out.write(f'  "{a}" -> "{b}";\n')
            out.write("}\n")
    # Depth-first search for a cycle.
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                print("include cycle between folders: " + " -> ".join(c))
                return 1
    up = [(a, b) for a in edges for b in edges[a]
          if a in LAYERS and b in LAYERS and LAYERS.index(b) <= LAYERS.index(a)]
    for a, b in sorted(up):
        print(f"include runs back up the GUI's layers: {a} -> {b}")
    if up:
        return 1
    core_up = [(a, b) for a in edges for b in edges[a]
               if core_role(a) is not None and core_role(b) is not None and
               (core_role(b) < core_role(a) or (a.startswith("core/include") and b.startswith("core/src")))]
    for a, b in sorted(core_up):
        print(f"include runs back up core's roles: {a} -> {b}")
    if core_up:
        return 1
    kernels_up = [(a, b) for a in edges for b in edges[a] if
                  (a in KERNEL_LAYERS and b in KERNEL_LAYERS and KERNEL_LAYERS.index(b) <= KERNEL_LAYERS.index(a)) or
                  (a.startswith("kernels/") and b.startswith("core/src")) or
                  (a.startswith("core/") and b.startswith("kernels/"))]
    for a, b in sorted(kernels_up):
        print(f"include runs back up kernels' layers (KERNEL_LAYERS), or between kernels and core's insides: {a} -> {b}")
    if kernels_up:
        return 1
    cross = [(a, b) for a in edges for b in edges[a] if front_end(b) and front_end(a) != front_end(b)]
    for a, b in sorted(cross):
        print(f"include reaches into another front end: {a} -> {b}")
    if cross:
        return 1
    loose = sorted({os.path.dirname(f) for f in files() if core_role(os.path.dirname(f)) == -1})
    if loose:
        print("core sources outside a role folder (CORE_ROLES in tools/include_graph.py): " + ", ".join(loose))
        return 1
    gui = [f for f in {x for a in edges for x in [a, *edges[a]]} if f.startswith("app/gui")]
    unlisted = sorted(f for f in gui if f not in LAYERS)
    if unlisted:
        print("GUI folders missing from LAYERS in tools/include_graph.py: " + ", ".join(unlisted))
        return 1
    kernel_folders = {os.path.dirname(f) for f in files() if f.startswith("kernels/")}
    unlisted = sorted(f for f in kernel_folders if f not in KERNEL_LAYERS)
    if unlisted:
        print("kernels folders missing from KERNEL_LAYERS in tools/include_graph.py: " + ", ".join(unlisted))
        return 1
    folders = sorted(set(edges) | {b for v in edges.values() for b in v})
    print(f"include graph: {len(folders)} folders, {sum(len(v) for v in edges.values())} arrows between them, no cycle")
    for a in sorted(edges):
        print(f"  {a} -> {', '.join(sorted(edges[a]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
