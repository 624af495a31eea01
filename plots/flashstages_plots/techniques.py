"""Each version's one idea, as its registry descriptor states it: the `technique` line of the
``{"fs_<entry>", "<stage>", "<version>", "<technique>"}`` that opens every ``stages/**/vN.cu``'s
KernelDesc (the same text ``flashstages.kernels()`` and ``fs_kernel_at`` report). The ``versions``
tables show it beside each version's speed, so the idea is written once, in the code.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# {"fs_flash_fwd_v3", "stage04", "v3", "v2 + K/V double-buffered …"}: adjacent literals are joined.
DESCRIPTOR = re.compile(r'\{\s*"fs_\w+",\s*"(stage[\w/]+)",\s*"(v\d+)",\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


@lru_cache(maxsize=None)
def version_techniques(root: Path = REPO_ROOT) -> dict[str, str]:
    """{"stage04/v3": "v2 + K/V double-buffered with cp.async, one barrier per key block", …}"""
    found: dict[str, str] = {}
    for path in sorted((root / "stages").rglob("v*.cu")):
        for m in DESCRIPTOR.finditer(path.read_text(encoding="utf-8")):
            found[f"{m.group(1)}/{m.group(2)}"] = "".join(LITERAL.findall(m.group(3)))
    return found
