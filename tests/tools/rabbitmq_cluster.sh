#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# A throwaway 3-node RabbitMQ cluster on 127.0.0.1 for letterbox's cluster test
# (tests/integration/amqp_cluster.cpp, issue 23). Each node is run as tests/tools/rabbitmq.sh runs
# its broker (that script is sourced for it: same environment, same start and stop), with its own
# node name, AMQP and distribution ports and state directory, all under one mktemp directory and
# with one Erlang cookie; nodes 2 and 3 join node 1 with `rabbitmqctl join_cluster`.
#
# usage:
#   rabbitmq_cluster.sh start [--env-file FILE]  start the 3 nodes, cluster them and wait until
#                                    cluster_status shows the 3 running; prints
#                                    LETTERBOX_AMQP_CLUSTER_URL=amqp://guest:guest@127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>/
#                                    LETTERBOX_RABBITMQ_CLUSTER_DIR=<the cluster's directory>
#                                    LETTERBOX_RABBITMQ_CLUSTER_NODES=<node 1>,<node 2>,<node 3>
#                                    LETTERBOX_RABBITMQ_CLUSTER_SCRIPT=<this script's path>
#                                    on stdout (and writes the same lines to FILE)
#   rabbitmq_cluster.sh stop [--keep] [DIR]   stop every node (SIGTERM, bounded wait, then
#                                    SIGKILL) and remove DIR, or keep it (and the logs) with --keep
#   rabbitmq_cluster.sh status [DIR]          each node's state; exit 0 if all 3 run, 1 if not
#   rabbitmq_cluster.sh pid NODE [DIR]        the pid of NODE's Erlang VM (beam); exit 1 if none
#   rabbitmq_cluster.sh kill NODE [DIR]       SIGKILL NODE (its VM and start script), keeping its
#                                    state: a crash of that node's host
#   rabbitmq_cluster.sh restart NODE [DIR]    start NODE again on its port and state (it rejoins)
#   rabbitmq_cluster.sh leader QUEUE [DIR]    the node that holds the leader of quorum queue QUEUE
#                                    (of vhost /), asked of the first node that runs
#   rabbitmq_cluster.sh cli NODE TOOL [ARG...]  run TOOL (rabbitmqctl, rabbitmq-queues or
#                                    rabbitmq-diagnostics) against NODE, with its environment
#   rabbitmq_cluster.sh run -- COMMAND [ARG...]  start, run COMMAND with the variables above
#                                    exported, and always stop (also on failure and on
#                                    INT/TERM/HUP); exits with COMMAND's status. DIR is kept when
#                                    COMMAND fails.
# NODE is 1, 2 or 3 (the order of the URL's endpoints) or a node name. DIR defaults to
# $LETTERBOX_RABBITMQ_CLUSTER_DIR (cli reads only that).  By hand:
#   export $(tests/tools/rabbitmq_cluster.sh start)
#
# Environment:
#   LETTERBOX_RABBITMQ_CLUSTER_PORT  node 1's AMQP port. Set: used as is (start refuses if it is
#                             busy). Unset: 5750 if free, else the first free one up to 5799.
#                             Nodes 2 and 3 take the next free ports after it. Each node's Erlang
#                             distribution port is its AMQP port + 20000.
#   LETTERBOX_RABBITMQ_START_TIMEOUT  seconds to wait for each node, and for the cluster (120)
#   LETTERBOX_RABBITMQ_STOP_TIMEOUT   seconds to wait after SIGTERM before SIGKILL (30)
#   TMPDIR, LETTERBOX_RABBITMQ_BIN    as for rabbitmq.sh
#
# Cluster directory (letterbox-rabbitmq-cluster.XXXXXX): cluster (url, node names), cookie (the
# Erlang cookie, also in each node's home/.erlang.cookie), log/join.log (the clustering CLI
# calls), and c1/, c2/, c3/: each node's state directory as rabbitmq.sh lays it out (state,
# home/, rabbitmq.conf, mnesia/, log/rabbit.log, log/stdout.log, ...), so that
# `tests/tools/rabbitmq.sh kill|restart|status DIR/c2` work on a node too. Every loop is bounded.
set -euo pipefail
# The node functions (rmq_env, launch, cmd_stop, cmd_kill, cmd_restart, beam_pid, log_tail,
# require_server, load_state) and service_common.sh's (choose_port, alive, run_command, ...).
# shellcheck source-path=SCRIPTDIR source=rabbitmq.sh
source "$(dirname "${BASH_SOURCE[0]}")/rabbitmq.sh"

readonly CLUSTER_PREFIX=letterbox-rabbitmq-cluster.
readonly CLUSTER_FIRST_PORT=5750
readonly CLUSTER_LAST_PORT=5799
readonly NODES=3

