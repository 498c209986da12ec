"""The worker's frames (grader/harness/protocol.py): each type goes through its bytes and back unchanged, and what the
test process reads from the worker is refused unless it is a Reply or an Event with every field of its type."""

import pytest

from grader.harness.protocol import HEADER, Event, ProtocolError, RemoteError, Reply, Request, frame, framed, parse

pytestmark = pytest.mark.meta

ERROR = RemoteError("mod.Oops", "ValueError", "bad input", "Traceback ...")


def body(message) -> bytes:
    data = framed(message)
    (length,) = HEADER.unpack(data[: HEADER.size])
    assert length == len(data) - HEADER.size
    return data[HEADER.size :]


@pytest.mark.parametrize("message", [
    Reply(3, True, value={"$": "tuple", "items": [1, 2.5, "x"]}),
    Reply(4, False, error=ERROR),
    Event("ready"),
    Event("importing", id=2, module="flops"),
    Event("audit", oracle="torch.utils.flop_counter (from flops.py:3)"),
])
def test_a_frame_reads_back_as_it_was_sent(message):
    assert frame(parse(body(message))) == message


def test_unset_fields_are_not_sent():
    assert parse(body(Request("call", id=1, module="flops", name="mfu"))) == {
        "op": "call", "id": 1, "module": "flops", "name": "mfu", "target": ""}


@pytest.mark.parametrize(("message", "refused"), [
    ({"id": 1, "ok": True, "value": 1, "extra": 2}, "an unknown field 'extra'"),
    ({"id": "1", "ok": True, "value": 1}, "id is of type str"),
    ({"id": True, "ok": True, "value": 1}, "id is of type bool"),
    ({"id": 1, "ok": 1, "value": 1}, "ok is of type int"),
    ({"id": 1, "value": 1}, "a reply without ok"),
    ({"ok": True, "value": 1}, "a reply without its id"),
    ({"id": 1, "ok": False, "error": "boom"}, "a malformed error"),
    ({"id": 1, "ok": False, "error": {**ERROR.__dict__, "message": 3}}, "a malformed error"),
    ({"id": 1, "ok": False, "error": {**ERROR.__dict__, "more": "x"}}, "a malformed error"),
    ({"event": "done", "id": 1}, "an unknown event 'done'"),
    ({"event": "audit", "oracle": ["a"]}, "oracle is of type list"),
    ({"event": "importing", "module": 7}, "module is of type int"),
])
def test_a_frame_that_is_not_what_it_claims_is_refused(message, refused):
    with pytest.raises(ProtocolError, match=refused):
        frame(message)
