"""icefloe.impl.io: object stores (spec/PROTOCOL.md, "Storage").

- `base`: the ObjectStore protocol, ObjectInfo, typed store errors, request counting;
- `locations`: the one parser of location strings (`file:/x`, `file:///x`, `/x`, schemes);
- `local.LocalStore`, `memory.MemoryStore`: stores with atomic put_if_absent and CAS;
- `router.StoreRouter`: picks the store by scheme; `router.register_scheme` is open;
"""
