"""The version the package reports is the project's, and the changelog has a section for it."""

import pathlib
import re

import xreduce

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert xreduce.__version__ == re.search(r"project\(xreduce VERSION ([0-9.]+)", cmake).group(1)


def test_changelog_has_the_version():
    headings = re.findall(r"^## ([0-9.]+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0] == xreduce.__version__, "the newest CHANGELOG.md section names the version"
