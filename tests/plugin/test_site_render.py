"""The built documentation site renders in a real browser, navigation included.

Serves the site (``site/`` from ``make docs``, which ``make test`` runs first; otherwise a
``mkdocs build --strict`` into a temporary directory) on a loopback port and loads pages in
headless Chromium (``--dump-dom``: the DOM after the page's scripts ran). Needs ``chromium``
on PATH: ``make setup`` installs it.
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.browser

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SITE = os.path.join(ROOT, "site")
SITE_NAME = "pyspark-datastream"
# Top-level entries of mkdocs.yml's nav every page's Material navigation shows.
NAV = ["Getting started", "User guide", "Porting from PyFlink", "Porting reference",
       "Configuration reference", "API reference"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not on PATH: `make setup` installs it (apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> str:
    if os.path.exists(os.path.join(SITE, "porting-reference", "index.html")):
        return SITE
    out = str(tmp_path_factory.mktemp("site"))
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", out],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr}"
    return out


@pytest.fixture(scope="module")
def base_url(site: str) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _dom(url: str, tmp: str) -> str:
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp}", "--virtual-time-budget=5000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, f"chromium failed on {url}: {done.stderr[-2000:]}"
    return done.stdout


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def check_page(url: str, title: str, headings: list[str], tmp: str) -> str:
    """Load ``url`` and assert it rendered as a page of the site with its navigation.

    Args:
        url: The page's address on the local server.
        title: The page's title (the first heading and the start of ``<title>``).
        headings: Headings (h1-h3 texts) the page's content must show.
        tmp: A directory for Chromium's profile.

    Returns:
        The DOM Chromium dumped.
    """
    dom = _dom(url, tmp)
    page_title = re.search(r"<title>(.*?)</title>", dom, flags=re.S)
    want = title if title == SITE_NAME else f"{title} - {SITE_NAME}"
    assert page_title and _text(page_title.group(1)) == want, (
        f"{url}: title is {page_title and page_title.group(1)!r}")
    # Material's navigation: the primary nav and a link per top-level entry
    assert 'class="md-nav md-nav--primary"' in dom, f"{url}: no Material navigation"
    links = {_text(m) for m in re.findall(r'class="md-nav__link[^"]*"[^>]*>(.*?)</(?:a|label|div)>',
                                          dom, flags=re.S)}
    links = {re.sub(r"\s+", " ", link) for link in links}
    missing = [entry for entry in NAV if entry not in links]
    assert not missing, f"{url}: navigation lacks {missing}"
    # the scripts ran: Material's bundle marks the document (the served page has no-js)
    html_tag = re.search(r"<html[^>]*>", dom)
    assert html_tag and "js-focus-visible" in html_tag.group(0), f"{url}: the page's scripts did not run"
    shown = [re.sub(r"\s+", " ", _text(h)).rstrip("¶").strip()
             for h in re.findall(r"<h[1-3][^>]*>(.*?)</h[1-3]>", dom, flags=re.S)]
    assert shown and shown[0] == title, f"{url}: first heading is {shown[:1]}, not {title!r}"
    for heading in headings:
        assert any(heading in s for s in shown), f"{url}: no heading {heading!r} in {shown}"
    return dom


def test_home_page_renders_with_navigation(base_url: str, tmp_path) -> None:
    check_page(base_url, SITE_NAME, [], str(tmp_path))


def test_porting_reference_renders_its_table(base_url: str, tmp_path) -> None:
    dom = check_page(base_url + "porting-reference/", "Porting reference",
                     ["pyflink.datastream", "pyflink.common"], str(tmp_path))
    assert dom.count("<table") >= 2 and "ports unchanged" in dom
    row = r"<td[^>]*><code>key_by\(key_selector, key_type=…\)</code></td>\s*<td[^>]*>ports unchanged"
    assert re.search(row, dom), "no key_by row in the table"


def test_api_reference_page_renders_its_classes(base_url: str, tmp_path) -> None:
    check_page(base_url + "api/environment/", "Environment and streams",
               ["StreamExecutionEnvironment", "DataStream", "KeyedStream"], str(tmp_path))


def test_the_check_fails_on_a_missing_page(base_url: str, tmp_path) -> None:
    # the server answers 404 with its own error page: no site title, no navigation
    with pytest.raises(AssertionError, match="no-such-page/: title is"):
        check_page(base_url + "no-such-page/", "Porting reference", [], str(tmp_path))
