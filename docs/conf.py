# The documentation site: Sphinx over the Markdown pages of docs/ (MyST), the C++ reference from
# Doxygen's XML of the headers' //! comments (breathe), the Python reference from the installed
# package's docstrings (autodoc). scripts/build-docs.sh runs Doxygen first and builds with
# warnings as errors; ./test.sh runs it.
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)

project = "xreduce"
author = "the xreduce authors"
with open(os.path.join(root, "CMakeLists.txt")) as f:
    release = re.search(r"project\(xreduce VERSION ([0-9.]+)", f.read()).group(1)
version = release

extensions = ["myst_parser", "breathe", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# Headings become link targets (`page.md#a-heading`), as on a code host's rendering of the pages.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

doxygen = os.environ.get("XREDUCE_DOXYGEN", os.path.join(root, "build", "docs"))
breathe_projects = {"user": os.path.join(doxygen, "user", "xml"), "backend": os.path.join(doxygen, "backend", "xml")}
breathe_default_project = "user"
breathe_domain_by_extension = {"hpp": "cpp", "h": "cpp", "cuh": "cpp"}
cpp_index_common_prefix = ["xreduce::"]

autodoc_member_order = "bysource"
autodoc_docstring_signature = True

html_theme = "furo"
html_title = f"xreduce {release}"
