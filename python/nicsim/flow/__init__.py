"""Deprecated: the former name of [`nicsim.flowmem`], kept so that existing scripts still run.

`import nicsim.flow`, `from nicsim.flow import open_capture` and `from nicsim.flow.memory import
...` / `from nicsim.flow.reassemble import ...` give the objects of `nicsim.flowmem` (the same
modules, not copies), with a `DeprecationWarning`. Import `nicsim.flowmem` instead.
"""

import sys
import warnings

from nicsim.flowmem import *  # noqa: F403
from nicsim.flowmem import __all__, memory  # noqa: F401

warnings.warn("nicsim.flow is deprecated: it is now nicsim.flowmem (same contents); import that instead",
              DeprecationWarning, stacklevel=2)

# The submodules under their old names: `nicsim.flow.memory` is `nicsim.flowmem.memory`.
sys.modules[f"{__name__}.memory"] = memory
sys.modules[f"{__name__}.reassemble"] = sys.modules["nicsim.flowmem.reassemble"]
