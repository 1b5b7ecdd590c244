#!/usr/bin/env python3
"""Every citation of a Markdown file in code resolves inside the repository (issue #47).

A citation is a token ending in ".md" in a code file (C++, Python, shell, CMake, Makefile)
or a data file (the presets', scenarios' and calibration files' JSON "source" strings). It
resolves when the file exists relative to the citing file's folder or the repository root,
or, for a bare name, when exactly one file of that name is in the repository. A section
named right after it ("X.md section 7", "X.md 4b", "X.md, 'NCCL cost structure'") must be
a heading of that file. A citation of another project's file (the line names that project
before the path, e.g. "Megatron-Bridge docs/releases/software-versions.md") is external and
not checked here; its count is reported. The folders outside the repository that the code
once cited (shared/reference, shared/design) are refused outright.

Usage: citations_check.py REPO_ROOT     (exit 0 when every citation resolves, 1 otherwise)
       citations_check.py --self-test  (the check reports what it should)
"""

import os
import re
import subprocess
import sys
import tempfile

CODE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".py", ".sh", ".cmake", ".json", ".in")
CODE_NAMES = ("CMakeLists.txt", "Makefile")
# Files that hold other projects' text (imported launch scripts, test inputs) are not ours.
SKIP_PREFIXES = ("tests/data/", "build", ".git/", "tests/citations_check.py")
# Projects whose files the code may cite by their own paths.
EXTERNAL = re.compile(
    r"(Megatron-Bridge|Megatron-LM|Megatron-MoE-ModelZoo|Megatron-Core|NeMo|DeepEP|"
    r"TransformerEngine|\bnccl\b|NCCL|github\.com|Pai-Megatron-Patch|DeepSeek|DualPipe|"
    r"huggingface|mlcommons|training_results|NVIDIA|deepseek-ai|stas00|alibaba|pytorch|"
    r"\bMBH?\b|\bMCORE\b|\bZOO\b)", re.IGNORECASE)
