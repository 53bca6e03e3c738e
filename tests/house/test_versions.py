"""Every Python we claim is the same list everywhere it is written: pyproject.toml's
requires-python and classifiers, tox's envlist, cibuildwheel's build selector, the README, and
what .ci/pythons runs (it reads the classifiers). docs/packaging.md says why 3.10 was retired."""

from __future__ import annotations

import configparser
import re
import sys
import tomllib

from paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def _classified() -> list[str]:
    found = []
    for classifier in PYPROJECT["project"]["classifiers"]:
        match = re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", classifier)
        if match:
            found.append(match.group(1))
    return found


def test_requires_python_tox_cibuildwheel_and_the_classifiers_name_the_same_versions():
    declared = _classified()
    assert declared == ["3.11", "3.12", "3.13"]
    low = re.fullmatch(r">=3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert low and f"3.{low.group(1)}" == declared[0]
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    envs = [e.strip() for e in tox["tox"]["envlist"].split(",")]
    assert envs == [f"py3{v.split('.')[1]}" for v in declared]
    builds = PYPROJECT["tool"]["cibuildwheel"]["build"].split()
    assert builds == [f"cp3{v.split('.')[1]}-*" for v in declared]
    assert PYPROJECT["tool"]["ruff"]["target-version"] == f"py3{declared[0].split('.')[1]}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == declared[0]
    readme = (ROOT / "README.md").read_text("utf-8")
    assert f"Python {declared[0]}–{declared[-1]}" in readme
    assert ".ci/pythons" in (ROOT / ".ci" / "run").read_text("utf-8")


def test_this_interpreter_is_one_we_claim():
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in _classified()