say() { echo "rabbitmq_cluster.sh: $*" >&2; }
die() {
    say "$*"
    exit 1
}

usage() {
    sed -n '10,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

cluster_dir_of() {
    local dir=${1:-${LETTERBOX_RABBITMQ_CLUSTER_DIR:-}}
    [ -n "$dir" ] || die "no cluster directory: pass it, or set LETTERBOX_RABBITMQ_CLUSTER_DIR"
    [ -f "$dir/cluster" ] || die "$dir is not a rabbitmq_cluster.sh directory (no $dir/cluster)"
    echo "$dir"
}

# node_index CLUSTER_DIR NODE: 1, 2 or 3 for NODE given as an index or a node name.
node_index() {
    local dir=$1 which=$2 i name
    if [[ $which =~ ^[1-9]$ ]] && [ "$which" -le $NODES ]; then
        echo "$which"
        return
    fi
    for ((i = 1; i <= NODES; ++i)); do
        name=$(sed -n 's/^node=//p' "$dir/c$i/state" 2>/dev/null || true)
        if [ "$name" = "$which" ]; then
            echo "$i"
            return
        fi
    done
    die "no node '$which' in $dir (1-$NODES or one of: $(sed -n 's/^nodes=//p' "$dir/cluster"))"
}

# node_env NODE_DIR: RMQ_ENV (rabbitmq.sh's rmq_env) for the node of NODE_DIR.
node_env() {
    local pid pid_start_time port dist_port node url
    load_state "$1"
    rmq_env "$1" "$port" "$dist_port" "$node"
}

# cli_call NODE_DIR TOOL [ARG...]: TOOL against that node, bounded (60 s).
cli_call() {
    local ndir=$1 tool=$2
    shift 2
    node_env "$ndir"
    timeout 60 "${RMQ_ENV[@]}" "$RMQ_BIN/$tool" "$@" </dev/null
}

# running_nodes NODE_DIR: the running nodes of the cluster as that node sees them, one a line.
running_nodes() {
    local json
    json=$(cli_call "$1" rabbitmqctl -q cluster_status --formatter json 2>/dev/null) || return 1
    sed -n 's/.*"running_nodes":\[\([^]]*\)\].*/\1/p' <<<"$json" | tr ',' '\n' | tr -d '"'
}

# wait_child PID: waits until the child PID ends, through signals this script traps (each one
# interrupts `wait`); returns its status. Bounded: the child's own work is.
wait_child() {
    local rc=0 tries
    for ((tries = 0; tries < 1000; ++tries)); do
        rc=0
        wait "$1" || rc=$?
        kill -0 "$1" 2>/dev/null || break
    done
    return "$rc"
}

# stop_node NODE_DIR: rabbitmq.sh's stop of one node (bounded), in a subshell, keeping the node's
# directory: what happens to the cluster's directory is said once, by the caller.
stop_node() {
    (
        say() { [[ $* == "state and logs kept in "* ]] || echo "rabbitmq_cluster.sh: $*" >&2; }
        cmd_stop --keep "$1"
    )
}

# The EXIT trap of a start: a failed start stops the nodes it started and keeps their logs.
start_failed() {
    local rc=$1 i
    trap - EXIT
    [ "$rc" -ne 0 ] || exit 0
    [ -z "${run_env_file:-}" ] || rm -f -- "$run_env_file"
    say "the cluster did not start; stopping its nodes"
    for ((i = 1; i <= NODES; ++i)); do
        [ -f "$start_dir/c$i/state" ] || continue
        LETTERBOX_RABBITMQ_STOP_TIMEOUT=10 stop_node "$start_dir/c$i" || true
    done
    say "state and logs kept in $start_dir"
    exit "$rc"
}

cluster_start() {
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
    local began=$SECONDS

    # Ports: node 1's as asked (or the first free from 5750), the others the next free ones; each
    # with its distribution port (+20000) free too.
    local -a ports=()
    local i p next=$CLUSTER_FIRST_PORT
    for ((i = 1; i <= NODES; ++i)); do
        if [ "$i" -eq 1 ]; then
            p=$(choose_port LETTERBOX_RABBITMQ_CLUSTER_PORT "$next" "$CLUSTER_LAST_PORT" 20000)
        else
            p=$(choose_port LETTERBOX_RABBITMQ_CLUSTER_NO_SUCH_VARIABLE "$next" \
                $((next + 49)) 20000)
        fi
        ports+=("$p")
        next=$((p + 1))
    done

    start_dir=$(mktemp -d "${TMPDIR:-/tmp}/${CLUSTER_PREFIX}XXXXXX")
    trap 'start_failed $?' EXIT
    mkdir -p "$start_dir/log"
    # One cookie for the 3 nodes and their CLI calls (Erlang refuses to connect nodes whose
    # cookies differ); random, readable by us only, as Erlang requires.
    local cookie
    cookie=$(od -An -N20 -tx1 /dev/urandom | tr -dc '0-9a-f' | tr 'a-f' 'A-F')
    printf '%s' "$cookie" >"$start_dir/cookie"
    chmod 400 "$start_dir/cookie"

    local -a names=() endpoints=()
    local ndir
    for ((i = 1; i <= NODES; ++i)); do
        p=${ports[i - 1]}
        ndir=$start_dir/c$i
        mkdir -p "$ndir/home" "$ndir/log" "$ndir/mnesia"
        cp "$start_dir/cookie" "$ndir/home/.erlang.cookie"
        chmod 400 "$ndir/home/.erlang.cookie"
        : >"$ndir/rabbitmq-env.conf"
        echo '[].' >"$ndir/enabled_plugins"
        # Bounded memory and disk alarms for a shared test machine: a node blocks publishers
        # above 1 GB (the default, 40% of RAM, is ~10 GB per node here) and below 200 MB of
        # free disk.
        cat >"$ndir/rabbitmq.conf" <<EOF
listeners.tcp.1 = $LOOPBACK:$p
loopback_users.guest = true
log.file.level = info
vm_memory_high_watermark.absolute = 1GB
disk_free_limit.absolute = 200MB
EOF
        # The port in the name keeps it unique in the epmd all Erlang nodes on this host share.
        names+=("letterbox-c$i-$p@localhost")
        endpoints+=("$LOOPBACK:$p")
    done
    local url nodes
    url="amqp://guest:guest@$(
        IFS=,
        echo "${endpoints[*]}"
    )/"
    nodes=$(
        IFS=,
        echo "${names[*]}"
    )
    {
        echo "url=$url"
        echo "nodes=$nodes"
    } >"$start_dir/cluster"

    # The 3 nodes boot side by side (launch: rabbitmq.sh's start and readiness wait, bounded). A
    # signal meanwhile does not cut a boot short (run stops the cluster after the start).
    local -a boots=()
    for ((i = 1; i <= NODES; ++i)); do
        p=${ports[i - 1]}
        (
            trap ':' HUP INT TERM
            launch "$start_dir/c$i" "$p" $((p + 20000)) "${names[i - 1]}" \
                "amqp://guest:guest@$LOOPBACK:$p/" "$start_timeout"
        ) &
        boots+=($!)
    done
    local failed=0
    for ((i = 1; i <= NODES; ++i)); do
        wait_child "${boots[i - 1]}" || failed=1
    done
    [ $failed -eq 0 ] || die "a node did not start (its log is above)"
    say "3 nodes up after $((SECONDS - began))s; clustering"

    # Nodes 2 and 3 join node 1, one after the other.
    for ((i = 2; i <= NODES; ++i)); do
        ndir=$start_dir/c$i
        {
            cli_call "$ndir" rabbitmqctl stop_app &&
                cli_call "$ndir" rabbitmqctl join_cluster "${names[0]}" &&
                cli_call "$ndir" rabbitmqctl start_app
        } >>"$start_dir/log/join.log" 2>&1 || {
            tail -n 20 "$start_dir/log/join.log" >&2
            die "${names[i - 1]} could not join ${names[0]} (see $start_dir/log/join.log)"
        }
    done

    # Up = node 1 sees the 3 nodes running. Bounded by start_timeout.
    local deadline=$((SECONDS + start_timeout)) seen n all
    while :; do
        seen=$(running_nodes "$start_dir/c1" || true)
        all=1
        for n in "${names[@]}"; do
            grep -qxF -- "$n" <<<"$seen" || all=0
        done
        [ $all -eq 0 ] || break
        if [ $SECONDS -ge $deadline ]; then
            say "running nodes seen by ${names[0]}: $(tr '\n' ' ' <<<"$seen")"
            die "the cluster did not show 3 running nodes within ${start_timeout}s"
        fi
        sleep 0.5
    done
    trap - EXIT
    say "cluster of 3 up after $((SECONDS - began))s: $url (state in $start_dir)"

    local script
    script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
    local lines="LETTERBOX_AMQP_CLUSTER_URL=$url"$'\n'"LETTERBOX_RABBITMQ_CLUSTER_DIR=$start_dir"
    lines+=$'\n'"LETTERBOX_RABBITMQ_CLUSTER_NODES=$nodes"$'\n'"LETTERBOX_RABBITMQ_CLUSTER_SCRIPT=$script"
    if [ -n "$env_file" ]; then
        printf '%s\n' "$lines" >"$env_file"
    fi
    printf '%s\n' "$lines"
}

