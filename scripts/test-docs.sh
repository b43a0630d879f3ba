#!/usr/bin/env bash
# The documentation site, checked like code: built with every warning an error (a broken link or
# anchor between pages, a failing directive: scripts/build-docs.sh), then its home page and the
# first tutorial opened in headless Chromium, failing on a blank page or a missing stylesheet
# (tests/docs/rendered_site.py; screenshots in build/docs/screenshots). The code examples of the
# pages run elsewhere: the C++ and command-line ones in ctest (docs.examples.*), the Python ones
# in python/tests/test_doc_examples.py. Needs the virtual environment scripts/test-python.sh
# installed the package into (the Python reference imports it).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${XREDUCE_DOCS_PYTHON:-build/venv/bin/python}
scripts/build-docs.sh
"$python" -m pip install -q --disable-pip-version-check selenium pillow
"$python" tests/docs/rendered_site.py build/docs/html build/docs/screenshots index.html tutorials/first-reduction.html
