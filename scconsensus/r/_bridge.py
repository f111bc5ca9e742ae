"""Old name of :mod:`scconsensus.r_bridge`, for R packages installed before the rename.

An ``scconsensusR`` installed from a checkout before the rename imports
``scconsensus.r._bridge``; this keeps it working against a newer Python package.
"""

import sys

from .. import r_bridge

sys.modules[__name__] = r_bridge
