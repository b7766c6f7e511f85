"""Run a submission and its probes: the part of checking that happens inside the sandbox.

Bound into the jail, so it imports only the standard library and torch. The same functions
run the reference solution on the trusted side, so both are probed in exactly the same way.
"""

from __future__ import annotations

import functools
import io
import linecache
import multiprocessing
import os
import sys
import traceback
import zipfile
from dataclasses import dataclass
from typing import Any

import torch

SUBMISSION_FILENAME = "<submission>"


@dataclass(frozen=True)
class ProbeOutcome:
    """What a probe returned, or the error it raised, in the submission's terms."""

    value: Any = None
    error: str | None = None  # "ValueError: msg (line 12)"
    missing: str | None = None  # the name the probe looked up that the submission does not define


def compile_probe(source: str, name: str) -> Any:
    """The `probe(ns, inputs)` function defined by `source` (the probe with the setup it uses), in a namespace of
    its own each time, so nothing one run of a probe leaves in it reaches the next."""
    namespace: dict[str, Any] = {"torch": torch, "__name__": "__check__"}
    exec(_probe_code(source, name), namespace)  # noqa: S102 - the bank's own probe
    return namespace["probe"]


@functools.lru_cache(maxsize=1024)
def _probe_code(source: str, name: str) -> Any:
    """Compiled once: the trusted side probes the reference for every submission (a fresh seed each), and compiling
    the GAN task's six probes with their setup took ~15 ms of CPU of its ~50 ms there."""
    return compile(source, f"<check {name}.probe>", "exec")


def dumps(value: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


# The most tensor elements one decoded result may hold, all its tensors together (the bank's largest holds
# 64,000). A tensor expanded to 2e10 elements from one stored value is 2 KB on the wire, and comparing it would
# cost the trusted side minutes of CPU outside every limit; one expanded to 2**24, listed 150 times, is as small,
# and a `verify` that concatenates the list (custom-dataset's shuffled batches) allocates 10 GB.
MAX_ELEMENTS = 1 << 24
# A result's pickle, decoded in pure Python at ~0.6 s of CPU per MiB: 1 MiB per check cost 4 s of the trusted
# process's CPU per job of seven checks. The bank's largest is 1.2 KB.
MAX_PICKLE_BYTES = 64 << 10
MAX_ITEMS = 1 << 17  # plain values (not tensor elements) a result may hold
# Records in a result's archive (one per tensor storage, and six of torch's own; the bank's results hold at most
# 26). Both zip readers below parse every entry of the central directory before anything else: a forged result of
# 600,000 empty records, 59 MB, took the trusted process 6 s of CPU (5 s in Python's, holding the GIL) and 400 MB.
# Every entry starts with this signature, so counting it (at memchr's speed) bounds what either reader can meet.
MAX_RECORDS = 1 << 10
CENTRAL_DIRECTORY_ENTRY = b"PK\x01\x02"


def loads(blob: bytes) -> Any:
    """Decode untrusted bytes: weights_only refuses anything but tensors and plain data; records must be
    stored as torch.save writes them (a deflated one could inflate to gigabytes), and its tensors may hold
    no more than MAX_ELEMENTS elements together."""
    if blob.count(CENTRAL_DIRECTORY_ENTRY) > MAX_RECORDS:
        raise ValueError(f"over {MAX_RECORDS} records in a result: return fewer tensors")
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        if any(info.compress_type != zipfile.ZIP_STORED for info in archive.infolist()):
            raise ValueError("a compressed record: results are stored as torch.save writes them")
        # The pickle is decoded in pure Python, about a second of the server's CPU per MiB: a forged one of
        # 57 MiB (a list of 30 million zeros) held a request thread for 70 s. Tensors' data lives in records
        # of its own, so a real result's pickle is a few kilobytes.
        if any(info.filename.endswith(".pkl") and info.file_size > MAX_PICKLE_BYTES for info in archive.infolist()):
            raise ValueError(f"a result's structure over {MAX_PICKLE_BYTES >> 10} KiB: return tensors, not long lists")
    value = torch.load(io.BytesIO(blob), weights_only=True)
    _check_sizes(value)
    return value


def _check_sizes(value: Any) -> None:
    """Dense tensors up to MAX_ELEMENTS elements together; other values up to MAX_ITEMS in all. Both are counted
    as the walk meets them, so a value listed many times counts each time (a 16 KB pickle of one list shared
    4,000 times holds 16 million items to walk: 22 s of the server's CPU)."""
    stack, seen, elements = [value], 0, 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > MAX_ITEMS:
            raise ValueError(f"over {MAX_ITEMS} values in a result: return tensors, not long lists")
        elements += item.numel() if isinstance(item, torch.Tensor) else 0
        if elements > MAX_ELEMENTS:
            raise ValueError(f"over {MAX_ELEMENTS} tensor elements in a result; at most {MAX_ELEMENTS} are checked")
        # torch.load does not validate a sparse tensor's indices (unless invariant checks are switched on), and
        # `dense - sparse` then writes wherever they point: index -1 wrote before the buffer, 10**8 crashed the
        # process. No probe returns anything but dense tensors, so nothing else is decoded for `verify`.
        if isinstance(item, torch.Tensor) and (item.layout != torch.strided or item.is_quantized or item.is_nested):
            raise ValueError(f"a {item.layout} tensor: return dense tensors")
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])  # a tensor may be a key too
        elif isinstance(item, list | tuple):
            stack.extend(item)


