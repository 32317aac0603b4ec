#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""A page must compile as written (issue 18): joins the ```cpp blocks of a docs page, in order,
into one program, builds it with the compiler and flags given, runs it, and checks its output
against the regexes of the "Expected output" block of the example the page teaches.

Usage: build_page.py PAGE EXAMPLE_MAIN WORK_DIR COMPILER [FLAGS...]
A PAGE that is a .cpp file (an example's main.cpp) is built as it is: that is how the coroutine
examples are built with clang.
Exits 1, and says which step failed, when the page does not build, the program fails or its
output does not match.
"""
import pathlib
import re
import subprocess
import sys


def cpp_blocks(page):
    out, inside = [], False
    for line in page.read_text().splitlines():
        if not inside and line.startswith("```cpp"):
            inside = True
        elif inside and line.startswith("```"):
            inside = False
        elif inside:
            out.append(line)
    return out


def expected(example):
    lines = example.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if "Expected output (regex lines)" in l)
    return [l[len("//   "):] for l in lines[start + 1:] if l.startswith("//   ")]


def main():
    page, example, work, compiler = (pathlib.Path(a) for a in sys.argv[1:5])
    flags = sys.argv[5:]
    work.mkdir(parents=True, exist_ok=True)
    source = work / (page.stem + ".cpp")
    code = page.read_text() if page.suffix == ".cpp" else "\n".join(cpp_blocks(page)) + "\n"
    source.write_text(code)
    program = work / page.stem
    build = subprocess.run([str(compiler), "-std=c++20", *flags, str(source), "-o", str(program),
                            "-lsqlite3", "-pthread"], capture_output=True, text=True)
    if build.returncode != 0:
        print(f"{page}: the code does not build with {compiler}:\n{build.stderr[:20000]}")
        return 1
    run = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    print(run.stdout, end="")
    if run.returncode != 0:
        print(f"{page}: the program exited with {run.returncode}:\n{run.stderr[:20000]}")
        return 1
    position = 0
    for regex in expected(example):
        m = re.compile(regex, re.M).search(run.stdout, position)
        if not m:
            print(f"{page}: no line matches '{regex}' (in order)")
            return 1
        position = m.end()
    print(f"{page}: builds with {compiler.name} and prints what {example} expects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
