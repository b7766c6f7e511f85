"""Where the printed report breaks its lines: a list item's wrapped lines start under its text, and a name
(`torch.nn.functional.cross_entropy`) stays whole on a line of the PDF's answers and code."""

from __future__ import annotations

import io
from collections import defaultdict

import pytest

from app.reports import build_report, render
from app.reports.pdf_fonts import DEJAVU, wrapped
from knowledge.loader import bank_index
from tests.test_reports import evaluation, point, session, session_turns, turn

NAMES = ["optimizer.zero_grad()", "torch.nn.functional.cross_entropy", "x.requires_grad_()", "CustomLinear(5, 3)",
         "(3, 5)", "torch.nn.utils.clip_grad_norm_"]
# As a candidate types it: names, Greek, maths and Chinese on long lines the PDF's mono block wraps at 95 characters.
SAID = ("You call optimizer.zero_grad() before loss.backward() and then torch.nn.functional.cross_entropy takes raw "
        "logits; x.requires_grad_() flips the flag in place and CustomLinear(5, 3) holds a weight of shape (3, 5) "
        "whose gradient ∂L/∂w is σ-scaled, as 梯度累积 explains for torch.nn.utils.clip_grad_norm_ too.")


@pytest.fixture(scope="module")
def bank():
    return bank_index()


def _pdf_lines(body: bytes) -> list[tuple[int, float, float, str]]:
    """Each piece of text the PDF draws as (page, x, y, text); pieces of one line share its y."""
    pypdf = pytest.importorskip("pypdf")
    drawn: list[tuple[int, float, float, str]] = []
    for number, page in enumerate(pypdf.PdfReader(io.BytesIO(body)).pages):
        page.extract_text(visitor_text=lambda text, cm, tm, _font, _size, n=number: drawn.append(
            (n, round(tm[4] * cm[0] + cm[4], 1), round(tm[5] * cm[3] + cm[5], 1), text)) if text.strip() else None)
    return drawn


def _rows(drawn: list[tuple[int, float, float, str]]) -> list[list[tuple[float, str]]]:
    """The pieces drawn as lines, top to bottom, page by page: each line its pieces' (x, text)."""
    lines: dict[tuple[int, float], list[tuple[float, str]]] = defaultdict(list)
    for page, x, y, text in drawn:
        lines[(page, -y)].append((x, text))
    return [pieces for _, pieces in sorted(lines.items())]


def test_a_study_plan_items_wrapped_lines_start_under_its_text_not_under_its_number(bank) -> None:
    """"1. Q3. How do you save a trained PyTorch model ..." went on at the margin, under its "1.", and its reason
    and links stood at the level of the items, as if they were items of their own."""
    scores = {"autograd-basics": 3.8, "relu-autograd-function": 2.5, "save-and-load-models": 0.0}
    built = build_report(session=session(scores), turns=session_turns(), bank=bank)
    rows = _rows(_pdf_lines(render(built, "pdf")[0]))
    rows = rows[max(n for n, pieces in enumerate(rows) if pieces[0][1].startswith("Study plan")):]
    number = next(n for n, pieces in enumerate(rows) if pieces[0][1].strip() == "1.")
    item_x = rows[number][1][0]  # where "Q3. How do you save ..." starts, right of its number
    assert rows[number][0][0] < item_x and rows[number][1][1].startswith("Q3. How do you save")
    assert rows[number + 1][0][0] == item_x, rows[number + 1]  # the question's words, wrapped
    assert rows[number + 2][0][1].startswith("Work on:") and rows[number + 2][0][0] == item_x
    link = rows[number + 3]
    assert link[0][0] > item_x and link[1][1].startswith("Study next:")  # a bullet under the item, then its text
    assert rows[number + 4][0][0] == link[1][0]  # the link's words, wrapped, under its text


