#!/usr/bin/env python3
"""Includes point down only (CONTRIBUTING.md): a file of src/<module>/ may include headers of
its own module and of the modules it links, as CMakeLists.txt's oc_module(<name> DEPS ...) lines
declare them (transitively); src/cli/ sits above every module. The build enforces the same rule
(each module compiles with an include view of only those modules: CMakeLists.txt oc_include_view,
ctest include_views_enforced); this test reads the sources, so it also names includes that a
build would only reach in a configuration (a CUDA file, an #ifdef), and includes that climb out
of a module by a relative path ("../"), which no include view stops. It prints each with
file:line and fails.

  scripts/include_direction.py SRC_ROOT     (ctest: include_direction)
"""
import re
import sys
from pathlib import Path


def module_deps(cmake_text):
    """{module: set of modules it links directly} from the oc_module(...) lines."""
    deps = {}
    for m in re.finditer(r"^oc_module\((\w+)\s+DEPS([^)]*)\)", cmake_text, re.M):
        deps[m.group(1)] = set(re.findall(r"openclip_(\w+)", m.group(2)))
    return deps


def closure(deps):
    out = {}
    def visit(m, seen):
        for d in deps.get(m, ()):
            if d not in seen:
                seen.add(d)
                visit(d, seen)
        return seen
    for m in deps:
        out[m] = visit(m, set())
    return out


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    deps = module_deps((root / "CMakeLists.txt").read_text())
    if "core" not in deps or "model" not in deps:
        print("include_direction: no oc_module lines found in CMakeLists.txt", file=sys.stderr)
        return 2
    below = closure(deps)
    modules = set(deps)
    below["cli"] = set(modules)  # the CLI is the top: it may include every module
    bad = []
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu", ".cuh"):
            continue
        owner = path.relative_to(root / "src").parts[0]
        if owner not in below:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.match(r'\s*#\s*include\s+"(\.\./|[^"]*/\.\./)', line):
                bad.append(f"{path.relative_to(root)}:{n}: {owner} includes {line.split('include', 1)[1].strip()} "
                           f"(a relative path out of the folder: name the module, \"<module>/...\")")
                continue
            m = re.match(r'\s*#\s*include\s+"(\w+)/', line)
            if not m or m.group(1) == owner or m.group(1) not in modules | {"cli"}:
                continue
            if m.group(1) not in below[owner]:
                bad.append(f"{path.relative_to(root)}:{n}: {owner} includes {line.split('include', 1)[1].strip()} "
                           f"({owner} does not link openclip_{m.group(1)})")
    for b in bad:
        print(b)
    print(f"include_direction: {len(bad)} include(s) against the module graph", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
