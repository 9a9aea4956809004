"""Static pages of executed notebooks that stand alone offline, and the checks that they do.

A page is nbconvert's ``lab`` template with every output image embedded and nothing fetched: the template's
require.js, MathJax, mermaid and widget scripts (all from a CDN) are left out. The notebooks write their
maths in Unicode and HTML (κ<sub>i</sub>), so no maths renderer is needed. A **figure cell** is a code
cell that shows figures: ``display(fig)`` (one figure per call) or ``show_saved(names, …)`` (a caption
and a PNG per saved panel). The checks read only the executed notebook or the page's HTML.
"""
from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

# nbconvert's lab page without the scripts it would fetch from a CDN.
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
{%- set width=output | get_metadata('width', 'image/png') -%}
{%- if width is not none %} width={{ width | escape_html }}{%- endif %}
 alt="{{ ((output | get_metadata('alt', 'image/png')) or 'a figure') | escape_html }}">
</div>
{%- endblock data_png %}
"""
DEFAULT_ALT = "No description has been provided for this image"  # nbconvert's, for an image without one

DISPLAY_FIG = re.compile(r"\bdisplay\(fig\)")
SHOW_SAVED = re.compile(r"\bshow_saved\(")
TEX_MATH = re.compile(r"(?<!\\)\$[^$\n]+\$")  # $…$: shown raw on a page without a maths renderer
# anything a browser would fetch: a script, style sheet, image or frame named by a URL
REMOTE = re.compile(r"<(script|link|img|iframe|source|embed)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//", re.I)
NOT_EMBEDDED = re.compile(r"<img\b[^>]*\bsrc=[\"'](?!data:)[^\"']*", re.I)  # a file beside the page, or a URL
REMOTE_CSS = re.compile(r"@import\s+(url\()?[\"']?(https?:)?//|url\([\"']?(https?:)?//", re.I)
PNG_IMG = re.compile(r"<img\b[^>]*\bsrc=\"data:image/png;base64,")


def render(executed: Path, out: Path, title: str) -> Path:
    """Render the executed notebook file ``executed`` to the offline page ``out`` (titled ``title``)."""
    import nbformat

    return render_node(nbformat.read(executed, as_version=4), out, title)


def _heading(source: str) -> str:
    """A Markdown cell's first heading (``## Fig. 1a — …`` → ``Fig. 1a — …``) and the first sentence
    after it, as plain text; ``""`` when it has neither."""
    lines = [ln.strip() for ln in source.splitlines()]
    head = next((ln.lstrip("#").strip() for ln in lines if ln.startswith("#")), "")
    body = " ".join(ln for ln in lines if ln and not ln.startswith("#"))
    first = re.split(r"(?<=[.])\s", body, maxsplit=1)[0] if body else ""
    text = ". ".join(t for t in (head, first) if t)
    return " ".join(text_of(re.sub(r"[*`]", "", text)).split())[:400]


def describe_images(nb) -> int:
    """Give every PNG output of an executed notebook (``nbformat`` node) an alt text where it has none
    (``metadata["image/png"]["alt"]``): the caption shown just before it in the same cell
    (``show_saved``: ``**name** — caption``), else the heading and first sentence of the Markdown cell
    above (numbered when a cell shows several figures). Returns how many it described."""
    heading, added = "", 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heading = _heading("".join(cell.source)) or heading
            continue
        if cell.cell_type != "code":
            continue
        pngs = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        caption, k = "", 0
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "text/markdown" in data:
                caption = " ".join(text_of(re.sub(r"[*`]", "", "".join(data["text/markdown"]))).split())
            if "image/png" not in data:
                continue
            k += 1
            meta = o.setdefault("metadata", {}).setdefault("image/png", {})
            if meta.get("alt"):
                caption = ""
                continue
            which = f"Figure {k} of {len(pngs)}" if len(pngs) > 1 else "Figure"
            meta["alt"] = caption or (f"{which} under “{heading}”" if heading else f"{which} of this notebook")
            caption, added = "", added + 1
    return added


INJECTED = "injected-parameters"  # papermill's tag (and, here, the id) of the cell it inserts


def stable_ids(nb) -> int:
    """Give the cells of an executed notebook (``nbformat`` node or JSON dict) ids that do not change from run to
    run: papermill's injected-parameters cell gets a new random id each run, so it is named ``injected-parameters``;
    a cell without an id, or with one an earlier cell took, gets ``cell-<k>`` (its position). The other ids are
    the source notebook's. Returns how many ids it changed."""
    seen, changed = set(), 0
    for k, cell in enumerate(nb["cells"]):
        want = cell.get("id")
        if INJECTED in cell.get("metadata", {}).get("tags", []):
            want = INJECTED
        if not want or want in seen:
            want = f"cell-{k}"
        if want != cell.get("id"):
            cell["id"] = want
            changed += 1
        seen.add(want)
    return changed


