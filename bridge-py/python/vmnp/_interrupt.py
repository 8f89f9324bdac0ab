"""Ctrl-C during a long flush.

While the VM works, the main thread waits in native code with the GIL released, so Python's
SIGINT handler (which runs only between bytecodes of the main thread) cannot raise
`KeyboardInterrupt` until the work ends. Python's C-level handler also writes the signal's
number to the wakeup file descriptor (`signal.set_wakeup_fd`): a native thread reads it and asks
the VM to stop the flush in progress, which then returns within milliseconds and raises
`KeyboardInterrupt` in the main thread.

The wakeup descriptor is taken only when nobody else holds it (an asyncio event loop sets its
own while it runs); a program that replaces it later keeps Ctrl-C working as Python does, only
without interrupting a flush. A forked child starts its own watcher.
"""

import os
import signal
import threading

from . import _vmnp

_pipe = (-1, -1)  # the watcher's (read, write) descriptors


def install():
    """Starts the watcher, when this is the main thread and the wakeup descriptor is free (or
    still the one a parent process's watcher set before a fork)."""
    global _pipe
    if threading.current_thread() is not threading.main_thread():
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    try:
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except (ValueError, OSError):
        previous = None
    if previous is None or previous not in (-1, _pipe[1]):
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
        return
    if previous != -1:
        # A fork's child: its parent's watcher thread does not exist here.
        for fd in _pipe:
            os.close(fd)
    try:
        _vmnp._watch_interrupts(read_fd)
    except _vmnp.VMError:  # no thread to be had: Ctrl-C waits for the flush, as without vmnp's help
        signal.set_wakeup_fd(-1)
        os.close(read_fd)
        os.close(write_fd)
        _pipe = (-1, -1)
        return
    _pipe = (read_fd, write_fd)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=install)
