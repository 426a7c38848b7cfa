#!/usr/bin/env python3
"""Counts the places outside the image tower families' folders (src/model/vit/, timm_vit/,
resnet/, convnext/) that ask which family a config has: VisionCfg's predicates (.timm(), .resnet(),
is_convnext()) and the ResNet-only fields (resnet_layers, a resnet_ member). Each family's own code, the factory
(src/model/image_tower.cpp) and the config readers are where such questions belong; anything
else should ask the tower (src/model/image_tower.h). Usage: family_branches.py REPO_ROOT [MAX]:
prints each line and the total; exit 1 when the total is over MAX (issue 36's figure)."""
import re
import sys
from pathlib import Path

PATTERN = re.compile(r"\.(timm|resnet)\(\)|\bresnet_\b|\bresnet_layers\b|\bis_convnext\(")
FAMILY_DIRS = ("src/model/vit/", "src/model/timm_vit/", "src/model/resnet/", "src/model/convnext/")


def main():
    root = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    hits = []
    for f in sorted((root / "src").rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.suffix not in (".cpp", ".h", ".cu", ".cuh") or rel.startswith(FAMILY_DIRS):
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if PATTERN.search(line):
                hits.append(f"{rel}:{n}: {line.strip()}")
    print("\n".join(hits))
    files = len({h.split(":")[0] for h in hits})
    print(f"{len(hits)} lines in {files} files ask for the image tower family outside its folder")
    if limit is not None and len(hits) > limit:
        print(f"over the limit of {limit}: ask the tower (src/model/image_tower.h) instead")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
