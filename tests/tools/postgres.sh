#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# A throwaway PostgreSQL server on 127.0.0.1 for letterbox's `integration` tests, the way
# rabbitmq.sh runs a broker. It runs Debian's postgresql-15 binaries (`make test-deps` installs
# them) directly: a fresh cluster made by initdb in a `mktemp -d` directory, never Debian's
# system cluster (/var/lib/postgresql, /etc/postgresql, /var/run/postgresql) or a server someone
# else runs. PostgreSQL refuses to run as root: as root, the server runs as an unprivileged user.
#
# usage:
#   postgres.sh start [--env-file FILE]   make a cluster, start it and wait until it accepts
#                                         connections; prints
#                                         LETTERBOX_POSTGRES_URL=postgresql://letterbox:<password>@127.0.0.1:<port>/letterbox
#                                         LETTERBOX_POSTGRES_DIR=<its state directory>
#                                         LETTERBOX_POSTGRES_SCRIPT=<this script's path>
#                                         on stdout (and writes the same lines to FILE, mode 0600)
#   postgres.sh stop [--keep] [DIR]       stop it (pg_ctl stop -m fast, bounded wait, then SIGKILL)
#                                         and remove DIR, or keep DIR (and its logs) with --keep
#   postgres.sh status [DIR]              print its state; exit 0 if it accepts connections, 1 if not
#   postgres.sh kill [DIR]                SIGKILL the postmaster and its backends (a crash), keeping
#                                         the cluster; `restart` then runs crash recovery
#   postgres.sh restart [DIR]             start it again on the same port and cluster; wait until up
#   postgres.sh run -- COMMAND [ARG...]   start, run COMMAND with LETTERBOX_POSTGRES_URL exported,
#                                         and always stop (also on failure and on INT/TERM/HUP);
#                                         exits with COMMAND's status. DIR is kept when COMMAND fails.
# DIR defaults to $LETTERBOX_POSTGRES_DIR.  By hand:  export $(tests/tools/postgres.sh start)
#
# Environment:
#   LETTERBOX_POSTGRES_PORT     TCP port. Set: used as is, and `start` refuses (exit 1) if it is
#                               busy. Unset: 5432 if free, else the first free port in 5433-5499
#                               (a note on stderr), so that a server someone else runs on 5432 is
#                               neither reused nor disturbed.
#   LETTERBOX_POSTGRES_START_TIMEOUT  seconds to wait for initdb, and again for the server (default 60)
#   LETTERBOX_POSTGRES_STOP_TIMEOUT   seconds pg_ctl stop -m fast may take before SIGKILL (default 30)
#   LETTERBOX_POSTGRES_FSYNC    on (default) or off. On: what the kill -9 tests rely on; off: faster,
#                               and a crash of the machine (not of the server) may lose commits.
#   LETTERBOX_POSTGRES_USER     as root: the user the server runs as (default nobody)
#   LETTERBOX_POSTGRES_BIN      the server's programs (default /usr/lib/postgresql/15/bin, Debian's)
#   TMPDIR                      where the state directory is made (default /tmp)
#
# State directory (letterbox-postgres.XXXXXX, owned by the server's user): state (what
# stop/status read; no password), data/ (the cluster; data/postgresql.conf ends with this script's
# settings, data/pg_hba.conf is this script's), socket/ (the unix socket, mode 0700), log/
# (postgresql.log: the server's log; initdb.log, pg_ctl.log, setup.log: the tools' output).
#
# Roles: `letterbox` (LOGIN CREATEDB, owner of the database `letterbox`, a random password that is
# printed only inside LETTERBOX_POSTGRES_URL and never stored in DIR: the server receives its SCRAM
# verifier, computed here) over TCP with scram-sha-256; the superuser `postgres`, over the unix
# socket only (trust: only the server's user, and root, can enter socket/).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=service_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/service_common.sh"