# Our own notes: never another project's file, whatever the line names (and docs/NAME.md).
OURS = ("docs/reference/", "docs/research/", "docs/practice/")
OUR_TOP_DOC = re.compile(r"^docs/[A-Z_]+\.md$")
OWNER_REPO = re.compile(r"\b[\w.-]+/[\w.-]+\s+$")
CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)(?![\w/])")
SECTION = re.compile(r"^[,:]?\s*(?:sections?|§)?\s*(\d+(?:\.\d+)*[a-z]?)\b")
QUOTED = re.compile(r"^(?:,\s*|\s+)'([^']+)'")
OUTSIDE = re.compile(r"\bshared/(reference|design)/")


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"], capture_output=True, text=True,
                             check=True).stdout.split("\n")
        files = [f for f in out if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if not d.startswith(("build", ".git"))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return files


def headings(path):
    with open(path, encoding="utf-8") as f:
        return [line.lstrip("#").strip() for line in f if line.startswith("#")]


def has_section(heads, number):
    # "7" matches "7. Goodput", "4b" matches "4b. DeepSeek-V3", "2.5" matches "2.5 Title".
    pattern = re.compile(r"^" + re.escape(number) + r"(?:[.\s:)]|$)")
    return any(pattern.match(h) for h in heads)


def check(root, files):
    """(failures, citations resolved, citations of other projects' files, files read)."""
    markdown = [f for f in files if f.endswith(".md")]
    by_name = {}
    for f in markdown:
        by_name.setdefault(os.path.basename(f), []).append(f)
    code = [f for f in files if (f.endswith(CODE_SUFFIXES) or os.path.basename(f) in CODE_NAMES)
            and not f.startswith(SKIP_PREFIXES)]
    failures, resolved, external = [], 0, 0
    for rel in code:
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for n, line in enumerate(lines, 1):
            where = f"{rel}:{n}"
            if OUTSIDE.search(line):
                failures.append(f"{where}: cites a folder outside the repository: {line.strip()}")
                continue
            for m in CITATION.finditer(line):
                cited = m.group(1)
                before = line[:m.start()]
                ours = cited.startswith(OURS) or OUR_TOP_DOC.match(cited) is not None
                if "/" not in cited and OWNER_REPO.search(before):
                    external += 1  # "deepseek-ai/eplb README.md": that repository's file
                    continue
                candidates = [os.path.normpath(os.path.join(os.path.dirname(rel), cited)),
                              os.path.normpath(cited)]
                target = next((c for c in candidates if os.path.isfile(os.path.join(root, c))),
                              None)
                if target is None and "/" not in cited and len(by_name.get(cited, [])) == 1:
                    target = by_name[cited][0]
                if target is None:
                    folder = os.path.dirname(cited)
                    other_project = not ours and (
                        (folder and not os.path.isdir(os.path.join(root, folder)))
                        or EXTERNAL.search(before) or OWNER_REPO.search(before))
                    if other_project:
                        external += 1
                        continue
                    # A bare name the code writes ("out.md", "$p/.../X.md"), not a citation.
                    if not ours and before.endswith(("$", '"')) and (
                            "/" not in cited or before.endswith("$")):
                        continue
                    failures.append(f"{where}: '{cited}' is not a file in the repository")
                    continue
                resolved += 1
                rest = line[m.end():]
                heads = None
                section = SECTION.match(rest)
                quoted = QUOTED.match(rest)
                if section:
                    heads = headings(os.path.join(root, target))
                    if not has_section(heads, section.group(1)):
                        failures.append(f"{where}: {target} has no section {section.group(1)}")
                elif quoted:
                    heads = headings(os.path.join(root, target))
                    if not any(quoted.group(1).lower() in h.lower() for h in heads):
                        failures.append(f"{where}: {target} has no heading '{quoted.group(1)}'")
    return failures, resolved, external, len(code)


def self_test():
    """The check fails where it should: a missing file, a missing section, a folder outside."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "reference"))
        with open(os.path.join(root, "docs", "reference", "a.md"), "w") as f:
            f.write("# A\n## 1. One\n## NCCL cost structure\n")
        with open(os.path.join(root, "x.cpp"), "w") as f:
            f.write("// docs/reference/a.md section 1, a.md 1; docs/reference/a.md, 'NCCL cost'\n"
                    "// NVIDIA/Megatron-LM docs/elsewhere.md is theirs\n"
                    "// docs/reference/a.md section 2\n// docs/reference/b.md\n"
                    "// a.md, 'Host overheads'\n// shared/reference/a.md\n"
                    'const char* k = "docs/research/gone.md"; f("out.md");\n'
                    "// TP/EP docs/reference/a.md section 3; NCCL docs/MODEL.md\n")
        with open(os.path.join(root, "y.json"), "w") as f:
            f.write('{"source": "docs/reference/missing.md section 1",\n'
                    ' "other": "NVIDIA-NeMo/Megatron-Bridge docs/archive.md, theirs"}\n')
        failures, resolved, external, _ = check(root, ["docs/reference/a.md", "x.cpp", "y.json"])
        expected = ["x.cpp:3", "x.cpp:4", "x.cpp:5", "x.cpp:6", "x.cpp:7", "x.cpp:8", "x.cpp:8",
                    "y.json:1"]
        got = [f.split(": ")[0] for f in failures]
        if got != expected or resolved != 6 or external != 2:
            print(f"self-test failed: {failures}, {resolved} resolved, {external} external")
            return 1
    print("self-test: a missing file (in a comment, a C++ string, a JSON source), a missing "
          "section, a missing heading, our own doc beside another project's name and a folder "
          "outside the repository are each reported; resolving citations and other projects' "
          "files pass")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    failures, resolved, external, read = check(root, repo_files(root))
    for f in failures:
        print(f)
    print(f"{resolved} citations resolve in the repository, {external} cite other projects' "
          f"files, {len(failures)} do not resolve ({read} code and data files read)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
