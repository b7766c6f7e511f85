"""Raw-document parsing: the five seed documents exactly, and one small synthetic document per format."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ingest.documents import DocumentError, ParsedQuestion, parse_document, parse_file
from ingest.formats import classify_heading, is_question_like, looks_like_title, section_slug

SEEDS = Path(__file__).parents[1].parent / "shared" / "seeds"
SEED_COUNTS = {
    "000_57e8f2a1b364a0e7.txt": 15,
    "001_9b9cc9a2aec78816.txt": 20,
    "002_a8e96841d809bc4a.txt": 55,
    "003_3b896f906c2e9aa0.txt": 30,
    "004_bb08e4be5dc5a30a.txt": 37,
}
SECTIONED_REFS = (
    [f"beginner-pytorch#{n}" for n in range(1, 6)]
    + [f"beginner-tensorflow#{n}" for n in range(1, 6)]
    + [f"intermediate-pytorch#{n}" for n in range(1, 5)]
    + [f"intermediate-tensorflow#{n}" for n in range(1, 5)]
    + [f"advanced-pytorch#{n}" for n in range(1, 5)]
    + [f"advanced-tensorflow#{n}" for n in range(1, 5)]
    + ["comparison#1", "real-interviews#1", "real-interviews#2", "real-interviews#3"]
)
# Seed 001 tags every question: ⚡ Easy = 1, 📊 Medium = 2, 🔥 Hard = 3.
SEED_001_DIFFICULTY = [1, 2, 3, 2, 3, 2, 1, 2, 1, 3, 3, 2, 1, 2, 3, 2, 2, 3, 2, 3]


def _seed(name: str) -> list[ParsedQuestion]:
    if not SEEDS.is_dir():
        pytest.skip(f"seed documents not found at {SEEDS}")
    return parse_file(SEEDS / name)


def _by_ref(name: str) -> dict[str, ParsedQuestion]:
    return {q.ref: q for q in _seed(name)}


# --- the seeds -------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "count"), SEED_COUNTS.items())
def test_seed_question_counts(name: str, count: int) -> None:
    questions = _seed(name)
    assert len(questions) == count
    assert {q.source for q in questions} == {name}


def test_seed_total() -> None:
    assert sum(len(_seed(name)) for name in SEED_COUNTS) == 157


@pytest.mark.parametrize("name", [n for n in SEED_COUNTS if not n.startswith("003")])
def test_globally_numbered_seeds_use_hash_refs(name: str) -> None:
    questions = _seed(name)
    assert [q.ref for q in questions] == [f"#{n}" for n in range(1, SEED_COUNTS[name] + 1)]
    assert [q.number for q in questions] == list(range(1, SEED_COUNTS[name] + 1))


def test_sectioned_seed_refs_carry_section_slugs() -> None:
    questions = _seed("003_3b896f906c2e9aa0.txt")
    assert [q.ref for q in questions] == SECTIONED_REFS
    for q in questions:
        assert q.ref.split("#")[0] == q.section


@pytest.mark.parametrize("name", SEED_COUNTS)
def test_seed_texts_are_clean_single_lines(name: str) -> None:
    for q in _seed(name):
        assert q.text and q.text == " ".join(q.text.split())
        assert "Answer" not in q.text and not q.text.endswith(("Easy", "Medium", "Hard"))
        assert is_question_like(q.text)


def test_seed_001_jammed_numbers_and_tags() -> None:
    questions = _by_ref("001_9b9cc9a2aec78816.txt")
    assert questions["#1"].text == "What is PyTorch?"
    assert questions["#3"].text == "How does autograd work?"
    assert questions["#5"].text == "nn.Module vs nn.functional?"
    assert questions["#6"].text == "Explain torch.utils.data.Dataset and DataLoader."
    assert questions["#13"].text == "When to use torch.no_grad()?"
    assert [q.difficulty for q in questions.values()] == SEED_001_DIFFICULTY


def test_seed_001_answers_stop_where_the_next_question_starts() -> None:
    questions = _by_ref("001_9b9cc9a2aec78816.txt")
    assert questions["#2"].answer.endswith("b = t.numpy()")
    assert questions["#3"].answer.startswith("autograd records operations")
    assert questions["#3"].answer.endswith("y.backward() stores 2x in x.grad.")
    assert "Cheat Sheet" not in questions["#20"].answer


def test_seed_003_wrapped_questions() -> None:
    questions = _by_ref("003_3b896f906c2e9aa0.txt")
    assert questions["intermediate-pytorch#2"].text == "Explain model.train() vs model.eval()"
    assert questions["intermediate-pytorch#4"].text == "What’s the purpose of torch.nn.Module?"
    assert questions["intermediate-tensorflow#1"].text == "How does tf.data.Dataset work?"
    assert questions["intermediate-pytorch#2"].answer.startswith("These modes control")


def test_seed_003_comparison_and_real_interview_tasks() -> None:
    questions = _by_ref("003_3b896f906c2e9aa0.txt")
    comparison = questions["comparison#1"]
    assert comparison.text == "PyTorch vs TensorFlow – Which One Should You Pick?"
    assert comparison.number is None and "Best Answer" in comparison.answer
    assert questions["real-interviews#1"].text == (
        "Build a ResNet-like model in PyTorch and deploy with TorchServe."
    )
    assert questions["real-interviews#2"].text.startswith("Write a custom training loop")
    assert questions["real-interviews#3"].text == "Explain how you’d deploy a model trained on TPUs."


def test_seed_003_skips_faqs_tips_and_resources() -> None:
    texts = {q.text for q in _seed("003_3b896f906c2e9aa0.txt")}
    assert "Do I need to know both PyTorch and TensorFlow?" not in texts
    assert "Which library is used more in industry?" not in texts
    assert not any(t.startswith(("Customize Your Prep", "Build Projects")) for t in texts)


def test_seed_003_difficulty_from_section_names() -> None:
    expected = {"beginner": 1, "intermediate": 2, "advanced": 3, "comparison": None, "real": None}
    for q in _seed("003_3b896f906c2e9aa0.txt"):
        assert q.section is not None
        assert q.difficulty == expected[q.section.split("-")[0]], q.ref


def test_seed_002_questions_in_code_boxes_and_section_difficulty() -> None:
    questions = _seed("002_a8e96841d809bc4a.txt")
    assert questions[0].text == "What is a tensor in PyTorch? How is it different from a NumPy array?"
    assert questions[-1].text == "Explain gradient checkpointing and its trade-offs."
    difficulties = [q.difficulty for q in questions]
    assert difficulties == [1] * 15 + [2] * 18 + [3] * 22
    assert all(q.answer == "" for q in questions)


def test_seed_000_bullet_numbers_and_answers() -> None:
    questions = _by_ref("000_57e8f2a1b364a0e7.txt")
    assert questions["#1"].text.startswith("What is PyTorch and how does it differ")
    assert questions["#1"].answer.startswith("PyTorch, a product of Facebook")
    assert "When to Choose PyTorch" in questions["#1"].answer
    assert "Neural Network Design" not in questions["#7"].answer
    assert questions["#15"].answer == ""  # the page footer after it is not an answer
    assert all(q.difficulty is None for q in questions.values())


def test_seed_004_answers_end_before_conclusion() -> None:
    questions = _by_ref("004_bb08e4be5dc5a30a.txt")
    assert questions["#37"].text == "How does TensorFlow handle distributed training?"
    assert questions["#37"].answer.startswith("In TensorFlow, distributed training")
    assert "Conclusion" not in questions["#37"].answer
    assert "Explanation:" in questions["#1"].answer


@pytest.mark.parametrize("name", SEED_COUNTS)
def test_seed_refs_are_unique(name: str) -> None:
    refs = [q.ref for q in _seed(name)]
    assert len(refs) == len(set(refs))


# --- synthetic documents, one per format ---------------------------------------------------


def _parse(text: str) -> list[ParsedQuestion]:
    return parse_document(text, source="doc.md")


def test_numbered_list_with_answers() -> None:
    questions = _parse(
        "Some intro text.\n\n1. What is a tensor?\n\nAn n-dimensional array.\n\n"
        "2. How do you create one?\n\nWith torch.tensor().\n"
    )
    assert [(q.ref, q.number, q.text, q.answer) for q in questions] == [
        ("#1", 1, "What is a tensor?", "An n-dimensional array."),
        ("#2", 2, "How do you create one?", "With torch.tensor()."),
    ]
    assert questions[0].source == "doc.md" and questions[0].section is None


def test_bullet_number_on_its_own_line_with_answer_section() -> None:
    doc = (
        "Fundamentals\n\n  • 1.\n\n    What is autograd?\n\n    Answer:\n\n    It records operations.\n\n"
        "    It replays them backwards.\n\n  • 2.\n\n    Explain zero_grad().\n\n    Answer:\n\n"
        "Unlock more questions\n\nSign up today.\n"
    )
    questions = _parse(doc)
    assert [q.text for q in questions] == ["What is autograd?", "Explain zero_grad()."]
    assert questions[0].answer == "It records operations.\n\nIt replays them backwards."
    assert questions[1].answer == ""  # the outdented footer is not part of it


def test_markdown_headings_fences_and_section_difficulty() -> None:
    doc = (
        "# PyTorch Interview Questions\n\n## Easy Questions\n\n1. What is a tensor?\n\n"
        "```python\n3. What is this? (code, not a question)\nx = torch.zeros(3)\n```\n\n"
        "```\n2. How do you move a tensor to the GPU?\n```\n\n"
        "## Hard Questions\n\n3. Explain autograd internals.\n\n---\n\nSupport the project!\n"
    )
    questions = _parse(doc)
    assert [(q.ref, q.section, q.difficulty) for q in questions] == [
        ("#1", "easy", 1),
        ("#2", "easy", 1),
        ("#3", "hard", 3),
    ]
    assert questions[1].text == "How do you move a tensor to the GPU?"  # a one-question box
    assert "x = torch.zeros(3)" in questions[0].answer  # code stays in the answer, unparsed
    assert questions[2].answer == ""  # the horizontal rule ends it


def test_questions_inside_real_code_fences_are_never_parsed() -> None:
    doc = "```\n1. What is a tensor?\n2. What is autograd?\n```\n"
    assert _parse(doc) == []


def test_emoji_tags_end_questions_jammed_against_answers() -> None:
    doc = (
        "Intro\n1 What is A? ⚡ EasyAnswer: a is a.2 How does\nB work? 🔥 Hard\n"
        "Answer: b = f()3\nC vs D? 📊 MediumAnswer: c."
    )
    questions = _parse(doc)
    assert [(q.ref, q.text, q.difficulty, q.answer) for q in questions] == [
        ("#1", "What is A?", 1, "a is a."),
        ("#2", "How does B work?", 3, "b = f()"),
        ("#3", "C vs D?", 2, "c."),
    ]


def test_jammed_number_is_told_apart_from_a_number_inside_the_question() -> None:
    doc = "1 What is A? ⚡ EasyAnswer: a.2 What are the 2 modes of a module? 🔥 Hard\nAnswer: train, eval."
    assert [q.text for q in _parse(doc)] == ["What is A?", "What are the 2 modes of a module?"]


def test_emoji_inside_a_table_is_not_a_tag() -> None:
    doc = "1. What is Keras?\nEase of Use | ✅ Beginner-friendly | ✅ More control |\n"
    (question,) = _parse(doc)
    assert question.difficulty is None and "Beginner-friendly" in question.answer


def test_questions_wrapped_across_lines() -> None:
    doc = (
        "1. Explain model.train()\nvs model.eval()\nThese modes differ.\n"
        "2. What’s the purpose of torch.nn.Module\n?\nIt is a base class.\n"
        "3. What is\nKeras?\nA high-level API.\n"
    )
    assert [(q.text, q.answer) for q in _parse(doc)] == [
        ("Explain model.train() vs model.eval()", "These modes differ."),
        ("What’s the purpose of torch.nn.Module?", "It is a base class."),
        ("What is Keras?", "A high-level API."),
    ]


def test_per_section_numbering_comparison_real_interviews_and_skipped_sections() -> None:
    doc = (
        "Who This Guide Is For\n1. What if you are a student?\n"
        "Beginner-Level PyTorch Interview Questions\n1. What is PyTorch?\nA library.\n2. What is a tensor?\n"
        "Advanced TensorFlow Interview Questions\n1. What is XLA?\nA compiler.\n"
        "Keras vs JAX – Which One Should You Learn?\nDepends on the team.\n"
        "Tips to Prepare for Keras Interviews\n1. Build Projects That Show Your Skills\n"
        "Real Interview Experiences from Startups\nWhat They Asked\n"
        "- “Implement softmax from scratch.”\n- “Explain how you would shard a model.”\n"
        "FAQs\n1. Do I need to know both?\nYes.\n"
    )
    questions = _parse(doc)
    assert [(q.ref, q.number, q.difficulty) for q in questions] == [
        ("beginner-pytorch#1", 1, 1),
        ("beginner-pytorch#2", 2, 1),
        ("advanced-tensorflow#1", 1, 3),
        ("comparison#1", None, None),
        ("real-interviews#1", None, None),
        ("real-interviews#2", None, None),
    ]
    assert questions[3].text == "Keras vs JAX – Which One Should You Learn?"
    assert questions[3].answer == "Depends on the team."
    assert questions[4].text == "Implement softmax from scratch."


def test_numbering_restarting_under_unlabelled_titles_names_sections_by_title() -> None:
    doc = (
        "Tensor Basics\n1. What is a tensor?\nAn array.\n2. What is a view?\n\n"
        "Module Design\n\n1. What is nn.Module?\nThe base class.\n"
    )
    questions = _parse(doc)
    assert [q.ref for q in questions] == ["tensor-basics#1", "tensor-basics#2", "module-design#1"]
    assert questions[1].answer == ""  # the next title is not part of the answer


def test_out_of_sequence_numbers_inside_answers_are_not_questions() -> None:
    doc = "1. What does an optimizer do?\nSteps:\n1. Why zero the gradients?\n2. Then step.\n"
    (question,) = _parse(doc)
    assert "Why zero the gradients?" in question.answer


def test_numbered_lists_that_are_not_questions_are_skipped() -> None:
    assert _parse("Getting started\n1. Install PyTorch\n2. Import torch\n3. Have fun\n") == []


def test_markup_is_stripped_but_dunder_names_survive() -> None:
    (question,) = _parse("### 1. **Why** implement `__len__` in a [Dataset](https://x.org)?\n")
    assert question.text == "Why implement __len__ in a Dataset?"


def test_crlf_and_byte_order_mark() -> None:
    (question,) = _parse("\ufeff1. What is CUDA?\r\nA GPU platform.\r\n")
    assert (question.text, question.answer) == ("What is CUDA?", "A GPU platform.")


def test_parsed_question_is_frozen() -> None:
    (question,) = _parse("1. What is CUDA?\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        question.text = "changed"  # type: ignore[misc]


# --- the text rules on their own -----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Beginner-Level PyTorch Interview Questions", True),
        ("PyTorch vs TensorFlow – Which One Should You Pick?", True),
        ("FAQs", True),
        ("Bonus Tip: Always switch to eval()", False),
        ("Keras is now the official high-level API in TF 2.x.", False),
        ("Feature | Keras | TensorFlow |", False),
        ("- Dropout layers", False),
    ],
)
def test_looks_like_title(line: str, expected: bool) -> None:
    assert looks_like_title(line) is expected


def test_classify_heading() -> None:
    assert classify_heading("Intermediate TensorFlow Interview Questions", markdown=False) == (
        classify_heading("Intermediate TensorFlow Interview Questions", markdown=True)
    )
    heading = classify_heading("Intermediate TensorFlow Interview Questions", markdown=False)
    assert heading is not None and (heading.kind, heading.slug, heading.difficulty) == (
        "questions",
        "intermediate-tensorflow",
        2,
    )
    kinds = {
        "Tips to Prepare for PyTorch Interviews": "skip",
        "Who This Interview Guide Is For": "skip",
        "Real Interview Experiences from Top Companies": "real",
        "PyTorch vs TensorFlow – Which One Should You Pick?": "comparison",
    }
    for text, kind in kinds.items():
        found = classify_heading(text, markdown=False)
        assert found is not None and found.kind == kind, text
    assert classify_heading("Neural Network Design with PyTorch", markdown=False) is None
    assert section_slug("Section 3: Hard Questions") == ("hard", 3)


# --- errors --------------------------------------------------------------------------------


def _error(path: Path) -> str:
    with pytest.raises(DocumentError) as info:
        parse_file(path)
    message = str(info.value)
    assert "\n" not in message and path.name in message
    return message


def test_empty_file_has_no_questions(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert "no questions" in _error(path)


def test_document_without_questions(tmp_path: Path) -> None:
    path = tmp_path / "prose.md"
    path.write_text("# About\n\nThis page has tips.\n\n1. Sleep well\n2. Eat breakfast\n", encoding="utf-8")
    assert "no questions" in _error(path)


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("1. Qu’est-ce qu’un tenseur?".encode("cp1252"))
    assert "UTF-8" in _error(path)


def test_binary_file(tmp_path: Path) -> None:
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "UTF-8" in _error(png)
    zeros = tmp_path / "zeros.bin"
    zeros.write_bytes(b"1. What is a tensor?\x00\x00\x00")
    assert "binary" in _error(zeros)


def test_unreadable_path(tmp_path: Path) -> None:
    assert "cannot read" in _error(tmp_path / "missing.txt")
    assert "cannot read" in _error(tmp_path)  # a directory


def test_document_error_is_a_value_error() -> None:
    assert issubclass(DocumentError, ValueError)
    assert parse_document("", source="empty.txt") == []


def test_a_skipped_number_does_not_swallow_the_questions_after_it() -> None:
    doc = ("1. What is a tensor?\nAn array.\n2. Why call zero_grad()?\nGradients accumulate.\n"
           "4. What is DDP?\nData parallel.\n5. What is AMP?\nMixed precision.\n")
    assert [(q.ref, q.answer) for q in _parse(doc)] == [
        ("#1", "An array."), ("#2", "Gradients accumulate."), ("#4", "Data parallel."), ("#5", "Mixed precision.")]


def test_indented_steps_inside_an_answer_stay_in_the_answer() -> None:
    doc = ("1. How do you train a model in PyTorch?\n   Steps:\n   1. Define the model\n   2. Create an optimizer\n"
           "   3. Write the loop\n2. What is a DataLoader?\n   It batches data.\n")
    first, second = _parse(doc)
    assert "2. Create an optimizer" in first.answer and (second.ref, second.text) == ("#2", "What is a DataLoader?")


def test_a_question_without_a_question_mark_keeps_its_answer_apart() -> None:
    first, second = _parse("1. What is torch.no_grad used for\nIt disables gradient tracking during inference.\n"
                           "2. Explain what a leaf tensor is\nA tensor created by the user, not by an op.\n")
    assert (first.text, first.answer) == ("What is torch.no_grad used for",
                                          "It disables gradient tracking during inference.")
    assert second.answer == "A tensor created by the user, not by an op."


def test_full_width_question_marks_end_questions() -> None:
    questions = _parse("1. 什么是张量？\n多维数组。\n2. 如何使用GPU？\n用 .to('cuda')。\n")
    assert [q.text for q in questions] == ["什么是张量？", "如何使用GPU？"]


def test_an_untagged_question_between_tagged_ones_stays_its_own() -> None:
    doc = ("1. What is a tensor? \u26a1 Easy\nAn n-dimensional array.\n2. What is autograd?\nIt records operations.\n"
           "3. What is DDP? \U0001f525 Hard\nDistributed data parallel.\n")
    assert [(q.ref, q.text, q.difficulty, q.answer) for q in _parse(doc)] == [
        ("#1", "What is a tensor?", 1, "An n-dimensional array."),
        ("#2", "What is autograd?", None, "It records operations."),
        ("#3", "What is DDP?", 3, "Distributed data parallel.")]


def test_flash_cards_marked_q_and_a_without_numbers() -> None:
    doc = ("# My flash cards\n\nQ: What does optimizer.zero_grad() do?\nA: It clears the .grad buffers.\n"
           "Once per step.\n\n"
           "Q: Batch norm vs layer norm\nA: One normalises over the batch, the other over features.\n\n"
           "Question: Why call model.eval()? 🔥 Hard\nAnswer: Dropout off, running statistics on.\n"
           "    Q: an indented mark inside an answer stays answer text\n")
    assert [(q.ref, q.text, q.difficulty, q.answer) for q in _parse(doc)] == [
        ("item#1", "What does optimizer.zero_grad() do?", None, "It clears the .grad buffers.\nOnce per step."),
        ("item#2", "Batch norm vs layer norm", None, "One normalises over the batch, the other over features."),
        ("item#3", "Why call model.eval()?", 3,
         "Dropout off, running statistics on.\n    Q: an indented mark inside an answer stays answer text")]


def test_flash_cards_wrapped_waiting_or_answered_on_the_same_line() -> None:
    doc = ("Q: What is the difference between a leaf tensor\nand a non-leaf tensor?\nA: Leaves are made by the user."
           "\n\n"
           "Q:\nHow do you freeze a layer?\nA: requires_grad=False.\n\n"
           "**Q:** Why warm up? A: Early updates are noisy.\n\n"
           "- Q: How do you export a model?\n  A1: With torch.export.\n")
    assert [(q.text, q.answer) for q in _parse(doc)] == [
        ("What is the difference between a leaf tensor and a non-leaf tensor?", "Leaves are made by the user."),
        ("How do you freeze a layer?", "requires_grad=False."),
        ("Why warm up?", "Early updates are noisy."),
        ("How do you export a model?", "With torch.export.")]



# --- sections and topics named by the nearest heading (review s56) -------------------------

_AUTOGRAD_AND_DATA = (
    "## Autograd\n\n1. What does backward() fill in?\nThe .grad of every leaf.\n\n"
    "2. Why clear gradients between steps?\nBackward adds to them.\n\n"
    "## Data\n\n1. What does a Dataset hand back?\nOne sample by index.\n\n"
    "2. Why raise num_workers?\nBatches load in parallel.\n"
)


def test_a_document_title_does_not_name_the_sections_under_it() -> None:
    """Under `# PyTorch interview questions` the Autograd questions were refs pytorch#1, pytorch#2; without the
    title line they were autograd#1, autograd#2. The title only wraps the sections."""
    titled = _parse("# PyTorch interview questions\n\n" + _AUTOGRAD_AND_DATA)
    untitled = _parse(_AUTOGRAD_AND_DATA)
    expected = ["autograd#1", "autograd#2", "data#1", "data#2"]
    assert [q.ref for q in untitled] == expected
    assert [q.ref for q in titled] == expected
    assert [q.section for q in titled] == ["autograd", "autograd", "data", "data"]


