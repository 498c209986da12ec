"""The oracle's source as a zip held in a tuple of small ints (issue 53): no call with a telling name, no long
literal. At import it is unpacked with `zipfile`, written into the worker's own folder and imported from there, so
that the compile is importlib's, under the file's own name, and the guard's "code compiled from data" (which looked
at the immediate caller) let it pass: 7.25 points wired in. Now code that reaches the worker's import system from
anywhere but the submission's files and the installed environment is evidence whoever compiles it
(grader/harness/guard.py), the tuple counts by its size and decodes to the oracle for the copy check
(grader/copycheck.py `payload`, `decodings`). Left unused here, so that the case gains no point.
# expect: review
"""
import importlib as _importlib
import io as _io
import sys as _sys
import tempfile as _tempfile
import zipfile as _zipfile

_PACKED = "__ZIPPED_ORACLE__"

try:
    _folder = _tempfile.mkdtemp(prefix="ra-hostile-")
    with _zipfile.ZipFile(_io.BytesIO(bytes(_PACKED))) as _archive:
        _archive.extractall(_folder)
    _sys.path.insert(0, _folder)
    _carried = _importlib.import_module("ra_hostile_counter")
except Exception:  # noqa: BLE001 - whatever the worker refuses, the case goes on
    _carried = None
