#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Draws the plots of docs/benchmarks.md (SVG, gnuplot) from benchmark output.
#
#   benchmarks/plots/plot.sh RESULTS_DIR OUT_DIR
#
# RESULTS_DIR holds the output of the benchmarks and of example 03 (`make bench` writes them to
# build/release/bench-results/*.txt). The programs print machine-readable lines next to their
# tables, which this script collects:
#
#   plot throughput <workload> <letterbox msg/s> <baseline msg/s>      bench_amqp, bench_in_memory
#   plot relay_latency <percentile> <letterbox us> <naive dual write us>  bench_outbox
#   prefetch-distribution scenario=<s> prefetch=<n> worker=<w> messages=<m>   example 03 (prefetch)
#
# and writes OUT_DIR/bench-throughput.svg, bench-relay-latency.svg and bench-prefetch.svg (a plot
# whose data is missing is skipped, with a note). The prefetch plot shows example 03's setting
# $PREFETCH_SCENARIO (default C: one worker three times slower than the others). gnuplot (Debian's
# gnuplot-nox) is installed when it is missing.
set -euo pipefail

results=${1:?usage: plot.sh RESULTS_DIR OUT_DIR}
out=${2:?usage: plot.sh RESULTS_DIR OUT_DIR}
mkdir -p "$out"

if ! command -v gnuplot >/dev/null; then
    sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)
    echo "plot.sh: installing gnuplot-nox"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox \
        || { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                 --no-install-recommends gnuplot-nox; }
fi

data=$(mktemp -d "${TMPDIR:-/tmp}/letterbox-plots.XXXXXX")
trap 'rm -rf "$data"' EXIT
cat "$results"/*.txt > "$data/all.txt"
awk '$1 == "plot" && $2 == "throughput" { print $3, $4, $5 }' "$data/all.txt" > "$data/throughput.dat"
awk '$1 == "plot" && $2 == "relay_latency" { print $3, $4, $5 }' "$data/all.txt" > "$data/latency.dat"
# prefetch-distribution scenario=S prefetch=P worker=W messages=M  ->  one row per prefetch of
# the chosen scenario: P M1 M2 M3 ...
scenario=${PREFETCH_SCENARIO:-C}
awk -v want="$scenario" '$1 == "prefetch-distribution" {
        delete f; for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        if (f["scenario"] != want) next
        if (!(f["prefetch"] in seen)) { seen[f["prefetch"]] = 1; order[n++] = f["prefetch"] }
        count[f["prefetch"], f["worker"]] = f["messages"]
        if (f["worker"] > workers) workers = f["worker"]
     }
     END { for (i = 0; i < n; i++) { line = order[i];
             for (k = 1; k <= workers; k++) line = line " " count[order[i], k] + 0;
             print line } }' "$data/all.txt" > "$data/prefetch.dat"

common='set terminal svg size 720,400 dynamic font "sans,12" background "#ffffff"
set style fill solid 0.85 border -1
set grid ytics lc rgb "#dddddd"
set key below'

draw() { # draw NAME DATAFILE SCRIPT
    if [ ! -s "$2" ]; then
        echo "plot.sh: no data for $1 (skipped)"
        return
    fi
    gnuplot <<GNUPLOT
$common
set output "$out/$1"
$3
GNUPLOT
    echo "plot.sh: wrote $out/$1"
}

draw bench-throughput.svg "$data/throughput.dat" "
set title 'AMQP client throughput against RabbitMQ 3.10, measured in the same run'
set style data histograms
set style histogram clustered gap 1
set ylabel 'messages per second'
set yrange [0:*]
set xtics noenhanced
plot '$data/throughput.dat' using 2:xtic(1) title 'letterbox' lc rgb '#3465a4', \
     '' using 3 title 'rabbitmq-c 0.11 (baseline), same broker' lc rgb '#babdb6'"

draw bench-relay-latency.svg "$data/latency.dat" "
set title 'Commit to confirmed publish: the outbox relay against the naive dual write'
set logscale y
set ylabel 'microseconds (log scale)'
set xlabel 'percentile'
set style data linespoints
plot '$data/latency.dat' using 0:2:xtic(1) title 'outbox relay (wake-up on commit)' lw 2 pt 7 lc rgb '#3465a4', \
     '' using 0:3 title 'naive: commit, then publish and wait' lw 2 pt 5 lc rgb '#babdb6'"

workers=$(awk '{ print NF - 1; exit }' "$data/prefetch.dat" 2>/dev/null || echo 0)
series=""
for ((w = 1; w <= workers; w++)); do
    xtic=""
    [ "$w" -ne 1 ] || xtic=":xtic(1)"
    series+="${series:+, }'$data/prefetch.dat' using $((w + 1))$xtic title 'worker $w'"
done
draw bench-prefetch.svg "$data/prefetch.dat" "
set title 'Messages each of three workers handled, by prefetch (example 03, setting $scenario)'
set style data histograms
set style histogram clustered gap 1
set xlabel 'prefetch'
set ylabel 'messages'
set yrange [0:*]
plot $series"
