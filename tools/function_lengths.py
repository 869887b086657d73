#!/usr/bin/env python3
"""Lines per function and per file of the project's C++/CUDA sources, and a check that none passes its limit.

A function runs from the first line of its signature to its closing brace (lambdas and local classes
count in the function that holds them). The scan is lexical (comments, strings and character
literals removed, braces matched), which is enough for this code base's style (clang-format,
Google-based); it is not a C++ parser.

Usage: tools/function_lengths.py [--limit N] [--file-limit M] [--top K] [PATH...]   (default PATHs: app core kernels)
       exit status 1 when a function is longer than --limit lines (default 120) or a file than
       --file-limit lines (default 500)
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTS = (".cpp", ".hpp", ".h", ".c", ".cu", ".cuh")
NOT_FUNCTIONS = re.compile(r"^\s*(template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern\s+\"C\")\b", re.S)
NAME = re.compile(r"([~\w:]+(?:operator\s*[^\s(]+)?)\s*\($")


def strip(text):
    """The text with comments, strings and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "".join(ch if ch == "\n" else " " for ch in text[i + 2:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):  # a preprocessor line, with its continuations
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0 or text[k - 1] != "\\":
                    break
                j = k + 1
            j = n if k < 0 else k
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The name of the function whose signature is `head`, or None when `head` opens no function."""
    h = re.sub(r"__launch_bounds__\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\)", "", " ".join(head.split()))
    if not h or "(" not in h or NOT_FUNCTIONS.match(h) or h.endswith("=") or h.startswith("="):
        return None
    # The parameter list follows the name: the first '(' from the left, whose prefix ends in a name.
    for k, ch in enumerate(h):
        if ch == "(":
            m = NAME.search(h[:k + 1])
            if m and m.group(1).split("::")[-1] not in ("if", "for", "while", "switch", "catch", "return"):
                return m.group(1)
            return None
    return None


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip(f.read())
    found = []
    stack = []  # per open brace: ("function", name, first line) or ("other",)
    head_start = 0
    line_of = lambda pos: text.count("\n", 0, pos) + 1  # noqa: E731
    in_function = lambda: any(s[0] == "function" for s in stack)  # noqa: E731
    for pos, ch in enumerate(text):
        if ch == ";" and not in_function():
            head_start = pos + 1
        elif ch == "{":
            head = text[head_start:pos]
            if in_function():
                stack.append(("other",))
                continue
            before = head.rstrip()
            ctor_init = re.search(r"\)\s*(noexcept\s*)?:", " ".join(head.split())) and before and (
                before[-1].isalnum() or before[-1] == "_") and not re.search(r"\)\s*(const|override|final|noexcept)$",
                                                                             before)
            if ctor_init or head.count("(") > head.count(")"):  # an initializer, or a default argument's {}
                stack.append(("init",))
                continue
            label = re.match(r"\s*((public|private|protected)\s*:(?!:)\s*)+", head)
            if label:  # an access label ends the head before it
                head_start += label.end()
                head = head[label.end():]
            name = function_name(head)
            if name:
                first = head_start + len(head) - len(head.lstrip())
                stack.append(("function", name, line_of(first)))
            else:
                stack.append(("other",))
                head_start = pos + 1
        elif ch == "}":
            if not stack:
                continue
            top = stack.pop()
            if top[0] == "function" and not in_function():
                found.append((top[1], top[2], line_of(pos)))
            if top[0] != "init" and not in_function():
                head_start = pos + 1
    return found


def sources(paths):
    for p in paths:
        full = os.path.join(ROOT, p)
        if os.path.isfile(full):
            yield p
            continue
        for d, _, names in os.walk(full):
            for n in sorted(names):
                if n.endswith(EXTS):
                    yield os.path.relpath(os.path.join(d, n), ROOT)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("--file-limit", type=int, default=500)
    parser.add_argument("--top", type=int, default=0, help="also list the K longest functions")
    parser.add_argument("paths", nargs="*", default=["app", "core", "kernels"])
    args = parser.parse_args()
    rows, long_files = [], []
    for path in sources(args.paths):
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > args.file_limit:
            long_files.append((n, path))
        for name, first, last in functions(os.path.join(ROOT, path)):
            rows.append((last - first + 1, f"{path}:{first}", name))
    rows.sort(reverse=True)
    for lines, where, name in rows[:args.top]:
        print(f"{lines:5d}  {where}  {name}")
    over = [r for r in rows if r[0] > args.limit]
    for lines, where, name in over:
        print(f"{where}: {name} is {lines} lines (limit {args.limit})", file=sys.stderr)
    for n, path in sorted(long_files, reverse=True):
        print(f"{path}: {n} lines (limit {args.file_limit})", file=sys.stderr)
    print(f"{len(rows)} functions, {len(over)} over {args.limit} lines; {len(long_files)} files over "
          f"{args.file_limit} lines", file=sys.stderr)
    return 1 if over or long_files else 0


if __name__ == "__main__":
    sys.exit(main())
