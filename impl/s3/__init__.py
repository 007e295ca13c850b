"""icefloe.impl.s3: S3-like storage.

- `store.S3Store`: the ObjectStore over the S3 API (conditional PUTs, own bounded retries,
  a read-back that settles lost answers, a deadline per call);
- `client`: the boto3 client it sends through and its settings from properties;
- `errors`: how one request failed, and the typed errors `NoSuchBucket` and `S3Timeout`.

Needs boto3 (a core dependency). The moto server, its atomic middleware and the
fault-injecting S3 proxy the tests and the conformance suite use are test infrastructure:
`icefloe.conformance.testing`.
"""
