"""The performance model's answers for a problem file, kept between runs.

Every estimate a service's options ask is a pure function of its query, the catalog records it
names (in its key by content, ``perf.memo``) and the planner's code. A second run of the same
file, or of the file after an edit that leaves a service as it was (a budget, a price, the power,
one service of forty), asks most of them again: read back from here they cost nothing. Measured
(one process): the generated 40-service fleet's options (``benchmarks/generate.py --seed 7``)
7.3 s, 0.6 s from an entry; startup's 0.33 s, 0.08 s. The training jobs' estimates are not kept:
they took 0.02-0.1 s of those runs, about what reading them back takes.

An entry holds, per memo, the answers the last run of the file asked: each file (by its absolute
path) has one, named by a digest of every file of the planner's package and its catalogs (names,
sizes and times: ``kept.code_digest``) and by the Python, pydantic and numpy versions, so an edited or
another planner computes afresh. A process reads it when it first estimates a service (``load``):
the options' worker processes, forked before, each read it beside the command line's imports,
which go on (and, with an entry, a worker then sizes the training jobs too); the command line
itself only when it estimates too. It is read by an unpickler that makes only the
estimates' classes; one that cannot be read is only a missed shortcut. The entry is written
again, whole, when the run made an answer (so an edit that only removes a service leaves the
entry holding its answers too), and only up to ``MAX_ENTRY_BYTES``; beyond ``KEEP_FILES``
files the entries written longest ago go.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from planner.kept import code_digest, file_name, forget_oldest, read_entry, store_entry
from planner.parse_cache import cache_dir
from planner.perf.memo import Key, Memo

STEM = "estimates"
KEEP_FILES = 64
# A larger entry is not kept (the 40-service fleet's is 2.5 MB; 1,000 services' 150,000 answers,
# the memos' limit, 39 MB)
MAX_ENTRY_BYTES = 64 * 2**20
FORMAT = 1  # bump when what an entry holds changes in a way the code's digest does not show
# The modules whose classes an entry holds: the estimates, their links and shapes, the keys' links.
CLASSES = ("planner.perf.disagg", "planner.perf.inference_types", "planner.perf.shapes")

KEPT = ("inference", "within", "phase")
Answers = dict[str, dict[Key, Any]]  # memo name -> key -> answer
Made = dict[str, tuple[set[Key], dict[Key, Any]]]  # memo name -> (keys asked, answers made)


class _Pending:
    """The file whose entry this process reads at its first estimate (set by ``kept_for``; a
    forked worker inherits it), and what it read."""

    file: Path | None = None
    held: Answers | None = None


def memos() -> dict[str, Memo[Any]]:
    """The memos a worker's answers go back to its parent in, as the modules hold them now (a
    test may have replaced one); an entry holds those named in ``KEPT``."""
    from planner.perf import disagg, inference, training

    return {"inference": inference.KEPT, "within": inference.WITHIN, "phase": disagg.KEPT, "training": training.KEPT}


@contextmanager
def recording(keys: bool = False) -> Iterator[Made]:
    """Yields a mapping filled when the block ends: by memo, the answers the block made and the
    keys it asked (with ``keys``, or when this process records them already, for an entry)."""
    made: Made = {}
    with ExitStack() as stack:
        records = {
            name: ((keys or memo.recording) and name in KEPT, stack.enter_context(memo.recorded()))
            for name, memo in memos().items()
        }
        yield made
    made.update({name: (asked if wanted else set(), answers) for name, (wanted, (asked, answers)) in records.items()})


def add(made: Made) -> None:
    """In the parent: a worker's answers and keys, as if this process had made and asked them."""
    for name, memo in memos().items():
        asked, answers = made.get(name, (set(), {}))
        memo.add_record(asked, answers)


def load() -> None:
    """The pending entry's answers into this process's memos, once."""
    if _Pending.file is None or _Pending.held is not None:
        return
    _Pending.held = _read(_Pending.file)
    for name in KEPT:
        memos()[name].remember(_Pending.held.get(name, {}))


def expected() -> bool:
    """Whether the pending file has an entry (perhaps of other code: the name is not worked out,
    which takes a walk over the package's files)."""
    if _Pending.file is None:
        return False
    try:
        return any(cache_dir().glob(f"{STEM}-{file_name(_Pending.file)}-*.pickle"))
    except OSError:
        return False


@contextmanager
def kept_for(file: Path) -> Iterator[None]:
    """While the block runs, the answers kept for ``file`` are read where they are first needed;
    after it, the answers it asked are kept for the next run, if it made any."""
    _Pending.file, _Pending.held = file, None
    try:
        with recording(keys=True) as made:
            yield
    finally:
        held, _Pending.file, _Pending.held = _Pending.held, None, None
    if any(made[name][1] for name in KEPT):
        _store(file, made, held if held is not None else _read(file))


def _store(file: Path, made: Made, held: Answers) -> None:
    asked = {name: made[name][0] for name in KEPT}
    entry = {name: {**_among(held.get(name, {}), asked[name]), **memos()[name].answers(asked[name])} for name in KEPT}
    try:
        path = _path(file)
    except OSError:
        return
    store_entry(path, entry, f"{STEM}-{file_name(file)}-*.pickle", MAX_ENTRY_BYTES)
    forget_oldest(STEM, KEEP_FILES)


def _among(answers: dict[Key, Any], keys: set[Key]) -> dict[Key, Any]:
    return {k: answers[k] for k in keys if k in answers}


def _read(file: Path) -> Answers:
    try:
        found = read_entry(_path(file), CLASSES)
    except OSError:  # the package's files cannot be read: no way to tell an entry is current
        return {}
    ok = isinstance(found, dict) and all(isinstance(k, str) and isinstance(v, dict) for k, v in found.items())
    return found if ok else {}  # type: ignore[return-value]


def _path(file: Path) -> Path:
    import numpy  # the load model's quantiles are numpy's sums and sorts
    import pydantic

    versions = f"{FORMAT}\0{sys.version}\0{pydantic.VERSION}\0{numpy.__version__}\0{code_digest()}"
    key = hashlib.sha256(versions.encode()).hexdigest()[:32]
    return cache_dir() / f"{STEM}-{file_name(file)}-{key}.pickle"
