"""The trust boundary: everything between the official tests and the code under test (README.md maps each
threat to the file that stops it and the public hostile case that proves it). Read top to bottom:

    boundary.py   what of the official tree is secret, shipped, packaged, and visible to the worker
    sandbox.py    the operating system's layers around the worker, in the order they apply
    uids.py       the user layer's uids: one per grading, and what a uid leaves cleared
    hiding.py     the oracles' files: masked in the view, or denied to the grading's uid by ACL
    cgroups.py    where the grader may make cgroups: a grading's memory, its CPU share (cgroup v1 and v2)
    pagecache.py  every file of the workers' view read into the page cache before any worker runs
    box.py        the grader's own analyses of a submission (grader/analysis.py) in a limited, filtered process
    plugin.py     pytest's side (conftest.py loads it): the package under test, in-process or isolated;
                  feedback.py, its plugin for what a student reads
    client.py     the test process's end of the worker: starts it in the sandbox, calls it, times it;
                  running.py, the worker's word on the function a request is stuck in, and functions not called again
    forkserver.py one interpreter with torch imported, forked for the workers of a group of problems
    cputime.py    what the worker spent, read from outside it
    protocol.py   the frames on the worker's pipes; codec.py: values as plain data and back
    worker.py     the worker process, and in it, installed in this order before the code under test runs:
      absent.py     the problem's oracles as stubs, their kernels refused
      front_end.py  torch's compiler front end a stand-in until something needs it (in the test process too)
      seccomp.py    the kernel's filter: no new process, no tracing, no other process's memory
      guard.py      Python-level evidence for a person (never a grade on its own)
      local.py      the package imported; heap.py: freed memory given back
    typecheck.py  the stubs' annotations (interface.py), checked where the tests call the code under test
    report.py     one line per test, written where the worker cannot reach: what the grader scores (record.py)
"""
