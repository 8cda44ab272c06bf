"""Each compose file is valid for Docker Compose v2.0: read as Compose reads it (YAML, anchors
merged, `${VARIABLES}` interpolated with their defaults), it validates against the Compose
specification's JSON schema that Compose v2.0 checks with (`tests/data/compose-spec/`). No Docker
here: this is what can be checked without an engine."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.harness import REPO

SCHEMA = json.loads((REPO / "tests/data/compose-spec/compose-spec.json").read_text())
FILES = sorted(REPO.glob("docker-compose*.yml"))
VARIABLE = re.compile(r"\$\{(\w+)(?::?[-?]([^}]*))?\}")


def interpolated(value: Any) -> Any:
    """`value` with each `${NAME:-default}` as its default (`${NAME:?why}`: a stand-in), as
    Compose interpolates before it validates."""
    if isinstance(value, dict):
        return {key: interpolated(item) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolated(item) for item in value]
    if isinstance(value, str):
        return VARIABLE.sub(lambda m: m.group(2) if "-" in m.group(0) else "x", value)
    return value


def problems(document: Any) -> list[str]:
    validator = jsonschema.Draft201909Validator(SCHEMA)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(interpolated(document))
    ]


def test_there_are_compose_files() -> None:
    assert {f.name for f in FILES} >= {"docker-compose.yml", "docker-compose.replicas.yml"}


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.name)
def test_each_compose_file_is_valid_for_compose_2_0(file: Path) -> None:
    assert problems(yaml.safe_load(file.read_text())) == []


def test_a_construct_newer_than_compose_2_0_is_refused() -> None:
    optional = {
        "services": {"x": {"image": "a:1", "env_file": [{"path": "x.env", "required": False}]}}
    }
    assert problems(optional)
    assert problems({"services": {"x": {"image": "a:1", "env_file": ["x.env"]}}}) == []
