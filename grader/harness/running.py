"""Which function of the code under test a request is stuck in, and functions that are not called again.

A loop costs what an unfinished function costs, wherever it is: the function that ran out of time is the innermost
function of the student's module whose one call has lasted through most of the timed-out request (not the
function the test called, and not a correct helper that a slow caller happened to be in when the time ran out).
The worker cannot be asked once it is stuck (a loop in C holds the interpreter), so it says as it goes:

`Running` is a thread of the worker that looks at the main thread's stack every INTERVAL seconds while a request
runs, and sends a "running" event whenever the answer changes: the innermost frame of the student's code (a
function or method defined at a module's top level, or a module's top level being imported) that has been on the
stack, the same call, for more than half of the request so far (the outermost module being imported, where one
is: its top level's line). The test process keeps the last one it read
(grader/harness/client.py): it names what ran out of time, never more than the worker's word (the worker can only
name its own functions, and a function named wrongly is only its own loss).

`stop_calling(module, functions)` makes the named functions of a freshly imported student module raise at once
wherever they are called from, what a function left unfinished raises (NotImplementedError), with the message the
test process gave: their callers, the student's other functions and the scenarios, fail at once exactly as they
would if it were left unfinished, instead of running into the loop again.
"""

import sys
import threading
import types
from inspect import getattr_static

INTERVAL = 0.1  # seconds between two looks at the stack while a request runs
TOP_LEVEL = "<module>"
NOWHERE = ("", 0)  # no function of the student's that has lasted: what a request says until one has


class Running:
    """The watch of one worker: `begin(request_id)` as a request starts, `end()` before its reply is written (nothing
    is sent for it after that); `send(event_fields)` writes one frame (called under the watch's lock)."""

    def __init__(self, student_dir: str, send):
        self.student, self.send = student_dir, send
        self.main = threading.get_ident()
        self.lock = threading.Lock()
        self.request = None  # the request running, set by the main thread
        self.watched = None  # the request whose stack is watched
        self.ticks = 0  # looks at its stack so far
        self.born: dict[int, tuple[object, int]] = {}  # id(frame) -> (the frame, the tick it was first seen)
        self.said = NOWHERE  # what was sent last for it
        threading.Thread(target=self._watch, name="grading worker: running", daemon=True).start()

    def begin(self, request_id) -> None:
        self.request = request_id

    def end(self) -> None:
        with self.lock:
            self.request = self.watched = None
            self.born.clear()

    def _watch(self) -> None:
        wait = threading.Event().wait
        while True:
            wait(INTERVAL)
            try:
                self._look()
            except Exception:  # noqa: BLE001 - the watch is evidence for the test process, never a failure here
                continue

    def _look(self) -> None:
        request = self.request
        if request is None:
            return
        frame = sys._current_frames().get(self.main)
        with self.lock:
            if self.request != request:  # it ended meanwhile: its reply may be being written
                return
            if self.watched != request:
                self.watched, self.ticks, self.said = request, 0, NOWHERE
                self.born.clear()
            self.ticks += 1
            stack = self._student_frames(frame)
            self.born = {id(f): self.born.get(id(f), (f, self.ticks)) for f in stack}
            old_enough = [(name, f.f_lineno) for f in stack
                          if self.ticks - self.born[id(f)][1] + 1 > self.ticks / 2 and (name := self._name(f))]
            # a module being imported is what is stuck, whatever its top level called
            importing = [found for found in old_enough if found[0].endswith("." + TOP_LEVEL)]
            named = (importing or old_enough or [NOWHERE])[-1 if importing else 0]
            if named != self.said:
                self.said = named
                self.send({"event": "running", "id": request, "function": named[0], "line": named[1]})

    def _student_frames(self, frame) -> list:
        """The frames of the student's code on the stack, innermost first."""
        found = []
        while frame is not None:
            if frame.f_code.co_filename.startswith(self.student):
                found.append(frame)
            frame = frame.f_back
        return found

    def _name(self, frame) -> str | None:
        """"module.qualname" of a frame's function, "module.<module>" for a module's top level; None for a function
        defined inside another (it is named by the function that defines it) or outside the package's modules."""
        code = frame.f_code
        relative = code.co_filename[len(self.student):]
        if "/" in relative or not relative.endswith(".py") or "<locals>" in code.co_qualname:
            return None
        if code.co_qualname.startswith("<") and code.co_qualname != TOP_LEVEL:  # a comprehension, a lambda
            return None
        return f"{relative.removesuffix('.py')}.{code.co_qualname}"


def _raises(*args, **kwargs):  # the template of a function stopped: its code, its message changed (`stop_calling`)
    raise NotImplementedError("the message of a function stopped")


PLACEHOLDER = "the message of a function stopped"  # the constant in _raises' code that stop_calling replaces


def stop_calling(module: types.ModuleType, functions: dict[str, str]) -> list[str]:
    """Make each function of `module` named in `functions` (qualname -> the message to raise) raise
    NotImplementedError with its message at once, however it is reached (its code object is replaced, so every
    reference to it sees the change: a decorator's, a dictionary's, an alias). The names found."""
    found = []
    for function in _functions_of(module):
        message = functions.get(function.__code__.co_qualname)
        if message is None or function.__closure__:
            continue
        code = function.__code__
        function.__code__ = _raises.__code__.replace(
            co_name=code.co_name, co_qualname=code.co_qualname, co_filename=code.co_filename,
            co_firstlineno=code.co_firstlineno,
            co_consts=tuple(message if c == PLACEHOLDER else c for c in _raises.__code__.co_consts))
        found.append(code.co_qualname)
    return found


def _functions_of(module: types.ModuleType) -> list[types.FunctionType]:
    """The functions defined in `module`'s file reachable from its namespace: its functions, its classes' methods
    (static, class and properties' too) and what a decorator wraps (`__wrapped__`, a closure's cells)."""
    file, found, seen = getattr(module, "__file__", None), [], set()
    pending = list(vars(module).values())
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            if value.__code__.co_filename == file:
                found.append(value)
            pending += [c.cell_contents for c in value.__closure__ or () if _filled(c)]
        elif isinstance(value, type) and value.__module__ == module.__name__:
            pending += list(vars(value).values())
        elif isinstance(value, staticmethod | classmethod):
            pending.append(value.__func__)
        elif isinstance(value, property):
            pending += [value.fget, value.fset, value.fdel]
        wrapped = getattr_static(value, "__wrapped__", None)
        if wrapped is not None:
            pending.append(wrapped)
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True
