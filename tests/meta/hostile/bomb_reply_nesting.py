"""Issue 9.2, the worker protocol: a 32 MB reply of small nested lists, which decodes into some 1.5 GB of
Python objects in the test process (and a 10-million-deep one, which overflows a recursive decoder), both
written straight into the protocol pipe with the id of the call being answered."""
import gc as _gc
import struct as _struct

for _server in [o for o in _gc.get_objects() if type(o).__name__ == "Server" and hasattr(o, "proto_out")]:
    _id = getattr(_server, "request_id", None) or 0
    for _value in (b"[" + b"[[]]," * (32 * 2**20 // 5) + b"[]]", b"[" * 10**7 + b"]" * 10**7):
        _body = b'{"id": %d, "ok": true, "value": ' % _id + _value + b"}"
        _server.proto_out.write(_struct.pack(">I", len(_body)) + _body)
    _server.proto_out.flush()
