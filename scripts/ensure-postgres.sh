#!/bin/sh
# Install Debian's PostgreSQL server if its binaries are missing; do nothing otherwise.
# Idempotent. tests/postgres/conftest.py starts its own servers from
# /usr/lib/postgresql/<version>/bin, as the `postgres` user, on 127.0.0.1.
set -eu

have_server() {
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ] && return 0
    done
    return 1
}

if have_server && id postgres >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
else
    SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends postgresql

have_server || { echo "ensure-postgres: postgresql installed but no server binaries found" >&2; exit 1; }
id postgres >/dev/null 2>&1 || { echo "ensure-postgres: no postgres user after install" >&2; exit 1; }
