"""The provider-independence AST policy catches every forbidden construct and allows catalogs."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMES = frozenset({"vad_silero", "silero-vad", "sv_ge2e"})


def _load_policy() -> ModuleType:
    spec = importlib.util.spec_from_file_location("provider_policy", ROOT / "tools" / "provider_policy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["provider_policy"] = module
    spec.loader.exec_module(module)
    return module


policy = _load_policy()


def _scan(source: str) -> list[tuple[int, str, str]]:
    found = policy.scan_source(textwrap.dedent(source), "shared.py", NAMES)
    return [(v.line, v.provider, v.construct) for v in found]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("if model_type == 'vad_silero':\n    pass\n", [(1, "vad_silero", "compare")]),
        ("if 'VAD_SILERO' in names:\n    pass\n", [(1, "vad_silero", "compare")]),
        ("x = 1 if kind is not None and 'sv_ge2e' else 2\n", [(1, "sv_ge2e", "conditional-expression")]),
        ("while name != 'silero-vad':\n    break\n", [(1, "silero-vad", "compare")]),
        ("assert spec.model_type in ('vad_silero', 'other')\n", [(1, "vad_silero", "compare")]),
        ("ok = flag and 'vad_silero'\nif ok or 'sv_ge2e':\n    pass\n", [(2, "sv_ge2e", "if")]),
        ("xs = [s for s in specs if s.name.lower() == 'sv_ge2e']\n", [(1, "sv_ge2e", "compare")]),
        ("xs = [s for s in specs if is_named(s, 'sv_ge2e')]\n", [(1, "sv_ge2e", "comprehension-filter")]),
        (
            "match name:\n    case 'vad_silero':\n        pass\n    case other if other == 'x':\n        pass\n",
            [(2, "vad_silero", "match")],
        ),
        ("match n:\n    case str() if check(n, 'sv_ge2e'):\n        pass\n", [(2, "sv_ge2e", "match-guard")]),
        ("if name.startswith('vad_'):\n    pass\n", [(1, "vad_silero", "string-test:startswith")]),
        ("flag = name.endswith(('_ge2e', '.py'))\n", [(1, "sv_ge2e", "string-test:endswith")]),
        ("run = {'vad_silero': run_silero, 'sv_ge2e': run_ge2e}[name]\n", [(1, "vad_silero", "dict-dispatch")]),
        ("run = {'vad_silero': run_silero}.get(name)\n", [(1, "vad_silero", "dict-dispatch")]),
        (
            "_RUNNERS = {'vad_silero': run_silero}\n\ndef f(name):\n    return _RUNNERS[name]()\n",
            [(4, "_RUNNERS", "dict-dispatch")],
        ),
    ],
)
def test_policy_reports_each_forbidden_construct(source: str, expected: list[tuple[int, str, str]]) -> None:
    assert _scan(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        # declarative catalogs, provenance and licence records are allowed
        "CATALOG = ('voicehub.models.vad_silero.registration:MODEL_SPEC',)\n",
        "LICENCES = {'vad_silero': 'MIT', 'sv_ge2e': 'Apache-2.0'}\nlicence = LICENCES[name]\n",
        "spec = ModelSpec(model_type='vad_silero', aliases=('silero-vad',))\n",
        "if path.endswith('.py') or name.startswith('_'):\n    pass\n",
        "if name == 'voice-activity-detection':\n    pass\n",
        "def f(x='vad_silero'):\n    return x\n",
    ],
)
def test_policy_allows_declarative_uses(source: str) -> None:
    assert _scan(source) == []


def test_policy_reports_path_line_column_provider_construct() -> None:
    (violation,) = policy.scan_source("if t == 'sv_ge2e':\n    pass\n", "pkg/x.py", NAMES)
    assert str(violation) == "pkg/x.py:1:9 sv_ge2e compare"


def test_shared_modules_exclude_model_local_code_only(tmp_path: Path) -> None:
    base = tmp_path / "packages" / "voicehub" / "src" / "voicehub"
    files = [
        base / "auto.py",
        base / "models" / "catalog.py",
        base / "models" / "vad_silero" / "modeling.py",
        tmp_path / "packages" / "voicehub-architectures" / "src" / "voicehub" / "architectures" / "catalog.py",
        tmp_path / "packages" / "voicehub-architectures" / "src" / "voicehub" / "architectures" / "ge2e" / "model.py",
        tmp_path / "packages" / "voicehub-optimization" / "src" / "voicehub" / "optimization" / "passes.py",
    ]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("if name == 'vad_silero':\n    pass\n")
    scanned = {p.relative_to(tmp_path).as_posix() for p in policy.shared_modules(tmp_path)}
    assert scanned == {
        "packages/voicehub/src/voicehub/auto.py",
        "packages/voicehub/src/voicehub/models/catalog.py",
        "packages/voicehub-architectures/src/voicehub/architectures/catalog.py",
        "packages/voicehub-optimization/src/voicehub/optimization/passes.py",
    }
    assert len(policy.scan_tree(tmp_path, NAMES)) == 4


def test_names_come_from_the_live_registry_and_grow_with_it() -> None:
    import voicehub
    from voicehub.registry import MODEL_CATALOG, ModelSpec

    names = policy.collect_provider_names()
    specs = voicehub.list_model_specs()
    assert specs, "the built-in catalog is empty"
    for spec in specs:
        assert spec.model_type in names
        assert set(spec.aliases) <= names
    spec = ModelSpec(
        model_type="acme_vad",
        task="voice-activity-detection",
        config="acme.config:AcmeConfig",
        wrapper="acme.model:AcmeVAD",
        aliases=("acme-detector",),
    )
    MODEL_CATALOG.register(spec)
    try:
        assert {"acme_vad", "acme-detector"} <= policy.collect_provider_names()
    finally:
        MODEL_CATALOG.unregister("acme_vad")
    assert "acme_vad" not in policy.collect_provider_names()


def test_repository_shared_code_is_provider_independent() -> None:
    names = policy.collect_provider_names()
    violations = policy.scan_tree(ROOT, names)
    assert violations == [], "\n".join(map(str, violations))
