"""The worker process of isolated mode: imports the package under test and answers calls over a pipe.

Started by `client.Worker` as `python -m grader.harness.worker --package NAME --problem ID`: the problem's
oracles are absent from it (absent.py), and before the code under test is imported the kernel's filter goes on
(seccomp.py: no new process, no tracing, no other process's memory). Requests and replies are
framed JSON (`protocol.py`) on the original stdin/stdout; the code under test sees /dev/null as stdin
and stderr as stdout, so what it prints cannot corrupt the protocol. Nothing here decides pass or fail:
the test process does.
"""

import argparse
import builtins
import errno
import gc
import importlib
import importlib.abc
import importlib.util
import os
import platform
import resource
import socket
import sys
import traceback
from dataclasses import replace
from pathlib import Path

from grader.harness import seccomp
from grader.harness.protocol import Event, RemoteError, Reply, Request, framed, read_message, write_frame
from grader.harness.running import Running, stop_calling
from grader.harness.typecheck import is_type_check_error
from grader.registry import IMPORTED_AHEAD, ORACLES, TAKEN_OUT, graded_with

SCENARIO_PREFIX = "tests.scenarios."


class _Blocker(importlib.abc.MetaPathFinder):
    """Refuses new imports of the packages student code must not reach (the reference, the grader, the tests:
    the worker's own modules from tests/ are imported before the code under test)."""

    def __init__(self, blocked: tuple[str, ...]):
        self.blocked = blocked

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.blocked:
            raise ImportError(f"'{fullname}' cannot be imported by the code under test")
        return None


def remote_error(exc: BaseException, student: str = "") -> RemoteError:
    """What the test process is told of an exception the code under test raised (`student`: the folder of its
    package, "/.../assignment/")."""
    builtin = next((c.__name__ for c in type(exc).__mro__
                    if getattr(builtins, c.__name__, None) is c and issubclass(c, Exception)), "RuntimeError")
    message = str(exc)
    if isinstance(exc, NotImplementedError) and not message and student:  # a bare `raise NotImplementedError`
        message = (raised_in(exc, student) or "").partition(".")[2] or message  # as the stubs say: "tensor_bytes"
    if isinstance(exc, PermissionError) and exc.errno == errno.EPERM:
        message += f" ({seccomp.RULE})"
    if isinstance(exc, SystemExit):
        message = f"the code under test called sys.exit({exc.code!r})"
    elif isinstance(exc, KeyboardInterrupt):
        message = "the code under test raised KeyboardInterrupt"
    # A failed type check's cause is jaxtyping's own re-check of each argument: its message says it all.
    tb = "".join(traceback.format_exception(exc, chain=not is_type_check_error(exc)))
    return RemoteError(type=f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
                       builtin=builtin, message=message[:4000], traceback=tb[-6000:])


def raised_in(exc: BaseException, student: str) -> str | None:
    """The function of the code under test that raised `exc` ("memory.tensor_bytes"): the innermost frame of its
    traceback in `student`'s files."""
    found, tb = None, exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith(student):
            found = f"{code.co_filename[len(student):].removesuffix('.py')}.{code.co_qualname}"
        tb = tb.tb_next
    return found


