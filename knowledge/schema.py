"""The question bank's data model: what one curated interview question carries."""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

SEED_FILES = (
    "000_57e8f2a1b364a0e7.txt",
    "001_9b9cc9a2aec78816.txt",
    "002_a8e96841d809bc4a.txt",
    "003_3b896f906c2e9aa0.txt",
    "004_bb08e4be5dc5a30a.txt",
)
# The one seed that restarts its numbering per section: its refs carry the section name.
SECTIONED_SEED = "003_3b896f906c2e9aa0.txt"
SEED_SECTIONS = (
    "beginner-pytorch",
    "beginner-tensorflow",
    "intermediate-pytorch",
    "intermediate-tensorflow",
    "advanced-pytorch",
    "advanced-tensorflow",
    "comparison",
    "real-interviews",
)

Slug = Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=64)]


class Framework(StrEnum):
    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    GENERAL = "general"


class Topic(StrEnum):
    """The fixed taxonomy; one YAML file per topic under knowledge/bank/."""

    FRAMEWORKS = "frameworks"
    TENSORS = "tensors"
    AUTOGRAD = "autograd"
    MODULES = "modules"
    TRAINING_LOOP = "training-loop"
    DATA_LOADING = "data-loading"
    OPTIMISATION = "optimisation"
    REGULARISATION = "regularisation"
    ARCHITECTURES = "architectures"
    TRANSFER_LEARNING = "transfer-learning"
    PERFORMANCE = "performance-memory"
    DISTRIBUTED = "distributed"
    DEPLOYMENT = "deployment"
    DEBUGGING = "debugging"
    TENSORFLOW_CORE = "tensorflow-core"

    @classmethod
    def _missing_(cls, value: object) -> Topic | None:
        """A topic in American spelling or another case ("Optimization", "regularization") is the same topic:
        an integrator's first session and a pack author's entries were refused for the spelling alone."""
        if not isinstance(value, str):
            return None
        key = value.strip().lower().replace("_", "-").replace("ization", "isation")
        return next((topic for topic in cls if topic.value == key), None)


class Kind(StrEnum):
    CONCEPT = "concept"
    CODE = "code"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RubricPoint(_Strict):
    """One key idea a complete answer states; `evidence` lists phrasings that show it.

    `asked_in_words` marks a point of a code task that its question asks the candidate to say in words ("explain
    why skip connections help", "when do you need a custom collate function?"): no run can show it, so it counts
    in the code's score beside the points the hidden checks verify, and code that passes every check without it
    is not full marks. Only on a code task, and only on a point no check names (a checked point is the run's)."""

    id: Slug
    description: str = Field(min_length=10)
    weight: float = Field(gt=0, le=5)
    evidence: list[str] = Field(min_length=1)
    asked_in_words: bool = False


class Misconception(_Strict):
    """A wrong claim that costs points; `cues` are phrasings that signal it."""

    claim: str = Field(min_length=10)
    correction: str = Field(min_length=10)
    cues: list[str] = Field(min_length=1)


class FollowUp(_Strict):
    """A probe for one rubric point that invites the idea without stating it.

    `presumes_failed_check` names the hidden check whose failure the probe tells the candidate their code showed
    ("Your distances come out as NaN for duplicate points"): it is asked only after a run in which that check got
    a value from the code and judged it wrong while another check passed; otherwise the neutral probe about the
    failed check is asked, since the probe would state a bug the code may not have.

    `presumes_code` marks a probe about the candidate's own code ("the shape of every intermediate tensor in your
    solution"): it is asked only once code was sent on the question, never of an answer in words alone."""

    point: Slug
    prompt: str = Field(min_length=10)
    presumes_failed_check: Slug | None = None
    presumes_code: bool = False


# Validation context key: the entries come from a question pack, not the project's own bank.
PACK_CONTEXT = "pack"


class SeedRef(_Strict):
    """Where an entry's question came from. The project's bank cites its seed files only; a pack (a directory
    given as INTERVIEWER_BANK_DIR, validated with context {PACK_CONTEXT: True}) may cite its own documents, as
    `interviewer ingest --docs` drafts do ("seed: cards.txt"), since it cannot add to the project's seeds."""

    seed: str = Field(min_length=1)
    ref: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ref_matches_seed(self, info: ValidationInfo) -> SeedRef:
        if self.seed not in SEED_FILES:
            if isinstance(info.context, dict) and info.context.get(PACK_CONTEXT):
                return self
            raise ValueError(f"unknown seed file {self.seed!r} (the project's bank cites only its seed files "
                             f"{', '.join(SEED_FILES)}; a pack, a directory given as INTERVIEWER_BANK_DIR, may "
                             "cite its own documents)")
        if self.seed == SECTIONED_SEED:
            section, _, number = self.ref.partition("#")
            if section not in SEED_SECTIONS or not number.isdigit():
                raise ValueError(f"ref {self.ref!r} for {self.seed} must be SECTION#N")
        elif not re.fullmatch(r"#\d+", self.ref):
            raise ValueError(f"ref {self.ref!r} for {self.seed} must be #N")
        return self


