"""Every character of a candidate's answer prints in the PDF, in a face that has it, or as its code point: an emoji
was silently dropped from the transcript ("an emoji   and RTL"), and pypdf read the gap as "\\x00"."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.reports import build_report, pdf_fonts, render
from app.reports.pdf_fonts import DEJAVU, SYMBOLS, SYMBOLS_FACE, printable, wrapped
from knowledge.loader import bank_index
from tests.test_reports import _pdf_quoting, evaluation, point, session, turn

MONO = "DejaVuSansMono"
MELTING = "\U0001FAE0"  # Unicode 14 (2021): newer than Symbola's emoji, so no face has it


@pytest.fixture(scope="module")
def bank():
    return bank_index()


@pytest.fixture(autouse=True)
def dejavu() -> None:
    if not (DEJAVU / "DejaVuSans.ttf").is_file():
        pytest.skip("fonts-dejavu-core is not installed (make test installs it)")


@pytest.fixture
def symbola() -> None:
    if not SYMBOLS.is_file():
        pytest.skip("fonts-symbola is not installed (make test installs it)")


def _faces(reader) -> set[str]:
    return {str(font["/BaseFont"]) for page in reader.pages
            for font in page["/Resources"]["/Font"].values() for font in [font.get_object()]}


def test_an_emoji_and_other_symbols_print_as_written_in_symbola(bank, symbola) -> None:
    pypdf = pytest.importorskip("pypdf")
    said = "The loss fell 🔥 once I masked the padding ✅ 👍 and ♞ ⌘ 𝓕 still print"
    reader, text = _pdf_quoting(bank, said, pypdf)
    assert text.count(said) == 2, text  # quoted under the question (italic) and in the transcript (mono)
    assert "\x00" not in text
    assert any(SYMBOLS_FACE in face for face in _faces(reader)), _faces(reader)


def test_a_character_no_face_has_prints_as_its_code_point(bank) -> None:
    """A newer emoji than Symbola's, or a control character: its code point, never a gap. Holds without Symbola
    too, where every emoji prints so."""
    pypdf = pytest.importorskip("pypdf")
    said = f"It melts {MELTING} under load, bell \x07 rang"
    assert printable(said, MONO) == "It melts [U+1FAE0] under load, bell [U+0007] rang"
    _, text = _pdf_quoting(bank, said, pypdf)
    assert text.count("It melts [U+1FAE0] under load") == 2, text
    assert "\x00" not in text


def test_right_to_left_letters_print_in_an_italic_quote_and_in_the_transcript(bank) -> None:
    """DejaVu's oblique has no Arabic (an italic quote of it printed boxes) and its mono no Hebrew (the transcript
    dropped it): each is set upright in DejaVu Sans. reportlab does no bidi: the letters run left to right."""
    pypdf = pytest.importorskip("pypdf")
    hebrew, arabic = "שלום", "مرحبا"
    _, text = _pdf_quoting(bank, f"softmax {hebrew} and {arabic} end", pypdf)
    assert "\x00" not in text, text
    for word in (hebrew, arabic):  # pypdf reads a right-to-left run backwards: either order
        assert text.count(word) + text.count(word[::-1]) == 2, (word, text)


def test_a_tab_or_a_windows_line_end_in_code_prints_as_space_and_a_line_end(bank) -> None:
    pypdf = pytest.importorskip("pypdf")
    code = "def f(x):\r\n\tif x:\r\n\t\treturn x  # 🔥\r\n"
    turns = [turn(1, "autograd-basics", "autograd", answer_text="My code.", answer_code=code,
                  evaluation=evaluation(3.0, [point("records-graph", "covered", "My code.")]))]
    built = build_report(session=session({"autograd-basics": 3.0}), turns=turns, bank=bank)
    text = "".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0])).pages)
    assert "def f(x):\n    if x:\n        return x  # " in text and "\x00" not in text, text


def test_a_line_of_emoji_wraps_within_the_mono_block(symbola) -> None:
    """An emoji is about 1.4 of the mono face's characters wide; a stand-in as wide as its own characters."""
    def width(line: str) -> float:
        from reportlab.pdfbase.pdfmetrics import stringWidth
        return sum(stringWidth(c, MONO if ord(c) < 0x2000 else SYMBOLS_FACE, 1) for c in line) \
            / stringWidth("M", MONO, 1)

    line = "y = x * 2  " + "🔥" * 60 + " end"
    lines = wrapped(line, 95, MONO).split("\n")
    assert "".join(lines) == line and len(lines) == 2 and all(width(part) <= 95 for part in lines), lines
    assert wrapped("x = 1  # " + MELTING * 12, 95, MONO).split("\n") == \
        ["x = 1  # " + "[U+1FAE0]" * 9, "[U+1FAE0]" * 3]


@pytest.fixture
def symbola_absent(tmp_path: Path) -> Iterator[None]:
    """The fonts as on a machine without fonts-symbola: the module's caches forget the face before and after."""
    caches = (pdf_fonts._registered, pdf_fonts._has, pdf_fonts._sure, pdf_fonts._face_of)
    kept = pdf_fonts._FILES[SYMBOLS_FACE]
    pdf_fonts._FILES[SYMBOLS_FACE] = tmp_path / "Symbola_hint.ttf"
    for cached in caches:
        cached.cache_clear()
    yield
    pdf_fonts._FILES[SYMBOLS_FACE] = kept
    for cached in caches:
        cached.cache_clear()


def test_without_symbola_an_emoji_prints_as_its_code_point(bank, symbola_absent) -> None:
    pypdf = pytest.importorskip("pypdf")
    assert printable("hot 🔥 σ 梯度", MONO).startswith("hot [U+1F525] σ")
    _, text = _pdf_quoting(bank, "It is hot 🔥 today", pypdf)
    assert text.count("It is hot [U+1F525] today") == 2, text
