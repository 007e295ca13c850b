"""Naming raw S3 requests (icefloe.conformance.testing.s3_requests), as the proxy's rules and the middleware see them."""
from __future__ import annotations

import pytest

from icefloe.conformance.testing.s3_requests import describe

SIGNED = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261122/us-east-1/s3/"
                           "aws4_request, SignedHeaders=host, Signature=abc"}

CASES = [
    ("GET", "/b/k", "", {}, "GetObject"),
    ("HEAD", "/b/k", "", {}, "HeadObject"),
    ("PUT", "/b/k", "", {}, "PutObject"),
    ("PUT", "/b/k", "", {"if-none-match": "*"}, "ConditionalPutObject"),
    ("PUT", "/b/k", "", {"if-match": '"e"'}, "ConditionalPutObject"),
    ("PUT", "/b/k", "", {"x-amz-copy-source": "/b/j"}, "CopyObject"),
    ("PUT", "/b/k", "partNumber=1&uploadId=u", {}, "UploadPart"),
    ("PUT", "/b/k", "partNumber=1&uploadId=u", {"x-amz-copy-source": "/b/j"}, "UploadPartCopy"),
    ("PUT", "/b/k", "tagging", {}, "PutObjectConfig"),
    ("POST", "/b/k", "uploads", {}, "CreateMultipartUpload"),
    ("POST", "/b/k", "uploadId=u", {}, "CompleteMultipartUpload"),
    ("DELETE", "/b/k", "uploadId=u", {}, "AbortMultipartUpload"),
    ("GET", "/b/k", "uploadId=u", {}, "ListParts"),
    ("DELETE", "/b/k", "", {}, "DeleteObject"),
    ("POST", "/b", "delete", {}, "DeleteObjects"),
    ("GET", "/b", "list-type=2&prefix=p", {}, "ListObjectsV2"),
    ("GET", "/b", "", {}, "ListObjects"),
    ("GET", "/b", "uploads", {}, "ListMultipartUploads"),
    ("GET", "/b", "location", {}, "GetBucketLocation"),
    ("HEAD", "/b", "", {}, "HeadBucket"),
    ("PUT", "/b", "", {}, "CreateBucket"),
    ("DELETE", "/b", "", {}, "DeleteBucket"),
    ("GET", "/", "", {}, "ListBuckets"),
]


@pytest.mark.parametrize("method,path,query,headers,operation", CASES)
def test_operation_names(method, path, query, headers, operation):
    """Goal: each S3 request shape gets its operation name. Method: describe() on a table."""
    assert describe(method, path, query, headers).operation == operation


def test_keys_are_percent_decoded_and_clients_named():
    """Goal: keys come out decoded, and the client is the header or else the access key id.
    Method: describe() an encoded key, signed, with and without x-icefloe-client."""
    request = describe("PUT", "/b/a%20b/%C3%BC.json", "", dict(SIGNED, **{"if-none-match": "*"}))
    assert (request.bucket, request.key, request.client) == ("b", "a b/ü.json", "AKIDEXAMPLE")
    assert request.if_none_match == "*" and request.if_match is None
    tagged = describe("GET", "/b/k", "", dict(SIGNED, **{"x-icefloe-client": "writer-7"}))
    assert tagged.client == "writer-7"
    presigned = describe("GET", "/b/k", "X-Amz-Credential=AKIDP%2F20261122%2Fus-east-1", {})
    assert presigned.client == "AKIDP"
    assert describe("GET", "/b/k", "", {}).client is None
