#!/usr/bin/env bash
# loadgen vs wrk (and oha when installed), A B A B, against nginx answering
# `return 200` from a private prefix on a loopback port chosen at run time.
#
#   loadgen/bench/vs-wrk.sh [PAIRS] [DURATION_S]     (defaults: 5 pairs, 5 s)
#   RSS_CHECK=1 loadgen/bench/vs-wrk.sh              (also: peak RSS at 1000 connections over 60 s)
#
# Per pair it prints requests/s and client CPU seconds per million requests
# (user + system, from /usr/bin/time) and the loadgen/wrk ratios; per set-up
# the median ratios. Needs nginx, wrk, taskset and /usr/bin/time
# (apt-get install -y nginx-light wrk util-linux time).
set -euo pipefail
cd "$(dirname "$0")/../.."

pairs=${1:-5}
secs=${2:-5}
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
oha_bin=$(command -v oha || true)
for tool in "$nginx_bin" wrk taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "vs-wrk: $tool is missing (apt-get install -y nginx-light wrk util-linux time)" >&2; exit 2; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

cargo build --release --quiet -p loadgen
loadgen=target/release/loadgen

# $prefix, $url, start_nginx, and a trap that stops nginx and removes $prefix.
. loadgen/bench/nginx.sh   # (cwd is the repository root)
. loadgen/bench/pairs.sh

# measure TOOL THREADS CONNS CPU [EXTRA] -> "rps requests cpu_s rss_kb"
# EXTRA: loadgen flags (e.g. --sched normal), or a wrapper for wrk (e.g. chrt -b 0).
measure() {
  local tool=$1 t=$2 c=$3 cpu=$4 extra=() pin=() out="$prefix/out" tm="$prefix/time"
  [ -n "${5:-}" ] && read -r -a extra <<<"$5"
  [ -n "$cpu" ] && pin=(taskset -c "$cpu")
  case $tool in
    loadgen)
      /usr/bin/time -f "%U %S %M" -o "$tm" "${pin[@]}" "$loadgen" "${extra[@]}" -t "$t" -c "$c" -d "${secs}s" --format jsonl "$url" > "$out"
      python3 - "$out" "$tm" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
u, sy, rss = open(sys.argv[2]).read().split()
print(f"{s['rps']:.0f} {s['requests']} {float(u)+float(sy):.2f} {rss}")
PY
      ;;
    wrk)
      /usr/bin/time -f "%U %S %M" -o "$tm" "${pin[@]}" "${extra[@]}" wrk -t "$t" -c "$c" -d "${secs}s" "$url" > "$out"
      python3 - "$out" "$tm" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
reqs = int(re.search(r"(\d+) requests in", text).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
u, sy, rss = open(sys.argv[2]).read().split()
print(f"{rps:.0f} {reqs} {float(u)+float(sy):.2f} {rss}")
PY
      ;;
    oha)
      /usr/bin/time -f "%U %S %M" -o "$tm" "${pin[@]}" "$oha_bin" --no-tui -z "${secs}s" -c "$c" "$url" > "$out"
      python3 - "$out" "$tm" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
m = re.search(r"Total:\s+([\d.]+) (ms|sec)", text); total = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
u, sy, rss = open(sys.argv[2]).read().split()
print(f"{rps:.0f} {rps*total:.0f} {float(u)+float(sy):.2f} {rss}")
PY
      ;;
  esac
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "nginx: $("$nginx_bin" -v 2>&1 | cut -d/ -f2), wrk: $(wrk --version 2>&1 | head -1 | cut -d' ' -f2), loadgen: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ${secs}s per run, $pairs pairs"
echo

# name | nginx workers | nginx cpu | client threads | connections | client cpu | loadgen flags | wrk wrapper
# The first three are the set-ups of the targets (loadgen with its defaults,
# wrk as it ships); the last two compare like with like on scheduling policy.
setups=(
  "t1-c64-unpinned|1||1|64|||"
  "t2-c256-unpinned|2||2|256|||"
  "t1-c64-shared-cpu0|1|0|1|64|0||"
  "t1-c64-shared-cpu0, both SCHED_OTHER|1|0|1|64|0|--sched normal|"
  "t1-c64-shared-cpu0, both SCHED_BATCH|1|0|1|64|0||chrt -b 0"
)
for setup in "${setups[@]}"; do
  IFS='|' read -r name workers ncpu t c ccpu lflags wwrap <<<"$setup"
  start_nginx "$workers" "$ncpu"
  echo "== $name (nginx workers=$workers${ncpu:+ pinned cpu$ncpu}, client -t$t -c$c${ccpu:+ pinned cpu$ccpu}${lflags:+, loadgen $lflags}${wwrap:+, wrk under $wwrap})"
  run_pairs wrk "$pairs" 'measure loadgen "$t" "$c" "$ccpu" "$lflags"' 'measure wrk "$t" "$c" "$ccpu" "$wwrap"'
  if [ -n "$oha_bin" ] && [ -z "$lflags$wwrap" ]; then
    read -r orps oreq ocpu _ < <(measure oha "$t" "$c" "$ccpu")
    python3 -c "print(f'oha (one run, all cores, -c $c): {float($orps):.0f} rps, {float($ocpu)/float($oreq)*1e6:.3f} CPU s per million requests')"
  fi
  echo
done

if [ "${RSS_CHECK:-0}" = 1 ]; then
  start_nginx 1
  secs=60
  read -r rps reqs cpu rss < <(measure loadgen 1 1000 "")
  echo "== peak RSS: loadgen -t1 -c1000 -d60s: ${rss} KiB ($((rss / 1024)) MiB), $rps rps"
fi
