"""The pinned environment: requirements.in, constraints.txt (the lock) and environment.yml agree."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip().lstrip("- ").strip()
        found = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)", line)
        if found:
            pins[found.group(1).lower().replace("_", "-")] = found.group(2)
    return pins


REQUIREMENTS = _pins((ROOT / "requirements.in").read_text().splitlines())
LOCK = _pins((ROOT / "constraints.txt").read_text().splitlines())
ENV_TEXT = (ROOT / "environment.yml").read_text()
ENVIRONMENT = _pins(ENV_TEXT.splitlines())


def test_required_versions_are_the_ones_the_course_promises():
    for name, version in {"torch": "2.14.1", "torchvision": "0.29.1", "nbgrader": "0.9.6", "nbval": "0.11.0"}.items():
        assert REQUIREMENTS[name] == version
    assert REQUIREMENTS["jupyterlab"].startswith("4.6.") and REQUIREMENTS["notebook"].startswith("7.6.")
    for name in ("matplotlib", "pytest", "numpy", "tqdm", "hypothesis"):
        assert name in REQUIREMENTS


def test_environment_yml_has_the_same_pins_as_requirements():
    assert ENVIRONMENT == REQUIREMENTS
    assert "-c constraints.txt" in ENV_TEXT and "-e ." in ENV_TEXT


def test_lock_agrees_with_every_direct_pin():
    for name, version in REQUIREMENTS.items():
        assert LOCK.get(name) == version, f"{name}: requirements.in says {version}, constraints.txt {LOCK.get(name)}"


def test_environment_yml_python_matches_the_lock():
    python = re.search(r"python=(\d+\.\d+)", ENV_TEXT).group(1)
    assert python == "3.11"  # the lock was made (and is tested) on Python 3.11


def test_running_environment_is_the_locked_one():
    """The environment running the tests is the one the lock describes (make setup built it)."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the lock was made on Python 3.11; on another Python only the direct pins are checked")
    for name, version in LOCK.items():
        installed = metadata.version(name)
        assert installed.split("+")[0] == version.split("+")[0], f"{name}: installed {installed}, locked {version}"
