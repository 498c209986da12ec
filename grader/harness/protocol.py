"""Framing for the worker's pipes: a 4-byte big-endian length, then that many bytes of JSON.

Every request carries an `id`; the worker's reply, and every event it sends while working on it, echo it.
The test process reads what the worker sends as untrusted input (`parse`): a frame over `MAX_MESSAGE`
bytes, or with more than `MAX_CONTAINERS` lists and objects or `MAX_ITEMS` values, is refused before it
is decoded (and a value nested deeper than `codec.MAX_DEPTH` while it is decoded), so that no reply can
make the test process build a structure far larger than the frame.
"""

import json
import struct

HEADER = struct.Struct(">I")
MAX_MESSAGE = 64 * 2**20  # the largest frame: a tensor of 32 MiB is about 43 MiB of base64
MAX_CONTAINERS = 100_000  # lists and objects in one frame
MAX_ITEMS = 1_000_000  # values in one frame, as counted by its commas
# the note the test process adds to an exception the code under test raised in the worker (client.py), which the
# report and the scoring read: the submission's failure, not the grading code's
WORKER_NOTE = "[raised in the grading worker"


class ProtocolError(ValueError):
    """A frame that breaks the protocol: too large, unparsable, too deep, or not the reply awaited."""


def write_message(stream, message: dict) -> None:
    body = json.dumps(message, allow_nan=True).encode()
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


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
