"""icefloe.impl.s3: S3-like storage as real parts.

- `store.S3Store`: the ObjectStore over the S3 API (conditional PUTs, own retries);
- `moto_server.MotoS3Server`: moto on 127.0.0.1, wrapped by `atomic.AtomicKeysMiddleware`
  so its conditional writes are atomic per key, as on S3;
- `proxy.FaultProxy`: a fault-injecting S3 proxy (reject, reset, lost response,
  delay, gates) that records every request;
- `ops`: how a raw HTTP request is named (operation, bucket, key, client).

Needs boto3 (a core dependency) and, for moto_server, the `s3` extra (moto[server]).
"""
