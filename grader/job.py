"""What a grading is asked (`Job`) and what it is given on the host that grades it (`Settings`).

A Job is what the command line asked, frozen: the limits, the problems, the sandbox mode, the fingerprints, where
the course secret is read; for a batch also what its workers must agree on (the coordinator's official hash and
secret check) and, per submission, its name and what an earlier grading keeps. It crosses to a cluster's worker
as JSON (`to_json`, `from_json`), never as a pickle. On the host that grades, `resolve` turns it into Settings:
the sandbox layers detected there, the course secret read from that host's own file or environment, and the
fingerprinter. `grade`, `batch` and the cluster's task (grader/batch/task.py) all grade from Settings
(grader/grading.py `grade_submission`).
"""

import json
import sys
import threading
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from grader import fingerprints, registry
from grader.harness import sandbox
from grader.harness.sandbox import Layers
from grader.outcome import Outcome
from grader.runner import Limits
from grader.seed import course_secret

MODES = ("auto", "user", "none")  # --sandbox


@dataclass(frozen=True)
class Job:
    """A grading asked for. `problems` None: every problem; `sandbox`: auto, user (the user layer alone), none;
    `seeded`: the course secret seeds the generated inputs (False: `grade --local`, the public inputs), read from
    `secret_file` where given (else $RA_GRADING_SECRET_FILE, $RA_GRADING_SECRET: grader/seed.py). A batch's: `batch`
    (its id), `official` and `secret_check` (the coordinator's: a worker with another refuses), `plain_tcp`
    (--insecure-cluster), `cpu_shares` (the gradings at once on this machine: each gets its share of the CPUs;
    None on a cluster). One submission's: `name`, and `kept` (an earlier grading whose problems not graded now
    stand beside those graded)."""

    limits: Limits = field(default_factory=Limits)
    problems: tuple[str, ...] | None = None
    sandbox: str = "auto"
    fingerprints: bool = True
    seeded: bool = True
    secret_file: str | None = None
    batch: str = ""
    official: str | None = None
    secret_check: str | None = None
    plain_tcp: bool = False
    cpu_shares: int | None = None
    name: str = ""
    kept: Outcome | None = None

    def __post_init__(self) -> None:
        if self.sandbox not in MODES:
            raise ValueError(f"sandbox mode {self.sandbox!r}: one of {', '.join(MODES)}")
        unknown = [p for p in self.problems or () if p not in registry.BY_ID]
        if unknown:
            raise ValueError(f"unknown problem(s) {unknown}; known: {', '.join(registry.BY_ID)}")

    @property
    def ids(self) -> list[str]:
        """The problems graded, in the registry's order."""
        return [p.id for p in registry.PROBLEMS if not self.problems or p.id in self.problems]

    def options(self) -> dict[str, Any]:
        """What decides its grade beside the submission and the grader (a batch's grading.json keeps it: another
        grades again)."""
        return {"problems": sorted(self.problems) if self.problems else None, "limits": asdict(self.limits),
                "fingerprints": self.fingerprints, "sandbox": self.sandbox, "secret": self.secret_check}

    def of(self, name: str, kept: Outcome | None = None) -> "Job":
        """This job for one submission."""
        return replace(self, name=name, kept=kept)

    def to_json(self) -> str:
        data = {**asdict(self), "limits": asdict(self.limits), "kept": self.kept and self.kept.to_data()}
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> "Job":
        """The job `to_json` gave; ValueError, saying what is wrong, for anything else."""
        try:
            data = json.loads(text)
            limits = Limits(**data.pop("limits"))
            kept = data.pop("kept")
            problems = data.pop("problems")
            return cls(limits, None if problems is None else tuple(problems), **data,
                       kept=None if kept is None else Outcome.from_data(kept))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a job: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class Settings:
    """A job as the host that grades it holds it: its limits and problems, the sandbox `layers` detected here, the
    course `secret` read here (None: the public inputs), and the `fingerprinter` (grader/fingerprints/'s
    Fingerprinter; None: no fingerprints)."""

    limits: Limits
    problems: list[str] | None
    layers: Layers
    secret: bytes | None
    fingerprinter: Any = None


def resolve(job: Job, *, shared: bool = False) -> Settings:
    """`job` on this host: its layers detected, its secret read (SecretError where there is none to read), its
    fingerprinter made (`shared`: one per process for these problems, mode and limits, every catalogued answer
    computed up front, as a batch's gradings share it)."""
    layers = sandbox.detect(job.sandbox)
    secret = course_secret(Path(job.secret_file) if job.secret_file else None) if job.seeded else None
    problems = list(job.problems) if job.problems else None
    found = None
    if job.fingerprints:
        found = (shared_fingerprinter(job.ids, job.sandbox, job.limits)[0] if shared else
                 fingerprinter(problems, layers, job.limits)[0])
    return Settings(job.limits, problems, layers, secret, found)


def fingerprinter_available() -> bool:
    """Whether this tree has what the fingerprints need: the reference and the catalogue of mistakes (the course's
    tree and the autograder zip; not the student release)."""
    return fingerprints.available()


def fingerprinter(problems: list[str] | None, layers: Layers, limits: Limits, *,
                  up_front: bool = False) -> tuple[Any, str | None]:
    """grader/fingerprints/'s Fingerprinter for `problems` (None: all), or, where there is no reference or no
    catalogue of mistakes (the student release), why there is none."""
    if not fingerprinter_available():
        return None, "they need the reference and the catalogue of mistakes (the course's tree)"
    return fingerprints.Fingerprinter(problems or [p.id for p in registry.PROBLEMS], layers, limits,
                                      up_front=up_front), None


_shared: dict[tuple[tuple[str, ...], str, Limits], tuple[Any, str | None]] = {}
_shared_lock = threading.Lock()


def shared_fingerprinter(problems: list[str], mode: str, limits: Limits) -> tuple[Any, str | None]:
    """This process's Fingerprinter for (problems, sandbox mode, limits), or why there is none: built once, every
    catalogued answer up front, and shared by the gradings of this process."""
    key = (tuple(problems), mode, limits)
    with _shared_lock:
        if key not in _shared:
            try:
                _shared[key] = fingerprinter(problems, sandbox.detect(mode), limits, up_front=True)
            except Exception:  # noqa: BLE001 - the grades do not need them
                print(f"resource-grader batch: no fingerprints:\n{traceback.format_exc()}", file=sys.stderr)
                _shared[key] = None, "the catalogue's answers could not be computed (the grader's stderr)"
        return _shared[key]
