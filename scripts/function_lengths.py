#!/usr/bin/env python3
"""Lists every C/C++ function in src/ longer than the limit (80 lines, CONTRIBUTING.md's
"functions under ~80 lines") and exits 1 when one lies outside the generated files of EXEMPT.

A function's length is its physical lines, from the line of its name to its closing brace,
both counted (blank and comment lines included: what a reader scrolls through). Functions are
found by lizard (PyPI, pinned in scripts/setup_lizard.sh), a C/C++ tokenizer that knows
strings, raw strings, comments, templates, lambdas and the preprocessor, rather than by
hand-written brace counting. A lambda counts towards the function that holds it.

Usage: function_lengths.py REPO_ROOT [--limit N] [--all]
  --all   list every function over the limit, the exempt files' too.
Run under /usr/bin/python3 it re-runs itself with REPO_ROOT/.lizard/bin/python; when that venv
is missing it exits 77 (ctest's skip code for the test `function_lengths`) and says how to
make it. Before measuring src/ it checks itself on a made-up source (a function of limit + 1
lines is reported, one of limit lines is not), so a lizard that stops finding functions fails
the test instead of passing it."""
import argparse
import os
import sys
from pathlib import Path

LIMIT = 80
SOURCES = (".cpp", ".h", ".cu", ".cuh", ".inc")
# Generated files (each says so in its first line, with its generator): tables, not code a
# person writes or reads.
EXEMPT = (
    "src/text/unicode_tables.cpp",     # tests/reference/gen_unicode_tables.py
    "src/text/unicode_bert_tables.cpp",  # tests/reference/gen_bert_tables.py
    "src/model/pretrained_tags_table.inc",  # scripts/gen_pretrained_tags.py
)
SKIP = 77


def import_lizard(root):
    try:
        import lizard  # noqa: F401
        return lizard
    except ImportError:
        pass
    venv_py = root / ".lizard" / "bin" / "python"
    if venv_py.exists() and os.environ.get("OC_FUNCTION_LENGTHS_REEXEC") != "1":
        os.environ["OC_FUNCTION_LENGTHS_REEXEC"] = "1"
        os.execv(str(venv_py), [str(venv_py), *sys.argv])
    print(f"SKIP: lizard is not installed ({venv_py} missing): run scripts/setup_lizard.sh "
          "(scripts/setup.sh does)")
    sys.exit(SKIP)


def long_functions(lizard, name, code, limit):
    """(first line, last line, length, function name) of each function in `code` longer than
    `limit` lines. An unknown extension (.cu, .cuh, .inc) is read as C/C++."""
    analyzer = lizard.FileAnalyzer(lizard.get_extensions([]))
    info = analyzer.analyze_source_code(name, code)
    out = []
    for f in info.function_list:
        length = f.end_line - f.start_line + 1
        if length > limit:
            out.append((f.start_line, f.end_line, length, f.name))
    return out


def self_test(lizard, limit):
    """The check can fail: a made-up file with functions of limit + 1 and limit lines, with a
    brace in a string, a raw string, a comment and a lambda in the long one."""
    def body(lines):
        inner = ['  auto f = [](int x) { return x + 1; };  // } not the end',
                 '  const char* s = "}}}";',
                 '  const char* r = R"x(} { })x";']
        inner += [f"  int v{i} = {i};" for i in range(lines - 2 - len(inner))]
        return inner
    code = "\n".join(["namespace t {", "int too_long() {", *body(limit + 1), "}",
                      "int just_fits() {", *body(limit), "}", "}  // namespace t", ""])
    found = long_functions(lizard, "self_test.cpp", code, limit)
    want = [(2, limit + 2, limit + 1, "t::too_long")]
    if found != want:
        print(f"FAIL: self-test: lizard found {found}, expected {want}")
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--limit", type=int, default=LIMIT)
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    root = args.root.resolve()
    lizard = import_lizard(root)
    self_test(lizard, args.limit)
    stale = [e for e in EXEMPT if not (root / e).is_file()]
    if stale:
        print(f"FAIL: exempt files that do not exist (update EXEMPT): {', '.join(stale)}")
        return 1
    files = sorted(p for p in (root / "src").rglob("*") if p.suffix in SOURCES and p.is_file())
    if not files:
        print(f"FAIL: no C/C++ sources under {root / 'src'}")
        return 1
    bad = exempt = 0
    for path in files:
        rel = path.relative_to(root).as_posix()
        is_exempt = rel in EXEMPT
        for first, last, length, name in long_functions(
                lizard, rel, path.read_text(encoding="utf-8"), args.limit):
            if is_exempt:
                exempt += 1
                if not args.all:
                    continue
            else:
                bad += 1
            tag = " (generated: exempt)" if is_exempt else ""
            print(f"{rel}:{first}-{last}: {name}: {length} lines{tag}")
    print(f"function_lengths: {len(files)} files, {bad} function(s) over {args.limit} lines"
          + (f", {exempt} more in generated files" if exempt else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
