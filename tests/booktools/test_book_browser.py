"""The rendered book (``make book-html``) as a reader sees it: opened in headless Chromium.

The book is built once: ``make test`` runs ``make book-html`` first and the fixture ``html_dir``
(tests/booktools/conftest.py, with ``server`` and ``browser``: once per session) only asks
Sphinx for an incremental build (a no-op when nothing changed). The HTML is served on 127.0.0.1 by a
thread of this test; the browser is the system Chromium (Debian package ``chromium``) driven by
playwright through ``executable_path``: no browser is downloaded. The tests that open Chromium are
marked ``browser`` (tests/booktools/conftest.py) and run in ``make test-browser``, not ``make test``;
without Chromium they skip (a student's laptop); in CI (``CI`` set) they fail instead, since
``.ci/run`` installs it. The structural checks (links, downloads, exercise/solution pairs, errata
links, figure descriptions, TeX left unrendered) read the HTML files and run in ``make test``. Screenshots go to the test's temporary directory.
"""

from __future__ import annotations

import functools
import html.parser
import os
import re
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from nextword.booktools import notebooks

ROOT = Path(notebooks.REPO_ROOT)
SCREENSHOTS = ("contents.png", "math_page.png", "search_support_tokens.png")


# --- the built book -----------------------------------------------------------------------------------


def _notebook_pages() -> list[str]:
    """Every notebook of the repository as the docname its page has, e.g. ``book/part1_chapter6/6_1_...``."""
    return sorted(
        str(p.relative_to(ROOT).with_suffix("")).replace(os.sep, "/")
        for d in ("book", "exercises", "solutions")
        for p in (ROOT / d).glob("*/*.ipynb")
    )


class _Links(html.parser.HTMLParser):
    """Collects ``href``/``src`` values and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("href", "src") and value is not None:
                self.urls.append((tag, name, value))


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _resolve(page: Path, url: str, html_dir: Path) -> tuple[Path, str] | None:
    """The file and fragment a relative URL on ``page`` points to, or None for external/scheme URLs."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("javascript:", "mailto:")):
        return None
    target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
    if target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


# --- structure of the HTML (no browser needed) ---------------------------------------------------------


def test_every_internal_link_and_resource_resolves(html_dir):
    pages = [p for p in html_dir.rglob("*.html") if "_static" not in p.parts]
    assert len(pages) > len(_notebook_pages())
    broken, external_resources = [], []
    for page in pages:
        for tag, attr, url in _parse(page).urls:
            if urlsplit(url).scheme in ("http", "https") or url.startswith("//"):
                if tag != "a":  # a stylesheet, script, image or font from the network breaks offline reading
                    external_resources.append(f"{page.relative_to(html_dir)}: <{tag} {attr}={url}>")
                continue
            resolved = _resolve(page, url, html_dir)
            if resolved is None:
                continue
            target, fragment = resolved
            if not target.exists():
                broken.append(f"{page.relative_to(html_dir)}: {url}")
            elif fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
                broken.append(f"{page.relative_to(html_dir)}: {url} (no id {fragment!r})")
    assert not external_resources, "\n".join(external_resources[:20])
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:30])