PAGE_COLOURS = 256  # a page's PNGs are stored with at most this many colours (lossless for most panels)


def compact_png(b64: str) -> str:
    """A base64 PNG re-encoded with a palette of at most :data:`PAGE_COLOURS` colours at the same pixel size (a
    figure's antialiased edges are where colours are lost), or the original when that is not smaller: a page with
    every panel at its saved resolution stays small. Deterministic: the same input gives the same bytes."""
    import base64
    import io

    from PIL import Image

    raw = base64.b64decode(b64)
    with Image.open(io.BytesIO(raw)) as im:
        rgb = im.convert("RGB")
        colours = rgb.getcolors(maxcolors=PAGE_COLOURS)
        small = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=len(colours)) if colours else \
            rgb.quantize(PAGE_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        buf = io.BytesIO()
        small.save(buf, "PNG", optimize=True)
    out = buf.getvalue()
    return base64.b64encode(out).decode() if len(out) < len(raw) else b64


def compact_images(nb) -> int:
    """Re-encode every PNG output of ``nb`` with :func:`compact_png`; returns how many got smaller."""
    k = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "image/png" in data:
                b64 = "".join(data["image/png"]) if isinstance(data["image/png"], list) else data["image/png"]
                new = compact_png(b64.replace("\n", ""))
                if new != b64:
                    data["image/png"], k = new, k + 1
    return k


def render_node(nb, out: Path, title: str) -> Path:
    """Render an executed notebook (an ``nbformat`` node) to the offline page ``out``; every image
    gets an alt text (:func:`describe_images`), is stored compactly (:func:`compact_images`), and every cell an
    id that a re-run keeps (:func:`stable_ids`): rendering the same notebook twice gives the same page."""
    import copy

    import jinja2
    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    stable_ids(nb)
    describe_images(nb)
    compact_images(nb)
    nb.metadata["title"] = title
    # Outputs' images are embedded by the template itself. embed_images=True would also embed Markdown
    # images, but it re-parses every inline HTML tag alone and so empties <sub>…</sub> (nbconvert 7.17).
    exporter = HTMLExporter(template_name="lab", template_file="offline.html.j2", embed_images=False,
                            extra_loaders=[jinja2.DictLoader({"offline.html.j2": OFFLINE_TEMPLATE})])
    body, _ = exporter.from_notebook_node(nb)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out


def figures_expected(source: str) -> tuple[int, bool]:
    """``(d, s)``: ``d`` the ``display(fig)`` calls in a code cell's source, ``s`` whether it calls ``show_saved``."""
    return len(DISPLAY_FIG.findall(source)), bool(SHOW_SAVED.search(source))


ABSENT = re.compile(r"^no \S.*$", re.M)  # a printed line saying why a panel is not drawn ("no … data …")


def _shown(d: int, s: bool, images: int, captions: int, absent: bool = False) -> str:
    """Why a cell with ``d`` display calls (and ``show_saved`` when ``s``) that holds ``images`` PNGs and
    ``captions`` Markdown outputs misses a figure, or ``""``. A cell that drew nothing and printed a
    line starting ``no …`` (``absent``: its data does not exist at this scale) misses nothing."""
    if absent and images == 0:
        return ""
    if s and (images < 1 or images < captions + d):
        return f"show_saved shows {captions} captions but {images} images"
    if images < max(d, 1):
        return f"{d} display(fig) call(s) but {images} images"
    return ""


def notebook_problems(nb: dict) -> list[str]:
    """What an executed notebook (``nbformat`` JSON) lacks: a figure cell without its PNGs, a figure
    shown only as text (``<Figure size …>``: a backend without PNG output), an error, TeX maths."""
    problems, code_idx = [], 0
    for cell in nb["cells"]:
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "markdown" and TEX_MATH.search(source):
            problems.append(f"markdown cell `{source.strip().splitlines()[0][:50]}`: TeX maths "
                            f"{TEX_MATH.search(source).group(0)!r} (write it in Unicode/HTML)")
        if cell["cell_type"] != "code":
            continue
        code_idx += 1
        outs = cell.get("outputs", [])
        data = [o.get("data", {}) for o in outs if o.get("output_type") in ("display_data", "execute_result")]
        images = sum("image/png" in d for d in data)
        where = f"code cell {code_idx} (`{source.strip().splitlines()[0][:50] if source.strip() else ''}`)"
        if any("<Figure size" in "".join(d.get("text/plain", "")) and "image/png" not in d for d in data):
            problems.append(f"{where}: a figure shown as text, not as an image")
        if any(o.get("output_type") == "error" for o in outs):
            problems.append(f"{where}: an error output")
        d, s = figures_expected(source)
        if d or s:
            said = "".join("".join(o.get("text", "")) for o in outs if o.get("output_type") == "stream")
            why = _shown(d, s, images, sum("text/markdown" in x for x in data), bool(ABSENT.search(said)))
            if why:
                problems.append(f"{where}: {why}")
    return problems


def text_of(fragment: str) -> str:
    """The text of an HTML fragment: tags dropped, entities decoded."""
    return html_lib.unescape(re.sub(r"<[^>]+>", "", fragment))


def _cells(page: str) -> list[str]:
    return re.split(r'(?=<div class="jp-Cell jp-(?:Code|Markdown|Raw)Cell)', page)[1:]


def code_cells(page: str) -> list[str]:
    """The HTML of each code cell of a rendered page (its source, then its outputs), in order."""
    return [c for c in _cells(page) if c.startswith('<div class="jp-Cell jp-CodeCell')]


IMG_ALT = re.compile(r"<img\b[^>]*?\balt=\"([^\"]*)\"", re.I)


def page_problems(page: str) -> list[str]:
    """What keeps a rendered page (HTML text) from standing alone offline with every figure: a script,
    style sheet, image or frame fetched from a URL, a figure cell with fewer embedded PNGs than the
    figures it shows, TeX maths in a Markdown cell, an image without a real alt text."""
    problems = [f"fetches {m.group(0)[:80]!r}" for m in REMOTE.finditer(page)]
    bare = sum(1 for m in re.finditer(r"<img\b[^>]*>", page, re.I)
               if not IMG_ALT.search(m.group(0)) or IMG_ALT.search(m.group(0)).group(1).strip() in ("", DEFAULT_ALT))
    if bare:
        problems.append(f"{bare} image(s) without an alt text")
    problems += [f"style sheet fetches {m.group(0)!r}" for m in REMOTE_CSS.finditer(page)]
    problems += [f"an image it does not embed: {m.group(0)[:80]!r}" for m in NOT_EMBEDDED.finditer(page)
                 if not REMOTE.match(m.group(0))]
    for k, cell in enumerate(_cells(page), 1):
        if cell.startswith('<div class="jp-Cell jp-MarkdownCell'):
            m = TEX_MATH.search(text_of(cell))
            if m:
                problems.append(f"cell {k}: TeX maths {m.group(0)!r} shown raw")
            continue
        source, _, outputs = cell.partition('class="jp-Cell-outputWrapper"')
        d, s = figures_expected(text_of(source))
        why = _shown(d, s, len(PNG_IMG.findall(outputs)), outputs.count("jp-RenderedMarkdown"),
                     bool(ABSENT.search(text_of(outputs)))) if d or s else ""
        if why:
            problems.append(f"cell {k}: {why}")
    return problems
