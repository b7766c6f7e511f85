"""The curated bank: complete seed coverage, sound entries, and validation errors people can act on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from knowledge.errors import BankError
from knowledge.loader import load_bank, load_file
from knowledge.schema import SEED_FILES, Kind, Question

EXPECTED_SEED_COUNTS = {
    "000_57e8f2a1b364a0e7.txt": 15,
    "001_9b9cc9a2aec78816.txt": 20,
    "002_a8e96841d809bc4a.txt": 55,
    "003_3b896f906c2e9aa0.txt": 30,
    "004_bb08e4be5dc5a30a.txt": 37,
}
SECTION_SIZES = {
    "beginner-pytorch": 5,
    "beginner-tensorflow": 5,
    "intermediate-pytorch": 4,
    "intermediate-tensorflow": 4,
    "advanced-pytorch": 4,
    "advanced-tensorflow": 4,
    "comparison": 1,
    "real-interviews": 3,
}


def _expected_refs() -> set[tuple[str, str]]:
    refs = set()
    for seed, count in EXPECTED_SEED_COUNTS.items():
        if seed == "003_3b896f906c2e9aa0.txt":
            refs |= {(seed, f"{s}#{n}") for s, size in SECTION_SIZES.items() for n in range(1, size + 1)}
        else:
            refs |= {(seed, f"#{n}") for n in range(1, count + 1)}
    return refs


def test_every_seed_question_is_covered_exactly_by_known_refs(bank):
    covered = {(s.seed, s.ref) for q in bank for s in q.sources}
    expected = _expected_refs()
    assert len(expected) == 157
    assert expected - covered == set(), "seed questions with no bank entry"
    assert covered - expected == set(), "refs that name no seed question"


def test_bank_size_and_code_tasks(bank):
    assert 100 <= len(bank) <= 140
    assert sum(q.kind is Kind.CODE for q in bank) >= 20
    assert any(q.id == "relu-autograd-function" and "class MyReLU(torch.autograd.Function)" in q.code.contract
               for q in bank if q.code)


def test_taxonomy_is_used_and_entries_are_complete(bank):
    topics = Counter(q.topic for q in bank)
    assert 10 <= len(topics) <= 15
    for q in bank:
        assert 3 <= len(q.rubric) <= 7, q.id
        assert q.follow_ups, f"{q.id} has no follow-up probes"
        assert q.related, f"{q.id} has no related entries"


def test_every_topic_holds_enough_questions_at_every_level(bank):
    """A candidate who picks one topic is never asked the same question twice: distributed (2 questions, both at
    difficulty 3), transfer-learning (2, both at 2) and optimisation (3, all at 2) ran out within one short
    session, and an adaptive level could not move in them. A topic and level holding one question or none
    (frameworks had none at level 3; data-loading, distributed, optimisation, transfer-learning and others one
    at some level) ran out at once for a candidate who picked it."""
    cells = Counter((q.topic, q.difficulty) for q in bank)
    thin = {(topic.value, d): cells[(topic, d)] for topic in {q.topic for q in bank} for d in (1, 2, 3)
            if cells[(topic, d)] < 2}
    assert thin == {}


def test_follow_ups_do_not_give_the_answer_away(bank):
    """A probe must not repeat its point's description verbatim."""
    for q in bank:
        points = {p.id: p for p in q.rubric}
        for follow_up in q.follow_ups:
            assert points[follow_up.point].description.lower() not in follow_up.prompt.lower(), q.id


def test_malformed_entry_names_file_entry_and_field(tmp_path: Path):
    bad = tmp_path / "broken.yaml"
    bad.write_text(
        "- id: some-question\n  question: What is a tensor in PyTorch?\n  framework: jax\n", encoding="utf-8"
    )
    with pytest.raises(BankError) as info:
        load_file(bad)
    message = str(info.value)
    assert "broken.yaml" in message and "some-question" in message and "framework" in message
    assert "\n" not in message


def test_invalid_yaml_says_where_and_what_was_expected(tmp_path: Path):
    """The message kept PyYAML's first line only ("invalid YAML: while parsing a flow sequence"): no line, and not
    what was expected, so in a big pack the mistake had to be hunted for."""
    (tmp_path / "p.yaml").write_text("- id: a\n  question: [one, two\n  topic: x\n", encoding="utf-8")
    with pytest.raises(BankError) as info:
        load_bank(tmp_path)
    message = str(info.value)
    assert "line 3, column 8: did not find expected ',' or ']'" in message, message
    assert "line 2, column 13" in message and "\n" not in message