def test_a_quoted_points_wrapped_lines_start_under_its_text(bank) -> None:
    """A point and the long answer it quotes, five lines of one bullet: each goes on under its first word."""
    turns = [turn(1, "autograd-basics", "autograd", answer_text=SAID,
                  evaluation=evaluation(4.0, [point("records-graph", "covered", SAID)]))]
    built = build_report(session=session({"autograd-basics": 4.0}), turns=turns, bank=bank)
    rows = _rows(_pdf_lines(render(built, "pdf")[0]))
    first = next(n for n, pieces in enumerate(rows) if pieces[1:] and pieces[1][1].startswith("The answer states"))
    last = next(n for n in range(first, len(rows)) if "too.\u201d" in rows[n][-1][1])
    text_x = rows[first][1][0]
    assert rows[first][0][0] < text_x and last - first >= 2
    assert [pieces[0][0] for pieces in rows[first + 1:last + 1]] == [text_x] * (last - first)
    # reportlab breaks a paragraph at its spaces: the shape went "(3," / "5)"; a name is on one line
    lines = ["".join(text for _, text in pieces).replace("\u00a0", " ") for pieces in rows[first:last + 1]]
    assert [name for name in NAMES if not any(name in line for line in lines)] == [], lines


def test_a_pdf_keeps_each_name_whole_on_a_line_of_an_answer_as_written(bank) -> None:
    """reportlab's Preformatted broke a long line after the last of "[{( ,.;:/\\-" that fit, so the answer read
    "... and then torch.nn.functional." / "cross_entropy takes ...", "CustomLinear(5," / "3)", and a line counted
    full by its Chinese broke mid-word: "... explains for tor" / "ch." / "nn.utils.clip_grad_norm_ too."."""
    pypdf = pytest.importorskip("pypdf")
    if not (DEJAVU / "DejaVuSansMono.ttf").is_file():
        pytest.skip("fonts-dejavu-core is not installed (make test installs it)")
    turns = [turn(1, "autograd-basics", "autograd", answer_text=SAID, evaluation=evaluation(3.0, []))]
    built = build_report(session=session({"autograd-basics": 3.0}), turns=turns, bank=bank)
    text = "\n".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0])).pages)
    answer = [line for line in text[text.index("Your answer"):text.index("Model answer")].splitlines()[1:] if line]
    assert "".join(answer).replace(" ", "") == SAID.replace(" ", "")  # every character, in order
    for name in NAMES:
        assert any(name in line for line in answer), (name, answer)
    assert "梯度累积" in SAID and "σ-scaled" in " ".join(answer)


def test_a_name_longer_than_a_line_breaks_after_its_dots_or_underscores_and_indentation_stays_whole() -> None:
    name = "torch.autograd.functional.jacobian_vector_product_with_a_name_far_too_long_for_any_printed_line_of_code"
    lines = wrapped(f"        y = {name}(x, v)", 60, "DejaVuSansMono").split("\n")
    assert lines[0] == "        y = " and "".join(lines[1:]) == f"{name}(x, v)"
    assert all(len(line) <= 60 and line[-1] in "._(" for line in lines[1:-1]), lines
    assert wrapped("    " + "x" * 70, 60, "DejaVuSansMono").split("\n") == ["    " + "x" * 56, "x" * 14]
    chinese = "梯度" * 60 + " and then some words"  # between two Chinese characters a line may break anywhere
    assert "".join(wrapped(chinese, 95, "DejaVuSansMono").split("\n")) == chinese


def test_a_model_answers_inline_code_is_set_in_the_mono_face_without_its_backticks_in_the_pdf(bank) -> None:
    """gru-cell-from-scratch's prose names `weight_ih`: the PDF printed the backticks in the body face, where the
    HTML sets the name in <code>."""
    pypdf = pytest.importorskip("pypdf")
    from tests.test_reports import _model_answer_report

    pdf = pypdf.PdfReader(io.BytesIO(render(_model_answer_report(bank, "gru-cell-from-scratch"), "pdf")[0]))
    runs: list[tuple[str, str]] = []
    for page in pdf.pages:
        page.extract_text(visitor_text=lambda text, _cm, _tm, font, _size: runs.append(
            (text, str((font or {}).get("/BaseFont", "")))))
    after = runs[next(n for n, (text, _) in enumerate(runs) if "Model answer" in text):]
    prose = after[:next(n for n, (text, _) in enumerate(after) if "import torch" in text)]
    assert not any("`" in text for text, _ in prose), prose
    names = [font for text, font in prose if text.strip() in ("weight_ih", "weight_hh")]
    assert len(names) == 2 and all("Mono" in font or "Courier" in font for font in names), prose
    assert "Mono" not in next(font for text, font in prose if "Keep the input-to-hidden" in text)


