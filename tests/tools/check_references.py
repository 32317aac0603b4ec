#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Checks that what the docs, the README, the examples and the headers point at exists:

- every relative Markdown link `[text](path)` (the path, without its `#fragment`), from the
  Markdown file's folder;
- every repository path named in the text (`include/...`, `docs/...`, `examples/...`,
  `tests/...`, `tools/...`, `benchmarks/...`, `cmake/...`, with a file extension), from the
  repository root, and every header named as `letterbox/....hpp`, under `include/`;
- every `DESIGN §N` or `DESIGN §N.M`: section N of docs/design/DESIGN.md, and its item M.

usage: check_references.py <repo root>        exit 1 with one line per broken reference
       check_references.py --selftest          plants one of each and expects each found
"""
import os
import re
import sys
import tempfile

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:include|docs|examples|tests|tools|benchmarks|cmake)/[\w./+-]*\.(?:hpp|cpp|md|py|sh|txt|cmake|json))"
)
HEADER = re.compile(r"(?<![\w./-])(letterbox/[\w/]+\.hpp)")
DESIGN = re.compile(r"DESIGN §(\d+)(?:\.(\d+))?")


def sources(root):
    """The files whose references are checked: Markdown in docs/, the README, the examples'
    READMEs and sources, the headers, and the tests' sources (not the checkers')."""
    picked = [os.path.join(root, "README.md")]
    for top, exts in (("docs", (".md",)), ("examples", (".md", ".cpp", ".hpp")),
                      ("include", (".hpp",)), ("tests", (".cpp", ".hpp", ".py", ".sh"))):
        for folder, _, files in os.walk(os.path.join(root, top)):
            picked += [os.path.join(folder, f) for f in sorted(files) if f.endswith(exts)]
    # tests/tools holds the checkers, whose self-tests name missing files on purpose.
    tools = os.path.join(root, "tests", "tools") + os.sep
    return [p for p in picked if os.path.isfile(p) and not p.startswith(tools)]


def design_sections(root):
    """{section number: set of its top-level item numbers} of docs/design/DESIGN.md."""
    sections, current = {}, None
    path = os.path.join(root, "docs", "design", "DESIGN.md")
    if not os.path.isfile(path):
        return sections
    with open(path, encoding="utf-8") as f:
        for line in f:
            heading = re.match(r"## (\d+)\.", line)
            if heading:
                current = int(heading.group(1))
                sections[current] = set()
                continue
            item = re.match(r"(\d+)\. ", line)
            if item and current is not None:
                sections[current].add(int(item.group(1)))
    return sections


def check(root):
    problems = []
    sections = design_sections(root)
    for path in sources(root):
        rel = os.path.relpath(path, root)
        folder = os.path.dirname(path)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        in_code = False
        for number, line in enumerate(lines, 1):
            where = f"{rel}:{number}"
            if rel.endswith(".md") and line.lstrip().startswith("```"):
                in_code = not in_code
            if rel.endswith(".md") and not in_code:
                for target in LINK.findall(line):
                    if re.match(r"[a-z]+:", target) or target.startswith("#"):
                        continue
                    target = target.split("#", 1)[0]
                    if not os.path.exists(os.path.join(folder, target)):
                        problems.append(f"{where}: link to a missing {target}")
            for named in REPO_PATH.findall(LINK.sub("", line)):
                if "*" not in named and not os.path.exists(os.path.join(root, named)):
                    problems.append(f"{where}: names a missing {named}")
            for header in HEADER.findall(line):
                if not os.path.exists(os.path.join(root, "include", header)):
                    problems.append(f"{where}: names a missing header {header}")
            for section, item in DESIGN.findall(line):
                items = sections.get(int(section))
                if items is None or (item and int(item) not in items):
                    problems.append(f"{where}: DESIGN §{section}{'.' + item if item else ''} "
                                    "is not in docs/design/DESIGN.md")
    return problems


def selftest():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "design"))
        os.makedirs(os.path.join(root, "include", "letterbox"))
        with open(os.path.join(root, "docs", "design", "DESIGN.md"), "w") as f:
            f.write("# d\n\n## 3. Decisions\n\n1. one\n2. two\n")
        with open(os.path.join(root, "include", "letterbox", "real.hpp"), "w") as f:
            f.write("// DESIGN §3.2, <letterbox/real.hpp>\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("[ok](docs/design/DESIGN.md) [gone](docs/gone.md)\n"
                    "see tests/tools/gone.sh, DESIGN §3.9, DESIGN §8, <letterbox/gone.hpp>\n")
        found = check(root)
        expected = ["docs/gone.md", "tests/tools/gone.sh", "DESIGN §3.9", "DESIGN §8",
                    "letterbox/gone.hpp"]
        missed = [e for e in expected if not any(e in p for p in found)]
        if missed or len(found) != len(expected):
            print("selftest failed: missed", missed, "found", found)
            return 1
    print(f"selftest: {len(expected)} planted broken references found")
    return 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = check(root)
    for p in problems:
        print(p)
    print(f"{len(sources(root))} files checked, {len(problems)} broken references")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
