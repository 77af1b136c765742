"""The JavaScript a bertviz page inlines, read from the installed packages without importing them.

bertviz's head_view.js / model_view.js (its package imports torch, so it is located with importlib and read as text),
d3 v5 from mpld3 and jQuery from xstatic-jquery for the offline page, and the few lines that answer the views'
require.js calls with those inlined globals. viz/bertviz_view.py builds the page from them.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

REQUIRE_JS_URL = "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"  # what stock bertviz loads

# Answers the views' require.config(...) / requirejs(['jquery', 'd3'], callback) with the inlined globals.
# Runs after d3 and jQuery are inlined: defining `define` before them would make them register as AMD modules.
_REQUIRE_SHIM = """(function () {
  var modules = {jquery: window.jQuery, d3: window.d3};
  function requirejs(names, callback) {
    callback.apply(null, names.map(function (name) {
      if (!modules[name]) { throw new Error("bertviz offline page: no inlined library named '" + name + "'"); }
      return modules[name];
    }));
  }
  requirejs.config = function () {};  /* library paths are moot: everything is inlined */
  window.requirejs = window.require = requirejs;
})();"""


class BertvizAssetError(RuntimeError):
    """A JavaScript file the page needs is not installed (bertviz, mpld3 or xstatic-jquery)."""


_REQUIRE_CONFIG = re.compile(r"require\.config\(\s*\{.*?\}\s*\);", re.DOTALL)  # stock: paths to the CDN copies
PARAMS_MARKER = "__BERTVIZ_VIEW_PARAMS__"


@functools.cache
def view_js(view: str, offline: bool) -> str:
    """bertviz's head_view.js / model_view.js; offline, without its require.config naming CDN paths."""
    js = _read(_package_dir("bertviz", "bertviz") / f"{view}_view.js", "bertviz")
    # Only the assignment's marker is filled: stock bertviz also fills the one in the comment after it,
    # which writes every weight into the page twice.
    js, found = re.subn(r"(=\s*)PYTHON_PARAMS\b", rf"\g<1>{PARAMS_MARKER}", js, count=1)
    if not found:
        raise BertvizAssetError(f"bertviz's {view}_view.js has no '= PYTHON_PARAMS' marker: unsupported bertviz")
    if offline:  # the shim's requirejs.config ignores it anyway; dropping it keeps CDN addresses out of the page
        js = _REQUIRE_CONFIG.sub("/* require.config: d3 and jQuery are inlined in this page */", js, count=1)
    return _script_safe(js)


@functools.cache
def offline_libraries() -> tuple[str, str, str]:
    """The text of d3 v5 (mpld3's copy), jQuery (xstatic-jquery's copy) and the require shim."""
    d3 = _read(_package_dir("mpld3", "mpld3") / "js" / "d3.v5.min.js", "mpld3")
    try:
        import xstatic.pkg.jquery as xjquery  # a tiny module: a version string and BASE_DIR
    except ImportError:
        raise BertvizAssetError(_missing("xstatic-jquery", "jQuery")) from None
    jquery = _read(Path(xjquery.BASE_DIR) / "jquery.min.js", "xstatic-jquery")
    return _script_safe(d3), _script_safe(jquery), _REQUIRE_SHIM


def _package_dir(module: str, distribution: str) -> Path:
    """Where an installed package lives, found without importing it (bertviz imports torch, mpld3 matplotlib)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise BertvizAssetError(_missing(distribution, module))
    return Path(next(iter(spec.submodule_search_locations)))


def _read(path: Path, distribution: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        message = f"{path} is missing: reinstall {distribution} (pip install --force-reinstall {distribution})"
        raise BertvizAssetError(message) from None


def _missing(distribution: str, what: str) -> str:
    return (
        f"The bertviz view needs {what} from the {distribution} package, which is not installed: "
        f"pip install {distribution} (see requirements.txt)"
    )


def _script_safe(js: str) -> str:
    """Script text that cannot end its <script> element early ('</script' becomes '<\\/script')."""
    return re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)
