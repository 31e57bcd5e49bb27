"""report.html and the results page, looked at in a real browser: headless Chromium (Debian's package;
tools/install_browser.sh, which .ci/run calls) renders them at 1280, 1440 and 1920 px wide, and a script
injected into a copy of each page measures the layout once it has drawn: no horizontal overflow (the
document, and every scrolling box around the results page, no wider than the window: the front table
overflowed at 1400 px) and no overlapping panels (the menu, the results column and the workflow graph
pairwise disjoint, and each of the page's own panels, tables and figures, inside the results column and
clear of the others: the graph ran over the table at 1800-2400 px).

The screenshots stay as test artefacts: report_<width>.png and results_page_<width>.png in
$FUD_BROWSER_SHOTS when set, else in pytest's temporary folder (browser0/ under
/tmp/pytest-of-<user>/pytest-<n>/); the test prints where. Skipped, saying why, where no Chromium is
installed (FUD_REQUIRE_BROWSER=1, as on CI, makes that a failure)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

WIDTHS = (1280, 1440, 1920)
HEIGHT = 1400


def chromium() -> str | None:
    return next((p for c in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(c))), None)


@pytest.fixture(scope="module")
def browser():
    found = chromium()
    if found is None:
        why = "Chromium is not installed: tools/install_browser.sh installs Debian's chromium (docs/install.md)"
        if os.environ.get("FUD_REQUIRE_BROWSER") == "1":
            pytest.fail(why + " (FUD_REQUIRE_BROWSER=1)")
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    where = Path(os.environ["FUD_BROWSER_SHOTS"]) if os.environ.get("FUD_BROWSER_SHOTS") else None
    where = where or tmp_path_factory.mktemp("browser")
    where.mkdir(parents=True, exist_ok=True)
    print(f"browser screenshots: {where}")
    return where


# Measures the layout once the page has drawn (Snakemake's report draws with JavaScript after `load`) and
# writes it into the DOM, which --dump-dom prints.
PROBE = """<script>
(function () {
  function box(el) { var r = el.getBoundingClientRect();
    return {name: el.id || el.className || el.tagName, left: r.left, top: r.top, right: r.right, bottom: r.bottom}; }
  function measure() {
    var page = document.getElementById('fud-results-page');
    var out = {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
               found: !!page, frame: [], panels: [], column: null, overflowing: [], tables: []};
    if (page) {
      var column = page.closest('.prose') || document.body;
      out.column = box(column);
      out.frame.push(box(column));
      var menu = document.querySelector('#app nav');
      if (menu) out.frame.push(box(menu));
      var graph = document.getElementById('rulegraph');
      if (graph) out.frame.push(box(graph));
      document.querySelectorAll('.fud-panel').forEach(function (el) { out.panels.push(box(el)); });
      document.querySelectorAll('.fud-table').forEach(function (el) {
        out.tables.push({scrollWidth: el.scrollWidth, clientWidth: el.clientWidth}); });
      for (var el = page.parentElement; el; el = el.parentElement) {
        var x = getComputedStyle(el).overflowX;
        if ((x === 'auto' || x === 'scroll') && el.scrollWidth > el.clientWidth + 1)
          out.overflowing.push({name: el.className || el.tagName, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth});
      }
    }
    var pre = document.createElement('pre'); pre.id = 'fud-layout'; pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  window.addEventListener('load', function () { setTimeout(measure, 1500); });
})();
</script>"""


def probed_copy(page: Path, folder: Path) -> Path:
    """A copy of the page with PROBE before </body>."""
    text = page.read_text(errors="replace")
    cut = text.rindex("</body>")
    copy = folder / f"probed_{page.name}"
    copy.write_text(text[:cut] + PROBE + text[cut:])
    return copy


def look(browser: str, page: Path, width: int, screenshot: Path) -> dict:
    """Chromium's layout of the page at this width (PROBE's measures), its screenshot written."""
    res = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{HEIGHT}",
            "--virtual-time-budget=10000",
            f"--screenshot={screenshot}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    m = re.search(r'<pre id="fud-layout">(.*?)</pre>', res.stdout, re.S)
    assert m, f"Chromium drew no layout for {page} at {width} px: {res.stderr[-2000:]}"
    import html

    return json.loads(html.unescape(m.group(1)))


def overlap(a: dict, b: dict, slack: float = 1.0) -> bool:
    return (
        min(a["right"], b["right"]) - max(a["left"], b["left"]) > slack
        and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > slack
    )


def layout_problems(m: dict) -> list[str]:
    """What a reader would see wrong: the page wider than the window, a box scrolling sideways around it,
    panels on top of each other, a panel sticking out of the results column."""
    out = []
    if not m["found"]:
        return ["the results page (#fud-results-page) is not on the page"]
    if m["scrollWidth"] > m["innerWidth"]:
        out.append(f"the document is {m['scrollWidth']} px wide in a {m['innerWidth']} px window")
    out += [f"{o['name']!r} scrolls sideways: {o['scrollWidth']} px in {o['clientWidth']} px" for o in m["overflowing"]]
    boxes = m["frame"] + m["panels"]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            inside = a is m["frame"][0] and b in m["panels"]  # the column holds the page's panels
            if not inside and overlap(a, b):
                out.append(f"{a['name']!r} {a} overlaps {b['name']!r} {b}")
    column = m["column"]
    for p in m["panels"]:
        if p["left"] < column["left"] - 1 or p["right"] > column["right"] + 1:
            out.append(f"{p['name']!r} {p} sticks out of the results column {column}")
    return out


def test_overlap_and_overflow_are_caught():
    """The checks fail on what they are for: the first report's table under the graph, a page too wide."""
    column = {"name": "prose", "left": 250, "top": 0, "right": 1400, "bottom": 9000}
    graph = {"name": "rulegraph", "left": 1410, "top": 0, "right": 1800, "bottom": 900}
    table = {"name": "fud-panel fud-table", "left": 250, "top": 800, "right": 4400, "bottom": 1600}
    m = {"found": True, "innerWidth": 1400, "scrollWidth": 1400, "frame": [column, graph], "column": column}
    assert layout_problems({**m, "panels": [], "overflowing": []}) == []
    problems = layout_problems(
        {**m, "panels": [table], "overflowing": [{"name": "overflow-auto", "scrollWidth": 4482, "clientWidth": 1163}]}
    )
    assert any("scrolls sideways" in p for p in problems)
    assert any("overlaps" in p and "rulegraph" in p for p in problems)
    assert any("sticks out of the results column" in p for p in problems)
    assert layout_problems({**m, "scrollWidth": 1500, "panels": [], "overflowing": []}) == [
        "the document is 1500 px wide in a 1400 px window"
    ]


