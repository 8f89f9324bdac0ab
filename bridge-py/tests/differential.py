"""The same statements under NumPy and under vmnp: what they leave, or the error they raise."""

import numpy
import pytest

import vmnp


def both(code):
    """``out`` as ``code`` leaves it with ``np`` bound to NumPy and to vmnp (NumPy's first)."""
    outs = []
    for module in (numpy, vmnp):
        scope = {"np": module}
        exec(code, scope)  # noqa: S102 (the test's own programs)
        outs.append(scope["out"])
    return outs


def same_error(code, error):
    """``code`` raises ``error`` under both, with NumPy's message."""
    texts = []
    for module in (numpy, vmnp):
        with pytest.raises(error) as e:
            exec(code, {"np": module})  # noqa: S102
        texts.append(str(e.value))
    assert texts[1] == texts[0]
