"""The worker's guard: evidence of what the code under test tried inside the worker, for a person to review.

It is the last of the sandbox's layers (grader/harness/sandbox.py) and never the wall: the oracles are absent from the
worker (grader/harness/absent.py) and the kernel refuses new processes, tracing and other processes' memory
(grader/harness/seccomp.py), whatever the code does to the guard. What it still decides alone: a request of
`tensors` or `precision` that turns off the profiler's record of ops (their oracle is torch itself).

The worker (grader/harness/worker.py) installs it once its own modules and the oracles are imported and before
the code under test is. Three parts, read top to bottom:

1. audit hook  `sys.addaudithook`: nothing can remove it. It refuses, whoever asks: opening an oracle's
               source or bytecode except to import it, compiling text copied from an oracle under another
               file's name, replacing the code of the worker's own functions, replacing the profile or trace
               function. When the code under test asks, each refusal is also evidence, and so is reaching
               into other code: the garbage collector's object graph, other threads' frames, frames and
               tracebacks taken by the code under test, ctypes, new processes and threads.
2. tripwire    on while a problem that has an oracle (grader/registry.py: ORACLES) runs: a Python call into
               an oracle's files, or a call of an oracle's compiled kernel, that no scenario made fails the
               request. The code object says where code comes from, so an oracle captured at import time, a
               copy of its code objects or a module re-imported from its file are all seen. A profile
               function where the oracle has kernels (it sees C calls); a trace function where it is files
               alone (the interpreter then reports Python calls only, and the tripwire costs a third less).
               It watches only what the worker could still run: where the sandbox hides an oracle's files
               and the dispatcher refuses its kernels (absent.py), the oracle is absent, nothing is left to
               watch, and it stays off (it slowed every Python call of the code under test by half). What it
               then watches alone: the profiler's switches of tensors and precision, which torch needs, and
               only in the requests that read the profiler's record (grader/registry.py RECORD_AUDITS), which
               turn it on as they start: switched off before, it blinds nothing.
3. integrity   the names bound in the worker's own modules (and their classes) and the import machinery, as
               they were before the code under test ran: `changed()` reports each rebinding as evidence.

Evidence leaves at once, as an "audit" frame on the reply pipe written with one `os.write` (so nothing the
code does later takes it back); where it cannot be sent, the action is refused. The grader marks a
submission with evidence for review by a person (grader/grading.py).

It is all Python, in the code under test's own process: code that reaches the hook's closure (through the
garbage collector or frames, which are evidence) or raw memory (ctypes, evidence) can turn it off. That is
why evidence is sent before the action completes, and why it asks a person instead of setting a grade.
"""

import _json
import _thread
import builtins
import importlib
import importlib.util
import itertools
import operator
import os
import stat
import sys
import sysconfig
import types
from pathlib import Path

from grader.harness import absent
from grader.harness.protocol import HEADER
from grader.registry import PROFILER_SWITCHES, RECORD_AUDITS

MAX_EVIDENCE = 50  # frames per worker: 50 short frames fit in a pipe's buffer, so sending never blocks
SIGNIFICANT = 24  # characters a source line needs to identify its file (shorter ones are common to any code)
COPIED_LINES = 8  # distinct significant lines of an oracle that make a compiled text a copy of it
GENERATED = 200  # characters of source the code under test compiles itself (exec, eval, compile): code as data
# The events the hook looks at (all others return at once); for attribute events, which attributes.
ATTRIBUTE_EVENTS = {"object.__getattr__": frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"}),
                    "object.__setattr__": frozenset({"__code__", "__defaults__", "__kwdefaults__"})}
REACHING = frozenset({"gc.get_referrers", "gc.get_referents", "gc.get_objects", "sys._current_frames"})
SPAWNING = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                      "os.forkpty", "_thread.start_new_thread"})
CODE_FROM_DATA = frozenset({"code.__new__", "marshal.loads"})  # code objects built, or read from bytes
AUDITED = frozenset({"open", "compile", "exec", *CODE_FROM_DATA, "sys.setprofile", "sys.settrace", *ATTRIBUTE_EVENTS,
                     *REACHING, *SPAWNING})