def test_invalid_yaml_and_unknown_related_are_reported(tmp_path: Path, bank):
    (tmp_path / "a.yaml").write_text("- id: [unclosed\n", encoding="utf-8")
    with pytest.raises(BankError, match="a.yaml: invalid YAML"):
        load_bank(tmp_path)
    entry = bank[0].model_dump(mode="json")
    entry["related"] = ["no-such-entry"]
    import yaml

    (tmp_path / "a.yaml").write_text(yaml.safe_dump([entry]), encoding="utf-8")
    with pytest.raises(BankError, match="related: unknown id 'no-such-entry'"):
        load_bank(tmp_path)


def test_a_pack_reads_yml_files_as_well_as_yaml(tmp_path: Path, bank):
    """A pack author's `extra.yml` beside `main.yaml` was skipped without a word ("Bank OK: 4 questions")."""
    import yaml

    first, second = ({**q.model_dump(mode="json"), "related": []} for q in bank[:2])
    (tmp_path / "main.yaml").write_text(yaml.safe_dump([first]), encoding="utf-8")
    (tmp_path / "extra.yml").write_text(yaml.safe_dump([second]), encoding="utf-8")
    assert [q.id for q in load_bank(tmp_path)] == [second["id"], first["id"]]  # files in name order


def test_seed_ref_format_is_enforced():
    from pydantic import ValidationError

    from knowledge.schema import SeedRef

    SeedRef(seed=SEED_FILES[3], ref="comparison#1")
    with pytest.raises(ValidationError):
        SeedRef(seed=SEED_FILES[3], ref="#4")
    with pytest.raises(ValidationError):
        SeedRef(seed=SEED_FILES[0], ref="beginner-pytorch#1")


def _shingles(text: str, size: int = 10) -> set[tuple[str, ...]]:
    import re

    prose = re.sub(r"```.*?```", " ", text, flags=re.S)
    words = re.findall(r"[a-z]+", prose.lower())
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def test_bank_prose_is_our_own_words(bank):
    """No run of ten words from a seed document reappears in a question, answer or rubric."""
    from tests.conftest import SEEDS

    if not SEEDS.is_dir():
        pytest.skip("shared seeds not present")
    seed_shingles: set[tuple[str, ...]] = set()
    for path in SEEDS.glob("*.txt"):
        seed_shingles |= _shingles(path.read_text(encoding="utf-8"))
    copied = {}
    for q in bank:
        prose = " ".join([q.question, q.reference_answer, *(p.description for p in q.rubric)])
        overlap = _shingles(prose) & seed_shingles
        if overlap:
            copied[q.id] = " ".join(sorted(overlap)[0])
    assert copied == {}


def _verdicts(task, source: str, seeds: range) -> Counter:
    """Failed checks by name over many input seeds, in process (the runner draws a fresh seed each time)."""
    from evaluators.code import harness
    from evaluators.code.probes import dumps, exec_submission, loads

    failed: Counter = Counter()
    for seed in seeds:
        expected = harness.reference_outputs(task, seed)
        namespace = exec_submission(source)
        for check in task.checks:
            inputs, want = expected[check.name]
            outcome = harness._probe(task, check, namespace, inputs)
            if outcome.error or harness.verify(task, check, inputs, loads(dumps(outcome.value)), want):
                failed[check.name] += 1
    return failed


LOG_SOFTMAX_BY_LOGSUMEXP = """
import torch
def log_softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True).detach()
    return x - (m + (x - m).exp().sum(dim=dim, keepdim=True).log())
"""
DISTANCES_WITHOUT_CLAMP = """
import torch
def pairwise_distances(x, y):
    return ((x * x).sum(1, keepdim=True) + (y * y).sum(1)[None, :] - 2 * x @ y.T).sqrt()
"""


