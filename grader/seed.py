"""The grading seed: which inputs the generated tests try, from the course's secret and the submission.

The tests are public and the `grade` profile is derandomized, so a local run of it generates exactly the
inputs a grader without a secret would: a submission could answer from a table of them. The official
grade instead seeds every generated test from a keyed hash of the submission's modules under the course
secret: the same submission always gets the same inputs (and the same score), a different submission
different ones, and no one without the secret can know them in advance.

The secret is the content of a file (`--secret-file`, or the file named by RA_GRADING_SECRET_FILE) or the
value of RA_GRADING_SECRET. It is never in the student release, and never reaches the test process or the
code under test: they get only the seed.
"""

import hashlib
import hmac
import os
from pathlib import Path

SECRET_ENV, SECRET_FILE_ENV = "RA_GRADING_SECRET", "RA_GRADING_SECRET_FILE"
MIN_SECRET_BYTES = 16


class SecretError(ValueError):
    """No usable course secret."""


NO_SECRET = (f"no course secret: set {SECRET_ENV}, or {SECRET_FILE_ENV} or --secret-file to a file holding it "
             "(course staff), or pass --local to grade your own work with the public inputs (those of "
             "`pytest --hypothesis-profile=grade`)")


def course_secret(secret_file: Path | None = None) -> bytes:
    """The course secret, from the first of: `secret_file`, $RA_GRADING_SECRET_FILE, $RA_GRADING_SECRET."""
    path = secret_file or (Path(os.environ[SECRET_FILE_ENV]) if os.environ.get(SECRET_FILE_ENV) else None)
    if path is not None:
        try:
            secret = path.read_bytes().strip()
        except OSError as exc:
            raise SecretError(f"cannot read the course secret from {path}: {exc.strerror}") from None
        where = str(path)
    elif os.environ.get(SECRET_ENV):
        secret, where = os.environ[SECRET_ENV].encode(), SECRET_ENV
    else:
        raise SecretError(NO_SECRET)
    if len(secret) < MIN_SECRET_BYTES:
        raise SecretError(f"the course secret in {where} is shorter than {MIN_SECRET_BYTES} bytes: anyone could "
                          "guess it (`python -c 'import secrets; print(secrets.token_hex(32))'` makes one)")
    return secret


def grading_seed(secret: bytes, modules: dict[str, bytes]) -> int:
    """A 64-bit seed from the secret and the graded modules (name -> content)."""
    mac = hmac.new(secret, b"resource-accounting grading seed", hashlib.sha256)
    for name in sorted(modules):
        content = modules[name]
        mac.update(f"\0{name}\0{len(content)}\0".encode() + content)
    return int.from_bytes(mac.digest()[:8], "big")
