"""icefloe.conformance.testing: the test infrastructure the conformance suite, the tests and
the benchmarks share, kept out of the implementation an engine imports (house style: the
simulator lives in `testing/`, as TigerBeetle's does).

- `faulty_store.FaultInjectingStore`: seeded or rule-driven survivable storage faults around
  any ObjectStore (the model's WriteFails, and lost answers), with a history;
- `faulty_catalog.FaultInjectingCatalog`: lost acknowledgements and delayed (parked) swaps
  around any catalog (the model's AckLost, SwapDelayed, Deliver, Drop), with a history;
- `moto_server.MotoS3Server`: moto's S3 on 127.0.0.1, behind `atomic.AtomicKeysMiddleware`
  so its conditional writes are atomic per key, as on S3;
- `proxy.FaultProxy`: a fault-injecting S3 proxy (reject, reset, lost response, delay,
  gates) that records every request; `s3_requests` names a raw HTTP request;
- `peer_clients`: S3 settings for peer engines (pyiceberg) pointed at the proxy.

moto is needed only by `moto_server` (the `s3` extra).
"""
