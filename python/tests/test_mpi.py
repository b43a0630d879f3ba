"""xreduce.mpi (mpi4py) under mpirun with 1 to 4 ranks: mpi_ranks.py checks every rank's result
(exact sums bit for bit, indices, integer wrap-around, records, reduce's root) and that a failing
rank makes every rank raise and none hang (each run has a time limit)."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")
MPIRUN = shutil.which("mpirun")

ENVIRONMENT = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",  # CI and containers run as root
    "OMPI_MCA_rmaps_base_oversubscribe": "1",  # more ranks than cores
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",  # containers forbid the cross-process copies
}


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun (Open MPI: openmpi-bin)")
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_ranks(ranks, rng):
    seed = int(rng.integers(2**31))
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([MPIRUN, "-n", str(ranks), sys.executable, os.path.join(here, "mpi_ranks.py"), str(seed)],
                         cwd=here, env={**os.environ, **ENVIRONMENT}, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, f"seed {seed}\n{run.stdout}\n{run.stderr}"
    assert run.stdout.count(": ok") == ranks, run.stdout
