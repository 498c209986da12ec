"""What a batch keeps of each grading: OUT/<name>/grading.json (`Record`), from which a later batch into the same
OUT grades only what is new, changed or did not finish (grader/batch/run.py), with a version: a record of another
version, or of none (written before records had one), and a corrupt one are told apart (`RecordError`), and neither
is ever misread.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.outcome import DataError, Outcome, OutcomeError, versioned

RECORD = "grading.json"
RECORD_VERSION = 1  # of grading.json's form (its outcome has a version of its own: grader/outcome.py)


class RecordError(DataError):
    """A grading.json this grader cannot use, and why: `old` where it is a record of another version (or of none),
    else it is corrupt. Either way its submission is graded again: nothing is lost but the time."""


@dataclass(frozen=True)
class Record:
    """What a batch keeps of one grading, in OUT/<name>/grading.json: what was graded (the submission's `content`
    hash, the `grader`'s official hash and its problems' `hashes`, the `options`), its `outcome`, the `worker` that
    graded it and the `attempts` it took (a worker that died while it graded gives it to another)."""

    content: str
    grader: str
    options: dict[str, Any]
    outcome: Outcome
    hashes: dict[str, str] = field(default_factory=dict)
    worker: str = ""
    attempts: int = 1

    def to_data(self) -> dict[str, Any]:
        return {"version": RECORD_VERSION, "content": self.content, "grader": self.grader, "options": self.options,
                "hashes": self.hashes, "worker": self.worker, "attempts": self.attempts,
                "outcome": self.outcome.to_data()}

    @classmethod
    def from_data(cls, data: object) -> "Record":
        """The record `to_data` gave; RecordError, saying why, for anything else."""
        data = versioned(data, RECORD_VERSION, "a record", RecordError)
        try:
            return cls(_text(data["content"]), _text(data["grader"]), dict(data["options"]),
                       Outcome.from_data(data["outcome"]), {str(k): _text(v) for k, v in data["hashes"].items()},
                       _text(data["worker"]), int(data["attempts"]))
        except OutcomeError as exc:
            raise RecordError(f"its outcome is {exc}" if exc.old else str(exc), old=exc.old) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RecordError(f"{type(exc).__name__}: {exc}") from None


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string expected, not {value!r:.80}")
    return value


def read_record(path: Path) -> Record | None:
    """The grading.json at `path`, None where there is none; RecordError where it cannot be used, saying why."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordError(f"unreadable ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(f"not JSON ({exc})") from None
    return Record.from_data(data)


