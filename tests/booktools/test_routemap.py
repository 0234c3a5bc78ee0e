"""The landing page's route map (``nextword.booktools.routemap``) stays true to the book: every stop is a
page or a part that exists, every Part 0–1 page is on it, the suggested path reads each stop after all
it builds on, a page's own "Builds on" links agree with the map, and the drawing has one box per stop."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nextword.booktools import notebooks, pages, routemap

ROOT = Path(notebooks.REPO_ROOT)
BOOK = ROOT / "book"


def _ancestors(key: str) -> set[str]:
    by_key = {n.key: n for n in routemap.NODES}
    found, todo = set(), list(by_key[key].builds_on)
    while todo:
        k = todo.pop()
        if k not in found:
            found.add(k)
            todo.extend(by_key[k].builds_on)
    return found


def test_every_stop_exists_and_every_early_page_is_a_stop():
    keys = [n.key for n in routemap.NODES]
    assert len(keys) == len(set(keys))
    for key in keys:
        assert (BOOK / f"{key}.py").exists() or (BOOK / key).is_dir(), f"route map stop {key} does not exist"
    # a part's companion audit page (checking_the_paper) is reference, not a stop on the reading route
    early = {f"{p.parent.name}/{p.stem}" for p in BOOK.glob("part[01]_*/*.py") if pages.page_kind(p) != "companion"}
    assert early <= set(keys), f"pages missing from the route map: {sorted(early - set(keys))}"
    papers = {p.name for p in BOOK.glob("part[2-9]_*") if p.is_dir()}
    assert papers <= set(keys), f"parts missing from the route map: {sorted(papers - set(keys))}"


def test_suggested_path_reads_each_stop_after_what_it_builds_on():
    path = list(routemap.SUGGESTED_PATH)
    assert sorted(path) == sorted(n.key for n in routemap.NODES)
    for node in routemap.NODES:
        for before in node.builds_on:
            assert path.index(before) < path.index(node.key), f"{node.key} comes before {before}"


def test_depths_put_every_arrow_left_to_right_and_reject_cycles():
    depth = routemap.depths()
    assert all(depth[b] < depth[n.key] for n in routemap.NODES for b in n.builds_on)
    loop = (routemap.Node("a", "A", ("b",)), routemap.Node("b", "B", ("a",)))
    with pytest.raises(ValueError, match="cycle"):
        routemap.depths(loop)
    with pytest.raises(ValueError, match="unknown"):
        routemap.depths((routemap.Node("a", "A", ("nowhere",)),))


def test_a_pages_builds_on_links_agree_with_the_map():
    keys = {n.key for n in routemap.NODES}
    for node in routemap.NODES:
        py = BOOK / f"{node.key}.py"
        if not py.exists():
            continue
        line = re.search(r"\*\*Builds on:\*\*(.*?)\*\*Reading time", py.read_text(encoding="utf-8"), re.S)
        if line is None:
            continue
        part = node.key.split("/")[0]
        linked = {
            f"{folder or part}/{name}" for folder, name in re.findall(r"\((?:\.\./(part\w+)/)?(\w+)\.ipynb\)", line[1])
        }
        stated = {k for k in linked if k in keys}
        assert stated <= _ancestors(node.key), (
            f"{node.key} says it builds on {sorted(stated - _ancestors(node.key))}: add it to routemap.NODES"
        )


def test_the_drawing_has_a_box_and_a_number_per_stop():
    import matplotlib.pyplot as plt

    fig = routemap.draw_route_map({n.key: 10 for n in routemap.NODES})
    ax = fig.axes[0]
    assert len(ax.patches) == len(routemap.NODES)
    texts = [t.get_text() for t in ax.texts]
    for step in range(1, len(routemap.NODES) + 1):
        assert str(step) in texts
    assert sum(t == "about 10 min" for t in texts) == len(routemap.NODES)
    arrows = [c for c in ax.get_children() if type(c).__name__ == "Annotation" and c.get_text() == ""]
    assert len(arrows) == sum(len(n.builds_on) for n in routemap.NODES)
    plt.close(fig)


def test_the_svg_is_the_same_from_one_build_to_the_next():
    minutes = {n.key: 5 for n in routemap.NODES}
    svg = routemap.route_map_svg(minutes)
    assert svg.startswith("<?xml") and svg == routemap.route_map_svg(minutes)


def test_no_arrow_runs_behind_a_box():
    """An arrow is drawn under the boxes, so one that crosses a box it does not join would vanish behind it
    (e.g. an arrow that skips a row)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig = routemap.draw_route_map({n.key: 10 for n in routemap.NODES})
    ax = fig.axes[0]
    boxes = [(p.get_x(), p.get_y(), p.get_x() + p.get_width(), p.get_y() + p.get_height()) for p in ax.patches]
    arrows = [c for c in ax.get_children() if type(c).__name__ == "Annotation" and c.get_text() == ""]
    t = np.linspace(0.01, 0.99, 2000)[:, None]
    for arrow in arrows:
        (x0, y0), (x1, y1) = arrow.xyann, arrow.xy
        px, py = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
        for left, bottom, right, top in boxes:
            inside = (px > left + 1e-6) & (px < right - 1e-6) & (py > bottom + 1e-6) & (py < top - 1e-6)
            assert not inside.any(), f"the arrow from {(x0, y0)} to {(x1, y1)} runs behind the box at {(left, bottom)}"
    plt.close(fig)