cluster_stop() {
    local stop_keep stop_dir dir i
    parse_stop_args "" "$@"
    dir=$(cluster_dir_of "$stop_dir")
    # Side by side: each node's stop is bounded (SIGTERM, then SIGKILL after the timeout).
    local -a stops=()
    for ((i = NODES; i >= 1; --i)); do
        [ -f "$dir/c$i/state" ] || continue
        stop_node "$dir/c$i" &
        stops+=($!)
    done
    local s
    for s in "${stops[@]}"; do
        wait_child "$s" || true
    done
    ERL_EPMD_ADDRESS=$LOOPBACK timeout 5 epmd -kill </dev/null >/dev/null 2>&1 || true
    finish_stop "$dir" "$stop_keep" "$CLUSTER_PREFIX" rabbitmq_cluster.sh \
        "node logs: $dir/c*/log/rabbit.log"
}

cluster_status() {
    local dir i up=0 pid pid_start_time port dist_port node url state
    dir=$(cluster_dir_of "${1:-}")
    echo "dir=$dir"
    grep '^url=' "$dir/cluster"
    for ((i = 1; i <= NODES; ++i)); do
        load_state "$dir/c$i"
        state=stopped
        if alive "$pid" "$pid_start_time"; then
            state=starting-or-stopping
            if port_busy "$port"; then
                state=running
                up=$((up + 1))
            fi
        fi
        echo "node $i: $node port=$port dist_port=$dist_port pid=$pid beam=$(beam_pid "$dir/c$i") status=$state"
    done
    [ $up -eq $NODES ]
}

