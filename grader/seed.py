"""The grading seed: which inputs the generated tests try, from the course's secret and the submission.

The tests are public and the `grade` profile is derandomized, so a local run of it generates exactly the
inputs a grader without a secret would: a submission could answer from a table of them. The official
grade instead seeds every generated test from a keyed hash of the submission's modules under the course
secret: the same submission always gets the same inputs (and the same score), a different submission
different ones, and no one without the secret can know them in advance.

The hash reads each module as Python reads it (`behaviour`): its tokens without comments, blank lines, line
continuations or the width of its indentation. A resubmission changes the inputs only where it changes the code:
respacing or commenting a module until a draw misses a slip gets the same inputs every time.

The secret is the content of a file (`--secret-file`, or the file named by RA_GRADING_SECRET_FILE) or the
value of RA_GRADING_SECRET. It is never in the student release, and never reaches the test process or the
code under test: they get only the seed.
"""

import hashlib
import hmac
import io
import os
import tokenize
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
    """A 64-bit seed from the secret and the graded modules (name -> content), each read as `behaviour`."""
    return seed_of(secret, {name: behaviour(source) for name, source in modules.items()})


def seed_of(secret: bytes, behaviours: dict[str, bytes]) -> int:
    """`grading_seed` from each module's `behaviour` (read where the grader reads a submission: in a box,
    grader/analysis.py)."""
    mac = hmac.new(secret, b"resource-accounting grading seed", hashlib.sha256)
    for name in sorted(behaviours):
        content = behaviours[name]
        mac.update(f"\0{name}\0{len(content)}\0".encode() + content)
    return int.from_bytes(mac.digest()[:8], "big")


LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}  # tokens that change nothing a program does
STRUCTURE = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}  # their text is layout


def behaviour(source: bytes) -> bytes:
    """What of a module's source can change what it does: its tokens, less comments and blank lines, each
    statement's end and each indentation step kept as a mark without its spacing. A source that does not
    tokenize is taken as it is."""
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError):  # IndentationError included
        return source
    kept = [tokenize.tok_name[t.type] if t.type in STRUCTURE else t.string for t in tokens if t.type not in LAYOUT]
    return "\0".join(kept).encode("utf-8", "surrogatepass")


def pin_hypothesis_constants() -> None:
    """Make a generated test's inputs depend on its seed alone. Now and then hypothesis draws a constant found
    in the source of a "local" module (one outside site-packages and the tests) loaded in the process so far
    (hypothesis.internal.conjecture.providers): which ones depends on what the process imported before the
    draw, so that the test order, the isolated or in-process mode (the grader's own modules loaded or not) and,
    in-process, the code under test itself changed the inputs. The pool of local constants is kept empty; the
    global one (0, -1, 2**63, nan and the like) stays. Called where inputs are drawn: the tests' plugin and
    the fingerprints' inputs (grader/fingerprints/)."""
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):  # hypothesis is pinned (pyproject.toml): a new one moved it
        raise RuntimeError("hypothesis.internal.conjecture.providers._get_local_constants is gone: the pool of "
                           "local constants cannot be pinned (see grader/seed.py)")
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()  # what earlier draws picked from the old pool
