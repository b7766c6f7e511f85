"""The PDF report's fonts: DejaVu Sans (Debian's fonts-dejavu-core) for its text, then for the characters DejaVu
lacks WenQuanYi Micro Hei (fonts-wqy-microhei: Chinese, Japanese, Korean) and Symbola (fonts-symbola: emoji and
other symbols), so an answer prints as written instead of as boxes or gaps.

reportlab embeds only the glyphs used, but picks no fallback face by itself: every run of characters the
text's face lacks is set in a fallback face by hand (`in_faces`), and a character no face has is printed as its
code point, "[U+1F972]", so a quote never silently loses one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache
from itertools import groupby
from pathlib import Path

from reportlab.pdfbase import pdfmetrics, ttfonts
from reportlab.pdfbase.ttfonts import TTFont

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
# 1.6 MB to download, 5 MB installed (fonts-noto-cjk, the other Debian choice, is ~50 MB and in a format,
# CFF, that reportlab cannot embed). Chinese, Japanese kana and Korean Hangul, in TrueType outlines.
CJK = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
CJK_FACE = "WenQuanYiMicroHei"
# 1.3 MB to download, 3 MB installed: emoji up to Unicode 9 (2016) and most other symbols, in black outlines.
# Noto Color Emoji (fonts-noto-color-emoji, which Chromium uses) has colour bitmaps and no outlines: reportlab
# refuses it ("missing location table"); fonts-noto-core's symbol faces are 12 MB for fewer emoji.
SYMBOLS = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
SYMBOLS_FACE = "Symbola"
_STYLES = ("", "Bold", "Oblique", "BoldOblique")


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
# The faces tried in turn for a character the text's face lacks. DejaVu Sans upright first: its oblique has no
# Arabic (an italic quote of it printed boxes) and its mono no Hebrew; a face tag inside <i> sets it upright.
FALLBACKS = (FACE[""], CJK_FACE, SYMBOLS_FACE)
_FILES = {CJK_FACE: CJK, SYMBOLS_FACE: SYMBOLS}

# A subset's map from its codes back to characters, which copying and searching read.
_CMAP_ENTRY = re.compile(r"^(<[0-9A-F]{2}> )<([0-9A-F]{5,6})>$", re.M)
_reportlab_cmap = ttfonts.makeToUnicodeCMap


def _to_unicode_cmap(fontname: str, subset: list[int]) -> str:
    """reportlab's map from a subset's codes back to characters, a character past U+FFFF (an emoji) written in
    UTF-16 as PDF asks: reportlab writes <1F525>, which readers reject, so the emoji printed but could not be
    copied or searched for."""
    return _CMAP_ENTRY.sub(lambda entry: entry[1] + f"<{chr(int(entry[2], 16)).encode('utf-16-be').hex().upper()}>",
                           _reportlab_cmap(fontname, subset))


ttfonts.makeToUnicodeCMap = _to_unicode_cmap


@cache
def _has(face: str) -> frozenset[int]:
    """The characters a TrueType face can set; every one for a built-in face (Helvetica: no fallback then) and
    none for a fallback face that is not installed."""
    if not _registered(face):
        return frozenset()
    font = pdfmetrics.getFont(face)
    return frozenset(font.face.charToGlyph) if isinstance(font, TTFont) else frozenset(range(0x110000))


@cache
def _sure(face: str) -> frozenset[int]:
    """The characters `face` sets in bold and italic as well: markup around a run switches within its family."""
    styles = [FACE[style] for style in _STYLES] if face == FACE[""] else [face]
    return frozenset.intersection(*map(_has, styles))


@cache
def _registered(face: str) -> bool:
    """Registers a fallback face on first need: reading WenQuanYi's file takes ~0.3 s, which a report in
    scripts DejaVu sets never pays."""
    if face not in _FILES:
        return True
    if not _FILES[face].is_file():
        return False
    pdfmetrics.registerFont(TTFont(face, str(_FILES[face]), subfontIndex=0))
    # Bold or italic markup around a run of it keeps the one face it has.
    pdfmetrics.registerFontFamily(face, normal=face, bold=face, italic=face, boldItalic=face)
    return True


@cache
def _face_of(code: int, face: str) -> str | None:
    """The fallback face a character of text set in `face` prints in: "" for `face` itself (in any style), None
    for no face."""
    if code in _sure(face) or code == 10:  # a line break is layout, not a glyph
        return ""
    return next((fallback for fallback in FALLBACKS if code in _has(fallback)), None)


STAND_IN = re.compile(r"\[U\+[0-9A-F]{4,6}\]")


def stand_in(c: str) -> str:
    """What prints for a character no face has: its code point, so the reader sees one is there and which.
    A format character (a zero-width joiner, a flag's tag letters) or a variation selector shows nothing in
    any rendering, so none prints for it either."""
    if unicodedata.category(c) == "Cf" or unicodedata.name(c, "").startswith("VARIATION SELECTOR"):
        return ""
    return f"[U+{ord(c):04X}]"


def printable(text: str, face: str) -> str:
    """`text` with each character no face has replaced by its stand-in."""
    return "".join(c if _face_of(ord(c), face) is not None else stand_in(c) for c in text)


def in_faces(escaped: str, face: str) -> str:
    """Paragraph markup (already escaped) with each run of characters `face` lacks set in the fallback face
    that has them, and each character none has replaced by its stand-in."""
    sure = _sure(face)
    if all(ord(c) in sure for c in escaped):
        return escaped
    runs = groupby(printable(escaped, face), key=lambda c: _face_of(ord(c), face))
    return "".join(f'<font face="{by}">{text}</font>' if by else text
                   for by, run in runs for text in ["".join(run)])


# Where a line of the mono block breaks, best first. Only after a space (or beside a Chinese, Japanese or Korean
# character or an emoji, between any two of which a line may break): reportlab's Preformatted breaks after the last of
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
    as many as its width takes (a Chinese one, about 1.7), a stand-in as many as its own characters."""
    sure = _sure(face)

    def cost(c: str) -> float:
        return 1.0 if ord(c) in sure else _width(c, _face_of(ord(c), face) or face) / _width("M", face)

    lines: list[str] = []
    for line in printable(text, face).split("\n"):
        line = _shallower(line, width, cost)
        while (cut := _cut(line, width, cost))[1] < len(line):
            lines.append(line[:cut[0]])
            line = line[cut[1]:]
        lines.append(line)
    return "\n".join(lines)


def _shallower(line: str, width: int, cost: Callable[[str], float]) -> str:
    """`line` with its indentation cut to half the width when it is deeper and the line has to wrap: kept, an
    indentation as wide as the line stood on a line of its own, its code under it at the margin, and the block
    ran past the page's margin."""
    code = line.lstrip(" ")
    if len(line) - len(code) <= width // 2 or sum(map(cost, line)) <= width:
        return line
    return " " * (width // 2) + code


def _cut(line: str, width: int, cost: Callable[[str], float]) -> tuple[int, int]:
    """Where `line` breaks: where its first line ends and where the next one starts, both its length when it fits
    in `width`. The spaces it breaks at stay at the line's end as far as they fit (copied, the words stay apart)."""
    used, fits = 0.0, 0
    while fits < len(line) and (used := used + cost(line[fits])) <= width:
        fits += 1
    if fits == len(line):
        return fits, fits

    def wide(at: int) -> bool:  # Chinese, Japanese, Korean or an emoji: a line may break beside any of them
        return at < len(line) and unicodedata.east_asian_width(line[at]) in ("W", "F")

    kept = _kept_together(line)
    stand_ins = [found.span() for found in STAND_IN.finditer(line)]  # each whole on a line, as an emoji is
    inside = {at for start, end in stand_ins for at in range(start + 1, end)}
    beside = {at for span in stand_ins for at in span}

    def space(at: int) -> bool:
        return line[at:at + 1] == " " and at not in kept

    indent = len(line) - len(line.lstrip(" "))  # at most half the width (`_shallower`): some code always follows
    cuts = [c for c in range(fits, indent, -1) if c not in inside]  # the latest first, never inside the indentation
    cut = next((c for c in cuts if space(c - 1) or space(c) or wide(c - 1) or wide(c) or c in beside), None) \
        or next((c for c in cuts if line[c - 1] in NAME_BREAKS), None) or max(fits, 1)
    after = len(line) - len(line[cut:].lstrip(" "))
    return max(cut, min(after, fits)), after


@cache
def _width(c: str, face: str) -> float:
    return pdfmetrics.stringWidth(c, face, 1)
