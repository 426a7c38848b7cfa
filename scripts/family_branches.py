#!/usr/bin/env python3
"""Counts the places outside the image tower families' folders (src/model/vit/, timm_vit/,
resnet/, convnext/, eva/) that ask which family a config has: VisionCfg's predicates (timm(),
resnet(), is_convnext(), is_eva()) and the ResNet-only fields (resnet_layers, a resnet_ member).
Issue 36 places such questions in each family's own code, the factory (src/model/image_tower.cpp:
one line per family) and the config and its readers (src/model/config.h, config.cpp): those are
listed apart. Everything else should ask the tower (src/model/image_tower.h); its count is the
figure. Usage: family_branches.py REPO_ROOT [MAX]: prints each line and both totals; exit 1 when
the count elsewhere is over MAX."""
import re
import sys
from pathlib import Path

PATTERN = re.compile(r"\b(timm|resnet)\(\)|\bresnet_\b|\bresnet_layers\b|\bis_(convnext|eva)\(")
FAMILY_DIRS = ("src/model/vit/", "src/model/timm_vit/", "src/model/resnet/", "src/model/convnext/",
               "src/model/eva/")
PLACED = ("src/model/image_tower.cpp", "src/model/config.h", "src/model/config.cpp")


def main():
    root = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    placed, elsewhere = [], []
    for f in sorted((root / "src").rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.suffix not in (".cpp", ".h", ".cu", ".cuh") or rel.startswith(FAMILY_DIRS):
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if PATTERN.search(line):
                (placed if rel in PLACED else elsewhere).append(f"{rel}:{n}: {line.strip()}")
    print("in the factory and the config readers:")
    print("\n".join("  " + h for h in placed))
    print("elsewhere:")
    print("\n".join("  " + h for h in elsewhere))
    files = len({h.split(":")[0] for h in elsewhere})
    print(f"{len(placed)} lines in the factory and config readers; "
          f"{len(elsewhere)} lines in {files} files elsewhere ask for the image tower family")
    if limit is not None and len(elsewhere) > limit:
        print(f"over the limit of {limit}: ask the tower (src/model/image_tower.h) instead")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
