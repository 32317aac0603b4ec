#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Proves [[nodiscard]] is on the store and unit-of-work calls: builds SOURCE (a target that
cannot compile), then checks that the compiler diagnosed an ignored [[nodiscard]] result on each
line marked `// discarded`, on no other line, and reported no other error.

Usage: check.py CMAKE BUILD_DIR TARGET CONFIG SOURCE. Exits 1 and names each difference.
"""
import pathlib
import re
import subprocess
import sys

cmake, build_dir, target, config, source = sys.argv[1:6]
name = pathlib.Path(source).name
marked = {i + 1 for i, line in enumerate(pathlib.Path(source).read_text().splitlines())
          if line.rstrip().endswith("// discarded")}

build = subprocess.run([cmake, "--build", build_dir, "--target", target, "--config", config],
                       capture_output=True, text=True)
output = build.stdout + build.stderr
diagnosed, other = set(), []
for line in output.splitlines():
    m = re.search(re.escape(name) + r":(\d+):\d+: (?:warning|error): (.*)", line)
    if m and "nodiscard" in m.group(2):
        diagnosed.add(int(m.group(1)))
    elif m or re.search(r"\b(?:error|warning):", line):
        other.append(line)

problems = [f"{name}:{n}: the discarded result is not diagnosed ([[nodiscard]] missing?)"
            for n in sorted(marked - diagnosed)]
problems += [f"{name}:{n}: diagnosed, but not marked `// discarded`"
             for n in sorted(diagnosed - marked)]
problems += [f"unexpected diagnostic: {line}" for line in other]
if build.returncode == 0:
    problems.append(f"{target} compiled without errors: is it built with -Werror=unused-result?")
if not marked:
    problems.append(f"{name} has no line marked `// discarded`")
for p in problems:
    print(p)
if problems:
    print(output[-4000:])
print(f"{len(marked)} discarded results, {len(diagnosed & marked)} diagnosed, "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
