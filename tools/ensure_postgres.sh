#!/bin/sh
# Makes sure a PostgreSQL server can be started by the test suite, before `make test` runs pytest.
#
# The PostgreSQL tests start a throwaway server of their own (tests/pg_server.py) from the
# binaries `initdb` and `pg_ctl`; they never skip. So that a fresh Debian machine runs the whole
# suite with no step by hand, this installs Debian's `postgresql` package when it is missing and
# we are root on Debian (nothing starts: the package's own cluster is not used). Anywhere else it
# fails with one line naming what to install, rather than letting every PostgreSQL test fail.
#
# Found where tests/pg_server.py looks: $HITL_PG_BIN, Debian's /usr/lib/postgresql/*/bin, PATH.
set -u

have_postgres() {
    if [ -n "${HITL_PG_BIN:-}" ]; then
        [ -x "$HITL_PG_BIN/initdb" ] && [ -x "$HITL_PG_BIN/pg_ctl" ]
        return
    fi
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && return 0
    done
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1
}

have_postgres && exit 0

if [ -n "${HITL_PG_BIN:-}" ]; then
    echo "make: HITL_PG_BIN=$HITL_PG_BIN has no initdb and pg_ctl: point it at PostgreSQL's bin folder, or unset it" >&2
    exit 1
fi

if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; then
    log="${TMPDIR:-/tmp}/hitl-apt-postgresql.log"
    echo "make: PostgreSQL is missing; installing Debian's postgresql package (apt-get, about 15 s)" >&2
    if { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql; } >"$log" 2>&1 \
        && have_postgres; then
        exit 0
    fi
    echo "make: apt-get could not install postgresql (its output is in $log); install it by hand: apt-get install postgresql" >&2
    exit 1
fi

echo "make: the tests need a PostgreSQL server (15 or newer): install it (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql), or set HITL_PG_BIN to the folder holding initdb and pg_ctl" >&2
exit 1
