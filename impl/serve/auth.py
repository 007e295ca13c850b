"""Who is asking, and what they may do (REST spec: the OAuth2 `/v1/oauth/tokens` endpoint,
OAuthClientCredentialsRequest, OAuthTokenExchangeRequest, OAuthTokenResponse, OAuthError;
the 401 / 403 responses of every route; RFC 6749 4.4 and 5, RFC 8693 for token exchange).

- Principals come from a JSON file (`--principals FILE`), never from the command line:
  `{"principals": [{"client-id": "alice", "secret-hash": "scrypt$...", "grants":
  {"db": ["read", "write"], "*": ["read"]}}]}`. A secret is stored as its scrypt hash
  (`hash_secret`; `icefloe serve hash-secret` prints one). A grant on a namespace covers it
  and every namespace below it; `*` covers the whole catalog. `write` implies `read`.
- `POST /v1/oauth/tokens` (form-encoded) with `grant_type=client_credentials`, `client_id`,
  `client_secret` (in the form or as HTTP Basic) answers an access token that expires after
  `token_lifetime_s`; `grant_type=urn:ietf:params:oauth:grant-type:token-exchange` with a
  valid token of ours as `subject_token` renews it (Iceberg-Java refreshes this way).
- A token is `<client-id>.<expiry-s>.<HMAC-SHA256>` under the server's signing key, so every
  replica sharing the key (`--signing-key-file`) accepts every replica's tokens and nothing
  is kept in memory; without a key file each process draws its own.
- A static token (`--token-file`, the ICEFLOE_SERVE_TOKEN environment variable, or the old
  `--token`) is a principal with every grant.
- The scheme of `Authorization: Bearer` is case-insensitive (RFC 7235 2.1). A refusal names
  neither the table nor whether it exists: authorization is decided before anything is read.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field

from icefloe.impl.serve import errors as E

READ, WRITE = "read", "write"
EVERYTHING = "*"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 1 << 14, 8, 1
TOKEN_LIFETIME_S_DEFAULT = 3600
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
STATIC = "static-token"   # the principal a static token stands for


class PrincipalsError(ValueError):
    """The principals file is malformed: what and where."""


def hash_secret(secret: str, salt: bytes | None = None) -> str:
    """`scrypt$N$r$p$<salt>$<hash>` (base64), what a principals file stores."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt)}${b64(digest)}"


