# Sourced by the benchmarks (needs $nginx_bin): a private prefix ($prefix),
# a free loopback port ($port, $url), a trap that stops nginx and removes
# the prefix on exit, and start_nginx: nginx answering `return 200 "ok"`.
# With TLS=1 it ends TLS (a self-signed certificate for localhost made with
# openssl in the prefix) and $url is https://localhost:$port/.

prefix=$(mktemp -d /tmp/shootout-bench.XXXXXX)
nginx_pid=""
cleanup() {
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
  rm -rf "$prefix"
}
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port/"
listen_tls=""
if [ "${TLS:-0}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost \
    -keyout "$prefix/key.pem" -out "$prefix/cert.pem" 2>/dev/null
  url="https://localhost:$port/"
  # A current configuration: TLS 1.2 and 1.3, X25519 first (nginx 1.22's
  # defaults let a TLS 1.2 client land on P-384, whose arithmetic ring does
  # without the fast paths it has for X25519 and P-256).
  listen_tls=" ssl; ssl_certificate $prefix/cert.pem; ssl_certificate_key $prefix/key.pem; ssl_protocols TLSv1.2 TLSv1.3; ssl_ecdh_curve X25519:prime256v1"
fi

# start_nginx WORKERS [CPU]: (re)starts nginx with that many workers, pinned to CPU if given.
start_nginx() {
  local workers=$1 cpu=${2:-}
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid"; wait "$nginx_pid" 2>/dev/null || true; nginx_pid=""; fi
  mkdir -p "$prefix/logs" "$prefix/tmp"
  cat > "$prefix/nginx.conf" <<CONF
worker_processes $workers;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $prefix/tmp/body;
  proxy_temp_path $prefix/tmp/proxy;
  fastcgi_temp_path $prefix/tmp/fastcgi;
  uwsgi_temp_path $prefix/tmp/uwsgi;
  scgi_temp_path $prefix/tmp/scgi;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:$port backlog=4096$listen_tls;
    location / { default_type text/plain; return 200 "ok"; }
  }
}
CONF
  if [ -n "$cpu" ]; then
    taskset -c "$cpu" "$nginx_bin" -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;' &
  else
    "$nginx_bin" -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;' &
  fi
  nginx_pid=$!
  for _ in $(seq 100); do
    curl -ksf -o /dev/null "$url" && return 0
    sleep 0.05
  done
  echo "$(basename "$0"): nginx did not answer on $url" >&2
  exit 1
}