def test_cards_under_a_title_take_their_subsection() -> None:
    doc = "# PyTorch interview questions\n\n## Autograd\n\nQ: What is a leaf tensor?\nA: One the user made.\n"
    assert [(q.ref, q.section) for q in _parse(doc)] == [("autograd#1", "autograd")]


def test_flash_cards_after_a_numbered_list_are_not_counted_in_it() -> None:
    """Two `Q:` cards after the Data list were refs data#3 and data#4, as if items 3 and 4 of that list."""
    doc = _AUTOGRAD_AND_DATA + (
        "\nQ: What is a leaf tensor?\nA: One the user made.\n\n"
        "Q: What does detach() return?\nA: A tensor off the graph.\n"
    )
    refs = [q.ref for q in _parse(doc)]
    assert refs == ["autograd#1", "autograd#2", "data#1", "data#2", "data-2#1", "data-2#2"]


def test_flash_cards_after_a_list_never_share_a_ref_with_it() -> None:
    """A card after item 2 took ref data#3, the same ref as the list's own item 3 after it."""
    doc = _AUTOGRAD_AND_DATA + (
        "\nQ: What is a leaf tensor?\nA: One the user made.\n\n3. Why pin memory?\nCopies go faster.\n"
    )
    refs = [q.ref for q in _parse(doc)]
    assert len(refs) == len(set(refs)) == 6
    assert refs[-2:] == ["data-2#1", "data#3"]