def verify_secret(secret: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        expected = base64.b64decode(digest)
        got = hashlib.scrypt(secret.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                             dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)


@dataclass(frozen=True)
class Principal:
    name: str
    grants: dict = field(default_factory=dict)     # namespace (dotted) or "*" -> {"read", "write"}

    def may(self, namespace: tuple[str, ...] | None, privilege: str) -> bool:
        """Whether a grant on `namespace` or one above it (or `*`) gives `privilege`;
        `namespace` None is the catalog itself (listing top-level namespaces)."""
        assert privilege in (READ, WRITE), privilege
        wanted = {privilege, WRITE} if privilege == READ else {WRITE}
        if wanted & self.grants.get(EVERYTHING, set()):
            return True
        levels = tuple(namespace or ())
        return any(wanted & self.grants.get(".".join(levels[:i]), set()) for i in range(1, len(levels) + 1))

    def sees(self, namespace: tuple[str, ...]) -> bool:
        """Whether listing may show `namespace`: readable, or above one that is."""
        if self.may(namespace, READ):
            return True
        dotted = ".".join(namespace)
        return any(g.startswith(dotted + ".") for g in self.grants if g != EVERYTHING)


ADMIN = Principal(STATIC, {EVERYTHING: {READ, WRITE}})


def load_principals(path: str) -> dict[str, tuple[str, Principal]]:
    """client-id -> (secret hash, Principal) from a principals file."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise PrincipalsError(f"principals file {path}: {e}") from None
    entries = document.get("principals") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise PrincipalsError(f"principals file {path}: expected {{\"principals\": [...]}}")
    out = {}
    for i, entry in enumerate(entries):
        where = f"principals file {path}, principals[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("client-id"), str) \
                or not isinstance(entry.get("secret-hash"), str) or not entry["secret-hash"].startswith("scrypt$"):
            raise PrincipalsError(f"{where}: needs a string client-id and a secret-hash from `icefloe serve "
                                  "hash-secret` (never the secret itself)")
        name = entry["client-id"]
        if not name or "." in name or name in out or name == STATIC:
            raise PrincipalsError(f"{where}: client-id {name!r} is empty, holds '.', is repeated or reserved")
        grants = {}
        for namespace, privileges in (entry.get("grants") or {}).items():
            if not isinstance(privileges, list) or not set(privileges) <= {READ, WRITE}:
                raise PrincipalsError(f"{where}: grants[{namespace!r}] must be a list of 'read' and 'write'")
            grants[namespace] = frozenset(privileges)
        out[name] = (entry["secret-hash"], Principal(name, grants))
    return out


class OAuthError(Exception):
    """An OAuthError response (RFC 6749 5.2): 400, or 401 for a client that failed."""

    def __init__(self, error: str, description: str, status: int = 400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status

    def body(self) -> dict:
        return {"error": self.error, "error_description": self.description}


class Authenticator:
    """Tokens in, Principals out. `clock` (seconds) is injected for tests of expiry."""

    def __init__(self, *, static_token: str | None = None, principals: dict | None = None,
                 signing_key: bytes | None = None, token_lifetime_s: int = TOKEN_LIFETIME_S_DEFAULT,
                 clock=time.time):
        assert token_lifetime_s > 0, token_lifetime_s
        self.static_token, self.principals = static_token, dict(principals or {})
        self.key = signing_key or secrets.token_bytes(32)
        self.lifetime_s, self.clock = token_lifetime_s, clock

    @property
    def required(self) -> bool:
        return self.static_token is not None or bool(self.principals)

    def _sign(self, payload: str) -> str:
        return base64.urlsafe_b64encode(hmac.new(self.key, payload.encode(), hashlib.sha256).digest()).decode() \
            .rstrip("=")

    def issue(self, principal: Principal) -> dict:
        expiry = int(self.clock()) + self.lifetime_s
        payload = f"{principal.name}.{expiry}"
        return {"access_token": f"{payload}.{self._sign(payload)}", "token_type": "bearer",
                "expires_in": self.lifetime_s, "issued_token_type": ACCESS_TOKEN_TYPE}

    def principal_of_token(self, token: str) -> Principal:
        """The principal a bearer token stands for; 401 NotAuthorizedException otherwise."""
        if self.static_token is not None and hmac.compare_digest(token.encode(), self.static_token.encode()):
            return ADMIN
        name, _, rest = token.partition(".")
        expiry, _, signature = rest.partition(".")
        if not (name in self.principals and expiry.isdigit()
                and hmac.compare_digest(signature.encode(), self._sign(f"{name}.{expiry}").encode())):
            raise E.unauthorized("Not authorized: the bearer token is not one this catalog issued")
        if int(expiry) <= self.clock():
            raise E.unauthorized("Not authorized: the bearer token has expired; fetch a new one")
        return self.principals[name][1]

    def authenticate(self, authorization: str | None) -> Principal:
        if not self.required:
            return ADMIN
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise E.unauthorized()
        return self.principal_of_token(token.strip())

    def token(self, form: dict, authorization: str | None) -> dict:
        """The /v1/oauth/tokens answer for a form (values already decoded)."""
        grant = form.get("grant_type")
        if grant == "client_credentials":
            client_id, client_secret = form.get("client_id"), form.get("client_secret")
            scheme, _, basic = (authorization or "").partition(" ")
            if client_id is None and scheme.lower() == "basic":
                try:
                    client_id, _, client_secret = base64.b64decode(basic.strip()).decode().partition(":")
                except (ValueError, UnicodeDecodeError):
                    raise OAuthError("invalid_request", "malformed Basic credentials") from None
            if not client_id or client_secret is None:
                raise OAuthError("invalid_request", "client_credentials needs client_id and client_secret")
            found = self.principals.get(client_id)
            # Hash even for an unknown client, so the answer's timing does not tell who exists.
            ok = verify_secret(client_secret, found[0] if found else hash_secret("", b"\0" * 16)) and found
            if not ok:
                raise OAuthError("invalid_client", "unknown client or wrong secret", 401)
            return self._with_scope(self.issue(found[1]), form)
        if grant == TOKEN_EXCHANGE:
            subject = form.get("subject_token")
            if not subject:
                raise OAuthError("invalid_request", "token exchange needs subject_token")
            try:
                principal = self.principal_of_token(subject)
            except E.RestError:
                raise OAuthError("invalid_grant", "subject_token is not a valid token of this catalog") from None
            if principal is ADMIN:
                raise OAuthError("invalid_grant", "a static token is not exchanged")
            return self._with_scope(self.issue(principal), form)
        raise OAuthError("unsupported_grant_type", f"grant_type {str(grant)[:60]!r}: client_credentials or "
                                                   "token exchange")

    @staticmethod
    def _with_scope(answer: dict, form: dict) -> dict:
        if form.get("scope"):
            answer["scope"] = form["scope"]
        return answer