class _Prose(html.parser.HTMLParser):
    """Text of a page outside code, scripts, the <title> and the math elements MathJax typesets."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.stack.append(tag in ("pre", "code", "script", "style", "title", "textarea") or "math" in classes)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if not any(self.stack):
            self.text.append(data)


_RAW_TEX = re.compile(
    r".{0,40}(?:\$\$|\$[^\s$\d][^$]{0,60}\$|\\\(|\\\[|\\(?:frac|mathbb|mathbf|top|alpha|sum)\b).{0,40}"
)


def test_no_page_leaves_tex_outside_the_math_mathjax_typesets(html_dir):
    """Math that MyST did not recognise (e.g. a `|` inside $...$ in a table cell) stays raw TeX on the page."""
    raw = []
    for page in sorted(p for p in html_dir.rglob("*.html") if "_static" not in p.parts):
        prose = _Prose()
        prose.feed(page.read_text(encoding="utf-8"))
        raw += [f"{page.relative_to(html_dir)}: ...{hit}..." for hit in _RAW_TEX.findall(" ".join(prose.text))]
    assert not raw, "raw TeX in the rendered text:\n" + "\n".join(raw[:20])


def test_every_notebook_page_offers_its_ipynb_and_py(html_dir):
    for doc in _notebook_pages():
        page = html_dir / f"{doc}.html"
        assert page.exists(), f"{doc} was not rendered"
        hrefs = [u for _, _, u in _parse(page).urls]
        for suffix in (".ipynb", ".py"):
            link = next((u for u in hrefs if u.endswith(f"_sources/{doc}{suffix}")), None)
            assert link, f"{doc}: no download link for its {suffix}"
            target, _ = _resolve(page, link, html_dir)
            expected = (ROOT / f"{doc}{suffix}").read_text(encoding="utf-8")
            if suffix == ".ipynb":  # links to the ledger etc. point at the rendered back matter (stage_book)
                expected = notebooks.staged_back_matter_links(expected)
            assert target.read_text(encoding="utf-8") == expected, f"{doc}{suffix}: stale copy"


def test_exercises_and_solutions_link_both_ways(html_dir):
    exercises = [d for d in _notebook_pages() if d.startswith("exercises/")]
    assert exercises
    for doc in exercises:
        solution = doc.replace("exercises/", "solutions/", 1)
        titles = [
            re.search(r"<title>(.*?)</title>", (html_dir / f"{d}.html").read_text(encoding="utf-8"))[1]
            for d in (doc, solution)
        ]
        assert titles[1].startswith("Solution to ") and titles[0] != titles[1], titles
        for page, other in ((doc, solution), (solution, doc)):
            html = (html_dir / f"{page}.html").read_text(encoding="utf-8")
            link = re.search(r'class="reference internal nextword-pair-link" href="([^"]+)"', html)
            assert link, f"{page}: no link to {other}"
            assert _resolve(html_dir / f"{page}.html", link[1], html_dir)[0] == (html_dir / f"{other}.html").resolve()
            named = re.search(r"Book notebook:</strong>\s*(<a [^>]*href=\"([^\"]+)\")?", html)
            if named:  # the exercise's own pointer to the book is a link to the rendered notebook
                assert named[1], f"{page}: its book notebook is not linked"
                assert _resolve(html_dir / f"{page}.html", named[2], html_dir)[0].exists()


def test_errata_evidence_links_go_to_rendered_notebooks(html_dir):
    page = html_dir / "errata.html"
    targets = {
        _resolve(page, u, html_dir)[0]
        for t, _, u in _parse(page).urls
        if t == "a" and _resolve(page, u, html_dir) is not None
    }
    ledger = (ROOT / "book" / "ERRATA.md").read_text(encoding="utf-8")
    evidence = set(re.findall(r"(?<![\w/])(book/part\w+/\w+)(?:\.ipynb|\.py)?(?![\w/])", ledger))
    assert evidence
    missing = [e for e in evidence if (html_dir / f"{e}.html").resolve() not in targets]
    assert not missing, f"errata page does not link: {missing}"


# --- in the browser ------------------------------------------------------------------------------------


class Visit:
    """One browser page that records console errors, page errors and every request it makes."""

    def __init__(self, browser, base: str) -> None:
        self.base = base
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status}: {r.url}"))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def _failed(self, request) -> None:
        if request.failure != "net::ERR_ABORTED":  # a font still loading when the next page is opened
            self.errors.append(f"failed request: {request.url} ({request.failure})")

    def open(self, path: str) -> None:
        self.page.goto(urljoin(self.base, path), wait_until="networkidle")

    def typeset(self) -> None:
        """Wait until MathJax has typeset the page (no-op on pages without math)."""
        self.page.evaluate("() => window.MathJax && MathJax.Hub ? new Promise(r => MathJax.Hub.Queue(r)) : null")

    def offsite(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(self.base) and not u.startswith("data:")]

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def visit(browser, server):
    v = Visit(browser, server)
    yield v
    v.close()


def _screenshot(visit: Visit, path: Path) -> None:
    visit.page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000, f"{path.name}: the screenshot is (nearly) empty"
    print(f"screenshot: {path}")


def _visible_prose(visit: Visit) -> str:
    """The article's visible text without code cells, outputs and inline code (where ``$`` is legitimate)."""
    return visit.page.evaluate("""() => {
        const article = document.querySelector('article').cloneNode(true);
        article.querySelectorAll('pre, code, script, .cell_output, .MathJax, .MathJax_Display, .MathJax_Preview')
               .forEach(e => e.remove());
        return article.innerText; }""")