def test_hidden_checks_pass_correct_variants_and_fail_known_bugs_on_every_draw(bank):
    """Verdicts a reviewer found to depend on the draw or the idiom: a correct x - logsumexp failed 4% of
    draws on logits near 6,000; a non-persistent `pe` buffer always failed; an expansion with no clamp
    passed 1 draw in 5; a forward that clamps the caller's tensor in place, and a residual block that adds
    into its input, always passed."""
    tasks = {q.id: q.code for q in bank if q.code}
    seeds = range(1, 41)
    assert not _verdicts(tasks["stable-log-softmax"], LOG_SOFTMAX_BY_LOGSUMEXP, seeds)
    persistent = tasks["sinusoidal-positional-encoding"].solution
    non_persistent = persistent.replace('d_model))', 'd_model), persistent=False)')
    assert non_persistent != persistent and not _verdicts(tasks["sinusoidal-positional-encoding"], non_persistent,
                                                          range(1, 3))
    assert _verdicts(tasks["pairwise-distances"], DISTANCES_WITHOUT_CLAMP, seeds)["identical-rows"] == len(seeds)
    relu = tasks["relu-autograd-function"].solution
    in_place = relu.replace("return x.clamp(min=0)", "return x.clamp_(min=0)")
    assert in_place != relu and _verdicts(tasks["relu-autograd-function"], in_place, range(1, 4))["forward-values"] == 3
    # torchvision's `out += identity` adds into the branch's own output: fine. Adding into the shortcut's
    # output adds into the caller's x when the shortcut is the identity: it fails.
    block = tasks["resnet-block"].solution
    torchvision_style = block.replace("return F.relu(out + self.shortcut(x))", "out += self.shortcut(x)\n"
                                      "        return F.relu(out)")
    into_input = block.replace("return F.relu(out + self.shortcut(x))", "shortcut = self.shortcut(x)\n"
                               "        shortcut += out\n        return F.relu(shortcut)")
    assert block != torchvision_style != into_input
    assert not _verdicts(tasks["resnet-block"], torchvision_style, range(1, 3))
    assert _verdicts(tasks["resnet-block"], into_input, range(1, 3))["identity-block-eval"] == 2


def test_binary_classifier_takes_either_threshold_test_its_contract_allows(bank):
    """The contract asks for sigmoid(logit) >= 0.5 and the model answer recommends logit >= 0; the check computed
    the second only, so the reference solution itself failed on a logit just below zero (sigmoid rounds it to 0.5)."""
    import torch

    from evaluators.code import harness
    from evaluators.code.probes import dumps, exec_submission, loads

    task = next(q for q in bank if q.id == "binary-classifier").code
    check = next(c for c in task.checks if c.name == "predict-labels")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(30, 3, generator=gen)
    x[0] = 0.0  # its logit is the bias alone
    inputs = {"X": x, "w": torch.randn(1, 3, generator=gen), "b": torch.tensor([-1e-7])}
    assert torch.sigmoid(inputs["b"]).item() == 0.5

    def verdict(source: str) -> str | None:
        outcome = harness._probe(task, check, exec_submission(source), inputs)
        return harness.verify(task, check, inputs, loads(dumps(outcome.value)), None)

    by_probability = task.solution
    by_sign = by_probability.replace("torch.sigmoid(model(X)) >= 0.5", "model(X) >= 0")
    inverted = by_probability.replace(">= 0.5", "< 0.5")
    assert by_probability != by_sign and by_probability != inverted
    assert verdict(by_probability) is None and verdict(by_sign) is None
    assert verdict(inverted) is not None
    # The check's own inputs hold such a logit, so a check that took one test only would fail the other.
    drawn = harness.build_inputs(task, check, seed=3)
    assert drawn["X"][0].abs().sum() == 0 and torch.sigmoid(drawn["b"]).item() == 0.5 > drawn["b"].item()


def test_every_entry_can_probe_its_heaviest_point(bank):
    """Follow-ups are chosen per missed point, heaviest first: an entry whose heaviest points have no probe
    never asks about what matters most in it."""
    unprobed = []
    for q in bank:
        top = max(p.weight for p in q.rubric)
        if not {p.id for p in q.rubric if p.weight == top} & {f.point for f in q.follow_ups}:
            unprobed.append(q.id)
    assert unprobed == []