@pytest.mark.parametrize(("question_id", "words"), [
    ("timing-pytorch-code", ["profile(activities=[ProfilerActivity.CPU,", "ProfilerActivity.CUDA])"]),
    ("overfitting", ['tf.keras.callbacks.EarlyStopping(monitor="val_loss",', "restore_best_weights=True)"]),
])
def test_an_inline_code_span_longer_than_half_a_line_breaks_at_its_spaces_not_inside_a_name(bank, question_id, words):
    """Review s54: every space of a model answer's code span was a no-break space, so a span longer than a line was
    one word that reportlab cut where the line was full: "ProfilerActivit" / "y.CUDA]) as prof:",
    'EarlyStopping(monitor="val_loss"' / ', patience=3, ...'. A short span still stays on one line."""
    from tests.test_reports import _model_answer_report

    if not (DEJAVU / "DejaVuSansMono.ttf").is_file():
        pytest.skip("fonts-dejavu-core is not installed (make test installs it)")
    rows = _rows(_pdf_lines(render(_model_answer_report(bank, question_id), "pdf")[0]))
    lines = ["".join(text for _, text in pieces).replace("\u00a0", " ") for pieces in rows]
    lines = lines[next(n for n, line in enumerate(lines) if "Model answer" in line):]
    assert [word for word in words if not any(word in line.split() for line in lines)] == [], lines
    from app.reports.pdf_doc import _kept_whole

    assert _kept_whole("torch.load(path, map_location=device)") == "torch.load(path,\u00a0map_location=device)"
    assert _kept_whole("sum(p.numel() for p in model.parameters() if p.requires_grad and x.shape == (3, 5))") == \
        "sum(p.numel() for p in model.parameters() if p.requires_grad and x.shape == (3,\u00a05))"


def test_an_indentation_wider_than_a_line_is_cut_to_half_a_line_and_no_line_is_wider_than_the_width() -> None:
    """Review s54: 120 spaces of indentation were a line of their own, wider than the block (its grey box ran past
    the page's margin), and the code went on at the margin under it; spaces at a break went on past the width."""
    code = "deeply_indented_beyond_the_width = 1"
    assert wrapped(" " * 120 + code, 95, "DejaVuSansMono").split("\n") == [" " * 47 + code]
    assert wrapped(" " * 120, 95, "DejaVuSansMono").split("\n") == [" " * 47]
    lines = wrapped(" " * 80 + code + " and" * 20, 95, "DejaVuSansMono").split("\n")
    assert lines[0].startswith(" " * 47 + code) and all(line.strip() for line in lines), lines
    lines = wrapped("x" + " " * 200 + "y = 1", 95, "DejaVuSansMono").split("\n")
    assert lines == ["x" + " " * 94, "y = 1"], [len(line) for line in lines]
    assert wrapped(" " * 40 + "x = 1", 95, "DejaVuSansMono") == " " * 40 + "x = 1"  # a line that fits, as written


def test_a_study_plan_of_ten_items_or_more_starts_each_items_text_where_its_lines_under_it_start(bank) -> None:
    """Review s54: "10." and the gap after it were wider than the number's slot, so item 10's first line started
    4 points right of its wrapped lines and of its "Work on" line; items 1-9 lined up."""
    ids = [qid for qid in bank if bank[qid].code is None][:12]
    turns = [turn(n, qid, bank[qid].topic, answer_text="Not sure.", evaluation=evaluation(0.5, []))
             for n, qid in enumerate(ids, start=1)]
    built = build_report(session=session(dict.fromkeys(ids, 0.5)), turns=turns, bank=bank)
    rows = _rows(_pdf_lines(render(built, "pdf")[0]))
    rows = rows[max(n for n, pieces in enumerate(rows) if pieces[0][1].startswith("Study plan")):]
    numbered = {pieces[0][1].strip(): n for n, pieces in enumerate(rows) if pieces[0][1].strip() in
                [f"{number}." for number in range(1, 13)]}
    assert len(numbered) == 12, rows
    for number, at in numbered.items():
        work_on = next(pieces for pieces in rows[at:] if pieces[0][1].startswith("Work on:"))
        assert rows[at][1][0] == work_on[0][0], (number, rows[at], work_on)
