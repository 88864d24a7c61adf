"""The CPU fast paths of VoiceHub's models live in one module (issue #29).

Private oneDNN operators (``torch.ops.mkldnn._*``) and OpenMP runtime settings are named only in
``voicehub.architectures.vits.backend``, the VITS execution backend, chosen by a capability probe:
no other source file of a workspace member calls those operators or reads or sets the OpenMP wait
policy, so the Python API and the ``voicehub`` command run the same code.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BACKEND = ROOT / "packages/voicehub-architectures/src/voicehub/architectures/vits/backend.py"
TERMS = re.compile("onednn|mkldnn|OMP_WAIT")
"""What ``grep -c "onednn\\|mkldnn\\|OMP_WAIT"`` counts (case-sensitive, as grep)."""


def test_fast_path_terms_appear_only_in_the_vits_backend() -> None:
    sources = sorted(ROOT.glob("packages/*/src/**/*.py"))
    assert BACKEND in sources and len(sources) > 50
    found = {
        path.relative_to(ROOT).as_posix(): count
        for path in sources
        if path != BACKEND and (count := len(TERMS.findall(path.read_text(encoding="utf-8"))))
    }
    assert not found, f"move these into the VITS backend or drop them: {found}"
