"""The grader's own analysis stalled by what it decodes (issue 53): twelve literals of base64, each a bz2 stream that
expands to tens of megabytes of comment lines. The copy check decoded every literal it found, expanded it without a
bound and tokenized the result in the grader's own process (root, no limit, no deadline): the runner killed the
grading at 600 s, twice, with no results.json. Now every analysis runs in a box (grader/harness/box.py: CPU
seconds, memory, output, the grading's deadline), each decoding stops at copycheck.DECODED_BYTES, and the payload
counts by its size whatever would decode it.
# expect: review
"""
import base64 as _base64
import bz2 as _bz2

# __BOMB__ decompression


def _expanded(name):
    return _bz2.decompress(_base64.b64decode(globals()[name]))
