# SPDX-License-Identifier: BSL-1.0
# shellcheck shell=bash
#
# What the throwaway servers of letterbox's integration tests share: tests/tools/rabbitmq.sh and
# tests/tools/postgres.sh source this file (it is not run on its own; rabbitmq_cluster.sh gets it
# through rabbitmq.sh). It holds the pieces that are the same for any server bound to 127.0.0.1
# with its state in a mktemp directory: the free port search, bounded waits on pids that are
# checked against their start time, and the `run -- COMMAND` subcommand (start, signal
# forwarding, exit status, always stop).
#
# The sourcing script defines say MESSAGE... (a line on stderr) and die MESSAGE... (say, exit 1)
# before it calls anything here, and sets set -euo pipefail itself. Every loop here is bounded.

readonly LOOPBACK=127.0.0.1

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# port_busy PORT: something accepts TCP connections on 127.0.0.1:PORT (a listener on 0.0.0.0 or
# [::] included). Bounded: a connection to loopback is refused or accepted at once; 2 s at most.
port_busy() {
    timeout 2 bash -c "exec 3<>/dev/tcp/$LOOPBACK/$1" 2>/dev/null
}

# choose_port VAR DEFAULT LAST [OFFSET...]: the port to listen on, on stdout. If the environment
# variable VAR is set, its value, or die if it is not a port or 127.0.0.1:port is busy (someone
# else's server is neither reused nor disturbed). Otherwise DEFAULT if it is free, else the first
# free port up to LAST (a note on stderr). Each OFFSET names a companion port (port + OFFSET) the
# server also needs free.
choose_port() {
    local var=$1 first=$2 last=$3 p off free
    shift 3
    if [ -n "${!var:-}" ]; then
        p=${!var}
        if ! { is_uint "$p" && [ "$p" -ge 1 ] && [ "$p" -le 65535 ]; }; then
            die "$var='$p' is not a port number"
        fi
        if port_busy "$p"; then
            die "port $LOOPBACK:$p ($var) is busy: another server or program listens there." \
                "Stop it, or pick another port (or unset $var to let this script choose a free one)."
        fi
        echo "$p"
        return
    fi
    for ((p = first; p <= last; ++p)); do
        port_busy "$p" && continue
        free=1
        for off in "$@"; do
            if port_busy $((p + off)); then
                free=0
                break
            fi
        done
        [ $free -eq 1 ] || continue
        [ "$p" -eq "$first" ] || say "port $first is busy (someone else's server?); using $p instead"
        echo "$p"
        return
    done
    die "ports $first-$last on $LOOPBACK are all busy; set $var"
}

# proc_start_time PID: the process's start time (field 22 of /proc/PID/stat), empty if gone.
proc_start_time() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    stat=${stat##*) } # the command name may hold spaces and parentheses
    # shellcheck disable=SC2086
    set -- $stat
    # after the name: state ppid pgrp ... starttime is the 20th of these fields
    echo "${20:-}"
}

# alive PID [START_TIME]: the process exists, is not a zombie and (if given) started at
# START_TIME, i.e. the pid was not reused by an unrelated process since we recorded it.
alive() {
    local pid=$1 want=${2:-} stat state
    is_uint "$pid" || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    state=${stat%% *}
    [ "$state" != Z ] && [ "$state" != X ] || return 1
    [ -z "$want" ] || [ "$(proc_start_time "$pid")" = "$want" ]
}

# wait_gone PID START_TIME SECONDS: 0 once the process is gone, 1 if it outlived the bound.
wait_gone() {
    local deadline=$((SECONDS + $3))
    while alive "$1" "$2"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}

# read_state DIR SCRIPT KEY...: sets each KEY (a variable the caller declared local) from the
# KEY=VALUE lines of DIR/state, which SCRIPT's `start` wrote; empty when a line is missing. Dies
# if DIR is not such a directory.
read_state() {
    local dir=$1 script=$2 key value want
    shift 2
    [ -f "$dir/state" ] || die "$dir is not a $script state directory (no $dir/state)"
    for want in "$@"; do
        printf -v "$want" '%s' ""
    done
    while IFS='=' read -r key value; do
        for want in "$@"; do
            [ "$key" != "$want" ] || printf -v "$want" '%s' "$value"
        done
    done <"$dir/state"
}

# parse_stop_args DEFAULT_DIR [--keep] [DIR]: the arguments of a `stop` subcommand, into the
# caller's stop_keep (0 or 1) and stop_dir (DIR, else DEFAULT_DIR).
# shellcheck disable=SC2034 # stop_keep and stop_dir are the caller's
parse_stop_args() {
    stop_keep=0 stop_dir=$1
    shift
    while [ $# -gt 0 ]; do
        case $1 in
        --keep) stop_keep=1 ;;
        -*) usage ;;
        *) stop_dir=$1 ;;
        esac
        shift
    done
}