STALE_CLAIMS = {
    # Self-attention without positions is permutation-equivariant; only a pooled output is invariant.
    r"(?<!pooled )(?:attention|it)\b[^.]{0,40}\bpermutation[- ]invariant": "attention called permutation-invariant",
    # PyTorch stopped publishing to its own conda channel after 2.5.
    r"\bpip and conda PyTorch builds\b": "conda builds described as current",
    # torch.compile reuses compiled code, but autograd still records a fresh backward node on every call.
    r"reuse[^.]{0,60}torch\.compile": "torch.compile said to reuse the autograd graph",
    # DDP broadcasts buffers (BatchNorm running statistics) from rank 0 on every forward by default.
    r"without ever exchanging weights|nothing ever copies weights": "DDP said never to send any weights",
    # The linear scaling rule is for SGD; Adam-like optimizers scale more gently.
    r"(?<!SGD the )linear scaling rule": "linear learning-rate scaling given as the rule for every optimizer",
    # PyTorch was started in 2016 at Facebook AI Research, before the company became Meta.
    r"started at Meta\b": "PyTorch said to have started at Meta AI",
    # torch.compile's default recompiles a changed dimension once as dynamic, not once per new shape.
    r"avoids recompiling for every new shape|each new length is slow": "torch.compile said to recompile every shape",
    # A full pickled model also loads with weights_only=True once its classes are allowlisted.
    r"full model only loads with weights_only=False": "weights_only=False called the only way to load a full model",
    # nvidia-smi also counts the CUDA context, which the caching allocator does not hold.
    r"nvidia-smi only shows what the caching allocator": "nvidia-smi said to show only reserved memory",
    # LBFGS's step(closure) re-evaluates the loss and runs backward through the closure it is given.
    r"step has no access to the loss": "optimizer.step said never to see the loss",
    # Dropout masks are drawn per sample, so they do not break accumulation's match with a big batch.
    r"dropout patterns still differ": "dropout said to stop accumulation matching a large batch",
    # Forked DataLoader workers inherit collate_fn unpickled; only spawn and forkserver pickle it.
    r"collate_fn must be a picklable": "collate_fn said to be pickled for any workers",
    # In float32 sigmoid rounds to exactly 0.5 for logits just below zero (down to about -1.8e-7).
    r"(?:same as|equivalently) logit >= 0": "sigmoid >= 0.5 called the same test as logit >= 0 in floats",
    # PYTORCH_ALLOC_CONF is the allocator's setting now; the CUDA-only name is kept as an older alias.
    r"PYTORCH_CUDA_ALLOC_CONF=": "the allocator's setting given only by its older CUDA name",
    # forkserver (Linux's default from Python 3.14) also re-imports the main script and pickles the
    # workers' arguments, as spawn does.
    r"with the spawn start method|(?:start|started) (?:with|by) spawn(?! or forkserver)":
        "the main-script guard or the pickling of workers' arguments said to be spawn's alone",
    # keras.layers.Attention's concat mode learns a scalar besides use_scale's, and AdditiveAttention
    # learns one vector, not a network.
    r"no learned projections beyond an optional scale|scoring with a small learned network":
        "Keras Attention's or AdditiveAttention's learned weights misstated",
    # backward frees a batch's saved activations: a loss tensor kept after it holds only autograd nodes
    # (test_a_kept_loss_holds_activations_only_where_no_backward_runs).
    r"keeps every batch's graph alive and grows memory|keeps every graph alive|stores every iteration's graph"
    r"|keeps computation graphs alive and leaks memory|grad history keeps the graph alive":
        "a loss kept after backward said to hold its whole graph",
    # With a dedicated pad id no real token takes, tokens != pad_id is the length mask
    # (test_a_pad_comparison_is_wrong_only_where_real_tokens_take_the_pad_value).
    r"pad id may occur as a real token; the mask should": "tokens != pad_id said to be wrong for a dedicated pad id",
}

def test_a_kept_loss_holds_activations_only_where_no_backward_runs():
    """The fact behind a STALE_CLAIMS entry: `total = total + loss` after loss.backward() keeps the loss's autograd
    nodes but none of the activations they saved (backward freed them); without backward it keeps them all."""
    import weakref

    import torch

    def alive_after(backward: bool) -> tuple[int, int]:
        model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        x = torch.randn(16, 8, generator=torch.Generator().manual_seed(0))
        saved = []

        def pack(t: torch.Tensor) -> torch.Tensor:
            if t.untyped_storage().data_ptr() not in params and t is not x:
                saved.append(weakref.ref(t))
            return t

        total = torch.zeros(())
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            for _ in range(5):
                loss = model(x).pow(2).mean()
                if backward:
                    loss.backward()
                total = total + loss
                del loss
        return sum(ref() is not None for ref in saved), len(saved)

    kept, saved = alive_after(backward=True)
    assert saved > 0 and kept == 0
    assert alive_after(backward=False) == (saved, saved)


