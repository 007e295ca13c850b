"""LocalStore against MemoryStore as reference: the same verb sequences give the same outcomes."""
from __future__ import annotations

import shutil
import tempfile

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from icefloe.impl.io.base import StoreError
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.memory import MemoryStore

KEYS = st.sampled_from(["t/metadata/v1.json", "t/metadata/v2.json", "t/data/a.parquet", "u/x"])
CONTENTS = st.sampled_from([b"", b"a", b"b", b"ab" * 100])


def observe(call):
    """What a caller sees: the value, or the error's type name (locations differ by store)."""
    try:
        value = call()
    except StoreError as e:
        return type(e).__name__
    if hasattr(value, "etag"):
        return ("info", value.size, value.etag)
    return value


class LocalMatchesMemory(RuleBasedStateMachine):
    """Each rule runs one verb on both stores and compares what each returned."""

    def __init__(self):
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="icefloe-stateful-")
        self.local = LocalStore(fsync=False)  # durability is not under test here
        self.memory = MemoryStore(now_ms=lambda: 1)

    def both(self, call):
        seen_local = observe(lambda: call(self.local, f"file://{self.root}/"))
        seen_memory = observe(lambda: call(self.memory, "memory://b/"))
        assert seen_local == seen_memory, (seen_local, seen_memory)
        return seen_memory

    @rule(key=KEYS, data=CONTENTS)
    def put_if_absent(self, key, data):
        self.both(lambda s, root: s.put_if_absent(root + key, data))

    @rule(key=KEYS, data=CONTENTS, stale=st.booleans())
    def compare_and_swap(self, key, data, stale):
        def call(s, root):
            etag = "0" * 32 if stale else s.stat(root + key).etag
            return s.compare_and_swap(root + key, data, etag)
        self.both(call)

    @rule(key=KEYS)
    def delete(self, key):
        self.both(lambda s, root: s.delete(root + key))

    @rule(key=KEYS)
    def get(self, key):
        self.both(lambda s, root: s.get(root + key))

    @invariant()
    def listings_agree(self):
        self.both(lambda s, root: [(i.location[len(root):], i.size, i.etag) for i in s.list(root)])

    def teardown(self):
        shutil.rmtree(self.root, ignore_errors=True)


TestLocalMatchesMemory = LocalMatchesMemory.TestCase
# Four keys are exhausted within a few dozen steps; the profile keeps its other settings.
TestLocalMatchesMemory.settings = settings(stateful_step_count=25)
