"""Shared setup: fallbacks are errors, so a test passes only when vmnp ran it on the VM.

The stack comes from ``VM_STACK`` (the test command runs the suite on ``interp`` and ``cpu``).
"""

import os

os.environ.setdefault("VMNP_FALLBACK", "error")
