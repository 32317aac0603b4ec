#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Builds a few unit test files with another compiler and runs the tests of a Catch2 filter:
how the coroutine tests run under clang as well as under g++ (issue 18). The files are joined in
one translation unit, as the unity build of letterbox_unit_tests joins them, with tests/main.cpp.

Usage: build_tests.py REPO WORK_DIR COMPILER FILTER FILE... -- FLAGS...
Exits 1, and says which step failed, when the tests do not build or one fails.
"""
import pathlib
import subprocess
import sys


def main():
    repo, work, compiler, test_filter = (sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3],
                                         sys.argv[4])
    rest = sys.argv[5:]
    split = rest.index("--")
    files, flags = rest[:split], rest[split + 1:]
    work.mkdir(parents=True, exist_ok=True)
    source = work / "tests.cpp"
    source.write_text("".join(f'#include "{pathlib.Path(repo, "tests", f)}"\n'
                              for f in ["main.cpp", *files]))
    program = work / "tests"
    build = subprocess.run([compiler, "-std=c++20", *flags, f"-I{repo}/include",
                            f"-I{repo}/tests", str(source), "-o", str(program), "-lsqlite3",
                            "-pthread"], capture_output=True, text=True)
    if build.returncode != 0:
        print(f"the tests do not build with {compiler}:\n{build.stderr[:20000]}")
        return 1
    run = subprocess.run([str(program), test_filter], capture_output=True, text=True,
                         timeout=300)
    print(run.stdout[-20000:], end="")
    if run.returncode != 0:
        print(f"the tests built with {compiler} failed ({run.returncode}):\n{run.stderr[:20000]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
