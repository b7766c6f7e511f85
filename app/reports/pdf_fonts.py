"""The PDF report's fonts: DejaVu Sans (Debian's fonts-dejavu-core) for its text, and WenQuanYi Micro Hei
(fonts-wqy-microhei) for the characters DejaVu lacks, so an answer written in Chinese, Japanese or Korean
prints as written instead of as boxes.

reportlab embeds only the glyphs used, but picks no fallback face by itself: every run of characters the
text's face lacks is set in the fallback face by hand (`in_faces`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from itertools import groupby
from pathlib import Path

from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
# 1.6 MB to download, 5 MB installed (fonts-noto-cjk, the other Debian choice, is ~50 MB and in a format,
# CFF, that reportlab cannot embed). Chinese, Japanese kana and Korean Hangul, in TrueType outlines.
CJK = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
CJK_FACE = "WenQuanYiMicroHei"


def font_faces() -> dict[str, str]:
    """The faces by role: DejaVu Sans's four and its mono, registered with reportlab (it embeds the glyphs
    used), or the built-in Helvetica's and Courier where the font is not installed."""
    faces = {"": "DejaVuSans", "Bold": "DejaVuSans-Bold", "Oblique": "DejaVuSans-Oblique",
             "BoldOblique": "DejaVuSans-BoldOblique"}
    if not all((DEJAVU / f"{name}.ttf").is_file() for name in faces.values()):
        return {**{role: "Helvetica" + (f"-{role}" if role else "") for role in faces}, "Mono": "Courier"}
    for name in faces.values():
        pdfmetrics.registerFont(TTFont(name, str(DEJAVU / f"{name}.ttf")))
    if (DEJAVU / "DejaVuSansMono.ttf").is_file():  # answers and code as written, indentation kept
        pdfmetrics.registerFont(TTFont("DejaVuSansMono", str(DEJAVU / "DejaVuSansMono.ttf")))
        faces["Mono"] = "DejaVuSansMono"
    # <b> and <i> in a paragraph pick their face from the family.
    pdfmetrics.registerFontFamily(faces[""], normal=faces[""], bold=faces["Bold"], italic=faces["Oblique"],
                                  boldItalic=faces["BoldOblique"])
    return faces


FACE = font_faces()


@cache
def _has(face: str) -> frozenset[int]:
    """The characters a TrueType face can set; empty for a built-in face (Helvetica: no fallback then)."""
    font = pdfmetrics.getFont(face)
    return frozenset(font.face.charToGlyph) if isinstance(font, TTFont) else frozenset(range(0x110000))


@cache
def _fallback() -> bool:
    """Registers the fallback face on first need: reading its file takes ~0.3 s, which a report in scripts
    DejaVu sets never pays."""
    if not CJK.is_file():
        return False
    pdfmetrics.registerFont(TTFont(CJK_FACE, str(CJK), subfontIndex=0))
    # Bold or italic markup around a run of it keeps the one face it has.
    pdfmetrics.registerFontFamily(CJK_FACE, normal=CJK_FACE, bold=CJK_FACE, italic=CJK_FACE, boldItalic=CJK_FACE)
    return True


def in_faces(escaped: str, face: str) -> str:
    """Paragraph markup (already escaped) with each run of characters `face` lacks set in the fallback face."""
    has = _has(face)
    if all(ord(c) in has for c in escaped) or not _fallback():
        return escaped
    return "".join(text if known else f'<font face="{CJK_FACE}">{text}</font>'
                   for known, run in groupby(escaped, key=lambda c: ord(c) in has or c == "\n")
                   for text in ["".join(run)])


# Where a line of the mono block breaks, best first. Only after a space (or beside a Chinese, Japanese or Korean
# character, between any two of which a line may break): reportlab's Preformatted breaks after the last of
# "[{( ,.;:/\\-" that fits, so `torch.nn.functional.cross_entropy` broke after "functional." though a space came
# earlier, and a line counted full by its wide characters broke mid-letter ("tor" / "ch"). A name longer than a
# whole line breaks after its last dot, underscore, bracket or comma that fits; only a run of none of those is cut
# where the line is full.
NAME_BREAKS = "._([{,;:/\\-"
# A short bracketed group, a call's arguments or a shape (`CustomLinear(5, 3)`, `(3, 5)`), reads as one name: the
# spaces after its commas are no place to break a line, in the mono block or in a paragraph.
SHORT_GROUP = re.compile(r"[(\[][^()\[\]\s][^()\[\]]{0,18}[)\]]")


def unbroken(text: str) -> str:
    """Paragraph text whose short bracketed groups reportlab keeps on one line: it breaks at spaces but never at a
    no-break space."""
    return SHORT_GROUP.sub(lambda group: group[0].replace(", ", ",\u00a0"), text)


def _kept_together(line: str) -> set[int]:
    """Where the spaces after the commas of `line`'s short bracketed groups are."""
    return {group.start() + at for group in SHORT_GROUP.finditer(line) for at, c in enumerate(group[0])
            if c == " " and group[0][at - 1] == ","}


def wrapped(text: str, width: int, face: str) -> str:
    """Lines of at most `width` characters of the mono face, broken between words; a fallback character counts
    as many as its width takes (a Chinese one, about 1.7)."""
    has = _has(face)

    def cost(c: str) -> float:
        return 1.0 if ord(c) in has or not _fallback() else _width(c) / _width("M", face)

    lines: list[str] = []
    for line in text.split("\n"):
        while (cut := _cut(line, width, cost, has)) < len(line):
            lines.append(line[:cut])
            line = line[cut:]
        lines.append(line)
    return "\n".join(lines)


def _cut(line: str, width: int, cost: Callable[[str], float], has: frozenset[int]) -> int:
    """Where `line` breaks: its length when it fits in `width`; a space it breaks at stays at the line's end."""
    used, fits = 0.0, 0
    while fits < len(line) and (used := used + cost(line[fits])) <= width:
        fits += 1
    if fits == len(line):
        return fits

    def fallback(at: int) -> bool:  # a character the face lacks: Chinese, Japanese, Korean
        return at < len(line) and ord(line[at]) not in has

    kept = _kept_together(line)

    def space(at: int) -> bool:
        return line[at:at + 1] == " " and at not in kept

    cuts = range(fits, len(line) - len(line.lstrip(" ")), -1)  # the latest first, never inside the indentation
    cut = next((c for c in cuts if space(c - 1) or space(c) or fallback(c - 1) or fallback(c)), None) \
        or next((c for c in cuts if line[c - 1] in NAME_BREAKS), None) or max(fits, 1)
    return len(line) - len(line[cut:].lstrip(" "))


@cache
def _width(c: str, face: str = CJK_FACE) -> float:
    return pdfmetrics.stringWidth(c, face, 1)
