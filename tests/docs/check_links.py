#!/usr/bin/env python3
"""Checks the project's references to itself: every relative link in its Markdown points at a
file in the repository (and, for a link into a Markdown file, at one of its headings), and every
repository file cited by path (`src/<module>/<file>.cpp`, docs/<NAME>.md, tests/...) in the Markdown and in the
sources' comments exists, and none of them points into a machine's workspace (/work/..., /home/...:
a path outside the repository that no reader has). Usage: check_links.py REPO_ROOT. Exit 1 and one line per broken
reference (file:line: what) when anything is broken."""
import re
import subprocess
import sys
from pathlib import Path

ROOTS = ("src/", "tests/", "docs/", "scripts/", "bench/", "cmake/", "python/", "configs/", "include/",
         "examples/", ".ci/")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`([^`\s]+)`")
# A file path anywhere in the text: one of the repository's top folders, then a file name with
# an extension. OpenCLIP's own layout (src/open_clip/, src/training/) is cited as the reference
# and is not ours.
PLAIN = re.compile(r"(?<![\w./-])((?:src|tests|docs|scripts|bench|cmake|python|configs|include|examples)/"
                   r"[\w./-]*\.(?:cpp|h|cu|cuh|md|py|sh|cmake|json|txt))\b")
THEIRS = ("src/open_clip/", "src/training/")
# A path outside the repository on the machine it was written on (system paths such as
# /usr/bin/python3 or /dev/zero are fine: every reader has them).
OUTSIDE = re.compile(r"(?<![\w.~-])/(?:work|home|root)/[^\s`)\"']*")
SOURCES = (".cpp", ".h", ".cu", ".cuh", ".sh", ".py", ".cmake")
FENCE = re.compile(r"^\s*```")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    h = re.sub(r"<[^>]+>", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(md):
    out, seen, fenced = set(), {}, False
    for line in md.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def cited_path(token):
    """A backticked token that names a concrete repository path, or None."""
    token = token.rstrip(".,:;")
    if not token.startswith(ROOTS) or token.startswith(THEIRS) or any(c in token for c in "<>*{}$[]|"):
        return None
    if re.search(r"\.\.\.|NNN|_N\b|XXX", token):
        return None
    return token.split(":")[0].split("#")[0]


def main():
    root = Path(sys.argv[1]).resolve()
    files = subprocess.run(["git", "-C", str(root), "ls-files", "*.md"], capture_output=True, text=True,
                           check=True).stdout.split()
    tracked = set(subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True,
                                 check=True).stdout.split())
    exists = lambda rel: rel in tracked or (root / rel).is_dir() or (root / rel).exists()
    bad, cache = [], {}
    for f in files:
        md = root / f
        fenced = False
        for no, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            for p in OUTSIDE.findall(line):
                bad.append(f"{f}:{no}: cites a path outside the repository: {p}")
            if FENCE.match(line):
                fenced = not fenced
                continue
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):  # not inside code spans
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, https:, mailto:
                path, _, frag = target.partition("#")
                dest = md if not path else (md.parent / path).resolve()
                try:
                    rel = dest.relative_to(root).as_posix()
                except ValueError:
                    bad.append(f"{f}:{no}: link leaves the repository: {target}")
                    continue
                if path and not exists(rel):
                    bad.append(f"{f}:{no}: link to a missing file: {target}")
                elif frag and dest.suffix == ".md" and dest.exists():
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        bad.append(f"{f}:{no}: no heading #{frag} in {rel}")
            if fenced:
                continue
            for p in PLAIN.findall(line):
                if not p.startswith(THEIRS) and not exists(p) and f"`{p}" not in line:
                    bad.append(f"{f}:{no}: cites a path that does not exist: {p}")
            for token in CODE.findall(line):
                p = cited_path(token)
                if p and not exists(p.rstrip("/")):
                    bad.append(f"{f}:{no}: cites a path that does not exist: {p}")
    for f in tracked:
        if not f.endswith(SOURCES) and not f.endswith("CMakeLists.txt"):
            continue
        for no, line in enumerate((root / f).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if f != "tests/docs/check_links.py":
                for p in OUTSIDE.findall(line):
                    bad.append(f"{f}:{no}: cites a path outside the repository: {p}")
            for p in PLAIN.findall(line):
                if not p.startswith(THEIRS) and not exists(p):
                    bad.append(f"{f}:{no}: cites a path that does not exist: {p}")
    for b in bad:
        print(b)
    print(f"{len(files)} Markdown files, {len(bad)} broken references")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
