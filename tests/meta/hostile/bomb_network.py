"""Bombs: the network. Connect to a listener on the loopback (the test opens it) and send what it can; with
the namespaces layer there is no network at all."""
import socket as _socket

_host, _port = "__LISTENER__".split(":")
try:
    with _socket.create_connection((_host, int(_port)), timeout=2) as _s:
        _s.sendall(b"ra-hostile: hello from the sandbox")
except OSError:
    pass