class CodeCheck(_Strict):
    """One hidden check. Each field is Python source defining one function.

    - `inputs`: `def inputs(gen) -> dict` builds inputs on the trusted side from a seeded
      `torch.Generator`; omitted means `{}`.
    - `probe`: `def probe(ns, inputs)` runs inside the sandbox against the submitted code's
      namespace `ns` and returns tensors, numbers, strings, lists or dicts of those.
    - `verify`: `def verify(inputs, got, expected)` runs on the trusted side and raises
      AssertionError with a message in the candidate's terms; omitted means
      `torch.testing.assert_close(got, expected)`.
      `verify` may call `assert_close_to_any(got, [right, *accepted_mistakes], **assert_close_options)`.
    The same probe runs on the reference solution to produce `expected`.

    `points` names the rubric points this check is there to verify (ids of the entry's rubric): a point is
    shown by the run when every check naming it passes. A task whose checks name their points is scored by
    those points' own weights, each point judged from the run;
    `weight` counts only in a task whose checks name no points, which is scored by its checks' weights.
    """

    name: Slug
    description: str = Field(min_length=5)
    weight: float = Field(default=1.0, gt=0)
    points: list[Slug] = Field(default_factory=list)
    inputs: str | None = None
    probe: str
    verify: str | None = None


QualifiedName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")]


class Forbidden(_Strict):
    """Built-ins a task's contract rules out, enforced before and while the code runs.

    `names` are fully qualified (`torch.nn.functional.linear`, `torch.gru_cell`, `torch.nn.GRUCell`,
    `torch.Tensor.log_softmax`; `torch.ops.aten.X` names an aten op seen at torch's dispatcher).
    `because` finishes the candidate's message: "line 14 calls torch.gru_cell; <because>".
    """

    names: list[QualifiedName] = Field(min_length=1)
    because: str = Field(min_length=10)


class CodeTask(_Strict):
    contract: str = Field(min_length=20)
    starter: str
    solution: str
    # Helper source for the checks. Only the definitions a probe uses go into the sandbox with it;
    # the rest (reference formulas used by `verify`) stays on the trusted side.
    setup: str = ""
    checks: list[CodeCheck] = Field(min_length=2)
    forbidden: Forbidden | None = None

    @field_validator("checks")
    @classmethod
    def _unique_check_names(cls, checks: list[CodeCheck]) -> list[CodeCheck]:
        names = [c.name for c in checks]
        if len(names) != len(set(names)):
            raise ValueError("check names must be unique")
        return checks


def _check_points_named(checks: list[CodeCheck], point_ids: list[str]) -> None:
    """Every point a check names is a rubric point of its entry; either every check names its points or none
    does (a check naming none would count for nothing beside the others)."""
    for check in checks:
        unknown = [p for p in check.points if p not in point_ids]
        if unknown:
            raise ValueError(f"check {check.name!r} names {unknown[0]!r}, which is not a rubric point of this "
                             f"entry (its points: {', '.join(point_ids)})")
    unnamed = [c.name for c in checks if not c.points]
    if unnamed and len(unnamed) < len(checks):
        raise ValueError(f"check {unnamed[0]!r} names no rubric point while others do: name the points it shows")


def _asked_points_unchecked(code: CodeTask | None, rubric: list[RubricPoint]) -> None:
    """A point marked `asked_in_words` belongs to a code task and no check of it names the point: the run judges a
    checked point and the words judge the others, so a point both checked and asked for in words would be judged
    twice, and on a concept question every point is judged from the words already."""
    asked = [p.id for p in rubric if p.asked_in_words]
    if not asked:
        return
    if code is None:
        raise ValueError(f"rubric point {asked[0]!r} is marked asked_in_words, but this entry is no code task (every "
                         "point of a concept question is judged from the words)")
    for check in code.checks:
        named = [p for p in asked if p in check.points]
        if named:
            raise ValueError(f"rubric point {named[0]!r} is marked asked_in_words, but check {check.name!r} verifies "
                             "it: a point a check names is judged from the run; mark only a point no check names")


def _presumed_check_named(code: CodeTask | None, follow_up: FollowUp) -> None:
    """A probe about the candidate's code belongs to a code task; one that presumes a check failed names a check of
    its task that verifies the probe's point."""
    if follow_up.presumes_code and code is None:
        raise ValueError(f"follow_up on {follow_up.point!r} presumes the candidate's code, but this entry is no code "
                         "task")
    name = follow_up.presumes_failed_check
    if name is None:
        return
    check = next((c for c in code.checks if c.name == name), None) if code is not None else None
    if check is None:
        raise ValueError(f"follow_up on {follow_up.point!r} presumes check {name!r} failed, which is not a check of "
                         "this entry")
    if check.points and follow_up.point not in check.points:
        raise ValueError(f"follow_up on {follow_up.point!r} presumes check {name!r} failed, which does not verify "
                         f"that point (it verifies {', '.join(check.points)})")


