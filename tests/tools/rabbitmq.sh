#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# A throwaway RabbitMQ broker on 127.0.0.1 for letterbox's `integration` tests (issue 5, "Real
# broker in the tests"). Works as root without systemd, and as any user once Debian's
# rabbitmq-server is installed (`make deps`). Debian's /usr/sbin/rabbitmq-* wrappers `su` to the
# rabbitmq user; this script runs the upstream scripts in /usr/lib/rabbitmq/bin directly, with
# every piece of state in a fresh `mktemp -d` directory, so it never touches /var/lib/rabbitmq,
# /etc/rabbitmq or a broker someone else runs.
#
# usage:
#   rabbitmq.sh start [--env-file FILE]   start a broker and wait until it is up; prints
#                                         LETTERBOX_AMQP_URL=amqp://guest:guest@127.0.0.1:<port>/
#                                         LETTERBOX_RABBITMQ_DIR=<its state directory>
#                                         LETTERBOX_RABBITMQ_SCRIPT=<this script's path>
#                                         LETTERBOX_AMQPS_URL=amqps://...:<port+30000>/?cacertfile=...
#                                         on stdout (and writes the same lines to FILE)
#   rabbitmq.sh stop [--keep] [DIR]       stop it (SIGTERM, bounded wait, then SIGKILL) and remove
#                                         DIR, or keep DIR (and its logs) with --keep
#   rabbitmq.sh status [DIR]              print its state; exit 0 if it runs, 1 if not
#   rabbitmq.sh kill [DIR]                SIGKILL it (a crash), keeping its state
#   rabbitmq.sh restart [DIR]             start it again on the same port and state; wait until up
#   rabbitmq.sh run -- COMMAND [ARG...]   start, run COMMAND with LETTERBOX_AMQP_URL exported, and
#                                         always stop (also on failure and on INT/TERM/HUP); exits
#                                         with COMMAND's status. DIR is kept when COMMAND fails.
#   rabbitmq.sh export-definitions FILE [DIR]  write its definitions (rabbitmqctl
#                                         export_definitions) to FILE; changes nothing
# DIR defaults to $LETTERBOX_RABBITMQ_DIR.  By hand:  export $(tests/tools/rabbitmq.sh start)
#
# Environment:
#   LETTERBOX_RABBITMQ_PORT     AMQP port. Set: used as is, and `start` refuses (exit 1) if it is
#                               busy. Unset: 5672 if free, else the first free port in 5673-5699
#                               (a note on stderr), so that a broker someone else runs on 5672 is
#                               neither reused nor disturbed.
#   LETTERBOX_RABBITMQ_DIST_PORT  Erlang distribution port (default: AMQP port + 20000).
#   LETTERBOX_RABBITMQ_START_TIMEOUT  seconds to wait for the broker (default 120)
#   LETTERBOX_RABBITMQ_STOP_TIMEOUT   seconds to wait after SIGTERM before SIGKILL (default 30)
#   TMPDIR                      where the state directory is made (default /tmp)
#   LETTERBOX_RABBITMQ_BIN      the upstream scripts (default /usr/lib/rabbitmq/bin, Debian's)
#
# State directory (letterbox-rabbitmq.XXXXXX): state (what stop/status read), home/ (HOME: the
# Erlang cookie the server and the CLI share), rabbitmq.conf, rabbitmq-env.conf (empty: the
# system's /etc/rabbitmq/rabbitmq-env.conf is not read), enabled_plugins
# ([rabbitmq_consistent_hash_exchange]: the `x-consistent-hash` exchange type; no management
# listener), mnesia/, log/rabbit.log (the broker's log), log/stdout.log (its console),
# erl_crash.dump (if the VM crashes).
#
# The free port search, the bounded waits and the `run` machinery are shared with postgres.sh:
# tests/tools/service_common.sh, sourced below.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=service_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/service_common.sh"

