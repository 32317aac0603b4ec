#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Proves that a misuse of letterbox fails to compile with a message that says what is wrong.

SOURCE must not compile. Its lines `// expect: TEXT` name what the compiler must print (each
TEXT, literally, somewhere in its output). The compiler runs as the build would run it, with
-fsyntax-only: a snippet that compiles, or whose diagnostics lack a TEXT, fails the test.

Usage: check.py COMPILER SOURCE [compiler arguments...]. Exits 1 and says why.
"""
import pathlib
import subprocess
import sys

compiler, source, *arguments = sys.argv[1:]
expected = [line.split("// expect:", 1)[1].strip()
            for line in pathlib.Path(source).read_text().splitlines() if "// expect:" in line]
run = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", *arguments, source],
                     capture_output=True, text=True, timeout=600)
output = run.stdout + run.stderr
problems = []
if not expected:
    problems.append(f"{source} has no `// expect:` line")
if run.returncode == 0:
    problems.append(f"{source} compiled: the misuse it shows is not diagnosed")
problems += [f"the diagnostics do not say: {text}" for text in expected if text not in output]
for p in problems:
    print(p)
if problems:
    print(output[-6000:])
print(f"{pathlib.Path(compiler).name}: {len(expected)} expected messages, {len(problems)} problems")
sys.exit(1 if problems else 0)
