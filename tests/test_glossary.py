"""docs/glossary.md defines every arm and variant name a reader meets in the README or a figure index
(figures/*/INDEX.md), every arm of lib.society.arms.ARMS, and the methods the README names in passing."""
from __future__ import annotations

import re

import pytest

from lib.core.paths import REPO_ROOT
from lib.society import arms

GLOSSARY = REPO_ROOT / "docs" / "glossary.md"
SHOWN = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "figures").glob("*/INDEX.md"))]
TICKED = re.compile(r"`([^`\s]+)`")
ARM_LIKE = re.compile(r"^[a-z][a-z0-9_]*(@[\w.<>-]+)+$|^baseline_[a-z_]+$")
# the words the README names in passing that a reader must be able to look up
TERMS = ("Holm", "MAP-Elites", "Lexicase selection", "Screened merge", "L(z)/L(x)", "LoraHub in every accuracy row")


def named_arms(text: str) -> set[str]:
    """The arm names ``text`` shows: backticked arm-like tokens (``full@e1``, ``baseline_ties``, a backticked
    arm of :data:`lib.society.arms.SPECS` or a variant of one) and, anywhere, a name of SPECS that cannot be an
    ordinary word (it holds ``_`` or ``@``)."""
    out = set()
    for tok in TICKED.findall(text):
        tok = tok.rstrip(".,:;")
        if "<" in tok:
            continue  # a pattern (`<arm>@<tag>`), not a name
        if ARM_LIKE.match(tok) or tok.split("@", 1)[0] in arms.SPECS:
            out.add(tok)
    for name in arms.SPECS:
        if ("_" in name or "@" in name) and re.search(r"(?<![\w@/])" + re.escape(name) + r"(?![\w@])", text):
            out.add(name)
    return out


def _pattern(token: str) -> re.Pattern:
    """A glossary token as a pattern: each ``<placeholder>`` stands for any value (``@k<k>`` matches ``@k0.25``)."""
    parts = re.split(r"<[^>]+>", token)
    return re.compile("^" + "[^@]+".join(map(re.escape, parts)) + "$")


def defined_tokens(glossary: str) -> list[re.Pattern]:
    """The names the glossary defines: every backticked token of it, as a pattern; a token that is all
    placeholders (``<arm>@<tag>``: the notation, not a name) defines nothing."""
    toks = [t.rstrip(".,:;") for t in TICKED.findall(glossary)]
    return [_pattern(t) for t in toks if re.search(r"\w", re.sub(r"<[^>]+>", "", t))]


def undefined(names, glossary: str) -> list[str]:
    """The ``names`` the glossary lacks. A variant ``<arm>@<tag>…`` is defined when the glossary names it whole
    (``full@matched``, ``baseline_distill_all@k<k>``), or names its base arm and each of its ``@tag`` parts
    (``full@g0.25``: ``full`` and ``@g<g>``)."""
    pats = defined_tokens(glossary)

    def known(tok: str) -> bool:
        return any(p.match(tok) for p in pats)

    out = []
    for name in sorted(set(names)):
        base, *tags = name.split("@")
        if known(name) or (known(base) and tags and all(known("@" + t) for t in tags)):
            continue
        out.append(name)
    return out


@pytest.mark.parametrize("page", SHOWN, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_arm_a_page_names_is_in_the_glossary(page):
    missing = undefined(named_arms(page.read_text(encoding="utf-8")), GLOSSARY.read_text(encoding="utf-8"))
    assert not missing, f"{page.relative_to(REPO_ROOT)} names arms docs/glossary.md does not define: {missing}"


def test_every_arm_of_the_table_is_in_the_glossary():
    missing = undefined(arms.SPECS, GLOSSARY.read_text(encoding="utf-8"))
    assert not missing, f"lib.society.arms.ARMS declares arms docs/glossary.md does not define: {missing}"


def test_the_terms_named_in_passing_are_defined():
    text = GLOSSARY.read_text(encoding="utf-8")
    bold = {b.strip('"“”') for b in re.findall(r"\*\*([^*]+)\*\*", text)}
    assert not [t for t in TERMS if t not in bold], [t for t in TERMS if t not in bold]


def test_the_check_flags_an_arm_the_glossary_lacks():
    """Planted: a page naming arms against a glossary that defines only some of them."""
    page = ("`full@g0.25` beats `no_grounding`; `baseline_multitask@k2` and `continue@higher`, and "
            "full@seed_budget in prose; `<arm>@<tag>` is a pattern, `scale` a word")
    assert named_arms(page) == {"full@g0.25", "no_grounding", "baseline_multitask@k2", "continue@higher",
                                "full@seed_budget"}
    glossary = "**`full`** the reference; **`@g<g>`** grounding; **`baseline_multitask@k<k>`** the frontier"
    assert undefined(named_arms(page), glossary) == ["continue@higher", "full@seed_budget", "no_grounding"]
    assert undefined(["full@g0.25@e1"], glossary) == ["full@g0.25@e1"]  # @e<n> undefined there
    assert undefined(["full@g0.25@e1"], glossary + " `@e<n>`") == []
    assert undefined(["full@matched"], glossary + " `<arm>@<tag>` is a variant") == ["full@matched"]


def test_every_tool_mutation_and_program_search_method_is_in_the_glossary():
    """The README's tool-mutation arms (``sgd``, ``mutate_promote``, ``random_promote``) and program-search methods
    are defined; planted: a glossary without the tool-mutation entry lacks all three."""
    from lib.program_search.figures import METHODS as METHOD_ORDER
    from lib.tool_mutation.figures import ARM_ORDER
    text = GLOSSARY.read_text(encoding="utf-8")
    assert undefined([*ARM_ORDER, *METHOD_ORDER], text) == []
    without = re.sub(r"- \*\*Tool-mutation arms\*\*.*?(?=\n- \*\*)", "", text, flags=re.S)
    assert undefined(ARM_ORDER, without) == sorted(ARM_ORDER)
