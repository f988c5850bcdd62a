"""The manual in a real browser (issue 44): the site built from ``analysis/manual``, served on
a loopback port and loaded in headless Chromium.

Opt in with ``pytest -m browser``. It builds the manual into a temporary folder with the
command CI uses (warnings are errors), or reuses a built one named by ``TOPOFL_MANUAL_DIR``,
serves it with ``http.server`` on 127.0.0.1 and asks Chromium (``chromium --headless
--dump-dom``: the page as the browser holds it once its scripts ran) for the home page, an API
page, a gallery page (whose figure the browser must fetch, as a PNG), the paper results and
the search page; every page of the gallery (each example executed at build, each showing its
figures); the pages that must scan (the home page, the guide, the gallery), measured in a
1280 x 900 window, where no code block may need a horizontal scroll bar; then it follows
every internal link of the site. It needs the ``docs`` extra and Debian's ``chromium``
package, and skips, naming what is missing, without them.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

import topofl as tf

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
MANUAL_DIR_ENV = "TOPOFL_MANUAL_DIR"
PNG = b"\x89PNG\r\n\x1a\n"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


# ------------------------------------------------------------------------------ the site
@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built manual: ``$TOPOFL_MANUAL_DIR`` if set, else built now (about a minute)."""
    if _chromium() is None:
        pytest.skip("no Chromium: install Debian's package (apt-get install -y chromium)")
    given = os.environ.get(MANUAL_DIR_ENV)
    if given:
        path = Path(given)
        if not (path / "index.html").is_file():
            pytest.fail(f"{MANUAL_DIR_ENV}={given} holds no built manual (no index.html)")
        return path
    missing = [m for m in ("sphinx", "numpydoc", "myst_parser", "sphinx_gallery", "sphinx_design")
               if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the docs extra is not installed (no {', '.join(missing)}): "
                    'pip install -e ".[docs]"')
    out = tmp_path_factory.mktemp("manual")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / ".doctrees"), str(ROOT / "analysis" / "manual"), str(out / "html")],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return out / "html"


