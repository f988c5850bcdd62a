"""Sphinx configuration of the topofl manual.

Build (from the repository root; warnings are errors)::

    python -m sphinx -W --keep-going -b html analysis/manual build/manual

The generated sources (the API pages, the algorithm catalogue, copies of the committed
results and reports) are written by ``generate.py`` into ``_generated/``, and the gallery's
executed examples by sphinx-gallery into ``gallery/``: both are ignored by git.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # this clone's topofl, whatever is installed
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

import topofl  # noqa: E402

# --------------------------------------------------------------------------- the project
project = "topofl"
author = "The topofl maintainers"
copyright = "the topofl maintainers"  # noqa: A001 - Sphinx's name
release = topofl.__version__
version = release

# the CHANGELOG names the version being released first: a version bumped without its entry
# fails the build
_changelog = (HERE / "changelog.md").read_text(encoding="utf-8")
_first = re.search(r"^## (\S+)", _changelog, re.M)
if _first is None or _first.group(1) != release:
    raise RuntimeError(f"analysis/manual/changelog.md must open with a '## {release}' section "
                       f"(topofl/_version.py), found {_first.group(1) if _first else 'none'}")

# numpydoc also parses the raw docstrings (here for the catalogue, and to mangle signatures),
# where it warns about the sections it does not know; the rendered text has them as rubrics
# (generate.own_sections_as_rubrics)
warnings.filterwarnings("ignore", message="Unknown section", category=UserWarning)

generate.generate()

# ------------------------------------------------------------------------ the extensions
extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    # the home page's grid of cards (its CSS and JS ship with it: no CDN)
    "sphinx_design",
    "sphinx.ext.mathjax",
    # MathJax served from the built site (the package ships MathJax 3): no CDN, the manual
    # works offline
    "sphinx-mathjax-offline",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "_generated/paper/README.md"]
templates_path = ["_templates"]

# autodoc: signatures from the annotations, members in source order
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options: dict[str, object] = {}
# numpydoc renders the docstrings' sections; autodoc lists a class's members itself
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# MyST: the committed Markdown as it is
myst_enable_extensions = ["colon_fence", "substitution"]
myst_heading_anchors = 3
myst_substitutions = {"version": release,
                      "n_algorithms": str(len(topofl.algorithms.ALGORITHMS))}

# the gallery: short scripts executed at every build, each a few seconds on a CPU
sphinx_gallery_conf = {
    "examples_dirs": ["examples"],
    "gallery_dirs": ["gallery"],
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "within_subsection_order": "generate.GalleryOrder",  # a reading order, not A to Z
    "show_memory": False,
    "write_computation_times": False,  # its pages load DataTables from a CDN
    "plot_gallery": "True",
    "image_scrapers": ("generate.tight_figures",),  # legends below the axes kept
}

# --------------------------------------------------------------------------- the output
# the PyData theme, as numpy, scipy, networkx and pandas use it: a search box, light and dark
# modes, the version beside the name; everything it loads ships with it (no CDN)
html_theme = "pydata_sphinx_theme"
html_title = f"topofl {release}"
html_theme_options = {
    "logo": {"text": "topofl"},
    "navbar_start": ["navbar-logo", "version"],  # _templates/version.html
    "navbar_end": ["search-button", "theme-switcher"],
    "navbar_persistent": [],
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # a page's own sections in the left column, under the section's pages: the article gets
    # the width a 100-character line of code needs in a 1280-pixel window
    "secondary_sidebar_items": [],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
    "pygments_light_style": "default",
    "pygments_dark_style": "monokai",
}
html_context = {"default_mode": "auto"}  # follows the reader's system; the switcher overrides
html_css_files = ["custom.css"]
html_sidebars = {"**": ["sidebar-nav-bs", "page-toc"], "index": [], "changelog": []}
html_static_path = ["_static"]
html_show_sourcelink = False


# ------------------------------------------------- the docstrings' $...$ as math
# The docstrings write math as $...$ (inline) and $$...$$ (display), as the style guide says;
# to reStructuredText a "|" inside them starts a substitution. Before numpydoc reads a
# docstring, its math becomes the :math: role and the math directive (generate.math_to_rst),
# a reference its text never cites a numbered item rather than a citation that nothing cites
# (generate.plain_references), and a section numpydoc does not know a rubric rather than
# dropped text (generate.own_sections_as_rubrics).
def _process_docstring(app, what, name, obj, options, lines):  # type: ignore[no-untyped-def]
    text = generate.own_sections_as_rubrics(generate.math_to_rst("\n".join(lines)))
    lines[:] = generate.plain_references(text, module=what == "module").split("\n")


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("autodoc-process-docstring", _process_docstring, priority=100)
