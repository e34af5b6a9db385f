//! HTTPS on both twins (the `tls` feature, `--tls-cert` and `--tls-key`):
//! the same answers over TLS as plain, ALPN `http/1.1`, TLS 1.3 and 1.2;
//! clients that break the handshake (plain HTTP on the TLS port, a close in
//! the middle, a connection that never says hello) leave the server serving;
//! loadgen over TLS, kept alive and with churn, and with a CA that did not
//! sign the certificate; bad certificate flags as one line and exit 1.
//! Certificates are made here with rcgen (a CA of the test's own and a
//! server certificate it signed for `localhost` and 127.0.0.1).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::{run_to_exit, Framework, Response, Server, Variant};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, ProtocolVersion, RootCertStore, StreamOwned};

/// Both twins with `tls` and the default features the other tests run.
fn tls(fw: Framework) -> Variant {
    Variant::new(fw, ["tls"])
}

/// A CA and a server certificate it signed for `localhost` and 127.0.0.1,
/// in a scratch directory (`ca.pem`, `cert.pem`, `key.pem`), and a second
/// CA that signed nothing (`other-ca.pem`).
struct Pki {
    dir: tempfile::TempDir,
    ca: CertificateDer<'static>,
}

impl Pki {
    fn new() -> Pki {
        let ca_params = || {
            let mut ca = CertificateParams::new(Vec::new()).unwrap();
            ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            ca.distinguished_name
                .push(DnType::CommonName, "conformance test CA");
            ca
        };
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params().self_signed(&ca_key).unwrap();
        let other = ca_params()
            .self_signed(&KeyPair::generate().unwrap())
            .unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (file, pem) in [
            ("ca.pem", ca.pem()),
            ("other-ca.pem", other.pem()),
            ("cert.pem", cert.pem()),
            ("key.pem", key.serialize_pem()),
        ] {
            std::fs::write(dir.path().join(file), pem).unwrap();
        }
        Pki {
            dir,
            ca: ca.der().clone(),
        }
    }

    fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }

    /// The server's flags.
    fn flags(&self) -> [String; 4] {
        [
            "--tls-cert".into(),
            self.path("cert.pem"),
            "--tls-key".into(),
            self.path("key.pem"),
        ]
    }

    /// A client trusting the test's CA, offering ALPN `http/1.1` and the
    /// TLS `versions` given.
    fn client(&self, versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(self.ca.clone()).unwrap();
        // ring, as loadgen and the servers.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// Starts a `tls` build of `fw` serving HTTPS with `pki`'s certificate.
fn start(fw: Framework, pki: &Pki) -> Server {
    let flags = pki.flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Server::start(&tls(fw), &flags)
}

/// One HTTPS connection, its handshake done.
struct Https {
    tls: StreamOwned<ClientConnection, TcpStream>,
    buf: Vec<u8>,
}

impl Https {
    /// Connects to `addr` and shakes hands as `name` (SNI, and the name the
    /// certificate must carry).
    fn open(addr: SocketAddr, name: &str, config: Arc<ClientConfig>) -> io::Result<Https> {
        let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        sock.set_read_timeout(Some(Duration::from_secs(10)))?;
        sock.set_write_timeout(Some(Duration::from_secs(10)))?;
        let name = ServerName::try_from(name.to_string()).map_err(io::Error::other)?;
        let conn = ClientConnection::new(config, name).map_err(io::Error::other)?;
        let mut tls = StreamOwned::new(conn, sock);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(Https {
            tls,
            buf: Vec::new(),
        })
    }

    fn alpn(&self) -> Option<&[u8]> {
        self.tls.conn.alpn_protocol()
    }

    fn version(&self) -> Option<ProtocolVersion> {
        self.tls.conn.protocol_version()
    }

    /// A request to `path` with a `Content-Length` body (none for `None`),
    /// and its response.
    fn request(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> io::Result<Response> {
        let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n").into_bytes();
        if let Some(body) = body {
            raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            raw.extend_from_slice(body);
        } else {
            raw.extend_from_slice(b"\r\n");
        }
        self.tls.write_all(&raw)?;
        self.tls.flush()?;
        self.read_response()
    }

    fn get(&mut self) -> io::Result<Response> {
        self.request("GET", "/", None)
    }

    /// One response with a `Content-Length` body (as the twins answer).
    fn read_response(&mut self) -> io::Result<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Response::new(&mut headers);
            match parsed.parse(&self.buf).map_err(io::Error::other)? {
                httparse::Status::Complete(head) => {
                    let headers: Vec<(String, String)> = parsed
                        .headers
                        .iter()
                        .map(|h| {
                            let value = String::from_utf8_lossy(h.value).into_owned();
                            (h.name.to_ascii_lowercase(), value)
                        })
                        .collect();
                    let status = parsed.code.unwrap_or(0);
                    let len = headers
                        .iter()
                        .find(|(n, _)| n == "content-length")
                        .and_then(|(_, v)| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    while self.buf.len() < head + len {
                        self.fill()?;
                    }
                    let body = self.buf[head..head + len].to_vec();
                    self.buf.drain(..head + len);
                    return Ok(Response {
                        status,
                        headers,
                        body,
                    });
                }
                httparse::Status::Partial => self.fill()?,
            }
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 4096];
        match self.tls.read(&mut chunk)? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    }
}

/// The requests both twins answer alike, over TLS too.
const CASES: [(&str, &str, Option<&[u8]>); 6] = [
    ("GET", "/", None),
    ("POST", "/", Some(b"5")),
    ("GET", "/", None),
    ("POST", "/", Some(b"x")),
    ("DELETE", "/", None),
    ("GET", "/missing", None),
];

#[test]
fn both_twins_answer_over_tls_alike_with_http1_by_alpn() {
    let pki = Pki::new();
    let mut answers = Vec::new();
    for fw in Framework::BOTH {
        let server = start(fw, &pki);
        let line = &server.startup_line;
        assert_eq!(app_core::startup_field(line, "tls"), Some("on"), "{line}");
        assert_eq!(
            app_core::startup_field(line, "features"),
            Some("tls"),
            "{line}"
        );
        let mut seen = Vec::new();
        // TLS 1.3 by name, TLS 1.2 by address: the certificate names both.
        for (name, version, expected) in [
            (
                "localhost",
                &rustls::version::TLS13,
                ProtocolVersion::TLSv1_3,
            ),
            (
                "127.0.0.1",
                &rustls::version::TLS12,
                ProtocolVersion::TLSv1_2,
            ),
        ] {
            let mut conn = Https::open(server.addr, name, pki.client(&[version]))
                .unwrap_or_else(|e| panic!("{fw:?} {name}: handshake: {e}"));
            assert_eq!(conn.alpn(), Some(&b"http/1.1"[..]), "{fw:?} {name}");
            assert_eq!(conn.version(), Some(expected), "{fw:?} {name}");
            for (method, path, body) in CASES {
                let res = conn
                    .request(method, path, body)
                    .unwrap_or_else(|e| panic!("{fw:?} {name} {method} {path}: {e}"));
                let (status, content_type, allow, body) = res.essence();
                seen.push((
                    status,
                    content_type.map(str::to_owned),
                    allow.map(str::to_owned),
                    body.to_vec(),
                ));
                if status != 200 {
                    // An error answer may end the connection (actix-web's
                    // after a body left unread): the next on a fresh one.
                    conn = Https::open(server.addr, name, pki.client(&[version])).unwrap();
                }
            }
        }
        assert_eq!(seen[0].0, 200, "{fw:?}: {seen:?}");
        assert_eq!(seen[2].3, b"5", "{fw:?}: {seen:?}");
        answers.push(seen);
        let exit = server.stop();
        assert_eq!(exit.status.code(), Some(0), "{fw:?}: {:?}", exit.stderr);
    }
    assert_eq!(answers[0], answers[1], "actix, then ntex");
}

/// Reads until the server closes (EOF or reset) or 20 s pass; what came.
fn read_to_close(mut sock: TcpStream) -> (Vec<u8>, bool) {
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match sock.read(&mut chunk) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                return (got, false)
            }
            Err(_) => return (got, true),
        }
    }
}

/// The client's first flight (its hello) as bytes, not sent.
fn client_hello(pki: &Pki) -> Vec<u8> {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = ClientConnection::new(pki.client(&[&rustls::version::TLS13]), name).unwrap();
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).unwrap();
    }
    hello
}

