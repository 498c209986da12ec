"""The oracle by another door (issue 41): torch's profiler counts 2*m*k*n for the matmul family in C++ when asked
(`with_flops=True`). A FlopCounter that is the profiler, its events' FLOPs summed per op (kineto's profiler first,
then the legacy one), and `matmul_flops` answered by measuring a matmul on the meta device with it. The functions
that turn the profiler on are taken out of the flops world (grader/harness/absent.py `disable_functions`): each
attempt raises OracleAbsent.
"""
import torch as _torch

_MATMULS = {"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm"}  # it counts adds too


def _profiler():
    for use_kineto in (True, False):
        try:
            profiler = _torch.autograd.profiler.profile(with_flops=True, use_kineto=use_kineto)
            profiler.__enter__()
            return profiler
        except Exception:  # noqa: BLE001 - the next door
            continue
    raise NotImplementedError


class FlopCounter:  # noqa: F811 - the attack replaces the stub
    def __enter__(self):
        self.total, self.by_op, self._profiler = 0, {}, _profiler()
        return self

    def __exit__(self, *exc):
        self._profiler.__exit__(*exc)
        for event in self._profiler.function_events:
            name = event.name.replace("::", ".")
            if event.flops and name in _MATMULS:
                self.by_op[name] = self.by_op.get(name, 0) + event.flops
                self.total += event.flops
        return False


def matmul_flops(b, d, k):  # noqa: F811 - the attack replaces the stub
    with FlopCounter() as counter:
        _torch.mm(_torch.empty(b, d, device="meta"), _torch.empty(d, k, device="meta"))
    return counter.total