class Server:
    def __init__(self, package: str, proto_in, proto_out, scenarios: dict, guard, running, student: str):
        from grader.harness.local import LocalPackage

        self.package = LocalPackage(package, on_import=self._announce_import)
        self.proto_in, self.proto_out = proto_in, proto_out
        self.scenarios = scenarios  # "module:function" -> the scenario, as imported before any student code
        self.guard = guard  # grader/harness/guard.py
        self.running = running  # grader/harness/running.py: the function each request is in
        self.student = student  # the folder of the package under test, "/.../assignment/"
        self.request_id = None  # echoed in every frame sent while answering a request
        self.stopped: dict[str, dict[str, str]] = {}  # module -> {qualname: message}: not called again

    def _announce_import(self, module: str, phase: str) -> None:
        if phase != "start":
            self._stop_calling()
        self.send(Event("importing" if phase == "start" else "imported", module=module))

    def _stop_calling(self) -> None:
        """The functions that ran out of time in this run, stopped in the modules of the package imported so far
        (a module the student's own code imported included)."""
        for module, functions in self.stopped.items():
            imported = sys.modules.get(f"{self.package.name}.{module}")
            if imported is not None:
                stop_calling(imported, functions)

    def send(self, frame: Reply | Event) -> None:
        write_frame(self.proto_out, replace(frame, id=self.request_id))

    def handle(self, request: Request):
        from grader.harness import codec

        op = request.op
        args = codec.decode(request.args) if request.args is not None else []
        kwargs = codec.decode(request.kwargs) if request.kwargs is not None else {}
        if op == "call":
            fn = getattr(getattr(self.package, request.module), request.name)
            return fn(*args, **kwargs)
        if op == "scenario":
            target = request.target
            if target not in self.scenarios:
                raise ValueError(f"no scenario {target!r} under {SCENARIO_PREFIX}")
            return self.scenarios[target](self.package, *args, **kwargs)
        if op == "ping":
            return "pong"
        if op == "stop_calling":  # {"module.qualname": message}, before any module of the package is imported
            for name, message in kwargs.items():
                module, _, qualname = name.partition(".")
                self.stopped.setdefault(module, {})[qualname] = message
            self._stop_calling()
            return None
        raise ValueError(f"unknown op {op!r}")

    def serve(self) -> None:
        from grader.harness import codec, heap

        self.send(Event("ready"))
        while True:
            try:
                request = Request(**read_message(self.proto_in))
            except EOFError:
                return
            self.request_id = request.id
            self.running.begin(request.id)
            self.guard.enter(self.request_id, request_problem(request), request.target or None)
            failure = None
            try:
                value = self.handle(request)
                try:
                    reply = Reply(request.id, True, value=codec.encode(value))
                except codec.CodecError as exc:
                    failure = TypeError(f"the result could not be returned: {exc}")
            except BaseException as exc:  # noqa: B036 - student code may raise anything, sys.exit included
                failure = exc
            finally:
                self.guard.leave()
                self.running.end()  # nothing more is said of this request: its reply follows
            if failure is not None:
                reply = Reply(request.id, False, error=remote_error(failure, self.student))
            self.guard.changed()
            self.send(reply)
            heap.release()


def request_problem(request: Request) -> str | None:
    """The problem whose test sent the request (the test process says), else the module it calls."""
    if request.problem:
        return request.problem
    if request.op == "call":
        return request.module
    if request.op == "scenario":
        return request.target.removeprefix(SCENARIO_PREFIX).partition(":")[0]
    return None


def import_scenarios() -> dict:
    """The worker's modules from tests/, imported while no student code has run yet; the scenarios as
    "module:function" -> function, looked up there from then on (never again by name in a module)."""
    import inspect
    import pkgutil

    import tests.scenarios
    from grader.harness import codec, heap, local, protocol  # noqa: F401

    scenarios = {}
    for info in pkgutil.iter_modules(tests.scenarios.__path__):
        module = importlib.import_module(SCENARIO_PREFIX + info.name)
        scenarios.update({f"{module.__name__}:{name}": value for name, value in vars(module).items()
                          if inspect.isfunction(value) and value.__module__ == module.__name__})
    return scenarios


PLOTTING_PROBLEMS = ("roofline",)  # whose code draws with matplotlib


def import_torch(problems: list[str], stubbed: list[str], ahead: bool = True) -> None:
    """Import torch, before any limit and before the code under test, for a worker of `problems` whose oracles'
    modules `stubbed` are stubs: their kernels refused, their compiled functions taken out, torch's compiler front
    end a stand-in (front_end.py), the modules torch would import later imported ahead where one of them needs
    them (unless not `ahead`: a fork server's, `import_ahead`), and the stubs made now, before the guard (made
    while a request ran, the stub's own code, the names torch asks of it, would be seen by the tripwire as a run
    of the oracle)."""
    import torch  # noqa: F401

    from grader.harness import absent, front_end

    absent.disable_kernels(problems, ORACLES)
    absent.disable_functions(problems, TAKEN_OUT)
    front_end.install()
    for problem in problems if ahead else ():
        import_ahead(problem)
    for module in stubbed:
        importlib.import_module(module)


def import_ahead(problem: str) -> None:
    """The modules torch imports lazily that `problem` needs (grader/registry.py IMPORTED_AHEAD), where this
    process has none yet. A fork server calls it before it forks the worker of `problem`: its problems that need
    none come first (grader/harness/client.py FORK_GROUPS), and run without them."""
    missing = [module for module in IMPORTED_AHEAD.get(problem, ()) if module not in sys.modules]
    for module in missing:
        importlib.import_module(module)
    if missing:
        gc.freeze()