cluster_pid() {
    [ $# -ge 1 ] || usage
    local dir i beam
    dir=$(cluster_dir_of "${2:-}")
    i=$(node_index "$dir" "$1")
    beam=$(beam_pid "$dir/c$i")
    [ -n "$beam" ] || die "node $1 has no Erlang VM running"
    echo "$beam"
}

cluster_kill() {
    [ $# -ge 1 ] || usage
    local dir i
    dir=$(cluster_dir_of "${2:-}")
    i=$(node_index "$dir" "$1")
    cmd_kill "$dir/c$i"
}

cluster_restart() {
    [ $# -ge 1 ] || usage
    local dir i
    dir=$(cluster_dir_of "${2:-}")
    i=$(node_index "$dir" "$1")
    cmd_restart "$dir/c$i"
}

# leader QUEUE [DIR]: asks the first running node for the queue's leader (list_queues' `leader`
# column, which RabbitMQ fills for quorum queues). Prints the node name; exit 1 if no node
# answers or the queue has none (an election under way).
cluster_leader() {
    [ $# -ge 1 ] || usage
    local queue=$1 dir i out leader pid pid_start_time port dist_port node url
    dir=$(cluster_dir_of "${2:-}")
    for ((i = 1; i <= NODES; ++i)); do
        load_state "$dir/c$i"
        alive "$pid" "$pid_start_time" || continue
        out=$(cli_call "$dir/c$i" rabbitmqctl -q list_queues --no-table-headers name leader \
            2>/dev/null) || continue
        leader=$(awk -F'\t' -v q="$queue" '$1 == q { print $2 }' <<<"$out")
        [[ $leader == *@* ]] || return 1
        echo "$leader"
        return 0
    done
    return 1
}

cluster_cli() {
    [ $# -ge 2 ] || usage
    local dir i tool=$2
    dir=$(cluster_dir_of "")
    i=$(node_index "$dir" "$1")
    case $tool in
    rabbitmqctl | rabbitmq-queues | rabbitmq-diagnostics) ;;
    *) die "cli: TOOL is rabbitmqctl, rabbitmq-queues or rabbitmq-diagnostics, not '$tool'" ;;
    esac
    shift 2
    cli_call "$dir/c$i" "$tool" "$@"
}

cluster_announce() { echo "LETTERBOX_AMQP_CLUSTER_URL=$LETTERBOX_AMQP_CLUSTER_URL"; }

[ $# -ge 1 ] || usage
command=$1
shift
case $command in
start) cluster_start "$@" ;;
stop) cluster_stop "$@" ;;
status) cluster_status "$@" ;;
pid) cluster_pid "$@" ;;
kill) cluster_kill "$@" ;;
restart) cluster_restart "$@" ;;
leader) cluster_leader "$@" ;;
cli) cluster_cli "$@" ;;
run) run_service LETTERBOX_RABBITMQ_CLUSTER_DIR cluster_start cluster_stop cluster_announce "$@" ;;
*) usage ;;
esac
