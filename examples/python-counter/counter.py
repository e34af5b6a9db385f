#!/usr/bin/env python3
"""The twins' click counter on Python's standard library alone.

    examples/python-counter/counter.py --port PORT [--host 127.0.0.1]

GET / answers the count; POST / with a body of 1 to 3 ASCII digits
(0..=500) adds it and answers the new count; everything else is refused
in the twins' own words (`conformance/tests/external.rs` checks it). One
process, a thread per connection, HTTP/1.1 keep-alive.
"""
import argparse
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIMIT = 64  # the twins' body limit: a longer body is a 413
count = 0
lock = threading.Lock()


class Counter(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per answer (head and body flushed together after each
    # request), and no Nagle: otherwise the body waits for the peer's
    # delayed ACK of the head, about 40 ms an answer.
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def reply(self, status, body, close=False):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        if status == 405:
            self.send_header("Allow", "GET, POST")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        """The body, or None past the limit."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                if len(data) + size > LIMIT:
                    return None
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > LIMIT:
            return None
        return self.rfile.read(length)

    def do_GET(self):
        if self.path != "/":
            return self.reply(404, b"not found: the only resource is /\n")
        with lock:
            n = count
        self.reply(200, str(n).encode())

    def do_POST(self):
        global count
        data = self.body()
        if data is None:
            return self.reply(413, b"body is larger than the server's limit\n", close=True)
        if self.path != "/":
            return self.reply(404, b"not found: the only resource is /\n")
        if not data:
            return self.reply(400, b"body is empty\n")
        if len(data) > 3:
            return self.reply(400, b"body has too many bytes for a value 0..=500\n")
        if not all(48 <= b <= 57 for b in data):
            return self.reply(400, b"body is not a plain decimal integer\n")
        if int(data) > 500:
            return self.reply(400, b"value is over 500\n")
        with lock:
            count += int(data)
            n = count
        self.reply(200, str(n).encode())

    def refuse(self):
        if self.body() is None:
            return self.reply(413, b"body is larger than the server's limit\n", close=True)
        if self.path != "/":
            return self.reply(404, b"not found: the only resource is /\n")
        self.reply(405, b"method not allowed: use GET or POST on /\n")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = refuse


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    a = p.parse_args()
    server = Server((a.host, a.port), Counter)
    server.serve_forever()


class Server(ThreadingHTTPServer):
    # Set before the constructor listens: its default backlog, 5, drops
    # connections that then retry after 1 s and 3 s.
    request_queue_size = 1024
    daemon_threads = True


if __name__ == "__main__":
    main()
