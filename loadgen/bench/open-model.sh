#!/usr/bin/env bash
# Open-model send precision: two loadgen builds, A B A B, against nginx
# answering `return 200` (1 worker on CPU 1, loadgen on CPU 0, 32
# connections) at several rates. Per rate: the median over pairs of p50
# latency, p99 latency, client CPU µs per request (user + system from
# /proc), and, for builds that report it, the send lateness p50/p99.
#
#   loadgen/bench/open-model.sh BEFORE_BIN AFTER_BIN [PAIRS] [SECONDS] [RATES]
#   (defaults: 3 pairs, 5 s, "1000 5000 20000 50000"; AFTER_FLAGS="..." adds
#   loadgen flags to the second build's runs, e.g. --spin-before 50us)
set -euo pipefail
cd "$(dirname "$0")/../.."

before=${1:?usage: open-model.sh BEFORE_BIN AFTER_BIN [PAIRS] [SECONDS] [RATES]}
after=${2:?usage: open-model.sh BEFORE_BIN AFTER_BIN [PAIRS] [SECONDS] [RATES]}
pairs=${3:-3}
secs=${4:-5}
rates=${5:-1000 5000 20000 50000}
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
for tool in "$nginx_bin" taskset curl; do
  command -v "$tool" >/dev/null || { echo "open-model: $tool is missing (apt-get install -y nginx-light util-linux curl)" >&2; exit 2; }
done

# $prefix, $url, start_nginx, and a trap that stops nginx and removes $prefix.
. loadgen/bench/nginx.sh
start_nginx 1 1

# measure BIN RATE -> one JSON line: rate, p50, p99, send lateness p50/p99
# (builds that report it), requests, client CPU µs per request (loadgen's
# own user + system time, from getrusage of the finished child).
measure() {
  python3 - "$1" "$2" "$secs" "$url" "${3:-}" <<'PY'
import json, resource, subprocess, sys
bin, rate, secs, url, flags = sys.argv[1:]
out = subprocess.run(["taskset", "-c", "0", bin, "-c", "32", "--rate", rate, "-d", f"{secs}s",
                      "--warmup", "1s", "--format", "jsonl", *flags.split(), url],
                     capture_output=True, text=True, check=True).stdout
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
s = json.loads(out.splitlines()[-1])
late = s.get("send_lateness_us") or {}
# CPU covers warm-up too: per request over every request sent.
sent = sum(json.loads(l).get("ok", 0) for l in out.splitlines()[:-1])
print(json.dumps({"rate": int(rate), "p50": s["latency_us"]["p50"], "p99": s["latency_us"]["p99"],
                  "late_p50": late.get("p50"), "late_p99": late.get("p99"),
                  "cpu_us_per_req": (ru.ru_utime + ru.ru_stime) * 1e6 / max(sent, 1)}))
PY
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "nginx $("$nginx_bin" -v 2>&1 | cut -d/ -f2), 1 worker on CPU 1; loadgen -c 32 on CPU 0, ${secs}s after 1s warm-up, $pairs pairs A B A B${AFTER_FLAGS:+; after: $AFTER_FLAGS}"
results="$prefix/results.jsonl"
for rate in $rates; do
  for i in $(seq "$pairs"); do
    echo "{\"build\": \"before\", \"m\": $(measure "$before" "$rate")}" >> "$results"
    echo "{\"build\": \"after\", \"m\": $(measure "$after" "$rate" "${AFTER_FLAGS:-}")}" >> "$results"
  done
done
python3 - "$results" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(xs):
    xs = [x for x in xs if x is not None]
    return st.median(xs) if xs else None
fmt = lambda v, f="{:.0f}": "n/a" if v is None else f.format(v)
print(f"{'rate/s':>7} | {'p50 before':>10} {'p50 after':>10} | {'p99 before':>10} {'p99 after':>10} | {'CPU µs/req before':>17} {'after':>6} | {'send lateness p50/p99 after':>27}")
for rate in sorted({r["m"]["rate"] for r in rows}):
    b = [r["m"] for r in rows if r["build"] == "before" and r["m"]["rate"] == rate]
    a = [r["m"] for r in rows if r["build"] == "after" and r["m"]["rate"] == rate]
    g = lambda xs, k: med([x[k] for x in xs])
    print(f"{rate:>7} | {fmt(g(b,'p50')):>10} {fmt(g(a,'p50')):>10} | {fmt(g(b,'p99')):>10} {fmt(g(a,'p99')):>10} | "
          f"{fmt(g(b,'cpu_us_per_req'),'{:.2f}'):>17} {fmt(g(a,'cpu_us_per_req'),'{:.2f}'):>6} | "
          f"{fmt(g(a,'late_p50'))+' / '+fmt(g(a,'late_p99')):>27}")
PY
