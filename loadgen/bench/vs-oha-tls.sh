#!/usr/bin/env bash
# loadgen against oha over HTTPS, A B A B, like for like: nginx ending TLS
# (a self-signed certificate, both clients told to accept it) answering
# `return 200` on a loopback port chosen at run time, pinned to CPU 1; each
# client pinned to CPU 0, 64 connections, the same duration.
#
#   loadgen/bench/vs-oha-tls.sh [PAIRS] [DURATION_S]   (defaults: 5 pairs, 5 s)
#
# Two set-ups: connections kept alive (one handshake each), and a new
# connection for every request (oha --disable-keepalive against loadgen
# --requests-per-connection 1: a handshake per request). Per pair:
# requests/s and client CPU seconds per million requests (user + system,
# from /usr/bin/time) and the loadgen/oha ratios; per set-up the medians.
# Needs nginx, oha (cargo install oha), openssl, taskset, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/../.."

pairs=${1:-5}
secs=${2:-5}
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
for tool in "$nginx_bin" oha openssl taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "vs-oha-tls: $tool is missing (oha: cargo install oha; the rest: apt-get install -y nginx-light openssl util-linux time)" >&2; exit 2; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

cargo build --release --quiet -p loadgen
loadgen=target/release/loadgen

TLS=1
. loadgen/bench/nginx.sh   # (cwd is the repository root)
. loadgen/bench/pairs.sh

# measure TOOL CHURN -> "rps requests cpu_s"
measure() {
  local tool=$1 churn=$2 out="$prefix/out" tm="$prefix/time"
  case $tool in
    loadgen)
      local extra=()
      [ "$churn" = 1 ] && extra=(--requests-per-connection 1)
      /usr/bin/time -f "%U %S" -o "$tm" taskset -c 0 "$loadgen" --insecure "${extra[@]}" -c 64 -d "${secs}s" --format jsonl "$url" > "$out"
      python3 - "$out" "$tm" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
u, sy = open(sys.argv[2]).read().split()
assert s["errors"]["tls"] == 0, s["errors"]
print(f"{s['rps']:.0f} {s['ok']} {float(u)+float(sy):.2f}")
PY
      ;;
    oha)
      local extra=()
      [ "$churn" = 1 ] && extra=(--disable-keepalive)
      /usr/bin/time -f "%U %S" -o "$tm" taskset -c 0 oha --no-tui --insecure "${extra[@]}" -z "${secs}s" -c 64 --output-format json "$url" > "$out"
      python3 - "$out" "$tm" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ok = sum(n for code, n in j["statusCodeDistribution"].items() if code.startswith("2"))
total = j["summary"]["total"]
u, sy = open(sys.argv[2]).read().split()
print(f"{ok/total:.0f} {ok} {float(u)+float(sy):.2f}")
PY
      ;;
  esac
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "nginx: $("$nginx_bin" -v 2>&1 | cut -d/ -f2), $(oha --version), loadgen: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ${secs}s per run, $pairs pairs"
echo
start_nginx 1 1
for churn in 0 1; do
  if [ "$churn" = 1 ]; then name="a new connection per request"; else name="kept alive"; fi
  echo "== https, $name (nginx 1 worker on cpu1, client on cpu0, -c 64)"
  run_pairs oha "$pairs" 'measure loadgen "$churn"' 'measure oha "$churn"'
  echo
done
