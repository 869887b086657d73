#!/usr/bin/env python3
"""Every "contract N" a source cites names the file the contracts live in.

docs/design.md numbers its contracts, and comments cite them as "docs/design.md, contract N". A bare
"contract 2" sends a reader searching, so this fails when a comment mentions a numbered contract and
neither that line nor the comment it belongs to (the run of comment lines around it) names
docs/design.md. Every tracked source is read: C and C++ (.c .cpp .h .hpp), CUDA (.cu .cuh), CMake,
Python and shell. `cmake/tf.sh test` runs it beside tools/include_graph.py.
"""
import pathlib
import re
import subprocess
import sys

PATTERNS = ["*.c", "*.cpp", "*.h", "*.hpp", "*.cu", "*.cuh", "*.cmake", "CMakeLists.txt", "*.py", "*.sh"]
CITATION = re.compile(r"\bcontracts? \d", re.IGNORECASE)
DESIGN = "design.md"
COMMENT = re.compile(r"^\s*(//|/\*|\*|#)")


def sources(root):
    try:
        out = subprocess.run(["git", "ls-files", "--", *PATTERNS], cwd=root, check=True, capture_output=True, text=True)
        return [root / p for p in out.stdout.splitlines()]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder in ["app", "core", "kernels", "tests", "tools", "cmake"]:
            for pattern in PATTERNS:
                found += (root / folder).rglob(pattern)
        return found


def comment_block(lines, i):
    """The lines of the comment that line i belongs to: itself, and the comment lines next to it."""
    if not COMMENT.match(lines[i]):
        return [lines[i]]  # a comment after code stands alone
    first = last = i
    while first > 0 and COMMENT.match(lines[first - 1]):
        first -= 1
    while last + 1 < len(lines) and COMMENT.match(lines[last + 1]):
        last += 1
    return lines[first:last + 1]


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    problems = []
    for path in sources(root):
        if not path.is_file() or path.resolve() == pathlib.Path(__file__).resolve():
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for i, line in enumerate(lines):
            if CITATION.search(line) and not any(DESIGN in l for l in comment_block(lines, i)):
                problems.append(f"{path.relative_to(root)}:{i + 1}: cites a contract without naming docs/design.md")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_citations: {len(problems)} citation(s) without docs/design.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