# finish_stop DIR KEEP PREFIX SCRIPT LOGS: the end of a stop, once the server is down: keeps DIR
# (saying where its logs are: LOGS) when KEEP is 1, else removes it, but only if its name says
# SCRIPT's `start` made it (PREFIX), so that a mistyped DIR is never removed.
finish_stop() {
    local dir=$1 keep=$2 prefix=$3 script=$4 logs=$5
    if [ "$keep" -eq 1 ]; then
        say "state and logs kept in $dir ($logs)"
    elif [[ $(basename "$dir") == "$prefix"* ]]; then
        rm -rf -- "$dir"
    else
        say "not removing $dir: not made by $script start"
    fi
}

# export_env_file FILE: exports each NAME=VALUE line of FILE (what `start --env-file` wrote).
export_env_file() {
    local line
    while IFS= read -r line; do
        [ -z "$line" ] || export "${line?}"
    done <"$1"
}

# The `run` subcommand's pieces. run_trap_signals, before starting the server: HUP, INT and TERM
# are remembered in run_caught (a signal during the start lets the start finish, bounded) and,
# once the command runs, forwarded to it (Ctrl-C already reached it via the terminal; a second
# INT is harmless). The EXIT trap of run_service stops the server.
run_signal() {
    run_caught=$1
    [ -z "${run_child:-}" ] || kill -"$1" "$run_child" 2>/dev/null || true
}

run_trap_signals() {
    run_caught=""
    run_child=""
    trap 'run_signal HUP' HUP
    trap 'run_signal INT' INT
    trap 'run_signal TERM' TERM
}

# run_command COMMAND [ARG...]: runs COMMAND and exits with its status, or with 128+signal if this
# script caught HUP, INT or TERM (which the EXIT trap then sees).
run_command() {
    # In the background, so that a signal to this script runs its trap at once (bash defers traps
    # until a foreground command ends); with INT and QUIT at their defaults again (bash ignores
    # them in background commands) and our stdin, so that the command behaves as in the foreground.
    (
        trap - INT QUIT
        exec "$@"
    ) <&0 &
    run_child=$!
    local rc=0 tries
    for ((tries = 0; tries < 1000; ++tries)); do # each turn but the last is one caught signal
        rc=0
        wait "$run_child" || rc=$?
        kill -0 "$run_child" 2>/dev/null || break # it ended (wait reaped it)
    done
    case $run_caught in
    HUP) exit 129 ;;
    INT) exit 130 ;;
    TERM) exit 143 ;;
    esac
    exit "$rc"
}

# run_service DIR_VAR START STOP ANNOUNCE [--] COMMAND [ARG...]: the `run` subcommand of a server
# script. `START --env-file FILE` starts the server and writes its NAME=VALUE lines to FILE, among
# them DIR_VAR=<its state directory>; they are exported for COMMAND. `STOP [--keep] DIR` stops it.
# ANNOUNCE prints where the server listens, for a line on stderr (never a secret). The server is
# always stopped, whatever ends the command: its exit status, or a signal to this script; a
# signal during the start is remembered, the start finishes (bounded), then the server is
# stopped. DIR is kept (its logs) when the command fails. Exits with the command's status.
run_service() {
    run_dir_var=$1 run_stop=$3
    local start=$2 announce=$4
    shift 4
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || usage
    unset "$run_dir_var"
    trap 'run_service_exit $?' EXIT
    run_trap_signals
    run_env_file=$(mktemp "${TMPDIR:-/tmp}/letterbox-service-env.XXXXXX") # mode 0600
    # In this shell, not in $(...): the server stays our child, so we can reap it after the stop.
    # Not in `if`, where bash would ignore set -e inside START (a busy port was reported, then a
    # server started on port ""): any failure there ends this script, and the EXIT trap stops
    # what was started. START may set an EXIT trap of its own: ours is set again after it.
    "$start" --env-file "$run_env_file" >/dev/null
    trap 'run_service_exit $?' EXIT
    export_env_file "$run_env_file"
    rm -f -- "$run_env_file"
    run_env_file=""
    # The server's process, our child, if its state file names one (a cluster's does not).
    run_server_pid=$(sed -n 's/^pid=//p' "${!run_dir_var}/state" 2>/dev/null || true)
    if [ -n "$run_caught" ]; then
        say "caught SIG$run_caught while starting: not running $*"
        exit 1
    fi
    say "running with $("$announce"): $*"
    run_command "$@"
}

run_service_exit() {
    local rc=$1 dir=${!run_dir_var:-}
    trap - EXIT HUP INT TERM
    [ -z "${run_env_file:-}" ] || rm -f -- "$run_env_file"
    if [ -n "$dir" ]; then
        if [ "$rc" -eq 0 ]; then
            "$run_stop" "$dir"
        else
            "$run_stop" --keep "$dir"
        fi
    fi
    [ -z "${run_server_pid:-}" ] || wait "$run_server_pid" 2>/dev/null || true
    exit "$rc"
}
