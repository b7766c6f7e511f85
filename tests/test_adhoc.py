"""Rubric points derived from an ad-hoc reference answer, as the candidate reads them."""

from __future__ import annotations

from evaluators.adhoc import derive_rubric

REFERENCE = (
    "A DataLoader wraps a Dataset and yields batches of samples for the training loop.\n\n"
    "num_workers sets how many worker subprocesses load batches in parallel; "
    "Setting pin_memory speeds up copies of each batch from host memory to the GPU device."
)


def test_claims_are_numbered_in_the_references_order_without_a_dangling_separator():
    """claim-1 was the reference's last sentence (the claims were numbered by length), and a sentence split at
    ";" kept it: "num_workers sets how many worker subprocesses load batches in parallel;"."""
    points = derive_rubric(REFERENCE)
    assert [(p.id, p.description) for p in points] == [
        ("claim-1", "A DataLoader wraps a Dataset and yields batches of samples for the training loop."),
        ("claim-2", "num_workers sets how many worker subprocesses load batches in parallel"),
        ("claim-3", "Setting pin_memory speeds up copies of each batch from host memory to the GPU device."),
    ]
