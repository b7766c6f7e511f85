"""A code task whose contract tells the candidate not to call a built-in must enforce it (review s49).

relu-autograd-function says "Do not call `torch.relu` or `F.relu`" but has no `forbidden:` list, so a forward
that returns `F.relu(x)` passes every hidden check and its point is called covered.
"""

from __future__ import annotations

import re

from knowledge.loader import load_bank

# "Do not call `torch.relu` or `F.relu`": the names a contract rules out in so many words.
DO_NOT_CALL = re.compile(r"Do not call ((?:`[\w.]+`(?:,\s*|\s+or\s+)?)+)")
ALIASES = {"F.": "torch.nn.functional.", "nn.": "torch.nn."}


def _qualified(name: str) -> str:
    for short, full in ALIASES.items():
        if name.startswith(short):
            return full + name[len(short):]
    return name


def test_names_a_contract_rules_out_are_forbidden() -> None:
    unenforced = []
    for question in load_bank():
        if question.code is None:
            continue
        contract = " ".join(question.code.contract.split())
        forbidden = set(question.code.forbidden.names) if question.code.forbidden else set()
        for found in DO_NOT_CALL.finditer(contract):
            for name in re.findall(r"`([\w.]+)`", found.group(1)):
                if _qualified(name) not in forbidden:
                    unenforced.append(f"{question.id}: {name}")
    assert unenforced == []