def exec_submission(source: str, imports: str = "") -> dict[str, Any]:
    """Run the submission as a module, after `imports` (its task's starter's import lines, as coding platforms
    run theirs: a candidate who sends only a class still has the `nn` the starter gave). Each is compiled on its
    own, so the submission's lines keep their numbers and stay readable for tracebacks."""
    linecache.cache[SUBMISSION_FILENAME] = (len(source), None, source.splitlines(keepends=True),
                                            SUBMISSION_FILENAME)
    namespace: dict[str, Any] = {"__name__": "submission"}
    if imports:
        exec(compile(imports, "<starter imports>", "exec"), namespace)  # noqa: S102 - the bank's public starter
    exec(compile(source, SUBMISSION_FILENAME, "exec"), namespace)  # noqa: S102 - sandboxed
    return namespace


# The jail's /dev/shm is read-only (and, without a cgroup, a fork is refused): a process pool, a queue or a lock
# of multiprocessing fails with a bare OSError ("Read-only file system") that does not say why.
MULTIPROCESSING_DIR = os.path.dirname(multiprocessing.__file__) + os.sep
ONE_PROCESS = ("the sandbox runs a code task in one process, so worker processes (multiprocessing, "
               "a DataLoader with num_workers > 0) cannot start; use num_workers=0")


# The longest class name shown: Python's and torch's own are under 40 characters.
MAX_TYPE_NAME = 60


def exception_type(cls: type) -> str:
    """An exception's type as a description names it: Python's or a library's class by its name (ValueError,
    OutOfMemoryError), any other class as the submission's own, `your ValueError subclass "Passed"`. A class's
    name is any text its code sets (`Passed`, a name holding "every hidden check passed", line breaks, escape
    sequences, 10,000 characters), which described as the type read as the harness's own words; so a name is
    shown only when it is an identifier, quoted, and a class counts as a library's only when it is the very object
    its module holds under its name (what __module__ and __qualname__ claim is the submission's to set too)."""
    try:
        names = [(_type_attribute(c, "__name__"), _library_class(c)) for c in _type_attribute(cls, "__mro__")]
        (name, library), base = names[0], next(n for n, lib in names if lib and _showable(n))  # BaseException at last
        if library and _showable(name):
            return name
        return f'your {base} subclass "{name}"' if _showable(name) else f"your {base} subclass"
    except Exception:  # a metaclass that answers with anything
        return "your exception class"


def _type_attribute(cls: type, attribute: str) -> Any:
    """`cls.__name__` (or __mro__, __module__, __qualname__) as the class holds it: a metaclass may define a property
    of that name that answers anything."""
    return type.__dict__[attribute].__get__(cls, type)


def _showable(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and len(name) <= MAX_TYPE_NAME


def _library_class(cls: type) -> bool:
    """Whether `cls` is the class its module holds under its qualified name, in a module the submission did not
    define (its classes' module is "submission", which is not imported)."""
    module_name = _type_attribute(cls, "__module__")
    found: Any = sys.modules.get(module_name) if isinstance(module_name, str) else None
    for part in str(_type_attribute(cls, "__qualname__")).split("."):
        found = getattr(found, part, None) if found is not None else None
    return found is cls


def describe_exception(exc: BaseException) -> str:
    """Exception type and message with the line in the submission, no harness frames. Always the type: a message
    taken as it stands (a `candidate_message`, which any exception the submission raises may carry) read as the
    harness's own words. A forbidden call's message is the guard's record (worker.py), not its exception's."""
    every_frame = traceback.extract_tb(exc.__traceback__)
    frames = [frame for frame in every_frame if frame.filename == SUBMISSION_FILENAME]
    text = f"{exception_type(type(exc))}: {exc}".strip()
    if isinstance(exc, OSError) and "one process" not in text \
            and any(frame.filename.startswith(MULTIPROCESSING_DIR) for frame in every_frame):
        text = f"{text}: {ONE_PROCESS}"
    if isinstance(exc, SyntaxError) and exc.filename == SUBMISSION_FILENAME:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    if frames:
        last = frames[-1]
        where = f"line {last.lineno}"
        if last.line:
            where += f": {last.line.strip()}"
        return f"{text} ({where})"
    return text


def missing_name(name: str) -> str:
    """Why a check could not call the code: a name the task asks for is not defined (the trusted side says it
    in these words too)."""
    return f"your code does not define {name}, which the task asks for by that name"


def run_probe(probe: Any, namespace: dict[str, Any], inputs: Any) -> ProbeOutcome:
    try:
        return ProbeOutcome(value=probe(namespace, inputs))
    except KeyError as exc:
        name = exc.args[0] if exc.args else None
        raised_in_submission = any(f.filename == SUBMISSION_FILENAME for f in traceback.extract_tb(exc.__traceback__))
        if isinstance(name, str) and name not in namespace and not raised_in_submission:
            # The probe looked up a name the contract asks for (ns["CustomLinear"]): say that, not "KeyError".
            return ProbeOutcome(error=missing_name(name), missing=name)
        return ProbeOutcome(error=describe_exception(exc))
    except Exception as exc:  # the submission's failure is data, not our crash
        return ProbeOutcome(error=describe_exception(exc))