AUDITED_PREFIXES = ("ctypes.", "os.exec", "os.spawn")
_MISSING = object()
SCENARIO_MODULES = "tests.scenarios."  # their code may run an oracle (to measure it, or to disable it)
IMPORTING = ("<frozen importlib._bootstrap>", "_load_unlocked")  # the frame of an import in progress


class Oracle:
    """The files and compiled kernels of the oracles named in `names` (modules, packages or kernels). The
    modules are found by their files, never imported: in their problem's worker they are stubs
    (grader/harness/absent.py) and their files are masked or unreadable."""

    def __init__(self, names):
        self.files: set[str] = set()
        self.kernels: list[object] = []
        self.switches: list[object] = []  # the profiler's switches among the kernels: they matter in RECORD_AUDITS
        for name in names:
            path = absent.locate(name)
            if path is not None:
                sources = path.rglob("*.py") if path.is_dir() else [path]
                self.files.update(str(p) for p in sources)
                continue
            owner, _, attribute = name.rpartition(".")
            if name in absent.REFUSED:  # the dispatcher refuses it, however it is reached: nothing to watch
                continue
            try:
                holders = [importlib.import_module(owner)] if owner else []
            except ImportError:  # not installed
                continue
            if owner == "torch":  # the same kernel, where torch keeps it whatever its namespace says
                holders.append(holders[0]._C._VariableFunctions)
            found = [getattr(h, attribute) for h in holders if hasattr(h, attribute)]
            (self.switches if name in PROFILER_SWITCHES else self.kernels).extend(found)

    def inodes(self) -> dict[tuple[int, int], str]:
        """(device, inode) of every source and bytecode file -> its name for the evidence (regular files only:
        a masked one is /dev/null)."""
        found = {}
        for source in self.files:
            for path in (source, importlib.util.cache_from_source(source)):
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_size:
                    found[(st.st_dev, st.st_ino)] = "/".join(Path(source).parts[-3:])
        return found

    def loadable(self) -> frozenset[str]:
        """The sources this process can still load code from, by their source or their bytecode: none where the
        sandbox hides them (a masked file is /dev/null, a masked package an empty folder, a denied file
        unreadable), so the tripwire watches none there."""
        return frozenset(source for source in self.files
                         if any(_has_content(path) for path in (source, *_bytecode_of(source))))

    def lines(self) -> frozenset[str]:
        found = set()
        for source in self.files:
            try:
                text = Path(source).read_text(encoding="utf-8", errors="replace")
            except OSError:  # unreadable to the sandbox's uid: its oracle's problem
                continue
            found.update(line.strip() for line in text.splitlines()
                         if len(line.strip()) >= SIGNIFICANT and not line.strip().startswith("#"))
        return frozenset(found)


