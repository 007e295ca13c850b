"""Which engine a name means: the built-in shortcuts, `module:factory` for any other engine,
and the flawed variants (negative controls, conformance.engines.flawed). `load_engine` and
`load_variant` raise adapter.EngineSpecError, a typed usage error, on anything they cannot load.
"""
from __future__ import annotations

import importlib

from icefloe.conformance.adapter import Capabilities, Engine, EngineSpecError

ENGINE_SHORTCUTS = {
    "icefloe": "icefloe.conformance.engines.icefloe_engine:engine",
    # pyiceberg through icefloe serve: every commit fault kind reaches its commit there (its
    # SQL swap gets none; docs/verdicts.md); the SQL path stays as pyiceberg-sql.
    "pyiceberg": "icefloe.conformance.engines.pyiceberg_rest:engine",
    "pyiceberg-rest": "icefloe.conformance.engines.pyiceberg_rest:engine",
    "pyiceberg-sql": "icefloe.conformance.engines.pyiceberg_engine:engine",
    "java": "icefloe.conformance.engines.java_engine:engine",          # needs `make java-venv`
    "java-mor": "icefloe.conformance.engines.java_engine:engine_mor",
    "java-v3": "icefloe.conformance.engines.java_engine:engine_v3",          # the same on format v3 tables
    "java-mor-v3": "icefloe.conformance.engines.java_engine:engine_mor_v3",
    "duckdb": "icefloe.conformance.engines.duckdb_engine:engine",       # through a REST catalog
}
DEFAULT_ENGINE = "icefloe"



def load_engine(spec: str | None = None) -> Engine:
    """Resolve `module:factory` (or a shortcut) and call the factory."""
    spec = spec or DEFAULT_ENGINE
    target = ENGINE_SHORTCUTS.get(spec, spec)
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise EngineSpecError(f"engine {spec!r}: expected module:factory or one of {sorted(ENGINE_SHORTCUTS)}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise EngineSpecError(f"engine {spec!r}: cannot import {module_name}: {e}") from e
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise EngineSpecError(f"engine {spec!r}: {module_name} has no callable {attr!r}")
    return check_engine(factory(), spec)


def check_engine(engine, spec: str = "?") -> Engine:
    for name in ("name", "capabilities", "create_table"):
        if not hasattr(engine, name):
            raise EngineSpecError(f"engine {spec!r}: the factory's result has no {name!r}")
    if not isinstance(engine.capabilities, Capabilities):
        raise EngineSpecError(f"engine {spec!r}: capabilities must be an adapter.Capabilities")
    return engine


VARIANTS_MODULE = "icefloe.conformance.engines.flawed"


def variant_names() -> list:
    """The flawed variants' names (negative controls), or [] where none are installed."""
    try:
        module = importlib.import_module(VARIANTS_MODULE)
    except ModuleNotFoundError as e:
        if e.name != VARIANTS_MODULE:
            raise
        return []
    return sorted(getattr(module, "VARIANTS", {}))


def load_variant(name: str) -> Engine:
    """The flawed variant `name` as an engine (EngineSpecError if there is none)."""
    names = variant_names()
    if name not in names:
        raise EngineSpecError(f"no variant {name!r}; variants: {', '.join(names) or 'none installed'}")
    module = importlib.import_module(VARIANTS_MODULE)
    return check_engine(module.VARIANTS[name](), f"variant {name}")
