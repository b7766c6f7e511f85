"""A code task whose contract tells the candidate not to call a built-in must enforce it (review s49).

relu-autograd-function said "Do not call `torch.relu` or `F.relu`" but had no `forbidden:` list, so a forward
that returns `F.relu(x)` passed every hidden check and its point was called covered.
"""

from __future__ import annotations

import re

from knowledge.loader import load_bank

# "Do not call `torch.relu` or `F.relu`", "without `nn.LayerNorm`, `F.layer_norm` or ...", "(do not use
# `torchvision.ops.sigmoid_focal_loss`)": the names a contract rules out in so many words (backticked).
RULED_OUT = re.compile(r"(?:[Dd]o not (?:call|use)|without(?: using)?)\s+((?:`[\w.]+\*?`(?:,\s*|\s+or\s+)?)+)")
ALIASES = {"F.": "torch.nn.functional.", "nn.": "torch.nn."}


def _qualified(name: str) -> str:
    for short, full in ALIASES.items():
        if name.startswith(short):
            return full + name[len(short):]
    return name


def _enforced(name: str, forbidden: set[str]) -> bool:
    """`torch.relu` by its full name, `clip_grads_with_norm_` by its last part, `nn.Transformer*` by prefix."""
    full = _qualified(name)
    if full.endswith("*"):
        return any(f.startswith(full[:-1]) for f in forbidden)
    return full in forbidden or ("." not in full and any(f.endswith("." + full) for f in forbidden))


def test_names_a_contract_rules_out_are_forbidden() -> None:
    unenforced = []
    for question in load_bank():
        if question.code is None:
            continue
        contract = " ".join(question.code.contract.split())
        forbidden = set(question.code.forbidden.names) if question.code.forbidden else set()
        for found in RULED_OUT.finditer(contract):
            for name in re.findall(r"`([\w.]+\*?)`", found.group(1)):
                if not _enforced(name, forbidden):
                    unenforced.append(f"{question.id}: {name}")
    assert unenforced == []


def test_the_rule_reads_every_phrasing_the_bank_uses() -> None:
    """Guards the regex above: it finds the ruled-out names in each way the bank words them."""
    ruled_out = {question.id for question in load_bank() if question.code is not None
                 and RULED_OUT.search(" ".join(question.code.contract.split()))}
    assert {"relu-autograd-function", "layer-norm-from-scratch", "custom-layer", "custom-loss",
            "scaled-dot-product-attention", "gradient-clipping", "pairwise-distances"} <= ruled_out
