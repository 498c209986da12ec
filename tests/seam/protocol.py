"""Framing for the worker's pipes: a 4-byte big-endian length, then that many bytes of JSON."""

import json
import struct

HEADER = struct.Struct(">I")
MAX_MESSAGE = 512 * 2**20


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
    (length,) = HEADER.unpack(read_exactly(stream, HEADER.size))
    if length > MAX_MESSAGE:
        raise ValueError(f"message of {length} bytes is over the limit")
    return json.loads(read_exactly(stream, length))
