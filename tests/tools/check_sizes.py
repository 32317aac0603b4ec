#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Keeps the headers small enough to hold in one's head (issue 17, "the measure"):

- no header under include/ over MAX_HEADER_LINES lines;
- no function body over MAX_FUNCTION_LINES lines, not counting the lines that are inside string
  literals (the dashboard's HTML) nor the functions of ALLOWED_TABLES (declarative tables).

A function body is a brace block opened at namespace or class scope whose head (the text since
the previous ';', '{' or '}') has a parameter list and is not a class, enum, namespace or
initializer. Comments and string literals (raw strings included) are blanked first, so braces in
them do not count. It is a scanner, not a parser: good enough for code formatted by the repo's
.clang-format, and it errs towards reporting.

Usage: check_sizes.py REPO_ROOT [--self-test]. Exits 1 and lists every offender.
"""
import pathlib
import re
import sys

MAX_HEADER_LINES = 700
MAX_FUNCTION_LINES = 120

# Functions that are declarative tables (one line per entry), as "path:function-name".
ALLOWED_TABLES: set[str] = set()

SCOPE_KEYWORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b")


def blank_comments_and_strings(text):
    """Returns (code, in_string): the text with comments and literal contents replaced by
    spaces (newlines kept), and for each line whether some of it is inside a string literal."""
    out = []
    string_lines = set()
    i, n, line = 0, len(text), 0

    def keep(ch):
        nonlocal line
        out.append(ch)
        if ch == "\n":
            line += 1

    def blank(ch, in_literal):
        nonlocal line
        if ch == "\n":
            out.append("\n")
            line += 1
            if in_literal:
                string_lines.add(line)
        else:
            out.append(" ")
            if in_literal:
                string_lines.add(line)

    while i < n:
        c = text[i]
        at_line_start = i == 0 or text[i - 1] == "\n"
        if at_line_start and text[i:].lstrip(" \t").startswith("#"):
            # A preprocessor directive, continuation lines included: macros are not functions.
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                blank(text[i], False)
                i += 1
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                blank(text[i], False)
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            while i < end:
                blank(text[i], False)
                i += 1
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^(\s]{0,16})\(', text[i:])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            keep('"')
            i += 1
            while i < end - 1:
                blank(text[i], True)
                i += 1
            keep('"')
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            quote = c
            keep(c)
            i += 1
            while i < n and text[i] != quote and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n:
                    blank(text[i], True)
                    i += 1
                blank(text[i], True)
                i += 1
            if i < n and text[i] == quote:
                keep(quote)
                i += 1
            continue
        keep(c)
        i += 1
    return "".join(out), string_lines


def function_name(head):
    head = re.sub(r"\s+", " ", head).strip()
    m = re.search(r"([~\w:]+|operator\s*[^\s(]+)\s*\(", head)
    return m.group(1) if m else head[:40]


def is_function_head(head):
    h = re.sub(r"\s+", " ", head).strip()
    if not h or "(" not in h:
        return False
    # Leading template<...> clauses say nothing about what follows.
    while h.startswith("template"):
        depth, j = 0, len("template")
        while j < len(h):
            if h[j] == "<":
                depth += 1
            elif h[j] == ">":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            j += 1
        h = h[j:].strip()
    if SCOPE_KEYWORDS.match(h) or re.match(r"(inline |export )*namespace\b", h):
        return False
    if re.match(r"(typedef |using )", h):
        return False
    if h.endswith("=") or h.endswith("return") or h.endswith(","):
        return False
    if re.match(r'extern "', h):
        return False
    return True


def functions(code):
    """Yields (name, first_line, last_line) of every function body at namespace/class scope."""
    stack = []  # per open brace: "scope", "function" or "block"
    head_start = 0
    i, n = 0, len(code)
    current = None  # (name, start line, depth) of the function being measured
    while i < n:
        c = code[i]
        if c in ";":
            if not stack or stack[-1] == "scope":
                head_start = i + 1
        elif c == "{":
            inside_function = any(kind != "scope" for kind in stack)
            if inside_function:
                stack.append("block")
            else:
                head = code[head_start:i]
                if is_function_head(head):
                    stack.append("function")
                    current = (function_name(head), code.count("\n", 0, i) + 1, len(stack))
                else:
                    stack.append("scope")
                    head_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "function" and current and current[2] == len(stack) + 1:
                rest = code[i + 1 :].lstrip()
                end_line = code.count("\n", 0, i) + 1
                # A member initialiser `b_{b}` in a constructor's init list is not the body.
                if rest[:1] in (",", "{") and ") :" in re.sub(r"\s+", " ", code[head_start:i]):
                    current = None
                else:
                    yield current[0], current[1], end_line
                    current = None
                    head_start = i + 1
            elif not stack or stack[-1] == "scope":
                head_start = i + 1
        i += 1


def check(root):
    problems = []
    headers = sorted((root / "include").rglob("*.hpp"))
    for path in headers:
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        lines = text.count("\n")
        if lines > MAX_HEADER_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_HEADER_LINES})")
        code, string_lines = blank_comments_and_strings(text)
        for name, first, last in functions(code):
            length = sum(1 for ln in range(first, last + 1) if ln not in string_lines)
            if length > MAX_FUNCTION_LINES and f"{rel}:{name}" not in ALLOWED_TABLES:
                problems.append(
                    f"{rel}:{first}: function {name} is {length} lines (at most {MAX_FUNCTION_LINES})"
                )
    return len(headers), problems


def self_test():
    body = "\n".join(f"    x += {k};" for k in range(MAX_FUNCTION_LINES))
    short = "inline int f(int x) {\n    return x;\n}\n"
    long_fn = f"inline int g(int x) {{\n{body}\n    return x;\n}}\n"
    html = 'inline const char* page() {\n    return R"(\n' + "<p>{</p>\n" * 300 + ')";\n}\n'
    ctor = (
        "struct s {\n    s(int a) : a_(a), b_{a} {\n" + body + "\n    }\n    int a_; int b_;\n};\n"
    )
    cases = [
        ("short function", short, []),
        ("long function", long_fn, ["g"]),
        ("html literal", html, []),
        ("class with a table", "struct t {\n" + "    int a{1};\n" * 200 + "};\n", []),
        ("constructor with brace init", ctor, ["s"]),
        ("comment braces", "// {\n" + short + "/* } */\n", []),
        ("macro braces", "#define M(x) \\\n    do { \\\n    } while (0)\n" + short, []),
    ]
    failed = 0
    for label, text, want in cases:
        code, strings = blank_comments_and_strings(text)
        got = [
            name
            for name, a, b in functions(code)
            if sum(1 for ln in range(a, b + 1) if ln not in strings) > MAX_FUNCTION_LINES
        ]
        status = "ok" if got == want else f"FAILED: got {got}, want {want}"
        failed += got != want
        print(f"self-test {label}: {status}")
    return failed


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--self-test" in sys.argv:
        sys.exit(1 if self_test() else 0)
    root = pathlib.Path(args[0] if args else ".")
    count, problems = check(root)
    for p in problems:
        print("too big:", p)
    print(f"{count} headers checked, {len(problems)} over the limits")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
