"""The static audits (tests/audit.py `reaching`) resolve what a solution's code reaches through its imports, aliases
and attribute chains: every way of writing a reach to the oracle is found, and no name, string or attribute of the
solution's own is (issue 53: a ContextVar named "flop_counter_depth" failed the flops audit's substring match)."""

import textwrap

import pytest

from tests import audit

pytestmark = pytest.mark.meta

FLOPS = ("torch.utils.flop_counter",)
REACHING = {
    "from import": "from torch.utils.flop_counter import FlopCounterMode\n",
    "module alias": "import torch.utils.flop_counter as fc\nx = fc.FlopCounterMode\n",
    "attribute chain": "import torch\nmode = torch.utils.flop_counter.FlopCounterMode\n",
    "alias of an attribute": "import torch\nu = torch.utils\nm = u.flop_counter\n",
    "import_module": "import importlib\nm = importlib.import_module('torch.utils.' + 'flop_counter')\n",
    "getattr": "import torch\nm = getattr(torch.utils, 'flop_counter')\n",
    "__import__": "m = __import__('torch.utils.flop_counter')\n",
}
NOT_REACHING = {
    "a name that holds the word": "flop_counter_total = 0\ndef flop_counter_depth():\n    return 1\n",
    "a string": "import contextvars\nDEPTH = contextvars.ContextVar('flop_counter_depth', default=0)\n",
    "an attribute of its own": "class C:\n    def __init__(self):\n        self.flop_counter = 0\n",
    "another torch module": "import torch.utils._python_dispatch as d\nfrom torch.utils.checkpoint import checkpoint\n",
}


def write(tmp_path, monkeypatch, module: str, text: str) -> None:
    monkeypatch.setattr(audit, "ROOT", tmp_path)
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / f"{module}.py").write_text(textwrap.dedent(text))


@pytest.mark.parametrize("way", sorted(REACHING))
def test_every_way_of_reaching_the_oracle_is_found(tmp_path, monkeypatch, way):
    write(tmp_path, monkeypatch, "flops", REACHING[way])
    assert audit.reaching("pkg", "flops", FLOPS), way


@pytest.mark.parametrize("way", sorted(NOT_REACHING))
def test_names_strings_and_its_own_attributes_reach_nothing(tmp_path, monkeypatch, way):
    write(tmp_path, monkeypatch, "flops", NOT_REACHING[way])
    assert audit.reaching("pkg", "flops", FLOPS) == [], way


def test_attributes_are_methods_it_cannot_resolve_and_does_not_define(tmp_path, monkeypatch):
    write(tmp_path, monkeypatch, "precision", """
        import torch


        def round_to_bf16(x):
            half = x.numel() // 2  # a name: no cast
            return x.to(torch.bfloat16), half


        def elsewhere(x):
            return x.half()
    """)
    assert audit.reaching("pkg", "precision", (), ("bfloat16", "half"), within="round_to_bf16") == \
        ["line 7: return x.to(torch.bfloat16), half"]
    write(tmp_path, monkeypatch, "tensors", """
        class Layout:
            def view(self):
                return self


        def strides(x):
            return Layout().view(), x.stride()
    """)
    assert audit.reaching("pkg", "tensors", (), ("view", "stride")) == ["line 8: return Layout().view(), x.stride()"]