def test_a_pad_comparison_is_wrong_only_where_real_tokens_take_the_pad_value(bank):
    """The fact behind a STALE_CLAIMS entry: `tokens != pad_id` equals the length mask for a dedicated pad id and
    marks real tokens as padding when they can equal it; custom-collate-fn's checks hold such tokens."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    seqs = [torch.tensor([3, 0, 2]), torch.tensor([0]), torch.tensor([1, 2])]
    lengths = torch.tensor([len(s) for s in seqs])
    by_length = torch.arange(3)[None, :] < lengths[:, None]
    dedicated = 4  # one past the vocabulary {0, ..., 3}: no real token takes it
    assert torch.equal(pad_sequence(seqs, batch_first=True, padding_value=dedicated) != dedicated, by_length)
    assert not torch.equal(pad_sequence(seqs, batch_first=True, padding_value=0) != 0, by_length)
    entry = next(q for q in bank if q.id == "custom-collate-fn")
    assert "dedicated pad id" in next(m.correction for m in entry.misconceptions if "pad_value" in m.claim)


def test_an_entry_naming_both_allocator_variables_says_the_cuda_one_wins(bank):
    """cuda-out-of-memory told the candidate to set either PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF without
    saying which counts: with both set, torch reads the CUDA one (asked of the installed torch here)."""
    import os
    import re
    import sys

    from tests.processes import run_bounded

    env = {**os.environ, "PYTORCH_ALLOC_CONF": "expandable_segments:False",
           "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    read = run_bounded([sys.executable, "-c", "import torch; print(torch._C._accelerator_getAllocatorSettings())"],
                       env=env, text=True)
    assert read.stdout.strip() == "expandable_segments:True", read
    naming_both = [q for q in bank if "PYTORCH_CUDA_ALLOC_CONF" in q.reference_answer
                   and "PYTORCH_ALLOC_CONF" in q.reference_answer.replace("PYTORCH_CUDA_ALLOC_CONF", "")]
    assert [q.id for q in naming_both] == ["cuda-out-of-memory"]
    text = " ".join(naming_both[0].reference_answer.split())
    assert re.search(r"both set, the CUDA one is used", text), "the entry should say which variable wins"


# `related` is the "study next" advice of a report: pairs a reviewer found to lead nowhere useful.
STRAY_RELATED = {
    # A sliding-window Dataset question is about data loading, not recurrent architectures.
    ("custom-dataset", "rnn-lstm-gru"),
}


def test_related_entries_are_study_next_material(bank):
    assert {(q.id, r) for q in bank for r in q.related} & STRAY_RELATED == set()


def test_bank_states_no_known_false_claims(bank):
    import re

    found = []
    for q in bank:
        texts = [q.reference_answer, *(t for p in q.rubric for t in [p.description, *p.evidence]),
                 *(m.correction for m in q.misconceptions), *(f.prompt for f in q.follow_ups)]
        for pattern, what in STALE_CLAIMS.items():
            # Lines are joined first: a claim wrapped across two lines of a YAML block is still found.
            found += [(q.id, what) for t in texts if re.search(pattern, " ".join(t.split()), re.IGNORECASE)]
    assert found == []


def test_every_code_tasks_model_answer_runs_as_shown_and_passes_its_checks(bank):
    """A candidate who gives up is shown the model answer; sent back as it stands, 24 of the 26 failed their own
    checks (no import lines, NameError; fragments such as a bare forward or a loop using max_epochs), and custom-layer
    scored 1.2. Each shows its task's reference solution ({{solution}} in the bank), and any further code it shows
    runs beside it."""
    import re

    failed = {}
    for q in (q for q in bank if q.code):
        code = "\n".join(re.findall(r"```python\n(.*?)```", q.reference_answer, re.S))
        try:
            verdicts = _verdicts(q.code, code, range(1, 2))
        except Exception as exc:  # the model answer does not even run: a failure like any other
            verdicts = Counter({f"{type(exc).__name__}: {exc}": 1})
        if verdicts:
            failed[q.id] = dict(verdicts)
    assert failed == {}
    assert [q.id for q in bank if q.code and q.code.solution.strip() not in q.reference_answer] == []


def test_the_solution_mark_shows_a_code_tasks_solution_and_nothing_else(bank):
    from knowledge.schema import SOLUTION_MARK

    code_task = next(q for q in bank if q.code).model_dump()
    code_task["reference_answer"] = f"It is short.\n\n{SOLUTION_MARK}\n\nThat is the whole of it, in one function."
    shown = Question.model_validate(code_task).reference_answer
    assert shown == (f"It is short.\n\n```python\n{code_task['code']['solution'].strip()}\n```\n\nThat is the whole "
                     "of it, in one function.")
    words = next(q for q in bank if q.code is None).model_dump()
    words["reference_answer"] += f"\n{SOLUTION_MARK}\n"
    with pytest.raises(ValidationError, match="no code task"):
        Question.model_validate(words)


@pytest.mark.parametrize("mark", ["{{soluton}}", "{{ solution }}", "{{Solution}}", "{{}}"])
def test_a_mistyped_solution_mark_fails_validation_naming_the_entry(tmp_path: Path, bank, mark):
    """`{{soluton}}` validated and was shown to candidates as it stands, where the solution should have been."""
    import yaml

    from knowledge.loader import bank_problems

    task = next(q for q in bank if q.code).model_dump(mode="json")
    marked = dict(task, related=[], reference_answer=f"It is short.\n\n{mark}\n\nThat is the whole of it.")
    (tmp_path / "pack.yaml").write_text(yaml.safe_dump([marked]), encoding="utf-8")
    questions, problems = bank_problems(tmp_path)
    assert questions == [] and len(problems) == 1, problems
    assert problems[0].startswith(f"pack.yaml: entry {task['id']}: ") and mark in problems[0], problems
    assert "{{solution}}" in problems[0] and "\n" not in problems[0]
    # Braces in fenced code are Python's own (an f-string's), not a mark; the known mark still shows the solution.
    fenced = dict(marked, reference_answer="It is short.\n\n{{solution}}\n\n```python\nf\"{{name}}\"\n```\n")
    assert task["code"]["solution"].strip() in Question.model_validate(fenced).reference_answer


def test_a_pack_with_several_mistakes_has_them_all_listed_at_once(tmp_path: Path, bank):
    """A pack with a bad topic and a bad difficulty in one entry, and a link to no entry in another, took a run
    of `bank validate` per mistake: each load stopped at the first."""
    import yaml

    from knowledge.loader import bank_problems

    good, linked = (dict(bank[0].model_dump(mode="json"), related=[]) for _ in range(2))
    broken = dict(good, id="broken-entry", topic="nlp", difficulty=5)
    linked.update(id="linked-entry", related=["no-such-entry"])
    (tmp_path / "pack.yaml").write_text(yaml.safe_dump([good, broken, linked]), encoding="utf-8")
    (tmp_path / "more.yml").write_text(yaml.safe_dump([good]), encoding="utf-8")
    questions, problems = bank_problems(tmp_path)
    assert [q.id for q in questions] == [good["id"], "linked-entry"]
    assert len(problems) == 4, problems
    assert any("broken-entry: field topic" in p for p in problems)
    assert any("broken-entry: field difficulty" in p for p in problems)
    assert any(f"pack.yaml: entry {good['id']}: field id: duplicate of an entry in more.yml" in p for p in problems)
    assert any("linked-entry: field related: unknown id 'no-such-entry'" in p for p in problems)
    with pytest.raises(BankError, match=r"\(and 3 more: `interviewer bank validate` lists them\)$") as info:
        load_bank(tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("spelled", ["optimization", "Optimisation", " Regularization ", "TRAINING_LOOP"])
def test_a_topic_in_american_spelling_or_another_case_is_the_same_topic(spelled, bank):
    """`POST /v1/sessions {"topics": ["optimization"]}` was a 422, and a pack entry with `topic: optimization`
    was refused: an integrator's first request failed on the spelling alone."""
    from app.interview.models import SessionConfig
    from knowledge.schema import Question, Topic

    expected = Topic(spelled.strip().lower().replace("_", "-").replace("ization", "isation"))
    assert SessionConfig.model_validate({"topics": [spelled]}).topics == [expected]
    assert Question.model_validate(dict(bank[0].model_dump(mode="json"), topic=spelled)).topic is expected
    with pytest.raises(ValueError):
        Topic("optimizations")