@pytest.fixture(scope="module")
def pages(smoke_run, repo, tmp_path_factory):
    """report.html of the smoke run (`snakemake --report` on a copy: one Snakemake start) and the results
    page on its own (report/front.rst as docutils renders it, outside Snakemake's frame)."""
    from docutils.core import publish_string
    from jinja2 import Environment
    from workflow_support import snakemake

    results, _ = smoke_run
    folder = tmp_path_factory.mktemp("browser_pages")
    work = folder / "run"
    subprocess.run(["cp", "-a", str(results.parent.parent), str(work)], check=True)
    report = folder / "report.html"
    res = snakemake(
        repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--report", str(report)
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    front = (work / "results/smoke/report/front.rst").read_text()
    text = Environment().from_string(front).render(snakemake=None)
    standalone = folder / "results_page.html"
    standalone.write_bytes(publish_string(text, writer="html", settings_overrides={"report_level": 4}))
    return {"report": report, "results_page": standalone}


@pytest.mark.workflow
@pytest.mark.parametrize("name", ["report", "results_page"])
def test_pages_fit_the_window_with_no_panel_over_another(browser, pages, shots, name):
    """At 1280, 1440 and 1920 px: no horizontal overflow, no overlapping panels; screenshots kept."""
    probed = probed_copy(pages[name], shots)
    problems = {}
    for width in WIDTHS:
        shot = shots / f"{name}_{width}.png"
        m = look(browser, probed, width, shot)
        assert shot.is_file() and shot.stat().st_size > 10_000, f"no screenshot at {width} px"
        if name == "report":
            assert len(m["frame"]) == 3, m  # the menu, the results column and the workflow graph were drawn
        assert m["panels"], "the page's tables and figures (.fud-panel) are not on it"
        problems.update({width: p for p in [layout_problems(m)] if p})
    assert not problems, json.dumps(problems, indent=1)[:6000]
