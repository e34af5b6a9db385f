// The twins' click counter on Go's standard library alone (net/http).
//
//	go build -o counter . && ./counter --port PORT [--host 127.0.0.1]
//
// GET / answers the count; POST / with a body of 1 to 3 ASCII digits
// (0..=500) adds it and answers the new count; everything else is refused
// in the twins' own words (conformance/tests/external.rs checks it).
// GOMAXPROCS follows the CPUs the process may run on.
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
)

// limit is the twins' body limit: a longer body is a 413.
const limit = 64

var count atomic.Uint64

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func counter(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil || len(body) > limit {
		w.Header().Set("Connection", "close")
		reply(w, 413, "body is larger than the server's limit\n")
		return
	}
	if r.URL.Path != "/" {
		reply(w, 404, "not found: the only resource is /\n")
		return
	}
	switch r.Method {
	case http.MethodGet:
		reply(w, 200, strconv.FormatUint(count.Load(), 10))
	case http.MethodPost:
		if msg := check(body); msg != "" {
			reply(w, 400, msg)
			return
		}
		v, _ := strconv.Atoi(string(body))
		reply(w, 200, strconv.FormatUint(count.Add(uint64(v)), 10))
	default:
		w.Header().Set("Allow", "GET, POST")
		reply(w, 405, "method not allowed: use GET or POST on /\n")
	}
}

// check says what is wrong with a POST body, or "" for a value 0..=500.
func check(body []byte) string {
	if len(body) == 0 {
		return "body is empty\n"
	}
	if len(body) > 3 {
		return "body has too many bytes for a value 0..=500\n"
	}
	v := 0
	for _, b := range body {
		if b < '0' || b > '9' {
			return "body is not a plain decimal integer\n"
		}
		v = v*10 + int(b-'0')
	}
	if v > 500 {
		return "value is over 500\n"
	}
	return ""
}

func main() {
	port := flag.Int("port", 0, "port to listen on")
	host := flag.String("host", "127.0.0.1", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.Serve(ln, http.HandlerFunc(counter)))
}