#: What a page asked with ``?measure`` runs once it is laid out: the code blocks wider than
#: their box (their ``scrollWidth`` beyond their ``clientWidth``: a horizontal scroll bar) and
#: whether the page itself is wider than the window, written into an element that
#: ``--dump-dom`` then shows.
_MEASURE = b"""<script>
window.addEventListener("load", () => {
  const wide = [...document.querySelectorAll("pre")]
    .filter((p) => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 1)
    .map((p) => p.scrollWidth + ">" + p.clientWidth + ": " + p.textContent.split("\\n")
      .reduce((a, b) => (b.length > a.length ? b : a), "").slice(0, 120));
  const out = document.createElement("pre");
  out.id = "overflow-report";
  out.hidden = true;
  out.textContent = JSON.stringify({
    window: window.innerWidth,
    page: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
    blocks: document.querySelectorAll("pre").length, wide: wide});
  document.body.appendChild(out);
});
</script>"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site; remembers every request with its status (what the browser fetched).
    An HTML page asked with ``?measure`` comes with :data:`_MEASURE` before ``</body>``."""

    seen: list[tuple[str, int]]

    def send_head(self):  # type: ignore[no-untyped-def]
        path, _, query = self.path.partition("?")
        if "measure" not in query.split("&") or not path.endswith(".html"):
            return super().send_head()
        file = Path(self.translate_path(path))
        if not file.is_file():
            return super().send_head()
        body = file.read_bytes().replace(b"</body>", _MEASURE + b"</body>", 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        import io

        return io.BytesIO(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.seen.append((urllib.parse.unquote(self.path.split("?")[0]), int(code)))

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass  # quiet


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """``(base URL, requests seen)`` of the site served on a free loopback port."""
    seen: list[tuple[str, int]] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _dom(url: str, tmp_path: Path, *, wait_ms: int = 3000, window: str = "1280,900") -> str:
    """The page at ``url`` as headless Chromium holds it once its scripts ran, laid out in a
    window of ``window`` pixels."""
    chromium = _chromium()
    assert chromium is not None
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--disable-background-networking",
         f"--user-data-dir={tmp_path / 'profile'}", f"--virtual-time-budget={wait_ms}",
         f"--window-size={window}", "--hide-scrollbars",
         "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def _get(url: str) -> tuple[int, str, bytes]:
    """``(status, content type, body)`` of ``url``."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - loopback only
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, "", b""


class _Links(HTMLParser):
    """The ``href``/``src`` of a page's links, images and scripts, and its element ids."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "a" and a.get("name"):
            self.ids.add(str(a["name"]))
        for key in ("href", "src"):
            if a.get(key):
                (self.images if tag == "img" else self.links).append(str(a[key]))


def _text(html: str) -> str:
    """The text of a page, its tags dropped (highlighted code is split into spans)."""
    import html as _html

    return _html.unescape(re.sub(r"<[^>]+>", "", html))


def _parse(html: str) -> _Links:
    p = _Links()
    p.feed(html)
    return p


# ----------------------------------------------------------------------------- the pages
def test_the_home_page_renders(server: tuple[str, list[tuple[str, int]]],
                               tmp_path: Path) -> None:
    base, _ = server
    dom = _dom(base + "index.html", tmp_path)
    assert f"topofl {tf.__version__}" in dom  # the title, from topofl/_version.py
    assert "gossip step" in dom  # the README's introduction, included
    assert "spectral_gap" in dom  # the README's taste, included
    hrefs = set(_parse(dom).links)
    for page in ("getting_started.html", "guide/index.html", "gallery/index.html",
                 "_generated/algorithms.html", "api/index.html",
                 "_generated/paper/index.html", "changelog.html"):
        assert page in hrefs, page


def test_an_api_page_renders_the_docstrings(server: tuple[str, list[tuple[str, int]]],
                                            tmp_path: Path) -> None:
    base, _ = server
    dom = _dom(base + "_generated/api/topofl.spectral.html", tmp_path)
    ids = _parse(dom).ids
    assert {"topofl.spectral.spectral_gap", "topofl.spectral.summary"} <= ids
    # numpydoc's sections and the docstring's example, rendered
    assert "Parameters" in dom and "Examples" in dom
    assert "tf.spectral.spectral_gap(tf.topologies.ring(8))" in _text(dom)


def test_math_is_typeset(server: tuple[str, list[tuple[str, int]]], tmp_path: Path) -> None:
    """The docstrings' ``$...$`` reach the page as math that MathJax (served by the site
    itself) typesets in the browser: its output elements replace the TeX source."""
    base, requests = server
    dom = _dom(base + "_generated/api/topofl.algorithms.adpsgd.html", tmp_path, wait_ms=8000)
    assert dom.count("<mjx-container") >= 5, dom.count("<mjx-container")
    assert any("_static/mathjax/" in path and code == 200 for path, code in requests)


def test_a_gallery_page_shows_its_figure(server: tuple[str, list[tuple[str, int]]],
                                         tmp_path: Path) -> None:
    base, seen = server
    page = base + "gallery/plot_dsgd_two_graphs.html"
    dom = _dom(page, tmp_path)
    assert "D-SGD on a ring and on D-Cliques" in dom
    assert "final accuracy on the whole test set" in dom  # the script's output, executed
    figures = [src for src in _parse(dom).images if "sphx_glr_plot_dsgd_two_graphs" in src]
    assert figures, "no figure on the gallery page"
    for src in figures:
        url = urllib.parse.urljoin(page, src)
        path = urllib.parse.urlparse(url).path
        assert (path, 200) in seen, f"the browser did not load {path}"  # fetched by Chromium
        status, kind, body = _get(url)
        assert status == 200 and kind == "image/png" and body.startswith(PNG), (url, kind)
        assert len(body) > 10_000  # a drawn figure, not an empty canvas


#: The gallery's examples, one page each (sphinx-gallery runs them at every build).
EXAMPLES = sorted(p.stem for p in (ROOT / "analysis" / "manual" / "examples").glob("plot_*.py"))


def test_the_gallery_answers_the_library_s_questions() -> None:
    """At least a dozen examples, each with its title (the gallery's card)."""
    assert len(EXAMPLES) >= 12, EXAMPLES
    for stem in EXAMPLES:
        text = (ROOT / "analysis" / "manual" / "examples" / f"{stem}.py").read_text()
        assert re.match(r'"""\n.+\n=+\n', text), f"{stem}.py opens without a title"


@pytest.mark.parametrize("stem", EXAMPLES)
def test_every_gallery_page_shows_its_figures(server: tuple[str, list[tuple[str, int]]],
                                              tmp_path: Path, stem: str) -> None:
    """Each example's page, as the browser shows it: the script's output (it ran at build)
    and every figure it drew, fetched by the browser as a drawn PNG."""
    base, seen = server
    page = base + f"gallery/{stem}.html"
    dom = _dom(page, tmp_path)
    assert "sphx-glr-script-out" in dom, f"{stem}: no output of the executed script"
    figures = [src for src in _parse(dom).images if f"sphx_glr_{stem}_" in src
               and "thumb" not in src]
    assert figures, f"no figure on the gallery page of {stem}"
    for src in figures:
        url = urllib.parse.urljoin(page, src)
        path = urllib.parse.urlparse(url).path
        assert (path, 200) in seen, f"the browser did not load {path}"
        status, kind, body = _get(url)
        assert status == 200 and kind == "image/png" and body.startswith(PNG), (url, kind)
        assert len(body) > 5_000, (url, len(body))  # a drawn figure, not an empty canvas


def _overflow(url: str, tmp_path: Path) -> dict[str, object]:
    """What :data:`_MEASURE` found on the page at ``url`` (laid out at 1280 x 900)."""
    import html as _html
    import json

    dom = _dom(url + "?measure", tmp_path)
    found = re.search(r'<pre id="overflow-report"[^>]*>(.*?)</pre>', dom, re.S)
    assert found, f"the measuring script did not run on {url}"
    return dict(json.loads(_html.unescape(found.group(1))))


def test_the_overflow_check_sees_a_wide_code_block(tmp_path: Path) -> None:
    """The check below fails where it should: a page whose code block is wider than its box."""
    if _chromium() is None:
        pytest.skip("no Chromium: install Debian's package (apt-get install -y chromium)")
    site = tmp_path / "site"
    site.mkdir()
    long_line = "x = " + " + ".join(f"value_{k}" for k in range(40))
    (site / "wide.html").write_text(
        "<html><body><div style='width: 400px'><div class='highlight'><pre style='overflow: "
        f"auto'>{long_line}\nshort</pre></div></div><pre>fits</pre></body></html>")
    seen: list[tuple[str, int]] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        report = _overflow(f"http://127.0.0.1:{httpd.server_address[1]}/wide.html", tmp_path)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert report["blocks"] == 2 and len(report["wide"]) == 1, report  # type: ignore[arg-type]
    assert "value_10" in str(report["wide"])  # its longest line, named


def _scanned_pages() -> list[str]:
    """The pages a reader scans: home, getting started, every guide page, every gallery page."""
    guide = sorted(p.stem for p in (ROOT / "analysis" / "manual" / "guide").glob("*.md"))
    return (["index.html", "getting_started.html", "gallery/index.html"]
            + [f"guide/{g}.html" for g in guide] + [f"gallery/{e}.html" for e in EXAMPLES])


@pytest.mark.parametrize("page", _scanned_pages())
def test_no_code_block_overflows(server: tuple[str, list[tuple[str, int]]], tmp_path: Path,
                                 page: str) -> None:
    """In a 1280 x 900 window, no code block of the page needs a horizontal scroll bar and the
    page is no wider than the window."""
    base, _ = server
    report = _overflow(base + page, tmp_path)
    assert report["window"] == 1280, report
    assert not report["wide"], f"{page}: code wider than its block: {report['wide']}"
    assert not report["page"], f"{page}: the page is wider than the window"


def test_the_results_page_renders(server: tuple[str, list[tuple[str, int]]],
                                  tmp_path: Path) -> None:
    base, seen = server
    dom = _dom(base + "_generated/paper/index.html", tmp_path)
    assert "Paper figures" in dom
    results = sorted((ROOT / "paper_figures" / "results").glob("*.md"))
    links = set(_parse(dom).links)
    assert results and all(f"results/{p.stem}.html" in links for p in results)
    page = base + "_generated/paper/results/dcliques_01.html"
    dom = _dom(page, tmp_path)
    assert "Verdict" in dom
    for src in _parse(dom).images:
        assert (urllib.parse.urlparse(urllib.parse.urljoin(page, src)).path, 200) in seen


def test_the_search_finds_dcliques(server: tuple[str, list[tuple[str, int]]],
                                   tmp_path: Path) -> None:
    base, _ = server
    dom = _dom(base + "search.html?q=dcliques", tmp_path, wait_ms=10000)
    found = [h for h in _parse(dom).links if "dcliques" in h.lower()]
    assert found, "the search page found nothing for 'dcliques'"
    assert any("topofl.topologies" in h for h in found), found


def test_every_internal_link_resolves(server: tuple[str, list[tuple[str, int]]]) -> None:
    """Every page reachable from the home page, every link and image of it: 200, and a link's
    ``#anchor`` names an element of the page it leads to."""
    base, _ = server
    pages: dict[str, _Links] = {}
    todo = [base + "index.html"]
    bad: list[str] = []
    anchors: list[tuple[str, str, str]] = []  # (from, page, anchor)
    while todo:
        url = todo.pop()
        if url in pages:
            continue
        status, kind, body = _get(url)
        if status != 200:
            bad.append(f"{url}: {status}")
            continue
        if not kind.startswith("text/html"):
            pages[url] = _Links()
            continue
        parsed = pages[url] = _parse(body.decode("utf-8"))
        for ref in parsed.links + parsed.images:
            target = urllib.parse.urljoin(url, ref)
            if not target.startswith(base):
                continue  # another site (none is loaded: see test_nothing_from_the_network)
            target, _, anchor = target.partition("#")
            target = target.split("?")[0]
            if target.endswith("/"):
                target += "index.html"
            if anchor:
                anchors.append((url, target, urllib.parse.unquote(anchor)))
            if target not in pages:
                todo.append(target)
    for origin, target, anchor in anchors:
        if target in pages and anchor not in pages[target].ids:
            bad.append(f"{origin}: #{anchor} is not in {target}")
    html = [u for u, p in pages.items() if u.endswith(".html")]
    assert len(html) > 200, len(html)  # the guide, the API, the results, the reports
    assert not bad, "\n".join(sorted(set(bad))[:50])


def test_nothing_from_the_network(site: Path) -> None:
    """The manual works offline: no page loads a script, a style sheet, a font or an image
    from another site (DataTables comes from a CDN: left out; MathJax is served by the site)."""
    bad = []
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"<(script|link|img)\b[^>]*(?:src|href)=\"(https?:)?//[^\"]+\"",
                             text):
            bad.append(f"{page.relative_to(site)}: {m.group(0)[:120]}")
    assert not bad, "\n".join(bad[:20])
