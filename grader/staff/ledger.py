"""Where a pytest run's CPU goes: a pytest plugin that `bench --make-test` loads into every pytest process the
Makefile's targets start (PYTEST_PLUGINS), and the tables it prints from what the plugin wrote.

Each process that runs tests (an xdist worker, or pytest itself without xdist) joins a cpuacct group of its own
(grader/harness/cgroups.py CpuAccount), so everything it and the processes it starts spend is counted, a
grading's sandboxed workers and a subprocess's orphans included. The tests of one process run one at a time:
the group's CPU seconds across a test's setup, call and teardown are that test's, and across a fixture's setup
that fixture's (the fixtures it sets up itself excluded). One JSON line each, in a file per process in the
folder RA_CPU_LEDGER names; the process's whole time (collection included) last. The processes the tests start
neither load the plugin nor record (both variables are dropped once read): their CPU is their test's.
"""

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from grader.harness import cgroups

FOLDER = "RA_CPU_LEDGER"  # where each process writes its lines; unset: the plugin does nothing
PLUGIN = __name__


def pytest_configure(config):
    folder = os.environ.get(FOLDER)
    if not folder:
        return
    worker = hasattr(config, "workerinput")
    if not worker and getattr(config.option, "numprocesses", 0) and getattr(config.option, "dist", "no") != "no":
        return  # xdist's controller: its workers (which inherit the variables) record
    for name in (FOLDER, "PYTEST_PLUGINS"):  # what this process's tests start is theirs
        os.environ.pop(name, None)
    account = cgroups.CpuAccount()
    if account.kind is None:
        return
    account.join()
    label = ("meta" if config.getoption("--meta", False) else
             "isolated" if config.getoption("--isolated", False) else "in-process")
    config.pluginmanager.register(Ledger(account, Path(folder) / f"{os.getpid()}.jsonl", label), "ra-cpu-ledger")


class Ledger:
    def __init__(self, account: cgroups.CpuAccount, path: Path, label: str):
        self.account, self.label, self.path = account, label, path
        self.out = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed at unconfigure)
        self.started = account.seconds() or 0.0
        self.fixtures: list[list[float]] = []  # a stack: [CPU at the start, CPU of the fixtures set up inside]

    def cpu(self) -> float:
        """The CPU seconds of the account's group (joined at configure, so never None here)."""
        return self.account.seconds() or 0.0

    def write(self, **record) -> None:
        self.out.write(json.dumps({"run": self.label, **record}) + "\n")

    def _phase(self, item, when: str):
        before, wall = self.cpu(), time.monotonic()
        yield
        self.write(kind="phase", nodeid=item.nodeid, when=when, cpu=self.cpu() - before,
                   wall=time.monotonic() - wall)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item, "teardown")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        self.fixtures.append([self.cpu(), 0.0])
        yield
        start, inside = self.fixtures.pop()
        spent = self.cpu() - start
        if self.fixtures:
            self.fixtures[-1][1] += spent
        where = fixturedef.baseid or "(plugins)"
        self.write(kind="fixture", name=fixturedef.argname, scope=fixturedef.scope, where=where,
                   nodeid=request.node.nodeid, cpu=spent - inside)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        self.write(kind="process", cpu=self.cpu() - self.started)
        self.out.close()
        parent = self.account.group.parent  # leave the group, so it can be removed
        (parent / "cgroup.procs").write_text(str(os.getpid()))
        self.account.close()  # where a test's orphan still holds it, the group bench counted in removes it


def environment(folder: Path) -> dict[str, str]:
    """The variables that make the pytest processes of a command record into `folder`."""
    plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p]
    return {FOLDER: str(folder), "PYTEST_PLUGINS": ",".join([*plugins, PLUGIN])}


def read(folder: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]


def scope_of(nodeid: str) -> str:
    """"tests/meta/test_x.py::TestY::test_z[a]" -> "tests/meta/test_x.py"."""
    return nodeid.split("::", 1)[0]


def by_file(records: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    """(run, file) -> CPU seconds of its tests' setup, call and teardown, and its tests' count."""
    files: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in records:
        if r["kind"] == "phase":
            files[r["run"], scope_of(r["nodeid"])][r["when"]] += r["cpu"]
            files[r["run"], scope_of(r["nodeid"])]["tests"] += r["when"] == "call"
    return files


def by_test(records: list[dict]) -> dict[str, float]:
    """nodeid -> CPU seconds of its setup, call and teardown."""
    tests: dict[str, float] = defaultdict(float)
    for r in records:
        if r["kind"] == "phase":
            tests[r["nodeid"]] += r["cpu"]
    return tests


def by_fixture(records: list[dict]) -> dict[tuple[str, str, str], list[float]]:
    """(run, where it is defined, fixture) -> [CPU seconds of its setups, setups]."""
    fixtures: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for r in records:
        if r["kind"] == "fixture":
            entry = fixtures[r["run"], scope_of(r["nodeid"]) if r["scope"] != "session" else "(session)",
                             f"{r['name']} ({r['scope']})"]
            entry[0] += r["cpu"]
            entry[1] += 1
    return fixtures


def tables(records: list[dict], total: float, rows: int = 25) -> str:
    """Per test file, then per fixture, the costliest first; `total` is the command's whole tree, so that what
    ran outside any test (pytest's start, collection, xdist) is shown too."""
    files = by_file(records)
    tested = sum(f["setup"] + f["call"] + f["teardown"] for f in files.values())
    lines = [f"    {'CPU s':>7} {'setup':>7} {'call':>7} {'tests':>5}  file (run)"]
    for (run, file), f in sorted(files.items(), key=lambda kv: -sum(kv[1][w] for w in ("setup", "call", "teardown"))):
        spent = f["setup"] + f["call"] + f["teardown"]
        lines.append(f"    {spent:7.1f} {f['setup']:7.1f} {f['call']:7.1f} {int(f['tests']):5d}  {file} ({run})")
    lines.append(f"    {total - tested:7.1f} {'':7} {'':7} {'':5}  outside any test: pytest's start and collection, "
                 "xdist, lint")
    fixtures = by_fixture(records)
    lines += ["", f"    {'CPU s':>7} {'setups':>6}  fixture, where its setups ran (its own fixtures' excluded)"]
    for (run, where, name), (spent, count) in sorted(fixtures.items(), key=lambda kv: -kv[1][0])[:rows]:
        lines.append(f"    {spent:7.1f} {count:6d}  {name} in {where} ({run})")
    return "\n".join(lines)


def tests_table(records: list[dict], rows: int = 40) -> str:
    """Per test (its setup, call and teardown, its fixtures' setups included), the costliest first."""
    lines = [f"    {'CPU s':>7}  test"]
    costliest = sorted(by_test(records).items(), key=lambda kv: -kv[1])
    lines += [f"    {spent:7.1f}  {nodeid}" for nodeid, spent in costliest]
    return "\n".join(lines[:rows + 1])
