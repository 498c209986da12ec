"""A box for the grader's own analyses of a submission (grader/analysis.py: the copy check, the similarity digest,
decoding what its literals carry, what the tests need to start): whatever the grader computes from code written to
defeat it runs in a process of its own, so that no analysis can stall, crash or take over the grading.

The box is `python -m grader.harness.box MODULE`, started by `Box`:

- its limits, set by the kernel before it starts: CPU seconds, address space, no file it may write or grow
  (RLIMIT_FSIZE 0), a few descriptors, no core; its own session, killed with its process group;
- its input, the request (JSON on stdin), read whole before anything of it is looked at; MODULE's
  `prepare(request)` then reads what the analysis compares with (the grader's own files, never the submission's);
- then, before the submission's source is parsed: not dumpable, and the box's seccomp filter (grader/harness/
  seccomp.py `install(kind="box")`): memory, reading and writing the descriptors it holds, signals, clocks, exit.
  No file, no process, no socket: a parser the submission took over could only compute and write its answer;
- its answers: MODULE's `answers(request)` yields them, each written as one line of JSON; the grader reads them
  in turn (`Box.next`), each by a deadline, all of them together at most OUTPUT_BYTES.

A box that runs past its CPU seconds or its deadline, runs out of memory, crashes, writes too much or answers
nonsense is killed, and `Box.next` raises `Cut` saying which: the analysis is lost, never the grading (the grader
flags the submission for a person: grader/grading.py).
"""

import importlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time

from grader.harness.forkserver import end_group

OUTPUT_BYTES = 8 << 20  # all of a box's answers together
OPEN_FILES = 64
PASSED_ENV = ("PATH", "LANG", "HOME", "XDG_CACHE_HOME", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")  # never the secret


class Cut(Exception):
    """The box ended without the answer asked for: why, in words (its limit, a crash, nonsense)."""


class Box:
    """One analysis in a box: `Box("grader.analysis", request, cpu_seconds=..., memory_mb=...)`, then `next(deadline)`
    for each answer (a time of time.monotonic()), then `close()` (or `with`)."""

    def __init__(self, module: str, request: dict, *, cpu_seconds: float, memory_mb: int):
        self.cpu_seconds, self.memory_mb = cpu_seconds, memory_mb
        limits = [(resource.RLIMIT_CPU, int(cpu_seconds) + 1), (resource.RLIMIT_AS, memory_mb << 20),
                  (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_NOFILE, OPEN_FILES), (resource.RLIMIT_CORE, 0)]

        def limited() -> None:  # in the box's process, before it starts
            for kind, value in limits:
                resource.setrlimit(kind, (value, value))

        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        self.process = subprocess.Popen([sys.executable, "-m", "grader.harness.box", module], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                        start_new_session=True, preexec_fn=limited)
        assert self.process.stdin and self.process.stdout and self.process.stderr  # all three are pipes
        self.stdout, self.stderr = self.process.stdout, self.process.stderr
        self.buffer, self.read = b"", 0
        try:
            self.process.stdin.write(json.dumps(request).encode())
            self.process.stdin.close()
        except OSError:  # it died at once: next() says how
            pass

    def next(self, deadline: float) -> dict:
        """The box's next answer, or Cut: it ended, ran out of a limit, or did not answer by `deadline`."""
        while b"\n" not in self.buffer:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.stdout], [], [], min(left, 1.0))
            if not ready:
                if left > 0:
                    continue
                self.close()
                raise Cut("it did not finish within the grading's time limit")
            chunk = os.read(self.stdout.fileno(), 1 << 16)
            if not chunk:
                raise Cut(self._how_it_ended())
            self.read += len(chunk)
            if self.read > OUTPUT_BYTES:
                self.close()
                raise Cut(f"its answer passed {OUTPUT_BYTES >> 20} MiB")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            self.close()
            raise Cut("its answer was not what an analysis answers")
        return answer

    def _how_it_ended(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.close()
            return "it closed its answer and did not end"
        error = self.stderr.read(4000).decode(errors="replace").strip().splitlines()
        if code in (-signal.SIGXCPU, -signal.SIGKILL):
            return f"it ran out of its {self.cpu_seconds:g} CPU seconds"
        if error and "MemoryError" in error[-1]:
            return f"it ran out of its {self.memory_mb} MiB of memory"
        if code < 0:
            return f"it crashed ({signal.Signals(-code).name})"
        return f"it failed ({error[-1] if error else f'exit code {code}'})"

    def close(self) -> None:
        end_group(self.process)
        for stream in (self.stdout, self.stderr):
            stream.close()

    def __enter__(self) -> "Box":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def main() -> None:
    """In the box: the request, MODULE's preparation, the filter, then each answer."""
    from grader.harness import seccomp

    request = json.loads(sys.stdin.buffer.read())
    module = importlib.import_module(sys.argv[1])
    module.prepare(request)
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no other process of its user opens its memory
    refused = seccomp.install(kind="box")
    if refused is not None and seccomp.unsupported() is None:
        raise SystemExit(f"the box's filter did not install: {refused}")
    out = sys.stdout.buffer
    for answer in module.answers(request):
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