def test_contents_lists_every_notebook(visit, tmp_path):
    visit.open("index.html")
    sidebar = visit.page.eval_on_selector_all("nav.bd-docs-nav a.reference.internal", "links => links.map(a => a.href)")
    listed = {urlsplit(h).path.lstrip("/") for h in sidebar}
    expected = {f"{doc}.html" for doc in _notebook_pages()}
    assert not expected - listed, f"missing from the contents: {sorted(expected - listed)}"
    for page in ("errata.html", "notation.html", "bibliography.html", "exercises/index.html"):
        assert page in listed
    book_order = [p for p in (urlsplit(h).path.lstrip("/") for h in sidebar) if p.startswith("book/")]
    structure = [f"{d}.html" for _, docs in notebooks.book_structure() for d in docs]
    assert list(dict.fromkeys(book_order)) == structure, "sidebar order differs from book/README.md"
    assert visit.page.is_visible("nav.bd-docs-nav"), "the sidebar is not shown"
    _screenshot(visit, tmp_path / SCREENSHOTS[0])
    assert not visit.errors, visit.errors
    assert not visit.offsite(), f"requests left 127.0.0.1: {visit.offsite()}"


def test_search_for_support_tokens_lists_the_part4_pages(visit, tmp_path):
    visit.open("search.html?q=support+tokens")
    visit.page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    visit.page.wait_for_function(
        "() => /found/i.test(document.querySelector('#search-results').innerText)", timeout=30_000
    )
    found = {
        urlsplit(h).path.lstrip("/")
        for h in visit.page.eval_on_selector_all("#search-results ul.search li a", "links => links.map(a => a.href)")
    }
    part4 = [d for _, docs in notebooks.book_structure() for d in docs if d.startswith("book/part4_margins/")]
    about = [d for d in part4 if re.search(r"support tokens?", _markdown_of(ROOT / f"{d}.ipynb"), re.I)]
    assert about, "no Part 4 notebook mentions support tokens: the check would be empty"
    missing = [d for d in about if f"{d}.html" not in found]
    assert not missing, f"search 'support tokens' misses Part 4 pages: {missing}; found {sorted(found)}"
    _screenshot(visit, tmp_path / SCREENSHOTS[2])
    assert not visit.errors, visit.errors
    assert not visit.offsite(), f"requests left 127.0.0.1: {visit.offsite()}"


def _markdown_of(ipynb: Path) -> str:
    import nbformat

    return "\n".join(c.source for c in nbformat.read(ipynb, as_version=4).cells if c.cell_type == "markdown")


def _first_math_page_per_part(html_dir: Path) -> list[str]:
    pages = []
    for _, docs in notebooks.book_structure():
        for doc in docs:
            if 'class="math notranslate' in (html_dir / f"{doc}.html").read_text(encoding="utf-8"):
                pages.append(f"{doc}.html")
                break
    return pages


def test_math_is_rendered_offline(visit, html_dir, tmp_path):
    pages = _first_math_page_per_part(html_dir) + ["notation.html"]
    assert len(pages) >= 4, f"too few pages with math: {pages}"
    for page in pages:
        visit.open(page)
        visit.typeset()
        counts = visit.page.evaluate("""() => ({
            sources: document.querySelectorAll('.math.notranslate').length,
            typeset: document.querySelectorAll('.math.notranslate script[type^="math/tex"]').length,
            errors: document.querySelectorAll('.noError, .MathJax_Error, merror').length})""")
        assert counts["sources"] > 0 and counts["typeset"] >= counts["sources"], f"{page}: {counts}"
        assert counts["errors"] == 0, f"{page}: MathJax could not typeset {counts['errors']} formulas"
        prose = _visible_prose(visit)
        for raw in ("$$", "\\(", "\\)", "\\[", "\\]", "\\frac", "\\mathbb"):
            assert raw not in prose, f"{page}: raw TeX {raw!r} left in the visible text"
        if page == "notation.html":  # a table of formulas at the top of the page
            _screenshot(visit, tmp_path / SCREENSHOTS[1])
    assert not visit.errors, visit.errors
    assert not visit.offsite(), f"requests left 127.0.0.1: {visit.offsite()}"


def test_book_works_opened_from_the_file_system(browser, html_dir):
    """A reader double-clicks _build/html/index.html: no server, file:// URLs only."""
    visit = Visit(browser, html_dir.resolve().as_uri() + "/")
    try:
        visit.open("index.html")
        assert visit.page.is_visible("nav.bd-docs-nav")
        visit.open("search.html?q=support+tokens")
        visit.page.wait_for_selector("#search-results ul.search li", timeout=30_000)
        assert visit.page.locator("#search-results ul.search li a[href*='part4_margins']").count() > 0
        visit.open("notation.html")
        visit.typeset()
        assert visit.page.locator(".math.notranslate script[type^='math/tex']").count() > 0
        assert not visit.errors, visit.errors
        assert not visit.offsite(), f"requests left the built folder: {visit.offsite()}"
    finally:
        visit.close()


