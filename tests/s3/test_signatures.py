"""SigV4 through the proxy, checked by a moto that verifies signatures.

moto verifies SigV4 only once its "initial no-auth action count" is used up, and that
setting is process-global; so this runs moto in its own process, started through the
`python -m icefloe.conformance.testing.moto_server` entry point, with INITIAL_NO_AUTH_ACTION_COUNT=3
(create an IAM user, its access key and its policy), after which every request must
carry a valid signature.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Iterator

import pytest
from botocore.exceptions import ClientError
from pyarrow import fs

from icefloe.conformance.testing.moto_server import make_client
from icefloe.conformance.testing.proxy import FaultProxy
from icefloe.impl.io.base import StoreUnavailable
from icefloe.impl.s3.store import S3Store, new_client

BUCKET = "signed"
STARTUP_LINES_MAX = 50


@pytest.fixture(scope="module")
def verifying_moto() -> Iterator[tuple[str, str, str]]:
    """(endpoint_url, access_key, secret_key) of a moto that checks every signature."""
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
    process = subprocess.Popen(
        [sys.executable, "-m", "icefloe.conformance.testing.moto_server", "--bucket", ""],
        stdout=subprocess.PIPE, text=True, env=env)
    try:
        endpoint = None
        for _ in range(STARTUP_LINES_MAX):
            line = process.stdout.readline()
            assert line, "moto_server exited before printing its endpoint"
            if line.startswith("http://127.0.0.1:"):
                endpoint = line.strip()
                break
        assert endpoint is not None
        iam = new_client(service_name="iam", endpoint_url=endpoint, region_name="us-east-1",
                         aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="icefloe")
        key = iam.create_access_key(UserName="icefloe")["AccessKey"]
        iam.put_user_policy(UserName="icefloe", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        make_client(endpoint, key["AccessKeyId"], key["SecretAccessKey"]).create_bucket(
            Bucket=BUCKET)
        yield endpoint, key["AccessKeyId"], key["SecretAccessKey"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_wrong_secret_is_refused(verifying_moto):
    """Goal: the upstream really verifies signatures (else the next tests prove nothing).
    Method: sign with a wrong secret directly against moto; expect 403 SignatureDoesNotMatch."""
    endpoint, access_key, _ = verifying_moto
    with pytest.raises(ClientError) as refused:
        make_client(endpoint, access_key, "wrong-secret").head_bucket(Bucket=BUCKET)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_boto3_signatures_survive_the_reverse_proxy(verifying_moto, prefix):
    """Goal: requests signed for the proxy's Host stay valid upstream. Method: boto3 with endpoint =
    proxy writes, conditionally writes, reads and lists through a verifying moto."""
    endpoint, access_key, secret_key = verifying_moto
    with FaultProxy(endpoint) as proxy:
        s3 = make_client(proxy.endpoint_url, access_key, secret_key)
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/a", Body=b"a" * 1000, IfNoneMatch="*")
        assert s3.get_object(Bucket=BUCKET, Key=f"{prefix}/a")["Body"].read() == b"a" * 1000
        assert s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/")["KeyCount"] == 1
        with pytest.raises(ClientError) as wrong:
            make_client(proxy.endpoint_url, access_key, "wrong-secret").head_bucket(Bucket=BUCKET)
        assert wrong.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        assert [e.upstream_status for e in proxy.history()] == [200, 200, 200, 403]


def test_boto3_signatures_survive_the_forward_proxy(verifying_moto, prefix):
    """Goal: requests signed for the upstream's Host pass through the proxy in forward mode.
    Method: boto3 with endpoint = moto and proxies = the proxy, against a verifying moto."""
    endpoint, access_key, secret_key = verifying_moto
    with FaultProxy(endpoint) as proxy:
        s3 = make_client(endpoint, access_key, secret_key, proxies={"http": proxy.endpoint_url})
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/f", Body=b"forward")
        assert s3.get_object(Bucket=BUCKET, Key=f"{prefix}/f")["Body"].read() == b"forward"
        assert [e.upstream_status for e in proxy.history()] == [200, 200]


def test_pyarrow_signatures_survive_the_reverse_proxy(verifying_moto, prefix):
    """Goal: the AWS SDK for C++ (pyarrow) signs requests that stay valid through the proxy.
    Method: pyarrow S3FileSystem with endpoint_override = proxy writes and reads a file."""
    endpoint, access_key, secret_key = verifying_moto
    with FaultProxy(endpoint) as proxy:
        arrow = fs.S3FileSystem(access_key=access_key, secret_key=secret_key,
                                region="us-east-1", endpoint_override=proxy.endpoint,
                                scheme="http")
        with arrow.open_output_stream(f"{BUCKET}/{prefix}/p") as out:
            out.write(b"p" * 5000)
        with arrow.open_input_stream(f"{BUCKET}/{prefix}/p") as stream:
            assert stream.read() == b"p" * 5000
        statuses = {e.upstream_status for e in proxy.history()}
        assert statuses <= {200, 206} and proxy.history()


def test_store_refused_by_403_is_unavailable_at_once(verifying_moto, prefix):
    """Goal: a 403 is a definite "not applied" that no retry can change. Method: S3Store with a
    wrong secret against the verifying moto; one request per call, StoreUnavailable."""
    endpoint, access_key, _ = verifying_moto
    wrong = S3Store.from_config(endpoint, access_key, "wrong-secret", "us-east-1", attempts_max=4)
    with pytest.raises(StoreUnavailable):
        wrong.put_if_absent(f"s3://{BUCKET}/{prefix}/x", b"v")
    with pytest.raises(StoreUnavailable):
        wrong.get(f"s3://{BUCKET}/{prefix}/x")
    assert dict(wrong.counts) == {"put_if_absent": 1, "get": 1}
