"""Reading a candidate's answer in the terminal: a block of lines ended by '.', a command, or a code file."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from app.errors import UserFacingError
from app.text_input import as_text

# A command is one word on the first line (":hint", or a mistyped ":hnt"); ":) it computes..." is an answer.
_COMMAND = re.compile(r":[A-Za-z]\S*")
_CODE_LINE = re.compile(r":code(\s.*)?")


def read_answer(stream: TextIO, warn: Callable[[str], None]) -> tuple[str, str | None, str | None] | None:
    """(command, text, code) from the next answer block; None at end of input. A `:code PATH` line's file is
    the code answer, read when the line is: one that cannot be read is said to `warn` there and then, and only
    that line is left out, so the words typed around it are kept and a command after it is still a command.
    Fenced blocks stay in the words, as the app's words box has them: the engine decides when they run
    (`app.interview.fenced`)."""
    lines: list[str] = []
    code_parts: list[str] = []
    for raw in stream:
        # Windows line ends too; bytes that are not UTF-8 (read as lone surrogates) are kept as U+FFFD.
        line = as_text(raw.rstrip("\r\n"))
        if _CODE_LINE.fullmatch(line.strip()):
            try:
                code_parts.append(read_code_file(line.strip()[5:].strip()))
            except UserFacingError as exc:
                warn(str(exc))
            continue
        if not lines and not code_parts and _COMMAND.fullmatch(line.strip()):
            return line.strip()[1:].lower(), None, None
        if line.strip() == ".":
            break
        lines.append(line)
    else:
        if not lines and not code_parts:
            return None
    return "answer", "\n".join(lines).strip() or None, "\n\n".join(code_parts).strip() or None


def over_limit(value: str | None, limit: int, what: str) -> str | None:
    return f"The {what} is {len(value)} characters; the limit is {limit}." if value and len(value) > limit else None


def read_code_file(given: str) -> str:
    """The code in the file a `:code PATH` line names; a UserFacingError saying why it cannot be read."""
    kept = "; that line was left out, the rest of the answer is kept"
    if not given:
        raise UserFacingError(f":code needs a file: `:code PATH`{kept}")
    path = _pasted_path(given)
    if path.is_dir():
        raise UserFacingError(f"{path} is a folder, not a code file{kept}")
    if not path.is_file():
        raise UserFacingError(f"code file {path} " + ("is not a regular file" if path.exists() else "was not found")
                              + kept)
    try:
        return path.read_text(encoding="utf-8-sig")  # Notepad's byte-order mark dropped
    except (OSError, UnicodeDecodeError) as exc:
        cause = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror
        raise UserFacingError(f"code file {path} cannot be read ({cause}){kept}") from None


def _pasted_path(given: str) -> Path:
    """The path as typed, or, when no such file is there, as a shell reads it: a file dragged into a terminal is
    pasted quoted ('/home/me/my code.py') or with its spaces escaped (my\\ code.py), and was "not found"."""
    path = Path(given).expanduser()
    if path.exists():
        return path
    try:
        words = shlex.split(given)
    except ValueError:  # an unmatched quote: keep it as typed
        return path
    return Path(words[0]).expanduser() if len(words) == 1 else path
