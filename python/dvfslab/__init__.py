"""dvfslab: simulate how Linux picks CPU frequencies, and what those choices cost and buy.

    >>> import dvfslab
    >>> result = dvfslab.simulate("pixel6", "performance", "periodic:threads=4", duration_s=1)
    >>> result.metric, result.energy_j, result.df_cpus_summary()

`simulate` returns a `SimResult`; every error it raises is a `DvfsError`, bad input a
`ConfigError` (also a ValueError). `list_platforms()` lists the shipped platform presets.
"""

from dvfslab._core import ConfigError, DvfsError, SimulationError
from dvfslab._core import version as _native_version
from dvfslab.api import simulate
from dvfslab.platforms import list_platforms
from dvfslab.result import Metric, SimResult

# The package version; `_core.version()` adds a digest of the simulator's sources after a "+",
# which results stores use so that runs of another simulator build are never reused.
__version__: str = _native_version().split("+", 1)[0]

__all__ = [
    "ConfigError",
    "DvfsError",
    "Metric",
    "SimResult",
    "SimulationError",
    "__version__",
    "list_platforms",
    "simulate",
]
