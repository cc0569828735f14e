#!/usr/bin/env python3
"""Lists our functions whose bodies are over a number of lines.

Usage: function_size.py [--max N] [--exempt FILE:FUNCTION ...] ROOT [FOLDER...]

Reads every .cc file under the FOLDERs of ROOT (default: each top-level
folder but tests/, bench/ and build*/; generated *.pb.cc files are skipped)
and prints "file:line function (N lines)" for each function body over N
lines (default 80), counted as clang-tidy's readability-function-size counts
them: from the line of the opening brace to the line of the closing one.
Exits 1 when it printed any, 0 when none.

It reads the code as this tree writes it (clang-format, Google style), not
as a compiler would: comments and literals are blanked, then braces are
matched; a brace block whose head ends in a parameter list (and, for a
constructor, its initialisers) is a function, and its lambdas and nested
blocks count towards it. Blocks of namespaces, classes and structs are
looked into, so that member functions defined in a class are measured too.
"""
import argparse
import os
import re
import sys

# Heads of blocks that hold declarations rather than a function's statements.
_SCOPE_HEAD = re.compile(r"(^|\s)(namespace|class|struct|union|enum)(\s|$)|extern\s*$")


def blank_comments_and_literals(text):
    """The text with comments, strings and character literals replaced by
    spaces, keeping every newline so that line numbers stay."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2 : open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The name a function head declares (`Class::Name` for a member defined
    outside its class), or None when the head declares no function."""
    head = head.strip()
    if not head or _SCOPE_HEAD.search(head) or head.endswith("="):
        return None
    m = re.match(r"(.*?)([~\w:]+|operator\s*\S+?)\s*\(", head, re.S)
    if not m or not re.search(r"\)", head):
        return None
    name = m.group(2)
    if name in ("if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"):
        return None
    return name


def long_functions(path, rel, max_lines):
    text = blank_comments_and_literals(open(path, encoding="utf-8").read())
    found = []
    # Open blocks: (kind, name, line of "{"[, line of the name]).
    stack = []
    head_start = 0
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            inside_function = any(b[0] == "function" for b in stack)
            if inside_function:
                stack.append(("inner", None, line))
            else:
                head = text[head_start:i]
                name = function_name(head)
                if name is not None:
                    name_line = line - head.count("\n") + head[: head.find(name)].count("\n")
                    stack.append(("function", name, line, name_line))
                elif re.search(r"[=,(]\s*$|\breturn\s*$", head) or head.strip() == "":
                    stack.append(("inner", None, line))
                else:
                    stack.append(("scope", None, line))
            head_start = i + 1
        elif c == "}":
            if stack:
                block = stack.pop()
                if block[0] == "function" and not any(b[0] == "function" for b in stack):
                    length = line - block[2]
                    if length > max_lines:
                        found.append((rel, block[3], block[1], length))
            head_start = i + 1
        elif c == ";":
            if not any(b[0] == "function" for b in stack):
                head_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("--exempt", nargs="*", default=[])
    parser.add_argument("root")
    parser.add_argument("folders", nargs="*")
    args = parser.parse_args()
    folders = args.folders or sorted(
        d
        for d in os.listdir(args.root)
        if os.path.isdir(os.path.join(args.root, d))
        and not d.startswith((".", "build"))
        and d not in ("tests", "bench")
    )
    exempt = set(args.exempt)
    over = []
    for folder in folders:
        top = os.path.join(args.root, folder)
        if not os.path.isdir(top):
            sys.exit(f"function_size: no folder {folder}")
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in ("tests", "bench"))
            for f in sorted(filenames):
                if f.endswith((".cc", ".h")) and not f.endswith((".pb.cc", ".pb.h")):
                    path = os.path.join(dirpath, f)
                    rel = os.path.relpath(path, args.root)
                    for file, line, name, length in long_functions(path, rel, args.max):
                        short = name.split("::")[-1]
                        if f"{file}:{short}" not in exempt and f"{file}:{name}" not in exempt:
                            over.append(f"{file}:{line} {name} ({length} lines)")
    for o in over:
        print(o)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
