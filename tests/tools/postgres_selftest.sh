#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# Proves that tests/tools/postgres.sh does what docs/testing-with-postgres.md says: start prints
# the three lines and the server takes a login over 127.0.0.1 with the password of the URL (and
# no other); the password is nowhere but in that URL (not in the state directory, its logs
# included, nor in what start, status or run print); kill is a crash that restart recovers from
# (a committed row survives); start refuses a busy LETTERBOX_POSTGRES_PORT; stop removes the
# directory and frees the port; run exports the URL, exits with the command's status, keeps the
# directory when the command fails, and stops the server when it is sent SIGTERM.
#
# usage: tests/tools/postgres_selftest.sh      (needs postgresql-15; as root or not; about 15 s)
# Prints one line per check; exits 1 if any failed. Every wait is bounded.
set -euo pipefail
# Under make test a server of the tests runs already: this script names its own servers'
# directories everywhere, and never inherits that one's (a `kill` without DIR would crash it).
unset LETTERBOX_POSTGRES_DIR LETTERBOX_POSTGRES_URL LETTERBOX_POSTGRES_PORT
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pg=$here/postgres.sh
PG_BIN=${LETTERBOX_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
failures=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/letterbox-postgres-selftest.XXXXXX")
dir=""

cleanup() {
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        "$pg" stop "$dir" >/dev/null 2>&1 || true
    fi
    rm -rf -- "$scratch"
}
trap cleanup EXIT

check() { # check NAME COMMAND [ARG...]: one line, ok or FAILED
    if "${@:2}"; then
        printf 'selftest %s: ok\n' "$1"
    else
        printf 'selftest %s: FAILED\n' "$1"
        failures=$((failures + 1))
    fi
}

sql() { # sql URL STATEMENT: the result, unaligned, one row a line
    timeout 30 "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$1" -c "$2" </dev/null
}

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
free_within() { # free_within PORT SECONDS
    local deadline=$((SECONDS + $2))
    while listening "$1"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}
absent() { ! grep -rqF -- "$1" "${@:2}"; } # absent NEEDLE FILE|DIR...: NEEDLE in none of them
absent_re() { ! grep -qE -- "$1" "${@:2}"; } # absent_re REGEX FILE...
matches() { [[ $1 =~ $2 ]]; }
status_says() { [ "$1" -eq "$2" ] && grep -qx "status=$3" "$4"; } # RC WANT_RC WANT_STATUS FILE
stopped() { [ -n "$1" ] && ! "$pg" status "$1" >/dev/null 2>&1; }  # stopped DIR

# ---- start
"$pg" start --env-file "$scratch/env" >"$scratch/start.out" 2>"$scratch/start.err" || {
    rc=$?
    cat "$scratch/start.err"
    echo "selftest start: FAILED (exit status $rc)"
    exit 1
}
url=$(sed -n 's/^LETTERBOX_POSTGRES_URL=//p' "$scratch/start.out")
dir=$(sed -n 's/^LETTERBOX_POSTGRES_DIR=//p' "$scratch/start.out")
port=${url##*:}
port=${port%%/*}
password=${url#postgresql://letterbox:}
password=${password%%@*}

env_file_ok() { [ "$(stat -c %a "$scratch/env")" = 600 ] && cmp -s "$scratch/env" "$scratch/start.out"; }
wrong_password_refused() {
    ! timeout 30 "$PG_BIN/psql" -X -q -c 'select 1' "${url/:$password@/:wrong@}" </dev/null 2>/dev/null
}
superuser_refused_over_tcp() {
    ! PGPASSWORD=x timeout 30 "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
        -c 'select 1' </dev/null 2>/dev/null
}
busy_port_refused() {
    ! LETTERBOX_POSTGRES_PORT=$port "$pg" start >"$scratch/busy.out" 2>"$scratch/busy.err" &&
        grep -q 'is busy' "$scratch/busy.err" && [ ! -s "$scratch/busy.out" ]
}

check "start prints URL, DIR and SCRIPT" matches "$(tr '\n' ' ' <"$scratch/start.out")" \
    "^LETTERBOX_POSTGRES_URL=postgresql://letterbox:[0-9a-f]{48}@127\.0\.0\.1:[0-9]+/letterbox LETTERBOX_POSTGRES_DIR=/[^ ]+ LETTERBOX_POSTGRES_SCRIPT=$pg \$"
check "--env-file holds the same lines, mode 600" env_file_ok
check "psql \"\$LETTERBOX_POSTGRES_URL\" -c 'select 1'" [ "$(sql "$url" 'select 1')" = 1 ]
check "the role is letterbox, not a superuser, in database letterbox" [ "$(sql "$url" \
    'select current_user, rolsuper, current_database() from pg_roles where rolname = current_user')" = "letterbox|f|letterbox" ]
check "a wrong password is refused" wrong_password_refused
check "the superuser cannot log in over TCP" superuser_refused_over_tcp
if command -v ss >/dev/null; then
    check "listens on 127.0.0.1:$port only" [ "$(ss -Hltn "sport = :$port" | awk '{print $4}')" = "127.0.0.1:$port" ]
fi
if [ "$(id -u)" -eq 0 ]; then
    check "as root, the cluster belongs to ${LETTERBOX_POSTGRES_USER:-nobody}" \
        [ "$(stat -c %U "$dir/data")" = "${LETTERBOX_POSTGRES_USER:-nobody}" ]
fi
check "fsync is on" [ "$(sql "$url" 'show fsync')" = on ]
check "max_connections is 200" [ "$(sql "$url" 'show max_connections')" = 200 ]
check "LETTERBOX_POSTGRES_PORT=$port (busy) is refused" busy_port_refused

# ---- status, kill, restart
"$pg" status "$dir" >"$scratch/status1.out" 2>&1 && rc=0 || rc=$?
check "status: running, exit 0" status_says "$rc" 0 running "$scratch/status1.out"
sql "$url" 'create table survivor (id int primary key); insert into survivor values (42)' >/dev/null
check "kill" "$pg" kill "$dir" 2>>"$scratch/start.err"
check "after kill: nothing listens on $port" free_within "$port" 10
"$pg" status "$dir" >"$scratch/status2.out" 2>&1 && rc=0 || rc=$?
check "status after kill: stopped, exit 1" status_says "$rc" 1 stopped "$scratch/status2.out"
check "restart" "$pg" restart "$dir" 2>>"$scratch/start.err"
check "after restart: the committed row survived the crash" [ "$(sql "$url" 'select id from survivor')" = 42 ]
check "the server log shows a crash recovery" grep -q 'not properly shut down' "$dir/log/postgresql.log"

# ---- the password
check "the password is in no file of the state directory (logs, state, cluster)" absent "$password" "$dir"
check "the password is not in what start (stderr), status, kill and restart print" \
    absent "$password" "$scratch/start.err" "$scratch/status1.out" "$scratch/status2.out"

# ---- stop
check "stop" "$pg" stop "$dir" 2>/dev/null
check "stop removed the directory" [ ! -e "$dir" ]
check "after stop: nothing listens on $port" free_within "$port" 10
dir=""

# ---- run
# shellcheck disable=SC2016 # expanded by the command run starts
run_out=$("$pg" run -- sh -c 'timeout 30 "$0" -X -q -At "$LETTERBOX_POSTGRES_URL" -c "select 7" </dev/null &&
    echo "dir=$LETTERBOX_POSTGRES_DIR"' "$PG_BIN/psql" 2>"$scratch/run.err") && rc=0 || rc=$?
run_dir=$(sed -n 's/^dir=//p' <<<"$run_out")
check "run: the command reaches the server, exit 0" test "$rc:$(head -n 1 <<<"$run_out")" = 0:7
check "run: the directory is removed after success" test -n "$run_dir" -a ! -e "$run_dir"
check "run: the password is not in what it prints" absent_re 'letterbox:[0-9a-f]{48}@' "$scratch/run.err"
# shellcheck disable=SC2016 # expanded by the command run starts
"$pg" run -- sh -c 'echo "dir=$LETTERBOX_POSTGRES_DIR"; exit 3' >"$scratch/run3.out" 2>"$scratch/run3.err" &&
    rc=0 || rc=$?
run_dir=$(sed -n 's/^dir=//p' "$scratch/run3.out")
check "run: exits with the command's status (3)" [ "$rc" -eq 3 ]
check "run: a failed command keeps the directory and says where" grep -qF "kept in $run_dir" "$scratch/run3.err"
check "run: ... with the server's log in it" test -s "$run_dir/log/postgresql.log"
check "run: the server is stopped after a failure" stopped "$run_dir"
[[ $run_dir != *letterbox-postgres.* ]] || rm -rf -- "$run_dir"

# SIGTERM to run while its command runs: the command gets it, the server stops, exit 143.
# shellcheck disable=SC2016 # expanded by the command run starts
"$pg" run -- sh -c 'echo "$LETTERBOX_POSTGRES_DIR" >"$0"; exec sleep 60' "$scratch/marker" \
    >/dev/null 2>"$scratch/term.err" &
run_pid=$!
deadline=$((SECONDS + 60))
while [ ! -s "$scratch/marker" ] && [ $SECONDS -lt $deadline ] && kill -0 "$run_pid" 2>/dev/null; do
    sleep 0.1
done
kill -TERM "$run_pid" 2>/dev/null || true
wait "$run_pid" && rc=0 || rc=$?
run_dir=$(cat "$scratch/marker" 2>/dev/null || true)
check "run: SIGTERM ends it with 143" [ "$rc" -eq 143 ]
check "run: after SIGTERM the server is stopped" stopped "$run_dir"
[[ $run_dir != *letterbox-postgres.* ]] || rm -rf -- "$run_dir"

if [ $failures -ne 0 ]; then
    echo "postgres_selftest: $failures check(s) FAILED"
    exit 1
fi
echo "postgres_selftest: all checks passed"