#[test]
fn clients_that_break_the_handshake_leave_the_server_serving_tls() {
    let pki = Pki::new();
    let config = pki.client(&[&rustls::version::TLS13]);
    let get = |fw: Framework, server: &Server, after: &str| {
        Https::open(server.addr, "localhost", config.clone())
            .and_then(|mut c| c.get())
            .unwrap_or_else(|e| panic!("{fw:?} after {after}: {e}"))
    };
    // Both twins at once, each with a connection that never says hello,
    // held open while the other clients come and go.
    let servers = Framework::BOTH.map(|fw| {
        let server = start(fw, &pki);
        let silent = TcpStream::connect(server.addr).unwrap();
        (fw, server, silent)
    });
    for (fw, server, _) in &servers {
        let fw = *fw;
        // Plain HTTP on the TLS port: no HTTP answer, the connection closed.
        let mut plain = TcpStream::connect(server.addr).unwrap();
        plain
            .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let (got, closed) = read_to_close(plain);
        assert!(closed, "{fw:?}: plain HTTP left open");
        assert!(!got.starts_with(b"HTTP/"), "{fw:?}: {got:?}");
        get(fw, server, "plain HTTP");

        // Half a hello, then a close; and a whole hello, the server's first
        // bytes read, then a close.
        let hello = client_hello(&pki);
        let mut half = TcpStream::connect(server.addr).unwrap();
        half.write_all(&hello[..hello.len() / 2]).unwrap();
        drop(half);
        let mut whole = TcpStream::connect(server.addr).unwrap();
        whole.write_all(&hello).unwrap();
        whole
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut first = [0u8; 64];
        let n = whole.read(&mut first).unwrap();
        assert!(
            n > 0 && first[0] == 0x16,
            "{fw:?}: no handshake record: {:?}",
            &first[..n]
        );
        drop(whole);

        // The silent one still waiting: a request over TLS is served, and
        // the counter goes on.
        let mut conn = Https::open(server.addr, "localhost", config.clone())
            .unwrap_or_else(|e| panic!("{fw:?} after broken handshakes: {e}"));
        let res = conn.request("POST", "/", Some(b"7")).unwrap();
        assert_eq!(res.status, 200, "{fw:?}");
        assert_eq!(conn.get().unwrap().text(), "7", "{fw:?}");
    }
    for (fw, server, silent) in servers {
        // The silent connection is closed at the handshake's time limit
        // (3 s on both twins), without a word.
        let (got, closed) = read_to_close(silent);
        assert!(
            closed,
            "{fw:?}: a connection that never said hello was kept"
        );
        assert!(got.is_empty(), "{fw:?}: {got:?}");
        get(fw, &server, "the silent client");
        let exit = server.stop();
        assert_eq!(exit.status.code(), Some(0), "{fw:?}: {:?}", exit.stderr);
        let stderr = exit.stderr.join("\n");
        assert!(!stderr.contains("panicked"), "{fw:?}: {stderr}");
    }
}

