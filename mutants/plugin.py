"""pytest plugin: plant the mutant named by $ICEFLOE_MUTANT before any test imports icefloe
(`pytest -p mutants.plugin`; xdist workers load it too)."""
from __future__ import annotations

import os

from mutants import hook

_name = os.environ.get("ICEFLOE_MUTANT")
if _name:
    hook.install(_name)
