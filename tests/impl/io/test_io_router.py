"""StoreRouter: scheme dispatch, open registration, aggregated counts."""
from __future__ import annotations

import pytest

from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.io.router import (
    StoreRouter,
    UnknownScheme,
    register_scheme,
    registered_schemes,
    unregister_scheme,
)


def test_dispatch_by_scheme(tmp_path):
    """file:, file:///, plain paths go to the local store and memory: to the memory store."""
    memory = MemoryStore()
    router = StoreRouter(stores={"memory": memory})
    router.put_if_absent(f"file:{tmp_path}/a", b"a")
    router.put_if_absent(f"{tmp_path}/b", b"b")
    router.put_if_absent("memory://bkt/c", b"c")
    assert isinstance(router.store_for(f"file://{tmp_path}/a"), LocalStore)
    assert router.store_for(f"{tmp_path}/a") is router.store_for(f"file:{tmp_path}/a")
    assert router.store_for("memory://x") is memory
    assert router.get(f"file:///{tmp_path.relative_to('/')}/b") == b"b"
    assert memory.get("memory://bkt/c") == b"c"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_unknown_scheme_is_refused():
    """A location whose scheme nobody registered raises UnknownScheme."""
    with pytest.raises(UnknownScheme):
        StoreRouter().get("gopher://host/x")


def test_open_registration():
    """A scheme registered later is routed to its factory, built once per router with the
    router's properties; registering a taken scheme needs replace=True."""
    built: list[dict] = []

    def factory(properties):
        built.append(dict(properties))
        return MemoryStore()

    register_scheme("icefloe-test", factory)
    try:
        assert "icefloe-test" in registered_schemes()
        router = StoreRouter(properties={"region": "here"})
        router.put_if_absent("icefloe-test://b/k", b"v")
        assert router.get("ICEFLOE-TEST://b/k".lower()) == b"v"
        assert built == [{"region": "here"}]
        with pytest.raises(ValueError):
            register_scheme("icefloe-test", lambda properties: MemoryStore())
        register_scheme("icefloe-test", lambda properties: MemoryStore(), replace=True)
    finally:
        unregister_scheme("icefloe-test")
    assert "icefloe-test" not in registered_schemes()


def test_counts_are_summed_over_stores(tmp_path):
    """The router's counts are the sum of its stores' counts, a shared store counted once."""
    memory = MemoryStore()
    router = StoreRouter(stores={"memory": memory, "mem2": memory})
    router.put_if_absent("memory://b/1", b"1")
    router.put_if_absent("mem2://b/2", b"2")
    router.get("memory://b/1")
    router.put_if_absent(f"file:{tmp_path}/x", b"x")
    router.get(f"file:{tmp_path}/x")
    router.stat(f"file:{tmp_path}/x")
    list(router.list(f"file:{tmp_path}/"))
    router.delete("memory://b/1")
    assert dict(router.counts) == {"put_if_absent": 3, "get": 2, "stat": 1, "list": 1, "delete": 1}