def _presumed_for_one_point(follow_ups: list[FollowUp]) -> None:
    """Probes of two points may not presume the same check failed: its failure does not say which point's fault the
    code has, and one probe would state a failure the code does not have (modes-and-no-grad, failed by an evaluate
    without model.eval(), asked "your validation pass uses far more memory" of code under no_grad)."""
    points: dict[str, str] = {}
    for follow_up in follow_ups:
        name = follow_up.presumes_failed_check
        if name is not None and points.setdefault(name, follow_up.point) != follow_up.point:
            raise ValueError(f"follow_ups on {points[name]!r} and {follow_up.point!r} both presume check {name!r} "
                             "failed: give each point a check of its own")


# A line of a code task's reference_answer that stands for its reference solution, shown there in a python fence:
# the model answer a candidate sees is then complete code that passes the task's checks (`bank validate` runs the
# solution), with no second copy of it to drift (24 of 26 hand-copied ones lacked imports or were fragments).
SOLUTION_MARK = "{{solution}}"


# Any `{{...}}` on a line of prose: a mark. Fenced code is left out, where `{{` is Python's own (an f-string's brace).
_MARK = re.compile(r"\{\{[^{}\n]*\}\}")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)


def _with_solution(data: object) -> object:
    """The raw entry with its reference_answer's SOLUTION_MARK replaced by its code task's solution. A mark of any
    other spelling is refused: `{{soluton}}` validated and was shown to candidates as it stands, with no solution."""
    if not isinstance(data, dict):
        return data
    answer = data.get("reference_answer")
    prose = _FENCE.sub("", answer) if isinstance(answer, str) else ""
    unknown = [mark for mark in _MARK.findall(prose) if mark != SOLUTION_MARK]
    if unknown:
        raise ValueError(f"reference_answer holds {unknown[0]}, an unknown mark: the only mark is {SOLUTION_MARK}, "
                         "which stands for the code task's reference solution")
    if SOLUTION_MARK not in str(answer or ""):
        return data
    code = data.get("code")
    solution = code.get("solution") if isinstance(code, dict) else getattr(code, "solution", None)
    if not isinstance(solution, str) or not solution.strip():
        return data  # left marked: _consistent says why
    fenced = f"```python\n{solution.strip()}\n```"
    return {**data, "reference_answer": data["reference_answer"].replace(SOLUTION_MARK, fenced)}


class Question(_Strict):
    id: Slug
    question: str = Field(min_length=10)
    framework: Framework
    topic: Topic
    difficulty: int = Field(ge=1, le=3)
    kind: Kind
    reference_answer: str = Field(min_length=40)
    rubric: list[RubricPoint] = Field(min_length=3, max_length=7)
    misconceptions: list[Misconception] = Field(default_factory=list)
    follow_ups: list[FollowUp] = Field(default_factory=list)
    related: list[Slug] = Field(default_factory=list)
    sources: list[SeedRef] = Field(default_factory=list)
    code: CodeTask | None = None

    @model_validator(mode="before")
    @classmethod
    def _show_solution(cls, data: object) -> object:
        return _with_solution(data)

    @model_validator(mode="after")
    def _consistent(self) -> Question:
        if SOLUTION_MARK in self.reference_answer:
            raise ValueError(f"reference_answer holds {SOLUTION_MARK}, which stands for a code task's reference "
                             "solution, but this entry has no code task")
        point_ids = [p.id for p in self.rubric]
        if len(point_ids) != len(set(point_ids)):
            raise ValueError("rubric point ids must be unique")
        for follow_up in self.follow_ups:
            if follow_up.point not in point_ids:
                raise ValueError(f"follow_up names unknown rubric point {follow_up.point!r}")
        if (self.kind is Kind.CODE) != (self.code is not None):
            raise ValueError("a code question needs a `code` block, and only code questions have one")
        if self.code is not None:
            _check_points_named(self.code.checks, point_ids)
        _asked_points_unchecked(self.code, self.rubric)
        for follow_up in self.follow_ups:
            _presumed_check_named(self.code, follow_up)
        _presumed_for_one_point(self.follow_ups)
        if self.id in self.related:
            raise ValueError("an entry cannot be related to itself")
        return self

    def content_hash(self) -> str:
        """Stable digest of everything that is embedded or stored for this entry."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def embedding_text(self) -> str:
        """What the vector sees: the question and the opening of its answer (measured best in
        bench/bench_search.py against question-only and question+rubric)."""
        return f"{self.question}\n{self.reference_answer[:300]}"

    def lexical_text(self) -> str:
        """What BM25 sees: the question plus the ideas a good answer covers, API names included."""
        points = "; ".join(p.description for p in self.rubric)
        return f"{self.question}\n{points}"
