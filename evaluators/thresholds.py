"""The offline scorer's tuned cut-offs, in one place for the scorer, its detectors and the tuner."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    """Similarity cut-offs, tuned on the calibration set's development splits only (bench/tune_scorer.py
    --on); the held-out and -test splits are only scored."""

    credit_floor: float = 0.45  # support below this earns nothing
    credit_full: float = 0.78  # support at or above this earns the whole point
    covered: float = 0.68
    partial: float = 0.57
    lexical_bonus: float = 0.12  # shared key terms (often API names) add up to this much support
    code_lexical_factor: float = 3.0  # ...times this for a line of fenced code
    non_statement_factor: float = 0.55  # a bare list of terms is not an explanation
    polarity_factor: float = 0.55  # "X does not Y" only weakly supports "X does Y"
    misconception: float = 0.70
    misconception_sure: float = 0.90  # below this, the sentence must also use the wrong claim's own words
    wording_band: float = 0.1  # ...those of the phrasings within this of the nearest one
    contradiction: float = 0.88  # a negated near-copy of a rubric point states its opposite
    suspicion_floor: float = 0.6  # below this, resemblance to a wrong claim is just shared topic
    truth_margin: float = 0.02  # as close to a true statement as to a wrong one: benefit of the doubt
    reference_sentences: bool = False  # also match the reference answer's sentences (development splits prefer off)
    reference_assign: float = 0.6  # a reference sentence must state a point this clearly to join it
    probe_sure: float = 0.5  # a wrong claim's probe at or above this: the sentence is on the wrong side
    probe_veto: float = 0.0  # ...below this: it is not, however close it is to a wrong phrasing
    probe_ridge: float = 0.0005  # how far each probe is held from fitting its few phrasings exactly
    misconception_penalty: float = 2.25  # score points (of 5) lost per wrong claim
    reuse_factor: float = 0.2  # support left to a sentence each time it already earned another point
    echo_factor: float = 0.55  # support left to a sentence that only restates the question's words