def test_pages_load_without_console_errors_or_outside_requests(visit, html_dir):
    pages = ["index.html", "errata.html", "bibliography.html", "exercises/index.html", "genindex.html"]
    pages += [f"{docs[0]}.html" for _, docs in notebooks.book_structure()]
    pages += [f"{d}.html" for d in _notebook_pages() if d.startswith(("exercises/", "solutions/"))][:1]
    pages += [f"{d}.html" for d in _notebook_pages() if d.startswith("solutions/")][:1]
    for page in pages:
        visit.open(page)
        visit.typeset()
        assert visit.page.is_visible("nav.bd-docs-nav"), f"{page}: no sidebar"
        assert visit.page.locator("a.left-prev, a.right-next").count() > 0 or page == "genindex.html", (
            f"{page}: no previous/next link"
        )
    assert not visit.errors, "\n".join(visit.errors)
    assert not visit.offsite(), f"requests left 127.0.0.1: {visit.offsite()}"


# --- accessibility (issue #31) ---------------------------------------------------------------------------

AXE_CORE = ROOT / "_build" / "axe" / "node_modules" / "axe-core" / "axe.min.js"  # make axe (npm, MPL-2.0)
_HASH_OR_PATH = re.compile(r"(^|/)[0-9a-f]{16,}|\.(png|jpe?g|svg|gif)$|_images/", re.I)


class _Images(html.parser.HTMLParser):
    """The ``<img>`` tags of one page that show a figure (a file under ``_images/``) as (src, alt)."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img" and "_images/" in (attrs.get("src") or ""):
            self.figures.append((attrs["src"], attrs.get("alt")))


def test_every_figure_has_a_text_alternative_from_its_caption(html_dir):
    """A screen reader says what each figure shows: an alt from its caption, never the file's path or hash."""
    figures, missing, captioned = 0, [], 0
    for page in sorted(p for p in html_dir.rglob("*.html") if "_static" not in p.parts):
        parser = _Images()
        parser.feed(page.read_text(encoding="utf-8"))
        for src, alt in parser.figures:
            figures += 1
            captioned += bool(alt and re.match(r"Fig(ure|\.)", alt))
            if not alt or len(alt.strip()) < 12 or _HASH_OR_PATH.search(alt.strip()):
                missing.append(f"{page.relative_to(html_dir)}: {src} alt={alt!r}")
    assert figures >= 50, f"only {figures} figures found in the rendered book: is it built?"
    assert not missing, f"{len(missing)} of {figures} figures have no real alt text:\n" + "\n".join(missing[:20])
    assert captioned >= 0.9 * figures, f"only {captioned} of {figures} alts come from a 'Figure ...' caption"


def _axe_source() -> str | None:
    path = Path(os.environ.get("AXE_CORE", AXE_CORE))
    return path.read_text(encoding="utf-8") if path.exists() else None


def _accessibility_pages() -> list[str]:
    """The landing page, the errata page, the first page of each part, an exercise page, and the two pages
    the issue measured code overflow on (6.2 and the seventh page of Part 4)."""
    structure = notebooks.book_structure()
    pages = ["index.html", "errata.html"] + [f"{docs[0]}.html" for _, docs in structure]
    pages += [f"{d}.html" for d in _notebook_pages() if d.startswith("exercises/")][:1]
    pages += [f"{d}.html" for _, docs in structure for d in docs if "6_2_" in d]
    pages += [f"{docs[6]}.html" for _, docs in structure if docs[0].startswith("book/part4") and len(docs) > 6]
    return list(dict.fromkeys(pages))


_OVERFLOWING_CODE = """() => [...document.querySelectorAll('article div.cell_input pre, article div.highlight pre')]
    .filter(e => !e.closest('.cell_output') && e.scrollWidth > e.clientWidth + 1)
    .map(e => e.innerText.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 80))"""


def test_pages_pass_axe_core_and_their_code_fits(visit):
    """axe-core (WCAG 2.x rules) finds no violation of serious or critical impact, and no code cell is wider
    than its box on a 1280-pixel-wide window (long lines wrap; outputs keep their own scroll bar)."""
    axe = _axe_source()
    if axe is None:
        message = f"axe-core is not installed ({AXE_CORE}): run `make axe` (npm install axe-core@4.14)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    violations, overflow = [], []
    for page in _accessibility_pages():
        visit.open(page)
        visit.typeset()
        visit.page.add_script_tag(content=axe)
        result = visit.page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
        violations += [
            f"{page}: {v['id']} ({v['impact']}, {len(v['nodes'])}x) {v['nodes'][0]['html'][:160]}"
            for v in result["violations"]
            if v["impact"] in ("serious", "critical")
        ]
        overflow += [f"{page}: {line!r}" for line in visit.page.evaluate(_OVERFLOWING_CODE)]
    assert not violations, "axe-core violations:\n" + "\n".join(violations)
    assert not overflow, f"{len(overflow)} code cells wider than their box:\n" + "\n".join(overflow[:20])
    assert not visit.errors, visit.errors


