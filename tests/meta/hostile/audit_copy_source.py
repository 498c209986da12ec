"""The oracle audits: a private copy of FlopCounterMode compiled from torch's own source file, read directly,
through inspect, and through a child process. There is nothing to copy: in the flops worker the module is a
stub with no file, the file itself is masked or unreadable, and the kernel refuses the child process (issue
22); where a source is there to read (no sandbox), the guard refuses to open or compile it.
"""
import inspect as _inspect
import subprocess as _subprocess
import sys as _sys

import torch.utils.flop_counter as _fc

_namespace = {}
for _read in (lambda: open(_fc.__file__).read(), lambda: _inspect.getsource(_fc),
              lambda: _subprocess.run([_sys.executable, "-c", "import torch.utils.flop_counter as f; "
                                       "print(open(f.__file__).read())"], capture_output=True, text=True).stdout):
    try:
        exec(compile(_read(), "ra_hostile_counter.py", "exec"), _namespace)
        break
    except Exception:
        continue
if "FlopCounterMode" in _namespace:
    class FlopCounter(_namespace["FlopCounterMode"]):  # noqa: F811 - the attack replaces the stub
        def __init__(self):
            super().__init__(display=False)

        @property
        def total(self):
            return self.get_total_flops()