readonly RMQ_BIN=${LETTERBOX_RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}
readonly DEFAULT_PORT=5672
readonly FALLBACK_PORTS_LAST=5699
readonly STATE_PREFIX=letterbox-rabbitmq.

say() { echo "rabbitmq.sh: $*" >&2; }
die() {
    say "$*"
    exit 1
}

usage() {
    sed -n '11,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# The environment of every rabbitmq-server / CLI call for the broker in $dir on $port.
rmq_env() {
    local dir=$1 port=$2 dist_port=$3 node=$4
    RMQ_ENV=(env
        HOME="$dir/home"
        RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf"
        RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf"
        RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config"
        RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
        RABBITMQ_NODENAME="$node"
        RABBITMQ_NODE_IP_ADDRESS="$LOOPBACK"
        RABBITMQ_NODE_PORT="$port"
        RABBITMQ_DIST_PORT="$dist_port"
        ERL_EPMD_ADDRESS="$LOOPBACK"
        RABBITMQ_MNESIA_BASE="$dir/mnesia"
        RABBITMQ_PLUGINS_EXPAND_DIR="$dir/plugins-expand"
        RABBITMQ_PID_FILE="$dir/rabbitmq.pid"
        RABBITMQ_LOG_BASE="$dir/log"
        RABBITMQ_LOGS="$dir/log/rabbit.log"
        ERL_CRASH_DUMP="$dir/erl_crash.dump"
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}"
        "RABBITMQ_CTL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}")
}

log_tail() {
    local dir=$1 f
    for f in "$dir/log/stdout.log" "$dir/log/rabbit.log"; do
        [ -s "$f" ] || continue
        echo "---- last lines of $f" >&2
        tail -n 30 "$f" >&2
    done
}

