//! HTTPS and connection churn: loadgen against TLS servers of this file's
//! own (rustls, certificates made here with rcgen) and against nginx ending
//! TLS; and against handshakes that go wrong (a certificate not trusted, a
//! name that does not match, a peer that closes in the middle, a peer that
//! never answers), each a counted error and a clean, bounded exit.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

mod support;
use support::{loadgen, schema_checked_records};

/// A CA of the test's own and a server certificate it signed for
/// `localhost`, in a scratch directory (`ca.pem`, `server.pem`, `key.pem`).
struct Pki {
    dir: tempfile::TempDir,
    cert: CertificateDer<'static>,
    key: Vec<u8>,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "loadgen test CA");
        let ca = ca.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("server.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        Pki {
            dir,
            cert: cert.der().clone(),
            key: key.serialize_der(),
        }
    }

    fn ca(&self) -> String {
        self.dir.path().join("ca.pem").display().to_string()
    }

    fn server_config(&self) -> Arc<ServerConfig> {
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone())),
            )
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// What the test server does with each connection.
#[derive(Clone, Copy)]
enum Peer {
    /// Ends the handshake and answers each request 200 `ok`.
    Serve,
    /// Reads the client's first bytes (its hello) and closes.
    CloseInHandshake,
    /// Reads and never answers (until it is dropped, at most 10 s).
    Silent,
}

/// A loopback TLS server (a thread per connection); its port.
fn server(pki: &Pki, peer: Peer) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = pki.server_config();
    std::thread::spawn(move || {
        for sock in listener.incoming().flatten() {
            let config = Arc::clone(&config);
            std::thread::spawn(move || serve(sock, config, peer));
        }
    });
    port
}

fn serve(mut sock: TcpStream, config: Arc<ServerConfig>, peer: Peer) {
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    match peer {
        Peer::CloseInHandshake => {
            let mut hello = [0u8; 64];
            let _ = sock.read(&mut hello);
        }
        Peer::Silent => {
            let mut sink = [0u8; 4096];
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until && sock.read(&mut sink).is_ok_and(|n| n > 0) {}
        }
        Peer::Serve => {
            let mut tls = StreamOwned::new(ServerConnection::new(config).unwrap(), sock);
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    buf.drain(..end + 4);
                    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                    if tls.write_all(answer).and_then(|()| tls.flush()).is_err() {
                        return;
                    }
                }
                match tls.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        }
    }
}

fn summary(records: &[serde_json::Value]) -> &serde_json::Value {
    let last = records.last().unwrap();
    assert_eq!(last["type"], "summary", "{last}");
    last
}

/// A run of `c` connections, each closed after `n` answers: a connection
/// for every `n` answers, give or take one for each connection (its first,
/// its last unfinished `n`, or a new one still in its handshake at the
/// end), and with https a handshake each.
fn churned(s: &serde_json::Value, n: u64, c: u64) {
    let ok = s["ok"].as_u64().unwrap();
    let connects = s["connects"].as_u64().unwrap();
    assert!(
        ((ok / n).saturating_sub(c)..=ok / n + c).contains(&connects),
        "{connects} connections for {ok} answers, {n} each over {c}: {s}"
    );
    if let Some(h) = s.get("handshakes") {
        assert_eq!(h["count"], connects, "{s}");
    }
}