readonly PG_BIN=${LETTERBOX_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
readonly DEFAULT_PORT=5432
readonly FALLBACK_PORTS_LAST=5499
readonly STATE_PREFIX=letterbox-postgres.
readonly ROLE=letterbox
readonly DATABASE=letterbox
readonly SUPERUSER=postgres

say() { echo "postgres.sh: $*" >&2; }
die() {
    say "$*"
    exit 1
}

usage() {
    sed -n '10,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

seconds_var() { # seconds_var VAR DEFAULT: the variable's value, a number of seconds
    local v=${!1:-$2}
    if ! { is_uint "$v" && [ "$v" -gt 0 ]; }; then
        die "$1 must be a number of seconds, not '$v'"
    fi
    echo "$v"
}

# masked URL: the password replaced by ***, for every line this script prints on stderr.
masked_url() { echo "postgresql://$ROLE:***@$LOOPBACK:$1/$DATABASE"; }

require_server() {
    local p missing=()
    for p in initdb pg_ctl postgres psql pg_isready; do
        [ -x "$PG_BIN/$p" ] || missing+=("$PG_BIN/$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" -eq 0 ]; then
            die "PostgreSQL 15 is not installed (${missing[*]} missing). Run 'make test-deps' (it" \
                "installs .ci/debian-test-packages.txt, postgresql-15 included, without starting" \
                "Debian's system cluster), or set LETTERBOX_POSTGRES_BIN."
        fi
        die "PostgreSQL 15 is not installed (${missing[*]} missing) and you are not root, so it" \
            "cannot be installed here. Run 'make test-deps' with sudo rights, or ask an" \
            "administrator for 'apt-get install --no-install-recommends postgresql-15' (with" \
            "/usr/sbin/policy-rc.d exiting 101, so the system cluster is not started)."
    fi
    command -v python3 >/dev/null || die "python3 is missing (make deps installs it)"
    command -v timeout >/dev/null || die "timeout(1) (coreutils) is missing"
    command -v setpriv >/dev/null || die "setpriv(1) (util-linux) is missing"
}

# server_user: who runs initdb, pg_ctl and postgres: the caller, or as root (which PostgreSQL
# refuses) LETTERBOX_POSTGRES_USER, by default nobody, which exists everywhere and owns nothing.
server_user() {
    if [ "$(id -u)" -ne 0 ]; then
        id -un
        return
    fi
    local u=${LETTERBOX_POSTGRES_USER:-nobody}
    id -u "$u" >/dev/null 2>&1 || die "LETTERBOX_POSTGRES_USER: no user '$u'"
    [ "$(id -u "$u")" -ne 0 ] || die "LETTERBOX_POSTGRES_USER: PostgreSQL refuses to run as root"
    echo "$u"
}

# server_prefix DIR USER: sets the array server_cmd to the prefix that runs a command as USER
# (setpriv, when we are root and USER is not us), with HOME=DIR and without the caller's PG*
# variables (PGHOST, PGOPTIONS, ...), so that nothing of the caller's environment redirects the
# tools. setpriv and env exec: the command keeps the pid of the process that execs the prefix.
server_prefix() {
    local dir=$1 user=$2 v
    server_cmd=()
    if [ "$(id -u)" -eq 0 ] && [ "$(id -u "$user")" -ne 0 ]; then
        server_cmd=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups --)
    fi
    server_cmd+=(env)
    for v in $(compgen -e); do
        [[ $v != PG* ]] || server_cmd+=(-u "$v")
    done
    server_cmd+=(HOME="$dir")
}

# as_server DIR USER COMMAND [ARG...]: runs COMMAND in DIR with the prefix of server_prefix, and
# PGPASSWORD set to $server_pgpassword if that (unexported) variable is set: in the environment,
# never on a command line.
as_server() {
    local dir=$1 user=$2 server_cmd
    shift 2
    server_prefix "$dir" "$user"
    (
        cd "$dir" || exit 1
        [ -z "${server_pgpassword:-}" ] || export PGPASSWORD="$server_pgpassword"
        exec "${server_cmd[@]}" "$@"
    )
}

# scram_verifier: reads a password on stdin and prints its SCRAM-SHA-256 verifier (RFC 7677),
# the form PostgreSQL stores in pg_authid, so that the server (and its log) never see the
# password itself; it is not on any command line either.
scram_verifier() {
    # shellcheck disable=SC2016 # a Python program: its $ are literal
    python3 -c '
import base64, hashlib, hmac, os, sys
password = sys.stdin.readline().rstrip("\n").encode()
salt, iterations = os.urandom(16), 4096
salted = hashlib.pbkdf2_hmac("sha256", password, salt, iterations)
client_key = hmac.new(salted, b"Client Key", "sha256").digest()
server_key = hmac.new(salted, b"Server Key", "sha256").digest()
b64 = lambda b: base64.b64encode(b).decode()
print(f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(hashlib.sha256(client_key).digest())}:{b64(server_key)}")
'
}

log_tail() {
    local dir=$1 f
    for f in "$dir/log/initdb.log" "$dir/log/pg_ctl.log" "$dir/log/setup.log" "$dir/log/postgresql.log"; do
        [ -s "$f" ] || continue
        echo "---- last lines of $f" >&2
        tail -n 30 "$f" >&2
    done
}

# postmaster_pid DIR: the pid in the cluster's lock file (data/postmaster.pid), if any.
postmaster_pid() {
    local p=""
    { read -r p <"$1/data/postmaster.pid"; } 2>/dev/null || true
    ! is_uint "$p" || echo "$p"
}

# children_of PID: the pids whose parent is PID (/proc, no fork per process). Every process of a
# PostgreSQL server is a child of its postmaster (each in a session of its own, so there is no
# process group to signal).
children_of() {
    local f stat state ppid
    for f in /proc/[0-9]*/stat; do
        { read -r stat <"$f"; } 2>/dev/null || continue
        read -r state ppid _ <<<"${stat##*) }"
        if [ "$ppid" = "$1" ] && [ "$state" != Z ]; then
            f=${f#/proc/}
            echo "${f%/stat}"
        fi
    done
}

# kill_server DIR PID START_TIME: SIGKILL the postmaster and every child of it at once, as a crash
# of the machine would, and wait (bounded) until all are gone. Killing only the postmaster would
# let its backends run on (and commit) until they notice, and restart refuses to start while they
# do. Then the stale locks go (clear_stale_locks), as after a reboot.
kill_server() {
    local dir=$1 pid=$2 started=$3 c
    alive "$pid" "$started" || return 0
    local -a kids=() kid_times=()
    for c in $(children_of "$pid"); do
        kids+=("$c")
        kid_times+=("$(proc_start_time "$c")")
    done
    kill -KILL "$pid" "${kids[@]}" 2>/dev/null || true
    wait_gone "$pid" "$started" 10 || die "postmaster (pid $pid) survived SIGKILL"
    for c in "${!kids[@]}"; do
        wait_gone "${kids[c]}" "${kid_times[c]}" 10 || die "backend (pid ${kids[c]}) survived SIGKILL"
    done
    clear_stale_locks "$dir"
}

# shm_nattch KEY ID: how many processes have the System V segment KEY/ID attached; fails if there
# is no such segment (ipcs -m: key shmid owner perms bytes nattch).
shm_nattch() {
    ipcs -m 2>/dev/null | awk -v k="$(printf '0x%08x' "$1")" -v i="$2" \
        '$1 == k && $2 == i { n = $6; found = 1 } END { if (!found) exit 1; print n }'
}

# clear_stale_locks DIR: once the postmaster of DIR is dead, removes what it left: its lock files
# (data/postmaster.pid, socket/.s.PGSQL.<port>.lock) and its small System V segment (the lock
# file's line 7: key and id). PostgreSQL would clear them itself, but its check takes a zombie
# postmaster for a running one: a killed postmaster stays a zombie until its parent reaps it
# (init, which in a container can be a process that reaps late, or never). The segment tells
# whether backends of the dead postmaster still run: starting while they do would corrupt the
# cluster, so this waits (10 s at most) until none has it attached.
clear_stale_locks() {
    local dir=$1 lock=$1/data/postmaster.pid key="" id="" n deadline=$((SECONDS + 10))
    [ -f "$lock" ] || return 0
    ! alive "$(postmaster_pid "$dir")" || return 0 # running: PostgreSQL's own check decides
    read -r key id <<<"$(sed -n 7p "$lock")" || true
    if is_uint "$key" && is_uint "$id"; then
        while n=$(shm_nattch "$key" "$id") && [ "$n" -gt 0 ]; do
            [ $SECONDS -lt $deadline ] ||
                die "$n process(es) of the dead postmaster of $dir still run (shared memory id $id)"
            sleep 0.1
        done
        [ -z "$n" ] || ipcrm -m "$id" 2>/dev/null || true
    fi
    rm -f -- "$lock" "$dir/socket/.s.PGSQL.$(sed -n 's/^port=//p' "$dir/state").lock"
}

# launch DIR PORT USER START_TIMEOUT: starts the postmaster in the background (a child of this
# shell, so that `run` can reap it; in a session of its own, so that Ctrl-C at a terminal does not
# reach it; stdin /dev/null, output to log/postgresql.log), records it in DIR/state and waits
# (bounded) until it accepts TCP connections on 127.0.0.1:PORT; dies (DIR kept) if it does not.
launch() {
    local dir=$1 port=$2 user=$3 start_timeout=$4 server_cmd
    server_prefix "$dir" "$user"
    # One subshell that execs: $! is the postmaster's pid. setsid(1) does not fork here (a
    # background process of a script is not a process group leader).
    (cd "$dir" && exec "${server_cmd[@]}" setsid "$PG_BIN/postgres" -D "$dir/data" \
        </dev/null >>"$dir/log/postgresql.log" 2>&1) &
    local pid=$! started
    started=$(proc_start_time "$pid")
    {
        echo "pid=$pid"
        echo "pid_start_time=$started"
        echo "port=$port"
        echo "user=$user"
    } >"$dir/state"
    say "starting PostgreSQL (postmaster pid $pid, user $user) on $LOOPBACK:$port, state in $dir"
    # Up = our postmaster is alive AND its lock file says it is ready (what pg_ctl -w waits for)
    # AND 127.0.0.1:PORT answers pg_isready. Bounded by start_timeout.
    local deadline=$((SECONDS + start_timeout)) status
    while :; do
        if ! alive "$pid" "$started"; then
            log_tail "$dir"
            die "PostgreSQL (pid $pid) exited during startup; its cluster and logs are kept in $dir"
        fi
        status=$(sed -n 8p "$dir/data/postmaster.pid" 2>/dev/null || true)
        if [ "$(postmaster_pid "$dir")" = "$pid" ] && [ "${status// /}" = ready ] &&
            as_server "$dir" "$user" "$PG_BIN/pg_isready" -q -t 2 -h "$LOOPBACK" -p "$port" \
                -U "$SUPERUSER" -d postgres </dev/null; then
            return 0
        fi
        if [ $SECONDS -ge $deadline ]; then
            log_tail "$dir"
            kill_server "$dir" "$pid" "$started"
            die "PostgreSQL did not accept connections on $LOOPBACK:$port within ${start_timeout}s;" \
                "its cluster and logs are kept in $dir"
        fi
        sleep 0.1
    done
}

# configure DIR PORT FSYNC: the test server's settings (appended to data/postgresql.conf: the last
# setting of a name wins) and its pg_hba.conf.
configure() {
    local dir=$1 port=$2 fsync=$3
    cat >>"$dir/data/postgresql.conf" <<EOF

# ---- tests/tools/postgres.sh: letterbox's throwaway test server
# Loopback only; the unix socket in the state directory, not /var/run/postgresql.
listen_addresses = '$LOOPBACK'
port = $port
unix_socket_directories = '$dir/socket'
unix_socket_permissions = 0700
# make test runs ctest -j2 with up to four relay processes per test, each with a pool, and
# the test itself: 200 leaves room (the default, 100, was set for one application).
max_connections = 200
# Modest: the test databases are small, and a 2-core machine builds and tests at the same time.
shared_buffers = 32MB
# On by default: it is what a real server does. Off (LETTERBOX_POSTGRES_FSYNC=off) is faster; a
# SIGKILL of the server loses nothing either way (the kernel keeps what was written), a crash of
# the machine could.
fsync = $fsync
password_encryption = 'scram-sha-256'
log_line_prefix = '%m [%p] %q%u@%d '
EOF
    cat >"$dir/data/pg_hba.conf" <<'EOF'
# tests/tools/postgres.sh: the unix socket's directory (socket/, mode 0700) admits only the
# server's user and root, so it trusts; TCP on 127.0.0.1 asks for a SCRAM password. Nothing else.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  scram-sha-256
EOF
}

# setup DIR PORT USER PASSWORD: the role `letterbox` with PASSWORD (sent as its SCRAM verifier)
# and the database `letterbox` it owns; then a login over TCP with the password, as the tests do.
setup() {
    local dir=$1 port=$2 user=$3 password=$4 verifier
    verifier=$(printf '%s\n' "$password" | scram_verifier)
    as_server "$dir" "$user" timeout 60 "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/socket" \
        -p "$port" -U "$SUPERUSER" -d postgres >>"$dir/log/setup.log" 2>&1 <<EOF
CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$verifier';
CREATE DATABASE $DATABASE OWNER $ROLE;
EOF
    # PGPASSWORD, not the URL: a command line can be read by every user in ps.
    local server_pgpassword=$password
    as_server "$dir" "$user" timeout 60 "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 \
        -h "$LOOPBACK" -p "$port" -U "$ROLE" -d "$DATABASE" -c 'select 1' \
        </dev/null >>"$dir/log/setup.log" 2>&1
}

cmd_start() {
    local env_file=""
    while [ $# -gt 0 ]; do
        case $1 in
        --env-file)
            [ $# -ge 2 ] || usage
            env_file=$2
            shift 2
            ;;
        *) usage ;;
        esac
    done
    require_server
    local start_timeout fsync=${LETTERBOX_POSTGRES_FSYNC:-on} user port dir
    start_timeout=$(seconds_var LETTERBOX_POSTGRES_START_TIMEOUT 60)
    case $fsync in
    on | off) ;;
    *) die "LETTERBOX_POSTGRES_FSYNC must be on or off, not '$fsync'" ;;
    esac
    user=$(server_user)
    port=$(choose_port LETTERBOX_POSTGRES_PORT "$DEFAULT_PORT" "$FALLBACK_PORTS_LAST")

    dir=$(mktemp -d "${TMPDIR:-/tmp}/${STATE_PREFIX}XXXXXX")
    # The socket's path (socket/.s.PGSQL.<port>) must fit in sun_path, 108 bytes.
    if [ ${#dir} -gt 80 ]; then
        rmdir -- "$dir"
        die "the state directory's path is too long for a unix socket: $dir (set TMPDIR)"
    fi
    mkdir -p "$dir/log" "$dir/socket"
    chmod 700 "$dir/socket"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R "$user:$(id -g "$user")" "$dir"
    fi
    as_server "$dir" "$user" test -w "$dir" </dev/null ||
        die "user $user cannot write $dir (a parent directory it cannot enter? set TMPDIR)"

    # --no-locale -E UTF8: the C locale (byte order, English messages, on every machine) with UTF-8
    # text. -N: initdb does not fsync the new cluster (a throwaway one; the server's own writes
    # follow `fsync`).
    local deadline=$((SECONDS + start_timeout))
    if ! as_server "$dir" "$user" timeout "$start_timeout" "$PG_BIN/initdb" -D "$dir/data" \
        -U "$SUPERUSER" -A trust -E UTF8 --no-locale -N </dev/null >"$dir/log/initdb.log" 2>&1; then
        log_tail "$dir"
        die "initdb failed or took over ${start_timeout}s; its log is kept in $dir/log/initdb.log"
    fi
    configure "$dir" "$port" "$fsync"
    launch "$dir" "$port" "$user" "$start_timeout"

    local password
    password=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
    [ ${#password} -eq 48 ] || die "could not read 24 random bytes from /dev/urandom"
    if ! setup "$dir" "$port" "$user" "$password"; then
        log_tail "$dir"
        LETTERBOX_POSTGRES_STOP_TIMEOUT=10 cmd_stop --keep "$dir" || true
        die "could not create the role $ROLE and the database $DATABASE; see $dir/log/setup.log"
    fi
    say "PostgreSQL is up after $((SECONDS - deadline + start_timeout))s: $(masked_url "$port")" \
        "(fsync=$fsync, log: $dir/log/postgresql.log)"

    local script
    script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
    local lines="LETTERBOX_POSTGRES_URL=postgresql://$ROLE:$password@$LOOPBACK:$port/$DATABASE"
    lines+=$'\n'"LETTERBOX_POSTGRES_DIR=$dir"$'\n'"LETTERBOX_POSTGRES_SCRIPT=$script"
    if [ -n "$env_file" ]; then
        # mode 0600 before the password goes in, also when FILE existed
        (umask 077 && : >"$env_file" && chmod 600 "$env_file" && printf '%s\n' "$lines" >"$env_file")
    fi
    printf '%s\n' "$lines"
}

# load_state DIR: reads DIR/state into pid, pid_start_time, port, user.
load_state() {
    local dir=$1
    [ -n "$dir" ] || die "no state directory: pass it, or set LETTERBOX_POSTGRES_DIR"
    read_state "$dir" postgres.sh pid pid_start_time port user
    if [ "$(id -u)" -ne 0 ] && [ "$user" != "$(id -un)" ]; then
        die "$dir is run by user $user: manage it as $user or as root"
    fi
}

cmd_stop() {
    local stop_keep stop_dir
    parse_stop_args "${LETTERBOX_POSTGRES_DIR:-}" "$@"
    local dir=$stop_dir pid pid_start_time port user stop_timeout
    load_state "$dir"
    stop_timeout=$(seconds_var LETTERBOX_POSTGRES_STOP_TIMEOUT 30)
    if alive "$pid" "$pid_start_time"; then
        say "stopping PostgreSQL (pid $pid, $LOOPBACK:$port)"
        # fast: open transactions are rolled back, sessions ended, then a checkpoint.
        as_server "$dir" "$user" timeout $((stop_timeout + 5)) "$PG_BIN/pg_ctl" stop -D "$dir/data" \
            -m fast -w -t "$stop_timeout" </dev/null >>"$dir/log/pg_ctl.log" 2>&1 || true
        if alive "$pid" "$pid_start_time"; then
            say "PostgreSQL (pid $pid) still runs ${stop_timeout}s after pg_ctl stop: SIGKILL"
            kill_server "$dir" "$pid" "$pid_start_time"
        fi
    else
        say "PostgreSQL (pid $pid) is not running"
    fi
    if port_busy "$port"; then
        say "warning: $LOOPBACK:$port still accepts connections after the stop (another listener?)"
    fi
    [ "$stop_keep" -eq 1 ] || clear_stale_locks "$dir"
    finish_stop "$dir" "$stop_keep" "$STATE_PREFIX" postgres.sh "server log: $dir/log/postgresql.log"
}

cmd_kill() {
    local dir=${1:-${LETTERBOX_POSTGRES_DIR:-}}
    local pid pid_start_time port user
    load_state "$dir"
    alive "$pid" "$pid_start_time" || die "PostgreSQL (pid $pid) is not running"
    kill_server "$dir" "$pid" "$pid_start_time"
    say "killed PostgreSQL on $LOOPBACK:$port (SIGKILL to the postmaster and its backends; cluster kept in $dir)"
}

cmd_restart() {
    local dir=${1:-${LETTERBOX_POSTGRES_DIR:-}}
    local pid pid_start_time port user start_timeout
    load_state "$dir"
    require_server
    alive "$pid" "$pid_start_time" && die "PostgreSQL (pid $pid) still runs; kill or stop it first"
    start_timeout=$(seconds_var LETTERBOX_POSTGRES_START_TIMEOUT 60)
    # The listener may linger for a moment after the kill.
    local deadline=$((SECONDS + 10))
    while port_busy "$port" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    ! port_busy "$port" || die "$LOOPBACK:$port is still busy"
    clear_stale_locks "$dir" # also after a SIGKILL that did not come from `kill`
    launch "$dir" "$port" "$user" "$start_timeout"
    say "PostgreSQL is up again: $(masked_url "$port")"
}

cmd_status() {
    local dir=${1:-${LETTERBOX_POSTGRES_DIR:-}}
    local pid pid_start_time port user
    load_state "$dir"
    echo "dir=$dir"
    echo "pid=$pid port=$port user=$user"
    echo "url=$(masked_url "$port")"
    echo "log=$dir/log/postgresql.log"
    if alive "$pid" "$pid_start_time"; then
        if as_server "$dir" "$user" "$PG_BIN/pg_isready" -q -t 2 -h "$LOOPBACK" -p "$port" \
            -U "$SUPERUSER" -d postgres </dev/null; then
            echo "status=running"
            return 0
        fi
        echo "status=starting-or-stopping (postmaster alive, not accepting connections)"
        return 1
    fi
    echo "status=stopped"
    return 1
}

# What `run` says it runs with: the URL, its password masked.
run_announce() {
    echo "LETTERBOX_POSTGRES_URL=$(masked_url "$(sed -n 's/^port=//p' "$LETTERBOX_POSTGRES_DIR/state")")"
}

[ $# -ge 1 ] || usage
command=$1
shift
case $command in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
status) cmd_status "$@" ;;
kill) cmd_kill "$@" ;;
restart) cmd_restart "$@" ;;
run) run_service LETTERBOX_POSTGRES_DIR cmd_start cmd_stop run_announce "$@" ;;
-h | --help | help) usage ;;
*) usage ;;
esac
