"""Every workspace member is wired into each place that must list it."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
ROOT_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MEMBERS = {p.parent.name: tomllib.loads(p.read_text()) for p in sorted(ROOT.glob("packages/*/pyproject.toml"))}


def _import_name(member: str) -> str:
    return str(MEMBERS[member]["tool"]["uv"]["build-backend"]["module-name"])


def test_there_are_the_eight_designed_members() -> None:
    assert sorted(MEMBERS) == [
        "voicehub",
        "voicehub-architectures",
        "voicehub-components",
        "voicehub-core",
        "voicehub-hyperion-serialization",
        "voicehub-optimization",
        "voicehub-registry",
        "voicehub-training",
    ]


def test_every_member_has_a_workspace_source_and_a_mypy_path() -> None:
    sources = ROOT_PROJECT["tool"]["uv"]["sources"]
    mypy_path = ROOT_PROJECT["tool"]["mypy"]["mypy_path"]
    for member in MEMBERS:
        assert sources[member] == {"workspace": True}, member
        assert f"$MYPY_CONFIG_FILE_DIR/packages/{member}/src" in mypy_path, member


def test_every_member_is_a_namespace_portion_with_its_own_files() -> None:
    for member, project in MEMBERS.items():
        module = _import_name(member)
        package_dir = ROOT / "packages" / member / "src" / Path(*module.split("."))
        assert (package_dir / "py.typed").is_file(), member
        assert (package_dir / "__init__.py").is_file(), member
        assert (ROOT / "packages" / member / "README.md").is_file(), member
        assert project["build-system"]["build-backend"] == "uv_build", member
        if member != "voicehub":
            assert not (ROOT / "packages" / member / "src" / "voicehub" / "__init__.py").exists(), member


def test_meta_package_depends_on_every_layer_by_range() -> None:
    dependencies = [Requirement(d) for d in MEMBERS["voicehub"]["project"]["dependencies"]]
    for member in MEMBERS:
        if member == "voicehub":
            continue
        (requirement,) = [d for d in dependencies if d.name == member]
        operators = {spec.operator for spec in requirement.specifier}
        assert operators == {">=", "<"}, requirement


def test_every_layer_appears_in_the_layers_contract() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:layers"]["layers"]
    for member in MEMBERS:
        if member != "voicehub":
            assert _import_name(member) in layers, member