def _bytecode_of(source: str) -> list[str]:
    """Every compiled file of `source` in its __pycache__ (any interpreter, any optimization level)."""
    path = Path(source)
    try:
        return [str(p) for p in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc")]
    except OSError:
        return []


def _has_content(path: str) -> bool:
    """Whether this process can open `path` and read anything from it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and bool(os.read(fd, 1))
    except OSError:
        return False
    finally:
        os.close(fd)


# Long: the hook and every function it calls are closures over state bound here, C functions and constants
# captured as locals, so that nothing the code under test can reach (a module's names, the builtins, this
# module's globals) changes what the hook does; split into module-level helpers, each would read globals again.
def install(out_fd: int, student_dir: Path, official_dirs: tuple[Path, ...], oracles: dict[str, tuple[str, ...]],
            kernel_rules: bool = False):
    """Install the guard; the worker's handle on it: `enter(request_id, problem)` before a request (the
    problem's tripwire on), `leave()` after it, `changed()` after it (the integrity check). The hook's state
    lives in its closure, which nothing outside the interpreter's list of hooks refers to. `kernel_rules`:
    the kernel refuses new processes (grader/harness/seccomp.py), so trying to start one is no evidence (the
    standard library tries for honest reasons: `platform.processor()` runs `uname -p`)."""
    # What the hook calls is bound here, C functions where it matters: the code under test cannot swap what it
    # uses by rebinding a module's names or the builtins.
    isinstance, getattr, len, str = builtins.isinstance, builtins.getattr, builtins.len, builtins.str
    by_problem = {problem: Oracle(names) for problem, names in oracles.items()}
    # What the tripwire watches for each problem: what of its oracles this process could still run. Where the
    # sandbox hides the files and the dispatcher refuses the kernels (absent.py), nothing: the oracle is absent,
    # not watched, and the code under test runs untraced (a tripwire slows every Python call by half).
    watched = {problem: (oracle.loadable(), frozenset(map(id, oracle.kernels)),
                         frozenset(map(id, oracle.kernels + oracle.switches)))
               for problem, oracle in by_problem.items()}  # before the hook, which refuses these reads
    record_audits = frozenset(RECORD_AUDITS)
    every = Oracle(name for names in oracles.values() for name in names)
    inodes, copied = every.inodes(), every.lines()
    student, grader = str(student_dir) + os.sep, tuple(str(d) + os.sep for d in official_dirs)
    # where code may come from: the submission's files, the worker's own, the installed environment
    installed = tuple(sorted({os.path.realpath(p) + os.sep for p in (
        sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")))}))
    origins = (student, *grader, *installed)
    scenario_code = frozenset(map(id, _code_of(SCENARIO_MODULES)))
    get_ident, getframe, stat, write = _thread.get_ident, sys._getframe, os.stat, os.write
    encode, max_evidence = _json.encode_basestring_ascii, MAX_EVIDENCE
    pack, setprofile, settrace = HEADER.pack, sys.setprofile, sys.settrace
    main_thread = get_ident()
    busy: set[int] = set()  # threads inside the hook (its own sys._getframe is not audited)
    # the constants too: rebinding this module's names cannot blind the hook, even for a moment
    audited, audited_prefixes, attribute_events = AUDITED, AUDITED_PREFIXES, ATTRIBUTE_EVENTS
    reaching, spawning, importing, significant, copied_lines = REACHING, SPAWNING, IMPORTING, SIGNIFICANT, COPIED_LINES
    generated, code_from_data = GENERATED, CODE_FROM_DATA
    request = [None, False]  # the id of the request being answered; whether the code under test is running
    sent: set[str] = set()

    def send(text: str) -> bool:
        """Evidence out now, once; False when it cannot be sent (the action is then refused)."""
        if text in sent or len(sent) >= max_evidence:
            return True
        rid = request[0] if isinstance(request[0], int) else "null"
        body = f'{{"event": "audit", "id": {rid}, "evidence": {encode(text[:1000])}}}'.encode()
        try:
            write(out_fd, pack(len(body)) + body)
        except OSError:
            return False
        sent.add(text)
        return True

    def asked_by_student() -> bool:
        return request[1] or get_ident() != main_thread

    def where(frame) -> str:
        """The innermost frame of the code under test on the stack, as "flops.py:12"."""
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(student):
                return f"{name[len(student):]}:{frame.f_lineno}"
            frame = frame.f_back
        return "a thread or callback of the code under test" if get_ident() != main_thread else "the worker"

    def its_own(holder) -> bool:
        """A generator, coroutine or traceback of the code under test's own: the frame it holds runs the student's
        code (the standard library asks for it on one's own objects: a generator's state, a traceback's text)."""
        code = getattr(holder, "gi_code", None) or getattr(holder, "cr_code", None) or \
            getattr(holder, "ag_code", None)
        if code is None and type(holder).__name__ == "traceback":
            code = holder.tb_frame.f_code  # audited too, inside the hook: checked without a caller, no evidence
        return code is not None and code.co_filename.startswith(student)

    def near_student(frame, depth: int = 3) -> bool:
        while frame is not None and depth:
            if frame.f_code.co_filename.startswith(student):
                return True
            frame, depth = frame.f_back, depth - 1
        return False

    def from_elsewhere(path) -> bool:
        """Whether code whose file is `path` comes from anywhere but the submission's files and the installed
        environment (the home, a temporary folder, an archive: a path into a .zip is no file)."""
        if not isinstance(path, str) or not path.startswith(os.sep):
            return False
        real = os.path.realpath(path)
        return not (real.startswith(origins) and os.path.isfile(real))

    def loading(frame):
        """The spec of the module that importlib's machinery is executing on the stack (an import, or a loader's
        exec_module called by hand), or None."""
        depth = 0
        while frame is not None and depth < 12:
            code = frame.f_code
            if code.co_name == "exec_module" and "module" in frame.f_locals:
                return getattr(frame.f_locals["module"], "__spec__", None)
            if (code.co_filename, code.co_name) == importing:
                return frame.f_locals.get("spec")
            frame, depth = frame.f_back, depth + 1
        return None

    def foreign_module(spec) -> str | None:
        """Why the module `spec` describes reaches the import system from elsewhere, or None: its origin is not a
        file of the submission or the installed environment, or its loader's class is the submission's own."""
        origin = getattr(spec, "origin", None)
        loader = type(getattr(spec, "loader", None))
        for cls in getattr(loader, "__mro__", ()):
            for member in list(vars(cls).values()):
                member, depth = getattr(member, "__func__", member), 0
                while member is not None and depth < 8:  # a decorator's wrapper, and what it wraps
                    path = getattr(getattr(member, "__code__", None), "co_filename", None)
                    if isinstance(path, str) and (path.startswith(student) or from_elsewhere(path) or not (
                            path.startswith(os.sep) or path.startswith("<frozen "))):
                        return f"a loader of its own ({loader.__name__})"
                    member, depth = getattr(member, "__wrapped__", None), depth + 1
        if origin in (None, "built-in", "frozen") or not isinstance(origin, str):
            return None
        return f"{origin}" if from_elsewhere(origin) else None

    def import_origin(frame) -> str | None:
        """The file that the innermost import in progress on the stack loads, or None. (The top level of the
        code under test runs inside an import too: of its own file.)"""
        while frame is not None and (frame.f_code.co_filename, frame.f_code.co_name) != importing:
            frame = frame.f_back
        return None if frame is None else getattr(frame.f_locals.get("spec"), "origin", None)

    def copies_an_oracle(source) -> bool:
        if isinstance(source, bytes):
            source = source.decode("utf-8", "replace")
        if not isinstance(source, str) or len(source) < significant * copied_lines:
            return False
        return len({line.strip() for line in source.splitlines()} & copied) >= copied_lines

    def refuse(what: str, caller) -> None:
        if asked_by_student():
            send(f"{what} (at {where(caller)})")
        raise PermissionError(f"the grading worker refuses this: {what}")

    def check(event: str, args: tuple, caller) -> None:
        if event == "open":
            path = args[0]
            if isinstance(path, (str, bytes)):
                try:
                    st = stat(path)
                except (OSError, ValueError):
                    return
                name = inodes.get((st.st_dev, st.st_ino))
                if name and import_origin(caller) not in every.files:
                    refuse(f"opened {name}, the source of an oracle", caller)
        elif event == "exec" and asked_by_student():
            code = args[0]
            spec = loading(caller)
            why = foreign_module(spec) if spec is not None else (
                getattr(code, "co_filename", None) if from_elsewhere(getattr(code, "co_filename", None)) else None)
            if why and not send(f"ran code that reaches the import system from elsewhere than the submission's "
                                f"files and the installed environment: {why} (at {where(caller)})"):
                raise PermissionError("the grading worker refuses this: the audit could not be recorded")
        elif event in code_from_data:
            if asked_by_student() and near_student(caller) and import_origin(caller) is None and not send(
                    f"built a code object from data ({event}) (at {where(caller)})"):
                raise PermissionError("the grading worker refuses this: the audit could not be recorded")
        elif event == "compile":
            source, filename = args
            if copies_an_oracle(source) and str(filename) not in every.files:
                refuse(f"compiled a copy of an oracle's source as {filename}", caller)
            if isinstance(filename, str) and filename.startswith("/") and not filename.startswith(student) \
                    and import_origin(caller) != filename and asked_by_student() and not send(
                        f"compiled code under another file's name, {filename} (at {where(caller)})"):
                raise PermissionError("the grading worker refuses this: the audit could not be recorded")
            if isinstance(source, str | bytes) and len(source) >= generated and caller is not None and \
                    caller.f_code.co_filename.startswith(student) and asked_by_student() and not send(
                        f"compiled {len(source)} characters of code given as data (at {where(caller)})"):
                raise PermissionError("the grading worker refuses this: the audit could not be recorded")
        elif event == "object.__setattr__":
            target, name = args[0], args[1]
            code = getattr(target, "__code__", None)
            if code is not None and code.co_filename.startswith(grader):
                refuse(f"replaced {name} of the grader's {getattr(target, '__qualname__', '?')}", caller)
        elif event in ("sys.setprofile", "sys.settrace"):
            by_grader = caller is not None and caller.f_code.co_filename.startswith(grader)
            if not (by_grader and where(caller) == "the worker"):
                refuse(f"called {event}, which the grading worker's tripwire uses", caller)
        elif asked_by_student():
            evidence = None
            if event in reaching and near_student(caller):
                evidence = f"called {event}, which reaches into the grader's objects"
            elif event == "object.__getattr__" and near_student(caller) and not its_own(args[0]):
                evidence = f"took a frame of the grader's code from a traceback or generator ({args[1]})"
            elif event.startswith("ctypes.") and near_student(caller):
                evidence = f"used ctypes ({event})"
            elif not kernel_rules and (event in spawning or event.startswith(("os.exec", "os.spawn"))):
                evidence = f"started a process or thread ({event})"
            if evidence and not send(f"{evidence} (at {where(caller)})"):
                raise PermissionError("the grading worker refuses this: the audit could not be recorded")

    def hook(event: str, args: tuple) -> None:
        if event not in audited and not event.startswith(audited_prefixes) or \
                event in attribute_events and args[1] not in attribute_events[event]:
            return  # most events, the tripwire's own reads of frame.f_code among them: nothing to check
        me = get_ident()
        if me in busy:  # raised while the hook runs: by its own sys._getframe, or by code it ran unawares
            if event != "sys._getframe":  # (a property of an object it inspected): checked all the same
                check(event, args, None)
            return
        busy.add(me)
        try:
            try:
                caller = getframe(1)
            except ValueError:  # raised with no Python frame above the hook (from C, at shutdown)
                caller = None
            check(event, args, caller)
        finally:
            busy.discard(me)

    sys.addaudithook(hook)

    def enter(request_id, problem: str | None, scenario: str | None = None) -> None:
        request[0], request[1] = request_id, True
        files, kernels, with_switches = watched.get(problem, ((), (), ()))
        if scenario in record_audits:  # the profiler's switches matter only while its record is read
            kernels = with_switches
        if files or kernels:  # allowed: the guard's own call, no code under test on the stack
            (setprofile if kernels else settrace)(tripwire_for(out_fd, files, kernels, student, scenario_code))

    def leave() -> None:
        setprofile(None)
        settrace(None)
        request[1] = False

    # (label, live namespace, its names or None for a list, what they were bound to), compared in C after each
    # request (map and operator.is_, bound here): a Python loop over every name cost 60 us a request
    snapshot = [(label, live, None, tuple(live)) if isinstance(live, list) else
                (label, live, tuple(live), tuple(live.values())) for label, live in _namespaces()]
    identical, missing, all_of, each, as_tuple = operator.is_, itertools.repeat(_MISSING), all, map, tuple

    def changed() -> list[str]:
        """What was rebound since install, by identity (a replacement cannot pass for the original)."""
        found = []
        for label, live, names, saved in snapshot:
            now = as_tuple(live) if names is None else as_tuple(each(live.get, names, missing))
            if len(now) == len(saved) and all_of(each(identical, now, saved)):
                continue
            if names is None:
                found.append(f"rebound the grader's {label}")
            else:
                found += [f"rebound the grader's {label}.{name}"
                          for name, value, was in zip(names, now, saved, strict=True) if value is not was]
        for text in found:
            send(f"{text} (found after a request)")
        return found

    return types.SimpleNamespace(enter=enter, leave=leave, changed=changed)


def tripwire_for(out_fd: int, files: frozenset, kernels: frozenset, student: str, scenario_code: frozenset):
    """The profile or trace function for one request of a problem with an oracle (`files`, and `kernels` by id:
    none for a trace function, which sees no C calls). It is reachable by the code under test (`sys.getprofile()`
    or `sys.gettrace()`), so it holds no state the code could change to blind it: everything it reads is a
    default argument (which the hook forbids replacing) and immutable, and what it finds leaves at once, as an
    "audit" frame with an `oracle` entry, which fails the request in the test process
    (grader/harness/client.py). A fresh one for each request: `sent` is that request's."""

    def tripwire(frame, event, arg, files=files, kernels=kernels, student=student, scenario_code=scenario_code,
                 out_fd=out_fd, write=os.write, pack=HEADER.pack, encode=_json.encode_basestring_ascii,
                 sent=set()):  # noqa: B006 - `sent` only spares repeated frames: emptied, it costs more frames
        if event == "call":
            code = frame.f_code
            if code.co_filename not in files:
                return
            label, caller = f"{code.co_filename.rpartition(os.sep)[2]}:{code.co_name}", frame.f_back
        elif event == "c_call" and id(arg) in kernels:
            label, caller = getattr(arg, "__name__", "a kernel"), frame
        else:
            return
        while caller is not None:  # the innermost frame of a scenario (may run the oracle) or the code under test
            if id(caller.f_code) in scenario_code:  # the code itself, not its file's name, which anyone can borrow
                return
            if caller.f_code.co_filename.startswith(student):
                break
            caller = caller.f_back
        place = "" if caller is None else f" (from {caller.f_code.co_filename[len(student):]}:{caller.f_lineno})"
        if label + place in sent:
            return
        sent.add(label + place)
        body = f'{{"event": "audit", "id": null, "oracle": {encode((label + place)[:1000])}}}'.encode()
        try:
            write(out_fd, pack(len(body)) + body)
        except OSError:
            raise PermissionError("the grading worker refuses this: the audit could not be recorded") from None

    return tripwire


def _code_of(prefix: str) -> list[types.CodeType]:
    """Every code object of the imported modules under `prefix`: their functions, methods and what those
    define inside (comprehensions, lambdas, nested functions). They stay alive, so their ids stay theirs."""
    found, pending = [], []
    for name, module in list(sys.modules.items()):
        if not name.startswith(prefix):
            continue
        for value in list(vars(module).values()):
            members = list(vars(value).values()) if isinstance(value, type) else [value]
            pending += [m.__code__ for m in members if isinstance(m, types.FunctionType) and m.__module__ == name]
    while pending:
        code = pending.pop()
        found.append(code)
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def _namespaces() -> list[tuple[str, object]]:
    """(label, live namespace) of the worker's own modules and their classes, and the import machinery's
    finders and hooks: what `changed()` compares with its snapshot."""
    found: list[tuple[str, object]] = [("sys.meta_path", sys.meta_path), ("sys.path_hooks", sys.path_hooks)]
    for module_name, module in list(sys.modules.items()):
        if module_name == "__main__" or module_name.partition(".")[0] in ("tests", "grader"):
            found.append((module_name, vars(module)))
            found += [(f"{module_name}.{name}", vars(value)) for name, value in list(vars(module).items())
                      if isinstance(value, type) and value.__module__ == module.__name__]
    return found
