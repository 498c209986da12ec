"""The oracle audits (issue 22): FlopCounterMode's methods rebuilt from its code objects with `code.replace`
(another file name, another name), so that no code object says it comes from the oracle. The stub that
stands for the oracle in the worker has no code to rebuild.
"""
import types as _types

_oracle = getattr(__import__("torch.utils." + "flop_counter", fromlist=["x"]), "FlopCounter" + "Mode")
_members = {}
for _name, _f in list(vars(_oracle).items()):
    if isinstance(_f, _types.FunctionType):
        _code = _f.__code__.replace(co_filename="flops.py", co_name="m_" + _name)
        _members[_name] = _types.FunctionType(_code, _f.__globals__, _name, _f.__defaults__, _f.__closure__)

FlopCounter = type("FlopCounter", (_oracle,), _members)  # noqa: F811 - the attack replaces the stub
