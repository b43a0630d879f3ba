"""The version the package reports is the project's, and the changelog has a section for it."""

import pathlib
import re
import sys

import pytest

import xreduce

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert xreduce.__version__ == re.search(r"project\(xreduce VERSION ([0-9.]+)", cmake).group(1)


def test_changelog_has_the_version():
    headings = re.findall(r"^## ([0-9.]+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0] == xreduce.__version__, "the newest CHANGELOG.md section names the version"


def test_extension_uses_the_stable_abi_from_3_12():
    """The wheel built on CPython 3.12 or later is tagged cp312-abi3 (pyproject.toml): its module must
    be built for the limited API (`_core.abi3.so`), or a later CPython would not import it."""
    if sys.version_info < (3, 12):
        pytest.skip("below CPython 3.12 the wheel is one version's own")
    assert xreduce._core.__file__.endswith(".abi3.so"), xreduce._core.__file__
