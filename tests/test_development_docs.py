"""docs/development.md's "Add a model family" walk-through matches the tree, for every registered family.

The walk-through names its files with the placeholders ``<family>`` and ``<model_type>``; for each
built-in model with a native architecture this test substitutes them, checks that every named
file exists, and checks the naming rule the section states (folder names, model type, config class
names, test files, catalog lines).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from voicehub.models import load_builtin_architectures, load_builtin_models

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Add a model family"
OPTIONAL = {"checkpoint.py": "families with upstream weights"}


def _section() -> str:
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def _families() -> list[tuple[str, str]]:
    """(family, model_type) of every built-in model that has a native architecture."""
    architectures = load_builtin_architectures()
    pairs = []
    for spec in load_builtin_models().list():
        if spec.architecture is not None and spec.config.startswith("voicehub.models."):
            pairs.append((architectures.get(spec.architecture).architecture_id, spec.model_type))
    return pairs


def test_the_walk_through_names_files_with_both_placeholders_in_order() -> None:
    paths = re.findall(r"`([^`]*<(?:family|model_type)>[^`]*)`", _section())
    assert any("architectures/<family>/model.py" in p for p in paths)
    assert any("models/<model_type>/wrapper.py" in p for p in paths)
    assert len(_families()) >= 3  # silero, ge2e, xvector at least


@pytest.mark.parametrize(("family", "model_type"), _families())
def test_every_file_the_walk_through_names_exists_for_the_family(family: str, model_type: str) -> None:
    spec = load_builtin_models().get(model_type)
    task = model_type.partition("_")[0]
    model_type = f"{task}_{family}"  # a variant (<task>_<family>_<variant>) lives in its family's folders
    missing = []
    for template in sorted(set(re.findall(r"`([^`]*<(?:family|model_type)>[^`]*)`", _section()))):
        if "/" not in template:
            continue  # a name pattern (test_<family>.py) is checked with its folder below
        path = ROOT / template.replace("<family>", family).replace("<model_type>", model_type)
        optional = template.rsplit("/", 1)[-1] in OPTIONAL
        if optional and spec.default_source is None:
            continue  # no upstream weights: no adapter to write
        if not path.is_file() and not list(path.parent.glob(f"{path.stem}_*{path.suffix}")):  # split test files
            missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, f"docs/development.md names files {family}/{model_type} does not have: {missing}"


@pytest.mark.parametrize(("family", "model_type"), _families())
def test_the_family_follows_the_naming_rule(family: str, model_type: str) -> None:
    spec = load_builtin_models().get(model_type)
    task, _, rest = model_type.partition("_")
    variant = rest.removeprefix(f"{family}_") if rest.startswith(f"{family}_") else None
    assert task == spec.task.short_name and (rest == family or variant), (
        f"model type {model_type!r} is not <task>_<family> or <task>_<family>_<variant>"
    )
    config_class = spec.load_config_class()
    if variant is not None:  # a variant's config derives from the family's model config
        family_type = f"{task}_{family}"
        family_config = load_builtin_models().get(family_type).load_config_class()
        assert issubclass(config_class, family_config) and config_class is not family_config
        config_class, model_type = family_config, family_type
    model_config = config_class.__name__
    graph_config = [
        name
        for name, value in vars(importlib.import_module(f"voicehub.architectures.{family}.config")).items()
        if isinstance(value, type) and name.endswith("Config") and value.__module__.endswith(f"{family}.config")
    ]
    # The graph config named like the model config; a family may declare other records beside it.
    graph_name = model_config.removeprefix(task.upper())
    assert graph_name == f"{family.capitalize()}Config" or graph_name.lower() == f"{family}config", model_config
    assert graph_name in graph_config, (model_config, graph_config)
    tests = ROOT / "packages/voicehub-architectures/tests"
    assert (tests / f"test_{family}.py").is_file() or list(tests.glob(f"test_{family}_*.py"))
    assert (ROOT / "packages/voicehub/tests" / f"test_{model_type}.py").is_file()
    catalogs = (ROOT / "packages/voicehub-architectures/src/voicehub/architectures/catalog.py").read_text(
        encoding="utf-8"
    ) + (ROOT / "packages/voicehub/src/voicehub/models/catalog.py").read_text(encoding="utf-8")
    assert f"voicehub.architectures.{family}.registration:ARCHITECTURE" in catalogs
    assert f"voicehub.models.{model_type}.registration:MODEL_SPEC" in catalogs
