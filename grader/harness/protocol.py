"""The frames on the worker's pipes: a 4-byte big-endian length, then that many bytes of JSON, each one of the
types below.

The test process sends a `Request`; the worker answers it with one `Reply`, and sends `Event`s while it works on
it (the guard's audit events at any time). Every request carries an `id`; the reply, and every event sent while
working on it, echo it. The test process reads what the worker sends as untrusted input (`frame`): a frame over
`MAX_MESSAGE` bytes, or with more than `MAX_CONTAINERS` lists and objects or `MAX_ITEMS` values, is refused
before it is decoded (and a value nested deeper than `codec.MAX_DEPTH` while it is decoded), so that no reply can
make the test process build a structure far larger than the frame; then every field is checked against its type,
and a frame that is no Reply and no Event, or has a field of another type or one unknown, is refused.
"""

import json
import struct
from dataclasses import asdict, dataclass, fields
from types import UnionType
from typing import get_args, get_origin

HEADER = struct.Struct(">I")
MAX_MESSAGE = 64 * 2**20  # the largest frame: a tensor of 32 MiB is about 43 MiB of base64
MAX_CONTAINERS = 100_000  # lists and objects in one frame
MAX_ITEMS = 1_000_000  # values in one frame, as counted by its commas
# the note the test process adds to an exception the code under test raised in the worker (client.py), which the
# report and the scoring read: the submission's failure, not the grading code's
WORKER_NOTE = "[raised in the grading worker"


class ProtocolError(ValueError):
    """A frame that breaks the protocol: too large, unparsable, too deep, or not the reply awaited."""


def read_exactly(stream, n: int) -> bytes:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_message(stream) -> dict:
    """A request, as the worker reads it (the test process wrote it: trusted)."""
    (length,) = HEADER.unpack(read_exactly(stream, HEADER.size))
    if length > MAX_MESSAGE:
        raise ValueError(f"message of {length} bytes is over the limit")
    return json.loads(read_exactly(stream, length))


def parse(body: bytes) -> dict:
    """A frame from the worker, decoded only once it is known to be within the limits."""
    containers = body.count(b"[") + body.count(b"{")  # brackets inside strings count too: a safe overestimate
    if containers > MAX_CONTAINERS:
        raise ProtocolError(f"a reply with {containers} lists or objects (at most {MAX_CONTAINERS})")
    if body.count(b",") + 1 > MAX_ITEMS:
        raise ProtocolError(f"a reply with more than {MAX_ITEMS} values")
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:  # json refuses extreme nesting itself
        raise ProtocolError(f"a reply that is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"a reply that is a {type(message).__name__}, not an object")
    return message


@dataclass(frozen=True)
class Request:
    """What the test process asks the worker (trusted): call `module.name`, run a scenario, or answer a ping."""

    op: str  # "call", "scenario" or "ping"
    id: int = 0  # numbered by the client as it sends
    problem: str | None = None  # the problem whose test asks
    module: str = ""  # call: the problem module ...
    name: str = ""  # ... and its function
    target: str = ""  # scenario: "tests.scenarios.<module>:<function>"
    args: object = None  # the codec's form of the arguments (a list) ...
    kwargs: object = None  # ... and of the keyword arguments (a dict)


@dataclass(frozen=True)
class RemoteError:
    """An exception the code under test raised in the worker, as the worker describes it."""

    type: str  # its qualified name
    builtin: str  # the nearest built-in class, which the test process raises in its place
    message: str
    traceback: str


@dataclass(frozen=True)
class Reply:
    """The answer to request `id`: a value (in the codec's form, decoded by the reader) or an error."""

    id: int | None
    ok: bool
    value: object = None
    error: RemoteError | None = None


EVENTS = ("ready", "importing", "imported", "audit", "running")


@dataclass(frozen=True)
class Event:
    """What the worker says while it works: `ready` to take requests; `importing` and `imported` a problem
    `module` of the code under test; `audit`, the guard's record of an `oracle` the code under test ran or other
    `evidence` (grader/harness/guard.py writes these frames itself); `running`, the `function` of the code under
    test that the request has been in for most of its time so far, at `line` ("" when none:
    grader/harness/running.py)."""

    event: str  # one of EVENTS
    id: int | None = None
    module: str | None = None
    oracle: str | None = None
    evidence: str | None = None
    function: str | None = None
    line: int | None = None


def framed(message: Request | Reply | Event) -> bytes:
    """One frame's bytes: its length, then its JSON, without the fields it leaves unset."""
    fields_set = {f.name: getattr(message, f.name) for f in fields(message) if getattr(message, f.name) is not None}
    body = json.dumps(fields_set, allow_nan=True, default=asdict).encode()  # asdict: a Reply's RemoteError
    return HEADER.pack(len(body)) + body


def write_frame(stream, message: Reply | Event) -> None:
    stream.write(framed(message))
    stream.flush()


def frame(message: dict) -> Reply | Event:
    """A parsed frame from the worker as the Reply or Event it must be, every field of its type (hostile input:
    anything else is a ProtocolError)."""
    kind = Event if "event" in message else Reply
    known = {f.name: f for f in fields(kind)}
    for name, value in message.items():
        if name not in known:
            raise ProtocolError(f"a frame with an unknown field {name!r}")
        if name in ("value", "error"):  # checked below: the codec's form, a RemoteError
            continue
        kinds = json_kinds(known[name].type)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # true is no id
            raise ProtocolError(f"a frame whose {name} is of type {type(value).__name__}")
    if kind is Event:
        if message["event"] not in EVENTS:
            raise ProtocolError(f"an unknown event {message['event']!r}")
        return Event(**message)
    if "ok" not in message or "id" not in message:
        raise ProtocolError("a reply without " + ("ok" if "ok" not in message else "its id"))
    if message["ok"]:
        return Reply(message["id"], True, value=message.get("value"))
    error = message.get("error")
    names = [f.name for f in fields(RemoteError)]
    if not (isinstance(error, dict) and sorted(error) == sorted(names)
            and all(isinstance(error[n], str) for n in names)):
        raise ProtocolError(f"a malformed error (its fields: {', '.join(names)}, each a string)")
    return Reply(message["id"], False, error=RemoteError(**error))


def json_kinds(hint) -> tuple[type, ...]:
    """The classes a JSON value of a field typed `hint` may have (an int for a float)."""
    if isinstance(hint, UnionType):
        return tuple(kind for arg in get_args(hint) for kind in json_kinds(arg))
    return (int, float) if hint is float else (get_origin(hint) or hint,)

