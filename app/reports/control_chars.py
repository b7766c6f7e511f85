"""Control characters in report text, which every format that prints text as written shows as U+FFFD.

An answer, its code and the error a submission raised are the candidate's text: an escape sequence in them
cleared a terminal's screen and drew "Score 5 / 5" over the Markdown report (`interviewer report --format md`,
`cat`), a carriage return wrote over a line, and the HTML report carried them raw into its <pre> blocks.
"""

from __future__ import annotations

import re

# Tab and line feed are text; every other C0 and C1 control character, and DEL, is not.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with line ends typed as CRLF kept as line ends, and any other control character shown as U+FFFD."""
    return CONTROL.sub("\ufffd", text.replace("\r\n", "\n"))