def test_a_pack_asking_one_question_twice_is_flagged_naming_both_ids(tmp_path: Path, bank):
    """A pack holding one question text under two ids passed validation, and an interview could ask both."""
    import yaml

    from knowledge.loader import BANK_DIR, bank_problems

    first, second, third = ({**q.model_dump(mode="json"), "related": []} for q in bank[:3])
    first["question"] = "What does a pack of my own ask about tensor strides?"
    second["question"] = "  WHAT does a pack of my own ask  about tensor-strides ?! "  # case, spacing, punctuation
    third["id"], third["question"] = "my-own-copy", bank[5].question  # a built-in entry's text under a new id
    (tmp_path / "a.yaml").write_text(yaml.safe_dump([first, second]), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(yaml.safe_dump([third]), encoding="utf-8")
    _, problems = bank_problems(tmp_path, same_texts=True)
    bank_file = next(f.name for f in sorted(BANK_DIR.glob("*.yaml")) if any(q.id == bank[5].id for q in load_file(f)))
    assert problems == [
        f"a.yaml: entry {second['id']}: field question: same text as entry {first['id']} in a.yaml",
        f"b.yaml: entry my-own-copy: field question: same text as the project's bank entry {bank[5].id} in "
        f"{bank_file}",
    ]
    assert bank_problems(tmp_path)[1] == []  # loading a pack (serve, interview) is not refused for it


def test_loading_a_pack_that_asks_one_question_twice_warns_in_one_line(tmp_path: Path, bank, caplog):
    """`bank validate` named a question text under two ids, but `serve` and `interview` loaded the pack without a
    word. Loading says it once, in one line (not refused: a pack that served before still serves)."""
    import logging

    import yaml

    from knowledge.loader import BANK_DIR, cached_bank

    first, second, third, fourth = ({**q.model_dump(mode="json"), "related": []} for q in bank[:4])
    second["question"] = first["question"].upper() + " ?!"
    fourth["question"] = "  " + third["question"].lower()
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump([first, second, third, fourth]), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="knowledge.loader"):
        served = cached_bank(tmp_path)
        cached_bank(tmp_path)  # parsed once per process, so said once
    assert [q.id for q in served] == [q.id for q in bank[:4]]
    assert [r.getMessage() for r in caplog.records] == [
        f"warning: mine.yaml: entry {second['id']}: field question: same text as entry {first['id']} in mine.yaml "
        "(and 1 more: `interviewer bank validate` lists them); served all the same, and a session may ask both: "
        "give one of them another text"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="knowledge.loader"):
        load_bank(BANK_DIR)
        (tmp_path / "mine.yaml").write_text(yaml.safe_dump([first, third]), encoding="utf-8")
        load_bank(tmp_path)
    assert caplog.records == []  # the built-in bank and a pack of distinct texts load without a word


