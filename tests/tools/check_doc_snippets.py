#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Docs never retype code (STYLE 2.8): every code block the docs show must equal its source.

- A block preceded by `<!-- snippet: PATH#NAME -->` must equal the lines between `//[NAME` and
  `//]` in PATH (`#[NAME` and `#]` in CMake and shell files).
- README.md's first ```cpp block must equal the `//[readme` region of tests/unit/readme.cpp,
  minus the lines marked `// hidden`.

Usage: check_doc_snippets.py REPO_ROOT. Exits 1 and names each mismatch.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
errors = []


def region(path, name):
    lines = (root / path).read_text().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() in ("//[" + name, "#[" + name))
    except StopIteration:
        errors.append(f"{path}: no region //[{name}")
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() in ("//]", "#]")), None)
    if end is None:
        errors.append(f"{path}: region //[{name} is not closed by //]")
        return None
    return lines[start + 1 : end]


def code_block_after(lines, i):
    j = i + 1
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    k = j + 1
    while k < len(lines) and not lines[k].startswith("```"):
        k += 1
    return lines[j + 1 : k]


checked = 0
pages = sorted(root.glob("docs/**/*.md")) + sorted(root.glob("examples/*/README.md"))
for md in pages + [p for p in [root / "README.md"] if p.exists()]:
    lines = md.read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"<!-- snippet: (\S+)#(\S+) -->", line.strip())
        if not m:
            continue
        want = region(m.group(1), m.group(2))
        if want is not None and code_block_after(lines, i) != want:
            errors.append(f"{md.relative_to(root)}:{i + 1}: block differs from {m.group(1)}#{m.group(2)}")
        checked += 1

if (root / "README.md").exists() and (root / "tests/unit/readme.cpp").exists():
    readme = (root / "README.md").read_text().splitlines()
    start = next(i for i, l in enumerate(readme) if l.startswith("```cpp"))
    want = [l for l in (region("tests/unit/readme.cpp", "readme") or []) if not l.rstrip().endswith("// hidden")]
    if code_block_after(readme, start - 1) != want:
        errors.append("README.md: the first ```cpp block differs from tests/unit/readme.cpp#readme")
    checked += 1

for e in errors:
    print("snippet mismatch:", e)
print(f"{checked} snippets checked, {len(errors)} mismatches")
sys.exit(1 if errors else 0)