/// Runs loadgen (`bin`) with `args`; kills it and fails if it has not
/// exited after 30 s (its runs here last about a second). Exit code,
/// stdout, stderr.
fn loadgen(bin: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("loadgen {args:?} still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), out.join().unwrap(), err.join().unwrap())
}

/// The summary record (the last line) of a loadgen run that exited 0.
fn summary(bin: &Path, args: &[&str]) -> serde_json::Value {
    let (code, out, err) = loadgen(bin, args);
    assert_eq!(code, Some(0), "{args:?}: {err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "summary", "{last}");
    last
}

fn count(s: &serde_json::Value, key: &str) -> u64 {
    s[key].as_u64().unwrap_or_else(|| panic!("no {key} in {s}"))
}

#[test]
fn loadgen_over_tls_against_both_twins_kept_alive_and_churned() {
    let pki = Pki::new();
    let bin = conformance::loadgen();
    let ca = pki.path("ca.pem");
    let c = 4;
    for fw in Framework::BOTH {
        let server = start(fw, &pki);
        let url = format!("https://localhost:{}/", server.addr.port());
        for per_conn in [None, Some(10u64)] {
            let n = per_conn.map(|n| n.to_string());
            let c_arg = c.to_string();
            let mut args = vec![
                "--format",
                "jsonl",
                "-c",
                &c_arg,
                "-d",
                "1s",
                "--ca-file",
                &ca,
            ];
            if let Some(n) = &n {
                args.extend(["--requests-per-connection", n]);
            }
            args.push(&url);
            let s = summary(&bin, &args);
            let what = format!("{fw:?} {per_conn:?}: {s}");
            let errors = s["errors"].as_object().unwrap();
            assert!(errors.values().all(|e| e == 0), "{what}");
            let ok = count(&s, "ok");
            assert!(ok > 0, "{what}");
            assert_eq!(count(&s, "requests"), ok, "{what}");
            let connects = count(&s, "connects");
            // A handshake per connection, counted when it is done.
            assert_eq!(count(&s["handshakes"], "count"), connects, "{what}");
            assert!(
                s["tls_version"].as_str().unwrap().starts_with("TLSv1_3"),
                "{what}"
            );
            assert!(
                s["tls_cipher"].as_str().unwrap().starts_with("TLS13_"),
                "{what}"
            );
            match per_conn {
                // Kept alive: each connection opened once, none reopened.
                None => {
                    assert!((1..=c).contains(&connects), "{what}");
                    assert_eq!(count(&s, "reconnects"), 0, "{what}");
                }
                // Churn: no connection carries more than n answers, and
                // each lane has at most one that has not finished its n
                // (and one to spare).
                Some(n) => assert!(
                    (ok.div_ceil(n)..=ok / n + c + 1).contains(&connects),
                    "{connects} connections for {ok} answers, {n} each over {c}: {what}"
                ),
            }
        }
        // A CA that did not sign the certificate: every handshake refused,
        // counted as a tls error; loadgen says so in one line and exits 1.
        let other = pki.path("other-ca.pem");
        let args = [
            "--format",
            "jsonl",
            "-c",
            "2",
            "-d",
            "1s",
            "--timeout",
            "2s",
            "--ca-file",
            &other,
            &url,
        ];
        let (code, out, err) = loadgen(&bin, &args);
        assert_eq!(code, Some(1), "{fw:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{fw:?}: {err}");
        assert!(err.contains("no request succeeded"), "{fw:?}: {err}");
        let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(last["ok"], 0, "{fw:?}: {last}");
        assert!(count(&last["errors"], "tls") > 0, "{fw:?}: {last}");
        // And the twin still serves.
        Https::open(
            server.addr,
            "localhost",
            pki.client(&[&rustls::version::TLS13]),
        )
        .and_then(|mut c| c.get())
        .unwrap_or_else(|e| panic!("{fw:?} after refused handshakes: {e}"));
        let exit = server.stop();
        assert_eq!(exit.status.code(), Some(0), "{fw:?}: {:?}", exit.stderr);
    }
}

/// `--bind 127.0.0.1:0`, then `extra`.
fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [&["--bind", "127.0.0.1:0"][..], extra].concat()
}

#[test]
fn tls_flags_are_checked_in_one_line_and_without_them_a_tls_build_serves_http() {
    let pki = Pki::new();
    let (cert, key) = (pki.path("cert.pem"), pki.path("key.pem"));
    let missing = pki.path("missing-key.pem");
    for fw in Framework::BOTH {
        let bin = fw.binary();

        // A key file that is not there: one line naming it, exit 1.
        let (code, err) = run_to_exit(
            &tls(fw),
            &with(&["--tls-cert", &cert, "--tls-key", &missing]),
        );
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.starts_with(&format!("{bin}: error: TLS key {missing}: ")),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        // A certificate file that holds no certificate.
        let (code, err) = run_to_exit(&tls(fw), &with(&["--tls-cert", &key, "--tls-key", &key]));
        assert_eq!(code, Some(1), "{err}");
        assert_eq!(
            err,
            format!("{bin}: error: TLS certificate {key}: no certificate in it\n")
        );
        // One flag without the other: clap's usage error, exit 2.
        let (code, err) = run_to_exit(&tls(fw), &with(&["--tls-cert", &cert]));
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--tls-key"), "{err}");
        // A build without `tls`: refused, as other flags it cannot honour.
        let plain = Variant::new(fw, conformance::sets::DEFAULT);
        let (code, err) = run_to_exit(&plain, &with(&["--tls-cert", &cert, "--tls-key", &key]));
        assert_eq!(code, Some(1), "{err}");
        assert_eq!(
            err,
            format!("{bin}: error: --tls-cert and --tls-key need a build with the tls feature\n")
        );

        // A tls build without the flags: plain HTTP, as before.
        let server = Server::start(&tls(fw), &[]);
        let line = &server.startup_line;
        assert_eq!(app_core::startup_field(line, "tls"), None, "{line}");
        assert_eq!(
            app_core::startup_field(line, "features"),
            Some("tls"),
            "{line}"
        );
        let res = server.conn().get().unwrap();
        assert_eq!((res.status, res.text().as_str()), (200, "0"), "{fw:?}");
        let exit = server.stop();
        assert_eq!(exit.status.code(), Some(0), "{fw:?}: {:?}", exit.stderr);
    }
}
