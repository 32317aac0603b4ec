#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Every Catch2 TEST_CASE name must survive ctest: no ';' (CMake splits the name there into two
filters that match nothing; `--warn NoTests` then fails both halves, but only when the test runs).

Usage: check_test_names.py REPO_ROOT. Exits 1 and names each offending test.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
bad = []
count = 0
for path in sorted((root / "tests").rglob("*.cpp")):
    text = path.read_text()
    for m in re.finditer(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', text):
        name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        count += 1
        if ";" in name:
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{path.relative_to(root)}:{line}: {name}")
for b in bad:
    print("test name with ';':", b)
print(f"{count} test names checked, {len(bad)} with ';'")
sys.exit(1 if bad else 0)
