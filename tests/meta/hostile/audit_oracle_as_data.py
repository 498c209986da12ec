"""The oracle carried as data (issue 41): torch/utils/flop_counter.py taken from one's own install, compressed,
base85-encoded into a string (`_CARRIED`: the corpus fills it in from the installed torch when it builds
the case), decoded and compiled at import under a name of its own. The copy check sees one string token; the masked
files leave the guard no line to compare. The grader's copy check (grader/copycheck.py `carried_as_data`) counts the
module's payload by its size, whatever call decodes it (since issue 53: no call is evidence by its name), decodes
the literal as such a copy is encoded, and finds the oracle in it; the guard reports the compiling of code given as
data. The copy is left unused here, so that the case gains no point (the corpus's rule); wired into FlopCounter it
would earn the counter's points, with status review.
# expect: review
"""
import base64 as _base64
import zlib as _zlib

_CARRIED = "__ENCODED_ORACLE__"
_namespace = {"__name__": "ra_hostile_counter"}
try:
    exec(compile(_zlib.decompress(_base64.b85decode(_CARRIED)), "<ra-hostile-counter>", "exec"), _namespace)
except Exception:  # noqa: BLE001 - whatever the worker refuses, the case goes on
    pass