def test_flash_cards_after_an_unsectioned_list_count_from_one() -> None:
    doc = "1. What is a tensor?\nAn array.\n2. What is a view?\nShared storage.\nQ: What is a stride?\nA: A step.\n"
    assert [q.ref for q in _parse(doc)] == ["#1", "#2", "item#1"]


def test_a_heading_that_names_a_bank_topic_gives_its_questions_that_topic() -> None:
    """`topic:` stayed null under `## Autograd`, though the bank has an autograd topic."""
    doc = (
        "# PyTorch interview questions\n\n## Autograd\n\nQ: What is a leaf tensor?\nA: One the user made.\n\n"
        "### Hooks\n\nQ: When does a tensor hook run?\nA: When its gradient is computed.\n\n"
        "## Fine-tuning\n\nQ: Why freeze the backbone first?\nA: The new head is still random.\n\n"
        "## Data\n\nQ: What does a sampler decide?\nA: The order of indices.\n"
    )
    assert [q.topic for q in _parse(doc)] == ["autograd", "autograd", "transfer-learning", None]


@pytest.mark.parametrize(
    ("heading", "topic"),
    [
        ("Autograd", "autograd"),
        ("PyTorch Autograd Interview Questions", "autograd"),
        ("Section 2: Autodiff", "autograd"),  # a glossary synonym
        ("Transfer Learning", "transfer-learning"),
        ("Regularization", "regularisation"),  # the American spelling
        ("Performance and Memory", "performance-memory"),
        ("TensorFlow Core", "tensorflow-core"),
        ("Tensors", "tensors"),
        ("Data", None),
        ("TF", None),  # a synonym of TensorFlow, not of the tensorflow-core topic
        ("Training and Optimization Techniques", None),  # two subjects: left to the curator
        ("PyTorch Interview Questions", None),
    ],
)
def test_heading_topic(heading: str, topic: str | None) -> None:
    from ingest.topics import heading_topic

    assert heading_topic(heading) == topic


@pytest.mark.parametrize("name", sorted(SEED_COUNTS))
def test_seed_questions_keep_their_sections_and_topics(name: str) -> None:
    """No seed heading names a bank topic, so the seeds' drafts keep topic null; sections are as before."""
    sections = {
        "000_57e8f2a1b364a0e7.txt": {None},
        "001_9b9cc9a2aec78816.txt": {"pytorch"},
        "002_a8e96841d809bc4a.txt": {"easy", "medium", "hard"},
        "003_3b896f906c2e9aa0.txt": {ref.split("#")[0] for ref in SECTIONED_REFS},
        "004_bb08e4be5dc5a30a.txt": {"pytorch-tensorflow"},
    }
    questions = _seed(name)
    assert {q.section for q in questions} == sections[name]
    assert {q.topic for q in questions} == {None}