#[test]
fn https_counts_handshakes_and_churn_opens_a_connection_every_n_answers() {
    let pki = Pki::new();
    let port = server(&pki, Peer::Serve);
    let url = format!("https://localhost:{port}/");
    let ca = pki.ca();
    // Kept alive: one handshake a connection.
    let (records, _) = schema_checked_records(&[
        "--format",
        "jsonl",
        "-c",
        "4",
        "-n",
        "400",
        "--ca-file",
        &ca,
        &url,
    ]);
    let s = summary(&records);
    assert_eq!(s["ok"], 400, "{s}");
    assert_eq!(s["errors"]["tls"], 0, "{s}");
    assert_eq!(s["handshakes"]["count"], 4, "{s}");
    assert!(s["handshakes"]["mean_us"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(s["connects"], 4, "{s}");
    assert!(
        s["tls_version"].as_str().unwrap().starts_with("TLSv1_"),
        "{s}"
    );
    assert!(s["tls_cipher"].as_str().unwrap().starts_with("TLS"), "{s}");
    assert!(records[..records.len() - 1]
        .iter()
        .all(|r| r["handshakes"]["count"].is_u64()));
    // Churn: a new connection, and handshake, every 10 answers.
    let (records, _) = schema_checked_records(&[
        "--format",
        "jsonl",
        "-c",
        "4",
        "-n",
        "400",
        "--requests-per-connection",
        "10",
        "--ca-file",
        &ca,
        &url,
    ]);
    let s = summary(&records);
    assert_eq!(s["ok"], 400, "{s}");
    churned(s, 10, 4);
    // The open model under churn: each new connection's handshake is in
    // its request's latency, and the churn holds (as many answers as the
    // machine allows: its speed is not what is tested).
    let (records, _) = schema_checked_records(&[
        "--format",
        "jsonl",
        "-c",
        "4",
        "--rate",
        "400",
        "-d",
        "1s",
        "--requests-per-connection",
        "5",
        "--insecure",
        &url,
    ]);
    let s = summary(&records);
    assert_eq!(s["errors"]["tls"], 0, "{s}");
    assert!(s["ok"].as_u64().unwrap() > 0, "{s}");
    churned(s, 5, 4);
}

#[test]
fn plain_http_churn_counts_connections_too() {
    let server = support::TestServer::start(support::Behaviour::Ok);
    let (records, _) = schema_checked_records(&[
        "--format",
        "jsonl",
        "-c",
        "2",
        "-n",
        "100",
        "--requests-per-connection",
        "25",
        &server.url(),
    ]);
    let s = summary(&records);
    assert_eq!(s["ok"], 100, "{s}");
    churned(s, 25, 2);
    assert!(s.get("handshakes").is_none(), "{s}");
}

/// Runs loadgen for about a second against `url`; it must end within 5 s,
/// exit 1 with one line, and count `tls` errors and no success.
fn refused(args: &[&str]) -> serde_json::Value {
    let started = Instant::now();
    let mut all = vec![
        "--format",
        "jsonl",
        "-c",
        "2",
        "-d",
        "1s",
        "--timeout",
        "300ms",
    ];
    all.extend_from_slice(args);
    let (code, out, err) = loadgen(&all);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{args:?} took {:?}",
        started.elapsed()
    );
    assert_eq!(code, Some(1), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no request succeeded"), "{err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], 0, "{last}");
    assert!(
        last["errors"]["tls"].as_u64().unwrap() > 0,
        "{args:?}: {last}"
    );
    last
}

#[test]
fn handshakes_that_go_wrong_are_counted_errors_and_a_clean_exit() {
    let pki = Pki::new();
    let serving = server(&pki, Peer::Serve);
    // A CA loadgen does not trust (the system's roots only).
    refused(&[&format!("https://localhost:{serving}/")]);
    // Trusted, but the certificate names localhost, not 127.0.0.1.
    refused(&[
        "--ca-file",
        &pki.ca(),
        &format!("https://127.0.0.1:{serving}/"),
    ]);
    // The peer closes after the client's hello.
    let closing = server(&pki, Peer::CloseInHandshake);
    refused(&["--insecure", &format!("https://localhost:{closing}/")]);
    // The peer never answers the hello: the handshake times out.
    let silent = server(&pki, Peer::Silent);
    refused(&["--insecure", &format!("https://localhost:{silent}/")]);
}

/// nginx ending TLS with `pki`'s certificate, answering `return 200`, on a
/// loopback port, in its own prefix; killed on drop.
struct Nginx {
    child: Child,
    port: u16,
    _prefix: tempfile::TempDir,
}

impl Drop for Nginx {
    /// SIGTERM to nginx's process group (master and workers: a master
    /// killed alone leaves its workers behind), then SIGKILL to what is left.
    fn drop(&mut self) {
        let group = self.child.id() as i32;
        // SAFETY: kill(2) on the process group our own child leads.
        unsafe { libc::kill(-group, libc::SIGTERM) };
        let _ = self.child.wait();
        // SAFETY: as above.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
}

fn nginx_binary() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("nginx is missing: install it (apt-get install nginx-light, or scripts/test installs it)")
}

fn nginx(pki: &Pki) -> Nginx {
    let prefix = tempfile::tempdir().unwrap();
    for d in ["logs", "tmp"] {
        std::fs::create_dir_all(prefix.path().join(d)).unwrap();
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pem = |f: &str| pki.dir.path().join(f).display().to_string();
    let p = prefix.path().display();
    let conf = format!(
        "worker_processes 1;\npid {p}/nginx.pid;\nerror_log {p}/error.log warn;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {p}/tmp;\n  proxy_temp_path {p}/tmp;\n\
         fastcgi_temp_path {p}/tmp;\n  uwsgi_temp_path {p}/tmp;\n  scgi_temp_path {p}/tmp;\n\
         server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {};\n    ssl_certificate_key {};\n\
         location / {{ return 200 \"ok\"; }}\n  }}\n}}\n",
        pem("server.pem"),
        pem("key.pem")
    );
    let conf_path = prefix.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(nginx_binary())
        .arg("-p")
        .arg(prefix.path())
        .arg("-c")
        .arg(&conf_path)
        .args(["-e", "stderr", "-g", "daemon off;"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let up = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < up, "nginx did not start on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Nginx {
        child,
        port,
        _prefix: prefix,
    }
}

#[test]
fn against_nginx_ending_tls_with_and_without_churn() {
    let pki = Pki::new();
    let n = nginx(&pki);
    let url = format!("https://localhost:{}/", n.port);
    let ca = pki.ca();
    for per_conn in [None, Some("10")] {
        let mut args = vec![
            "--format",
            "jsonl",
            "-c",
            "4",
            "-n",
            "600",
            "--ca-file",
            &ca,
        ];
        if let Some(k) = per_conn {
            args.extend(["--requests-per-connection", k]);
        }
        args.push(&url);
        let (records, _) = schema_checked_records(&args);
        let s = summary(&records);
        assert_eq!(s["ok"], 600, "{s}");
        match per_conn {
            None => assert_eq!(s["connects"], 4, "{s}"),
            Some(_) => churned(s, 10, 4),
        }
        assert_eq!(s["handshakes"]["count"], s["connects"], "{s}");
        assert!(s["tls_version"].is_string(), "{s}");
    }
}
