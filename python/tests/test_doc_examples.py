"""Every Python example of the documentation (README.md, docs/**/*.md) runs, each in a fresh
interpreter and a scratch folder, so that the pages cannot drift from the package. The blocks and
their tags come from tests/docs/doc_examples.py, which checks the C++ and command-line ones."""

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "docs"))
import doc_examples  # noqa: E402

from conftest import BACKENDS  # noqa: E402
from test_mpi import ENVIRONMENT as MPI_ENVIRONMENT  # noqa: E402

BLOCKS = list(doc_examples.blocks("python"))
GPU = any(b.available and b.device_memory for b in BACKENDS.values())


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_python_example(block, tmp_path):
    if block.not_run:
        pytest.skip(block.not_run)
    if "gpu" in block.tags and not GPU:
        pytest.skip("no GPU backend can run here (scripts/wheel-check.sh runs it on one)")
    code = f"{block.prelude}\n{block.code}"
    command, env = [sys.executable, "-c", code], dict(os.environ)
    if "mpi" in block.tags:
        pytest.importorskip("mpi4py")
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            pytest.skip("no mpirun (Open MPI: openmpi-bin)")
        command, env = [mpirun, "-n", "2"] + command, {**env, **MPI_ENVIRONMENT}
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{block.where}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"


def test_every_page_has_its_examples_found():
    """The extraction sees the pages' Python blocks (a fence it missed would go unchecked)."""
    fences = sum(p.read_text().count("```python") for p in doc_examples.pages())
    assert fences == len(BLOCKS) > 0
