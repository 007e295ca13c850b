"""Idempotency-Key on mutations (REST spec: the `idempotency-key` parameter and
CatalogConfig's `idempotency-key-lifetime`).

`Idempotency.run(key, operation, handler)` runs a mutation once per key. A key already
finalized is answered from its record without running anything: the same status, and for
a commit or a create the metadata the commit made current (re-read, so the body "may
reflect a newer state" only where that file is gone). Final are 200 / 201 / 204 and the
4xx; a 5xx is never recorded, so a retry after one runs again, and finds the key when the
first attempt landed after all: for a commit or a create the key is recorded in the
catalog's own transaction (store.py), so it is recorded exactly when the change landed.
A key reused for another operation is refused (422). A PointerStore's commit with an
unknown outcome leaves its key pending: a replay first looks for the attempted metadata
file in the table's chain (landed: answered as committed) and otherwise runs afresh.
"""
from __future__ import annotations

import json
import re
import threading

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.serve import errors as E
from icefloe.impl.serve.commit import _Replay
from icefloe.impl.serve.service import CatalogService, Response
from icefloe.impl.serve.records import PENDING, KeyRecord

LIFETIME_S_DEFAULT = 30 * 60
PURGE_EVERY_RECORDS = 256
KEY_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.:-]{0,63}$")


def iso_duration(seconds: int) -> str:
    return f"PT{seconds // 60}M" if seconds % 60 == 0 else f"PT{seconds}S"


class Idempotency:
    def __init__(self, service: CatalogService, lifetime_s: int = LIFETIME_S_DEFAULT):
        self.service, self.lifetime_s = service, lifetime_s
        self._records = 0
        self._lock = threading.Lock()

    def run(self, key: str | None, operation: str, handler) -> Response:
        """`handler(draft)` performs the mutation; `draft` (None without a key) is the
        KeyRecord a commit stores atomically with its swap."""
        if key is None:
            return handler(None)
        if not KEY_RE.match(key):
            raise E.bad_request(f"Malformed Idempotency-Key {key[:80]!r}: expected a UUID (at most 64 characters)")
        store = self.service.store
        found = store.lookup_key(key)
        if found is not None:
            replayed = self._replay(found, operation)
            if replayed is not None:
                return replayed
        now = self.service.env.wall_ms()
        draft = KeyRecord(key, operation, 0, "", now)
        try:
            response = handler(draft)
        except _Replay:
            return self._replay(store.lookup_key(key), operation)
        except E.RestError as e:
            if 400 <= e.status < 500:
                self._record(KeyRecord(key, operation, e.status, json.dumps({"kind": "error", "body": e.body()}), now))
            raise
        self._record(KeyRecord(key, operation, response.status, self._response_text(response), now))
        return response

    @staticmethod
    def _response_text(response: Response) -> str:
        body = response.body or {}
        if "metadata-location" in body and "metadata" in body:   # a table: re-read on replay
            return json.dumps({"kind": "load" if "config" in body else "commit",
                               "metadata-location": body["metadata-location"]})
        return json.dumps({"kind": "body", "body": response.body})

    def _record(self, record: KeyRecord) -> None:
        store = self.service.store
        store.record_key(record)      # a record already there (the commit's own, a twin's) stands
        with self._lock:
            self._records += 1
            purge = self._records % PURGE_EVERY_RECORDS == 0
        if purge:   # keys live at least twice the advertised lifetime
            store.purge_keys(record.created_at_ms - 2 * 1000 * self.lifetime_s)

    def _replay(self, record: KeyRecord, operation: str) -> Response | None:
        """The recorded answer, or None when a pending key's attempt did not land."""
        if record.operation != operation:
            raise E.RestError(E.UNPROCESSABLE, "UnprocessableEntityException",
                              f"Idempotency-Key {record.key} was used for another operation ({record.operation})")
        saved = json.loads(record.response)
        if record.status == PENDING:
            if not self._landed(saved):
                self.service.store.forget_key(record.key)
                return None
            record = KeyRecord(record.key, record.operation, 200, record.response, record.created_at_ms)
            self.service.store.record_key(record)
        kind = saved.get("kind")
        if kind == "error":
            error = saved["body"]["error"]
            raise E.RestError(record.status, error["type"], error["message"])
        if kind == "body":
            return Response(record.status, saved["body"])
        if kind == "transaction":
            return Response(204)
        body = self._table_body(saved)
        if kind == "commit":
            body.pop("config", None)
        return Response(record.status, body)

    def _table_body(self, saved: dict) -> dict:
        s = self.service
        try:
            return s.load_result(saved["metadata-location"])
        except E.RestError:
            table = saved.get("table")       # that version is gone: the table's current one
            if table is None:
                raise
            return s.load_table(TableIdentifier.parse(table)).body

    def _landed(self, saved: dict) -> bool:
        s = self.service
        current = s.location_of(TableIdentifier.parse(saved["table"]))
        if current is None:
            return False
        attempted = saved["metadata-location"]
        return current == attempted or any(e.metadata_file == attempted for e in s.read(current).metadata_log)
