"""Naming S3 requests: operation, bucket/key and client, from the raw HTTP request.

Shared by the fault-injecting proxy (rules match on these names) and the atomic
middleware in front of moto (which locks per key and counts requests server-side),
so that a benchmark counts the same thing on both sides of the wire.

Only path-style addressing (`/bucket/key`) is parsed; every icefloe client is
configured for it (moto and the proxy listen on 127.0.0.1, where virtual-hosted
bucket names cannot resolve).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import parse_qs, unquote

from icefloe.impl.s3.store import CLIENT_HEADER  # the header icefloe's S3 store sets

# Operations that change one key (the atomic middleware serializes them per key).
KEY_MUTATIONS = frozenset({
    "PutObject", "ConditionalPutObject", "CopyObject", "DeleteObject",
    "CompleteMultipartUpload",
})
MULTIPART = frozenset({
    "CreateMultipartUpload", "UploadPart", "UploadPartCopy", "CompleteMultipartUpload",
    "AbortMultipartUpload", "ListParts",
})

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")


@dataclass(frozen=True)
class S3Request:
    method: str
    operation: str
    bucket: str | None
    key: str | None
    client: str | None
    if_match: str | None
    if_none_match: str | None


def client_of(headers: Mapping[str, str], query: Mapping[str, list[str]]) -> str | None:
    """The x-icefloe-client header if set, else the SigV4 access key id."""
    explicit = headers.get(CLIENT_HEADER)
    if explicit:
        return explicit
    match = _CREDENTIAL.search(headers.get("authorization", ""))
    if match:
        return match.group(1)
    credential = query.get("X-Amz-Credential")  # presigned URL
    if credential:
        return credential[0].split("/", 1)[0]
    return None


def split_path(path: str) -> tuple[str | None, str | None]:
    """'/bucket/some/key' (percent-decoded) -> ('bucket', 'some/key')."""
    stripped = path.lstrip("/")
    if not stripped:
        return None, None
    bucket, _, key = stripped.partition("/")
    return bucket, (key or None)


def operation_of(method: str, bucket: str | None, key: str | None,
                 query: Mapping[str, list[str]], headers: Mapping[str, str]) -> str:
    method = method.upper()
    if bucket is None:
        return "ListBuckets" if method == "GET" else "Other"
    if key is None:
        if method == "GET":
            if query.get("list-type") == ["2"]:
                return "ListObjectsV2"
            if "uploads" in query:
                return "ListMultipartUploads"
            if "location" in query:
                return "GetBucketLocation"
            return "ListObjects" if not query else "GetBucketConfig"
        if method == "HEAD":
            return "HeadBucket"
        if method == "PUT":
            return "CreateBucket" if not query else "PutBucketConfig"
        if method == "POST" and "delete" in query:
            return "DeleteObjects"
        if method == "DELETE":
            return "DeleteBucket" if not query else "DeleteBucketConfig"
        return "Other"
    if method == "GET":
        return "ListParts" if "uploadId" in query else "GetObject"
    if method == "HEAD":
        return "HeadObject"
    if method == "PUT":
        if "uploadId" in query and "partNumber" in query:
            return "UploadPartCopy" if "x-amz-copy-source" in headers else "UploadPart"
        if query:
            return "PutObjectConfig"  # acl, tagging, retention, legal-hold
        if "x-amz-copy-source" in headers:
            return "CopyObject"
        if "if-match" in headers or "if-none-match" in headers:
            return "ConditionalPutObject"
        return "PutObject"
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
        return "Other"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in query else "DeleteObject"
    return "Other"


def describe(method: str, path: str, query_string: str,
             headers: Mapping[str, str]) -> S3Request:
    """Name one request. `path` is percent-encoded as on the wire; `headers` has
    lower-case names."""
    query = parse_qs(query_string, keep_blank_values=True)
    bucket, key = split_path(unquote(path))
    return S3Request(
        method=method.upper(),
        operation=operation_of(method, bucket, key, query, headers),
        bucket=bucket,
        key=key,
        client=client_of(headers, query),
        if_match=headers.get("if-match"),
        if_none_match=headers.get("if-none-match"),
    )
