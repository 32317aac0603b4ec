# SPDX-License-Identifier: BSL-1.0
# shellcheck shell=bash
#
# What the throwaway servers of letterbox's integration tests share: tests/tools/rabbitmq.sh and
# tests/tools/postgres.sh source this file (it is not run on its own). It holds the pieces that
# are the same for any server bound to 127.0.0.1 with its state in a mktemp directory: the free
# port search, bounded waits on pids that are checked against their start time, and the
# `run -- COMMAND` machinery (signal forwarding, exit status).
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

# export_env_file FILE: exports each NAME=VALUE line of FILE (what `start --env-file` wrote).
export_env_file() {
    local line
    while IFS= read -r line; do
        [ -z "$line" ] || export "${line?}"
    done <"$1"
}

# The `run` subcommand. run_trap_signals, before starting the server: HUP, INT and TERM are
# remembered in run_caught (a signal during the start lets the start finish, bounded) and, once
# the command runs, forwarded to it (Ctrl-C already reached it via the terminal; a second INT is
# harmless). The caller's EXIT trap stops the server.
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