def test_a_point_asked_in_words_is_one_no_check_verifies_on_a_code_task(bank):
    """`asked_in_words` counts a point in a code answer's score beside the run, judged from the words: on a point a
    check names, run and words would both judge it; on a concept question every point is judged from the words."""
    resnet = next(q for q in bank if q.id == "resnet-block").model_dump(mode="json")
    checked = dict(resnet, rubric=[dict(p, asked_in_words=p["id"] == "residual-addition") for p in resnet["rubric"]])
    with pytest.raises(ValidationError, match="'residual-addition' is marked asked_in_words, but check 'residual-add' "
                                              "verifies it"):
        Question.model_validate(checked)
    concept = next(q for q in bank if q.code is None).model_dump(mode="json")
    concept["rubric"][0]["asked_in_words"] = True
    with pytest.raises(ValidationError, match="is marked asked_in_words, but this entry is no code task"):
        Question.model_validate(concept)


def test_a_code_question_that_asks_for_words_marks_the_points_it_asks_for(bank):
    """A code task whose question asks to explain or describe something, or asks why, when or what, marks the
    points it asks for `asked_in_words`, or code alone would score full marks on it (review s54: resnet-block,
    cnn-image-classifier, custom-loss scored 5.0 / 5 for "Here is my solution." and the reference code)."""
    import re

    asking = re.compile(r"\b(explain|describe)\b|(^|[.?!]\s+)(why|when|what)\b", re.I)
    unmarked = [q.id for q in bank if q.code is not None and asking.search(q.question)
                and not any(p.asked_in_words for p in q.rubric)]
    assert unmarked == []
