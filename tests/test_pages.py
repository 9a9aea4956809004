"""Every notebook shows its figures as images, and every page a reader opens stands alone offline."""
from __future__ import annotations

import base64
import io
import json
import re
import struct

import matplotlib.pyplot as plt
import nbformat
import pytest

from lib import pages, reproduce
from lib.core.paths import REPO_ROOT

NOTEBOOKS = [REPO_ROOT / "notebooks" / s.notebook for s in reproduce.STEPS]


def _png_b64() -> str:
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _notebook(figure_output: dict, markdown: str = "## A figure") -> nbformat.NotebookNode:
    """An executed notebook with one figure cell whose output is ``figure_output``."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("fig = draw()\ndisplay(fig); plt.close(fig)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=figure_output)]
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), cell]
    return nb


def _figure_cells(nb: dict) -> tuple[int, int]:
    """``(cells, minimum images)``: code cells that show figures, and the images they must show at least."""
    counts = [pages.figures_expected("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code"]
    shown = [(d, s) for d, s in counts if d or s]
    return len(shown), sum(max(d, 1) for d, _ in shown)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_committed_notebook_shows_every_figure_as_an_image(path):
    nb = json.loads(path.read_text())
    assert _figure_cells(nb)[0] >= 1, f"{path.name} has no figure cell (display(fig) / show_saved)"
    assert pages.notebook_problems(nb) == []
    assert not any("plt.show()" in "".join(c["source"]) for c in nb["cells"]), \
        "plt.show() draws nothing under a non-interactive backend (CI sets MPLBACKEND=Agg): use display(fig)"


def test_notebook_05_shows_saved_panels_at_a_legible_width():
    """show_saved must not squeeze a wide multi-panel figure into a thumbnail: each panel is shown at
    least at half its saved pixel width (PNG saved at 200 dpi, shown as if drawn at 110)."""
    nb = json.loads((REPO_ROOT / "notebooks" / "05_figures.ipynb").read_text())
    shown = [(o["metadata"]["image/png"]["width"], struct.unpack(">I", base64.b64decode(o["data"]["image/png"])[16:20])[0])
             for c in nb["cells"] if "show_saved(" in "".join(c["source"])
             for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert len(shown) >= 20, "notebook 05 shows fewer panels than the paper has"
    assert all(w >= px / 2 for w, px in shown), [s for s in shown if s[0] < s[1] / 2]
    assert max(w for w, _ in shown) > 800, "the widest panel is shown below 800 px"


def test_the_checks_catch_a_figure_shown_as_text_a_fetched_script_and_raw_tex(tmp_path):
    as_text = _notebook({"text/plain": "<Figure size 374x330 with 1 Axes>"})  # what MPLBACKEND=Agg stores
    problems = pages.notebook_problems(as_text)
    assert any("shown as text" in p for p in problems) and any("0 images" in p for p in problems)
    page = pages.render_node(as_text, tmp_path / "bad.html", "bad")
    assert any("0 images" in p for p in pages.page_problems(page.read_text()))
    tex = _notebook({"image/png": _png_b64(), "text/plain": "<Figure>"}, markdown=r"score $s_i = g\,f_i$")
    assert any("TeX maths" in p for p in pages.notebook_problems(tex))
    assert any("TeX maths" in p for p in pages.page_problems(pages.render_node(tex, tmp_path / "tex.html", "t").read_text()))
    html = ('<html><script src="https://cdnjs.cloudflare.com/x.js"></script><link href="//fonts.example/a.css">'
            '<img alt="" src="fig1a.png"></html>')
    assert len(pages.page_problems(html)) == 4  # the script, the style sheet, the image not embedded, its empty alt


def test_a_panel_whose_data_is_absent_at_this_scale_may_say_so_instead(tmp_path):
    """A figure cell whose data does not exist at this scale (the g sweep before it has run) prints one
    line starting "no …" and draws nothing: not a missing figure. Silence is still one."""
    def absent(text):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("if data is not None:\n    fig = draw()\n    display(fig); plt.close(fig)\n"
                                         "else:\n    print('no grounding-knob sweep data at this scale')")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
        nb.cells = [cell]
        return nb
    said, silent = absent("no grounding-knob sweep data at this scale\n"), absent("")
    assert pages.notebook_problems(said) == []
    assert pages.page_problems(pages.render_node(said, tmp_path / "said.html", "s").read_text()) == []
    assert any("0 images" in p for p in pages.notebook_problems(silent))
    assert any("0 images" in p for p in pages.page_problems(
        pages.render_node(silent, tmp_path / "silent.html", "s").read_text()))
    wrong = absent("the sweep ran\n")  # a printed line that does not say the data is absent
    assert any("0 images" in p for p in pages.notebook_problems(wrong))


def test_a_notebook_with_its_figures_renders_to_a_clean_offline_page(tmp_path):
    good = _notebook({"image/png": _png_b64(), "text/plain": "<Figure size 100x100 with 1 Axes>"},
                     markdown="κ<sub>i</sub> = (1/M) Σ<sub>j</sub> [a<sub>ij</sub> = c<sub>j</sub>]")
    assert pages.notebook_problems(good) == []
    html = pages.render_node(good, tmp_path / "good.html", "good").read_text()
    assert pages.page_problems(html) == []
    assert len(pages.PNG_IMG.findall(html)) == 1
    assert "κ<sub>i</sub> = (1/M) Σ<sub>j</sub>" in html, "the maths' HTML did not survive the rendering"
    assert "<script src=" not in html and "mathjax" not in html.lower() and "require.js" not in html


@pytest.mark.slow
def test_a_rendered_committed_notebook_embeds_every_figure_and_fetches_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path))
    path = REPO_ROOT / "notebooks" / "01_operators.ipynb"
    html = reproduce.render_html(path, "smoke").read_text()
    assert pages.page_problems(html) == []
    nb = json.loads(path.read_text())
    stored = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
    assert len(pages.PNG_IMG.findall(html)) == stored >= _figure_cells(nb)[1]


def _readme_pages() -> list[str]:
    return sorted(set(re.findall(r"\((figures/[a-z]+/notebooks/[\w.-]+\.html)\)", (REPO_ROOT / "README.md").read_text())))


def test_the_readme_links_a_page_for_every_notebook():
    linked = {p.rsplit("/", 1)[1] for p in _readme_pages()}
    assert {p.stem + ".html" for p in NOTEBOOKS} <= linked


@pytest.mark.parametrize("link", _readme_pages())
def test_every_page_linked_from_the_readme_stands_alone_with_every_figure_of_its_notebook(link):
    page = REPO_ROOT / link
    assert page.is_file(), f"the README links {link}, which does not exist"
    html = page.read_text(encoding="utf-8")
    assert pages.page_problems(html) == []
    source = json.loads((REPO_ROOT / "notebooks" / (page.stem + ".ipynb")).read_text())
    cells, at_least = _figure_cells(source)
    shown = [pages.figures_expected(pages.text_of(c)) for c in pages.code_cells(html)]
    assert sum(1 for d, s in shown if d or s) == cells, \
        f"{link} has another set of figure cells than notebooks/{page.stem}.ipynb: re-render it"
    assert len(pages.PNG_IMG.findall(html)) >= at_least


def _with_injected_cell(cell_id: str) -> nbformat.NotebookNode:
    nb = _notebook({"image/png": _png_b64(), "text/plain": "<Figure>"})
    injected = nbformat.v4.new_code_cell("scale = 'cpu'", metadata={"tags": [pages.INJECTED]})
    injected["id"] = cell_id  # papermill draws a new random one each run
    nb.cells.insert(0, injected)
    for k, cell in enumerate(nb.cells[1:], 1):  # the source notebook's ids, the same in every run
        cell["id"] = f"source-{k}"
    return nb


def test_a_rerun_renders_the_same_page(tmp_path):
    """papermill gives its injected-parameters cell a random id each run: the page (and the executed notebook,
    lib.reproduce rewrites it) carries a fixed one, so re-running leaves the tree clean."""
    a, b = _with_injected_cell("46293b74"), _with_injected_cell("c33bbd2a")
    assert a.cells[0]["id"] != b.cells[0]["id"]  # planted: two runs' notebooks differ ...
    pa = pages.render_node(a, tmp_path / "a.html", "p").read_text()
    pb = pages.render_node(b, tmp_path / "b.html", "p").read_text()
    assert pa == pb and 'id="cell-id=injected-parameters"' in pa  # ... their pages do not
    assert pages.stable_ids(a) == 1 and pages.stable_ids(a) == 0 and a.cells[0]["id"] == pages.INJECTED
    twice = _with_injected_cell("x")
    twice.cells[1]["id"] = twice.cells[2]["id"] = "same"  # a duplicate id gets its position
    pages.stable_ids(twice)
    assert len({c["id"] for c in twice.cells}) == 3


def test_a_page_stores_its_pngs_compactly_at_their_pixel_size():
    from PIL import Image

    png = (REPO_ROOT / "figures" / "smoke" / "fig1a_conformity_vs_fitness.png").read_bytes()
    b64 = base64.b64encode(png).decode()
    small = pages.compact_png(b64)
    assert len(small) < len(b64)
    with Image.open(io.BytesIO(base64.b64decode(small))) as im, Image.open(io.BytesIO(png)) as orig:
        assert im.size == orig.size
    assert pages.compact_png(small) == small  # already compact: kept


PAGE_LIMIT = 5e6  # bytes: a page a reader downloads


@pytest.mark.parametrize("page", sorted((REPO_ROOT / "figures" / "cpu" / "notebooks").glob("*.html")),
                         ids=lambda p: p.name)
def test_a_committed_page_is_small_and_shows_figures_at_the_saved_resolution(page):
    """Each page stays under 5 MB and shows every figure with the pixels of the saved PNG (savefig.dpi), at the
    width it would have drawn at figure.dpi: a 1373-px redraw of a 2480-px panel is what this catches."""
    from PIL import Image

    html = page.read_text(encoding="utf-8")
    assert len(html.encode()) < PAGE_LIMIT, f"{page.name}: {len(html.encode()) / 1e6:.1f} MB"
    for m in re.finditer(r"<img\b([^>]*)>", html):
        src = re.search(r'src="data:image/png;base64,([^"]+)"', m[1])
        width = re.search(r'\bwidth="?(\d+)', m[1])
        if not src:
            continue
        with Image.open(io.BytesIO(base64.b64decode(src[1]))) as im:
            px = im.size[0]
        assert width and px >= 1.7 * int(width[1]), (page.name, px, width and width[1],
                                                      re.search(r'alt="([^"]{0,60})', m[1])[1])
