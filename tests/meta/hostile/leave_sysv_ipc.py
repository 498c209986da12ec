"""7. Leftovers: System V shared memory, a semaphore set and a message queue (through libc), which outlive
every process unless someone removes them."""
import ctypes as _ctypes

_libc = _ctypes.CDLL(None, use_errno=True)
_IPC_CREAT = 0o1000
for _i in range(3):
    _libc.shmget(0, 2**20, _IPC_CREAT | 0o600)  # IPC_PRIVATE: a new segment each time
    _libc.semget(0, 4, _IPC_CREAT | 0o600)
    _libc.msgget(0, _IPC_CREAT | 0o600)
