#!/usr/bin/env bash
# The documentation site (docs/, Sphinx): Doxygen's XML of the public headers, then the HTML in
# build/docs/html, with every Sphinx warning an error (a broken link between pages, a heading
# that a link names but the page lacks, a directive that fails). The Python reference imports
# the installed package: run with the Python of a virtual environment that has it (the default,
# build/venv, is the one scripts/test-python.sh installs it into).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${XREDUCE_DOCS_PYTHON:-build/venv/bin/python}
"$python" -m pip install -q --disable-pip-version-check "sphinx>=7" "myst-parser>=2" "breathe>=4.35" furo
# Doxygen's own warnings (its parser's quirks) go to a log; Sphinx's are the gate.
doxygen_xml() {  # doxygen_xml NAME INPUT...: the XML of those headers in build/docs/NAME
  mkdir -p "build/docs/$1"
  (cat docs/Doxyfile; echo "OUTPUT_DIRECTORY = build/docs/$1"; echo "WARN_LOGFILE = build/docs/$1/warnings.log"
   echo "INPUT = ${*:2}") | doxygen -
}
doxygen_xml user core/include/xreduce mpi/include/xreduce
doxygen_xml backend core/include/xreduce/backend
XREDUCE_DOXYGEN=$PWD/build/docs "$python" -m sphinx -E -W --keep-going -q -b html docs build/docs/html "$@"
echo "build-docs: build/docs/html/index.html"