require_server() {
    [ -x "$RMQ_BIN/rabbitmq-server" ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        die "rabbitmq-server is not installed ($RMQ_BIN/rabbitmq-server is missing). Run 'make deps'" \
            "(it installs .ci/debian-packages.txt, rabbitmq-server included, without starting the" \
            "system broker)."
    fi
    die "rabbitmq-server is not installed ($RMQ_BIN/rabbitmq-server is missing) and you are not" \
        "root, so it cannot be installed here. Run 'make deps' with sudo rights, or ask an" \
        "administrator for 'apt-get install --no-install-recommends rabbitmq-server' (with" \
        "/usr/sbin/policy-rc.d exiting 101, so the system broker is not started on all interfaces)."
}

# launch DIR PORT DIST_PORT NODE URL START_TIMEOUT: starts rabbitmq-server with its state in
# DIR, records it in DIR/state and waits (bounded) until it is up; dies if it does not come up.
launch() {
    local dir=$1 port=$2 dist_port=$3 node=$4 url=$5 start_timeout=$6
    rmq_env "$dir" "$port" "$dist_port" "$node"

    # Started from inside the directory (Erlang writes nothing into the caller's cwd), with no
    # terminal and no inherited stdout: `$(rabbitmq.sh start)` returns once the broker is up.
    (cd "$dir" && exec "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmq-server" \
        </dev/null >>"$dir/log/stdout.log" 2>&1) &
    local pid=$!
    local started
    started=$(proc_start_time "$pid")
    {
        echo "pid=$pid"
        echo "pid_start_time=$started"
        echo "port=$port"
        echo "dist_port=$dist_port"
        echo "node=$node"
        echo "url=$url"
    } >"$dir/state"
    say "starting RabbitMQ (pid $pid, node $node) on $LOOPBACK:$port, state in $dir"
    # Up = our process is alive AND the port answers AND the CLI reaches our node by name (an open
    # port alone could be someone else's listener). Bounded by start_timeout.
    local deadline=$((SECONDS + start_timeout)) up=0
    while [ $SECONDS -lt $deadline ]; do
        if ! alive "$pid" "$started"; then
            say "RabbitMQ (pid $pid) exited during startup"
            log_tail "$dir"
            die "RabbitMQ did not start; its state and logs are kept in $dir"
        fi
        if port_busy "$port" &&
            timeout 20 "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmq-diagnostics" -q check_running </dev/null \
                >>"$dir/log/cli.log" 2>&1; then
            up=1
            break
        fi
        sleep 0.25
    done
    if [ $up -ne 1 ]; then
        say "RabbitMQ (pid $pid) did not come up on $LOOPBACK:$port within ${start_timeout}s"
        log_tail "$dir"
        LETTERBOX_RABBITMQ_STOP_TIMEOUT=${LETTERBOX_RABBITMQ_STOP_TIMEOUT:-10} cmd_stop --keep "$dir" || true
        die "RabbitMQ did not start; its state and logs are kept in $dir"
    fi
    say "RabbitMQ is up after $((SECONDS - deadline + start_timeout))s: $url"
}

# make_tls_files DIR: a throwaway CA (ca.pem), a server certificate it signs for localhost and
# 127.0.0.1 (server.pem, server.key), and a second, unrelated CA (other-ca.pem) for tests that
# expect a verification failure. Returns 1 without openssl.
make_tls_files() {
    local d=$1
    command -v openssl >/dev/null || return 1
    mkdir -p "$d"
    (
        cd "$d" &&
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 7 \
                -subj /CN=letterbox-test-ca &&
            openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.pem \
                -days 7 -subj /CN=letterbox-other-ca &&
            openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
                -subj /CN=localhost &&
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >server.ext &&
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
                -out server.pem -days 7 -extfile server.ext
    ) >"$d/openssl.log" 2>&1 || {
        say "could not make TLS certificates (see $d/openssl.log)"
        return 1
    }
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
    command -v timeout >/dev/null || die "timeout(1) (coreutils) is missing"

    local start_timeout=${LETTERBOX_RABBITMQ_START_TIMEOUT:-120}
    is_uint "$start_timeout" || die "LETTERBOX_RABBITMQ_START_TIMEOUT must be a number of seconds"

    local port dist_port
    port=$(choose_port LETTERBOX_RABBITMQ_PORT "$DEFAULT_PORT" "$FALLBACK_PORTS_LAST" 20000)
    dist_port=${LETTERBOX_RABBITMQ_DIST_PORT:-$((port + 20000))}
    if ! { is_uint "$dist_port" && [ "$dist_port" -le 65535 ]; }; then
        die "distribution port '$dist_port' is not a port number (set LETTERBOX_RABBITMQ_DIST_PORT)"
    fi
    if port_busy "$dist_port"; then
        die "Erlang distribution port $LOOPBACK:$dist_port is busy; set LETTERBOX_RABBITMQ_DIST_PORT"
    fi

    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/${STATE_PREFIX}XXXXXX")
    mkdir -p "$dir/home" "$dir/log" "$dir/mnesia"
    : >"$dir/rabbitmq-env.conf"
    # The one plugin the tests need: the consistent-hash exchange (`x-consistent-hash`), which
    # the differential tests compare with the in-memory model. Debian's package ships it.
    echo '[rabbitmq_consistent_hash_exchange].' >"$dir/enabled_plugins"
    # Env vars already bind AMQP to 127.0.0.1; the file makes it explicit and keeps the system's
    # /etc/rabbitmq/rabbitmq.conf out.
    cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp.1 = $LOOPBACK:$port
loopback_users.guest = true
log.file.level = info
EOF
    local tls_port=$((port + 30000)) tls_url=""
    if make_tls_files "$dir/tls" && ! port_busy "$tls_port"; then
        cat >>"$dir/rabbitmq.conf" <<EOF
listeners.ssl.1 = $LOOPBACK:$tls_port
ssl_options.cacertfile = $dir/tls/ca.pem
ssl_options.certfile = $dir/tls/server.pem
ssl_options.keyfile = $dir/tls/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
        tls_url="amqps://guest:guest@localhost:$tls_port/?cacertfile=$dir/tls/ca.pem"
    else
        say "no TLS listener (openssl missing, or $LOOPBACK:$tls_port busy)"
    fi
    local node="letterbox-$port@localhost"
    local url="amqp://guest:guest@$LOOPBACK:$port/"
    launch "$dir" "$port" "$dist_port" "$node" "$url" "$start_timeout"

    local script
    script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
    local lines="LETTERBOX_AMQP_URL=$url"$'\n'"LETTERBOX_RABBITMQ_DIR=$dir"$'\n'"LETTERBOX_RABBITMQ_SCRIPT=$script"
    [ -z "$tls_url" ] || lines+=$'\n'"LETTERBOX_AMQPS_URL=$tls_url"
    if [ -n "$env_file" ]; then
        printf '%s\n' "$lines" >"$env_file"
    fi
    printf '%s\n' "$lines"
}

# load_state DIR: reads DIR/state into pid, pid_start_time, port, dist_port, node, url.
load_state() {
    local dir=$1
    [ -n "$dir" ] || die "no state directory: pass it, or set LETTERBOX_RABBITMQ_DIR"
    read_state "$dir" rabbitmq.sh pid pid_start_time port dist_port node url
}

# The Erlang VM's own pid (written by RabbitMQ), if that process still runs beam.
beam_pid() {
    local dir=$1 p
    p=$(cat "$dir/rabbitmq.pid" 2>/dev/null || true)
    is_uint "$p" || return 0
    grep -q beam "/proc/$p/cmdline" 2>/dev/null || return 0
    grep -qF -- "$dir" "/proc/$p/cmdline" 2>/dev/null || return 0 # ours: its args name $dir
    echo "$p"
}

cmd_stop() {
    local stop_keep stop_dir
    parse_stop_args "${LETTERBOX_RABBITMQ_DIR:-}" "$@"
    local dir=$stop_dir pid pid_start_time port dist_port node url
    load_state "$dir"
    local stop_timeout=${LETTERBOX_RABBITMQ_STOP_TIMEOUT:-30}
    is_uint "$stop_timeout" || die "LETTERBOX_RABBITMQ_STOP_TIMEOUT must be a number of seconds"

    local beam
    beam=$(beam_pid "$dir")
    if alive "$pid" "$pid_start_time"; then
        say "stopping RabbitMQ (pid $pid, $LOOPBACK:$port)"
        # The start script traps TERM and stops the VM cleanly (rabbit shuts down, then exits).
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" "$pid_start_time" "$stop_timeout"; then
            say "RabbitMQ (pid $pid) still runs ${stop_timeout}s after SIGTERM: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" "$pid_start_time" 5 || say "pid $pid survived SIGKILL"
        fi
    else
        say "RabbitMQ (pid $pid) is not running"
    fi
    # The VM outlives its start script only if the script was killed: stop the VM too.
    if [ -n "$beam" ] && alive "$beam"; then
        local beam_started
        beam_started=$(proc_start_time "$beam")
        kill -TERM "$beam" 2>/dev/null || true
        if ! wait_gone "$beam" "$beam_started" "$stop_timeout"; then
            say "Erlang VM (pid $beam) still runs after SIGTERM: SIGKILL"
            kill -KILL "$beam" 2>/dev/null || true
            wait_gone "$beam" "$beam_started" 5 || say "pid $beam survived SIGKILL"
        fi
    fi
    # epmd refuses -kill while any node is registered, so this never takes epmd away from another
    # Erlang node (someone else's broker); it only ends the one our node started, once unused.
    ERL_EPMD_ADDRESS=$LOOPBACK timeout 5 epmd -kill </dev/null >/dev/null 2>&1 || true

    if port_busy "$port"; then
        say "warning: $LOOPBACK:$port still accepts connections after the stop (another listener?)"
    fi
    finish_stop "$dir" "$stop_keep" "$STATE_PREFIX" rabbitmq.sh "broker log: $dir/log/rabbit.log"
}

# kill [DIR]: SIGKILL the broker (its start script and its Erlang VM) and keep its state, as
# a crash of the broker host would; `restart` brings it back with the same queues and messages.
cmd_kill() {
    local dir=${1:-${LETTERBOX_RABBITMQ_DIR:-}}
    local pid pid_start_time port dist_port node url
    load_state "$dir"
    local beam
    beam=$(beam_pid "$dir")
    if [ -n "$beam" ] && alive "$beam"; then
        local beam_started
        beam_started=$(proc_start_time "$beam")
        kill -KILL "$beam" 2>/dev/null || true
        wait_gone "$beam" "$beam_started" 10 || die "Erlang VM (pid $beam) survived SIGKILL"
    fi
    if alive "$pid" "$pid_start_time"; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" "$pid_start_time" 10 || die "pid $pid survived SIGKILL"
    fi
    rm -f "$dir/rabbitmq.pid"
    say "killed RabbitMQ on $LOOPBACK:$port (state kept in $dir)"
}

# restart [DIR]: start the broker of DIR again (after `kill`, or a stop with --keep) on the same
# port with the same state, and wait until it is up.
cmd_restart() {
    local dir=${1:-${LETTERBOX_RABBITMQ_DIR:-}}
    local pid pid_start_time port dist_port node url
    load_state "$dir"
    require_server
    alive "$pid" "$pid_start_time" && die "RabbitMQ (pid $pid) still runs; kill or stop it first"
    local start_timeout=${LETTERBOX_RABBITMQ_START_TIMEOUT:-120}
    is_uint "$start_timeout" || die "LETTERBOX_RABBITMQ_START_TIMEOUT must be a number of seconds"
    # The listener may linger for a moment after the kill.
    local deadline=$((SECONDS + 10))
    while port_busy "$port" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    port_busy "$port" && die "$LOOPBACK:$port is still busy"
    launch "$dir" "$port" "$dist_port" "$node" "$url" "$start_timeout"
}

cmd_status() {
    local dir=${1:-${LETTERBOX_RABBITMQ_DIR:-}}
    local pid pid_start_time port dist_port node url
    load_state "$dir"
    echo "dir=$dir"
    echo "node=$node pid=$pid port=$port dist_port=$dist_port"
    echo "url=$url"
    if alive "$pid" "$pid_start_time"; then
        if port_busy "$port"; then
            echo "status=running"
            return 0
        fi
        echo "status=starting-or-stopping (process alive, port closed)"
        return 1
    fi
    echo "status=stopped"
    return 1
}

cmd_export_definitions() {
    local file=${1:-} dir=${2:-${LETTERBOX_RABBITMQ_DIR:-}}
    [ -n "$file" ] || die "export-definitions needs a FILE to write"
    local pid pid_start_time port dist_port node url
    load_state "$dir"
    require_server
    alive "$pid" "$pid_start_time" || die "RabbitMQ in $dir does not run"
    rmq_env "$dir" "$port" "$dist_port" "$node"
    timeout 60 "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q export_definitions "$file" </dev/null ||
        die "rabbitmqctl export_definitions failed"
}

# What `run` says it runs with (the broker's guest account is no secret: loopback only).
run_announce() { echo "LETTERBOX_AMQP_URL=$LETTERBOX_AMQP_URL"; }

# Sourced (tests/tools/rabbitmq_cluster.sh runs its nodes with the functions above): define them,
# run nothing.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
    return 0
fi

[ $# -ge 1 ] || usage
command=$1
shift
case $command in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
status) cmd_status "$@" ;;
kill) cmd_kill "$@" ;;
restart) cmd_restart "$@" ;;
export-definitions) cmd_export_definitions "$@" ;;
run) run_service LETTERBOX_RABBITMQ_DIR cmd_start cmd_stop run_announce "$@" ;;
-h | --help | help) usage ;;
*) usage ;;
esac
