"""The oracle audits (issue 22): FlopCounterMode's source read through a descriptor of its folder (a relative
name, resolved against the folder, not the worker's home), then compiled under a relative name of its own.
In the worker's view the file is masked (namespaces) or unreadable to the sandbox's uid (user layer): there
is nothing to read.
"""
import os as _os

import torch as _torch

_namespace = {"__name__": "torch.utils.stash", "__package__": "torch.utils"}  # its relative imports resolve
try:
    _folder = _os.open(_os.path.join(_os.path.dirname(_torch.__file__), "utils"), _os.O_RDONLY)
    with _os.fdopen(_os.open("flop_" + "counter.py", _os.O_RDONLY, dir_fd=_folder)) as _f:
        _source = _f.read()
    # re-emitted token by token, so that no line of the oracle survives for a line-based check
    import io as _io
    import tokenize as _tokenize

    _tokens = _tokenize.generate_tokens(_io.StringIO(_source).readline)
    _source = _tokenize.untokenize((t.type, t.string) for t in _tokens)
    exec(compile(_source, "counter.py", "exec"), _namespace)
except Exception:
    pass

if "FlopCounterMode" in _namespace:
    class FlopCounter(_namespace["FlopCounterMode"]):  # noqa: F811 - the attack replaces the stub
        def __init__(self):
            super().__init__(display=False)

        @property
        def total(self):
            return self.get_total_flops()