def prepare_matplotlib(problem: str | None) -> None:
    """Build matplotlib's font cache now, before the kernel's filter and the guard, where none exists (a
    sandbox's home is new for each problem): building it runs `fc-list`, a new process, which the filter
    refuses to the code under test (`plot_roofline`). Once the cache exists, nothing."""
    if problem not in (None, *PLOTTING_PROBLEMS) or importlib.util.find_spec("matplotlib") is None:
        return
    cache = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "matplotlib")
    if not any(name.startswith("fontlist-") for name in (os.listdir(cache) if os.path.isdir(cache) else ())):
        import matplotlib.font_manager  # noqa: F401


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", required=True, choices=["assignment", "reference"])
    parser.add_argument("--memory-limit-mb", type=int, default=0)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="where the package under test must come from")
    parser.add_argument("--problem", default=None, help="the problem whose tests this worker answers")
    parser.add_argument("--fork-for", default=None,
                        help="a fork server (grader/harness/forkserver.py) for these problems, comma-separated")
    parser.add_argument("--worker-uid", type=int, default=None,
                        help="a fork server's: the uid its workers become (it runs as another)")
    options = parser.parse_args()
    from grader.harness import absent

    forkable = options.fork_for.split(",") if options.fork_for else []
    if forkable and options.problem:
        raise SystemExit("a fork server serves the problems it is given, not one --problem")
    problems = forkable or list(graded_with(options.problem))
    seccomp.fresh_session_keyring()  # the grader's, inherited, is no place this process may reach
    stubbed = absent.install(problems, ORACLES)  # before torch: it imports some of them itself
    if forkable:
        control = socket.socket(fileno=os.dup(0))
        import_torch(forkable, stubbed, ahead=False)  # once, for every problem the server forks a worker for
        scenarios = import_scenarios()
        from grader.harness import forkserver

        gc.freeze()  # the children's collections leave the server's objects alone: fewer pages copied on write
        platform.processor()  # cached for its children: the server's filter refuses them `uname -p`, a new program
        seccomp.install(server=True)  # its children inherit it and add the worker's
        options.problem = forkserver.serve(control, forkable, import_ahead, options.worker_uid)  # returns in a child
        start_worker(options, [], scenarios, forked=True)
    else:
        start_worker(options, stubbed)


def start_worker(options, stubbed: list[str], scenarios: dict | None = None, forked: bool = False) -> None:
    """From the worker's own pipes to its serving requests: with `scenarios`, in a child of the fork server,
    where the shape checks, torch and the scenarios are already imported."""
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # prints of the code under test go to the captured stderr pipe

    root = options.root.resolve()
    if not forked:  # a fork server did this for all its problems
        import_torch(list(graded_with(options.problem)), stubbed)
    if scenarios is None:
        scenarios = import_scenarios()
    prepare_matplotlib(options.problem)
    from grader.harness import guard

    if options.package == "assignment":
        sys.meta_path.insert(0, _Blocker(("reference", "grader", "tests")))
    platform.processor()  # cached: where it is asked later, it needs no process (`uname -p`)
    refused = seccomp.install()  # for this process and its threads, from now on
    if refused is not None and forked:  # a fork server's child must hold it (grader/harness/forkserver.py)
        print(f"the kernel's filter did not install in a forked worker: {refused}", file=sys.stderr)
        os._exit(FORKED_WITHOUT_FILTER)
    import grader
    import tests

    official = tuple(Path(m.__file__).resolve().parent for m in (grader, tests))  # the worker's own code
    student = str(root / options.package) + os.sep
    out_fd = proto_out.fileno()
    # before the guard: a thread of the worker's own, not one the code under test started
    running = Running(student, lambda fields: os.write(out_fd, framed(Event(**fields))))
    checks = guard.install(out_fd, root / options.package, official, ORACLES, refused is None)

    package = importlib.import_module(options.package)
    if not Path(package.__file__).resolve().is_relative_to(root):
        raise SystemExit(f"{options.package} was imported from {package.__file__}, outside {root}")
    if options.memory_limit_mb:
        limit = options.memory_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    gc.freeze()  # what is imported stays: the collector need not walk torch's objects again at each collection
    Server(options.package, proto_in, proto_out, scenarios, checks, running, student).serve()


FORKED_WITHOUT_FILTER = 75  # a fork server's child exits with this where the kernel's filter cannot be installed


if __name__ == "__main__":
    main()