# --- TeX that MathJax cannot typeset (issue 45): a parse error or an undefined command on any page ------------

_MATHJAX_ERRORS = """() => {
    const posted = (window.MathJax && MathJax.Hub && MathJax.Hub.signal.posted) || [];
    const signals = posted.filter(m => Array.isArray(m) && /^TeX Jax - /.test(String(m[0])))
                          .map(m => m[0] + ': ' + String(m[1]));
    const boxes = [...document.querySelectorAll('.noError, .MathJax_Error, merror')]
                  .map(e => 'error box: ' + e.textContent.slice(0, 80));
    return signals.concat(boxes); }"""


def _mathjax_errors(visit: Visit) -> list[str]:
    """What MathJax reported while typesetting the open page: its TeX parse errors and undefined commands
    (MathJax 2 posts both on ``MathJax.Hub.signal``, which keeps them; the book's configuration renders the
    first as the source text and the second in red, so neither shows as an error to the eye), and any error box."""
    visit.typeset()
    return visit.page.evaluate(_MATHJAX_ERRORS)


def test_the_mathjax_error_detector_sees_a_parse_error_and_an_undefined_command(visit):
    visit.open("notation.html")
    assert _mathjax_errors(visit) == []
    visit.page.evaluate("""() => { const p = document.createElement('p');
        p.innerHTML = '<span class="math notranslate nohighlight">\\\\(\\\\frac{1}{2\\\\)</span> and ' +
                      '<span class="math notranslate nohighlight">\\\\(\\\\bm x\\\\)</span>';
        document.querySelector('article').appendChild(p);
        return new Promise(r => MathJax.Hub.Queue(['Typeset', MathJax.Hub, p], r)); }""")
    errors = _mathjax_errors(visit)
    assert any("parse error" in e for e in errors) and any("undefined control sequence: \\bm" in e for e in errors), (
        errors
    )


def test_no_page_has_a_mathjax_error(visit):
    """Every page of the book, the glossary, the notation page, the errata and the coverage map typeset
    without a TeX error (``nextword.booktools.checks.tex`` catches the usual causes before rendering)."""
    pages = [f"{d}.html" for _, docs in notebooks.book_structure() for d in docs]
    pages += ["glossary.html", "notation.html", "errata.html", "coverage.html"]
    errors = []
    for page in pages:
        visit.open(page)
        errors += [f"{page}: {e}" for e in _mathjax_errors(visit)]
    assert not errors, "MathJax could not typeset:\n" + "\n".join(errors)


# --- produced numbers, visible (issue 44 §5) ------------------------------------------------------------------


def test_every_produced_number_is_marked_in_the_html(html_dir):
    """Each text a notebook printed through ``produced()`` is a ``span.nextword-produced`` in the page (no U+2063
    left in it), and a page with such spans carries the description they point to."""
    from nextword.booktools.display import MARK

    marked_pages = 0
    for ipynb in sorted((ROOT / "book").glob("*/*.ipynb")):
        text = ipynb.read_text(encoding="utf-8")
        stored = MARK in text or "\\u2063" in text  # the notebook's outputs hold a produced number
        page = (html_dir / ipynb.relative_to(ROOT)).with_suffix(".html").read_text(encoding="utf-8")
        spans = page.count('<span class="nextword-produced"')
        assert MARK not in page, f"{ipynb.name}: a produced number left unmarked in the HTML"
        if stored:
            assert spans >= 1 and page.count('id="nextword-produced-note"') == 1, f"{ipynb.name}: {spans} marked"
            marked_pages += 1
    assert marked_pages >= 10


def test_produced_numbers_are_styled_and_explained(visit):
    visit.open("book/part1_chapter6/6_2_attention_mechanism.html")
    span = visit.page.locator("span.nextword-produced").first
    style = visit.page.evaluate(
        """e => { const s = getComputedStyle(e);
                  return [s.textDecorationLine, s.textDecorationStyle, e.title,
                          document.getElementById(e.getAttribute('aria-describedby')).textContent]; }""",
        span.element_handle(),
    )
    assert style[0] == "underline" and style[1] == "dotted", style
    assert "training or sampling" in style[2] and "training or sampling" in style[3], style
    assert not visit.errors, visit.errors
