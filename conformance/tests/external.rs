//! Servers from elsewhere that claim the twins' contract (`examples/`): Go's
//! net/http and Python's http.server, each held to the same conversation
//! as the twins (`conformance::cases`): every status, body, content type
//! and `Allow`, byte for byte, on one keep-alive connection.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use conformance::cases::text_cases;
use conformance::{workspace_root, Conn};

/// A server process, killed on drop.
struct External(Child, SocketAddr);

impl Drop for External {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `argv` with `--port P` and waits, 20 s at most, until it accepts.
fn start(argv: &[String]) -> External {
    let port = free_port();
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .args(["--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", argv[0]));
    let mut server = External(child, SocketAddr::from(([127, 0, 0, 1], port)));
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(server.1).is_err() {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "{} exited at start",
            argv[0]
        );
        assert!(Instant::now() < deadline, "{} never listened", argv[0]);
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Plays the twins' conversation against `argv`'s server.
fn holds_the_contract(argv: &[String]) {
    let server = start(argv);
    let mut conn = Conn::open(server.1).unwrap();
    for case in text_cases() {
        conn.send(&case.raw).unwrap();
        let res = conn
            .read_response(false)
            .unwrap_or_else(|e| panic!("{}: {}: {e}", argv[0], case.name));
        let what = format!("{} {}: {res:?}", argv[0], case.name);
        assert_eq!(res.status, case.status, "{what}");
        if let Some(body) = &case.body {
            assert_eq!(&res.body, body, "{what}");
        }
        assert_eq!(res.header("content-type"), Some("text/plain"), "{what}");
        let allow = (res.status == 405).then_some("GET, POST");
        assert_eq!(res.header("allow"), allow, "{what}");
        let len: usize = res.header("content-length").unwrap().parse().unwrap();
        assert_eq!(len, res.body.len(), "{what}");
        if res.header("connection") == Some("close") {
            conn = Conn::open(server.1).unwrap();
        }
    }
}

/// `go build` of the Go example into `target/examples/` (the module has no
/// dependencies: nothing is fetched).
fn go_counter() -> PathBuf {
    let root = workspace_root();
    let out = root.join("target/examples/go-counter");
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(root.join("examples/go-counter"))
        .status()
        .expect("go is missing: `scripts/test` installs it as root (package golang-go)");
    assert!(status.success(), "go build failed");
    out
}

#[test]
fn go_net_http_holds_the_twins_contract() {
    holds_the_contract(&[go_counter().display().to_string()]);
}

#[test]
fn python_http_server_holds_the_twins_contract() {
    let script = workspace_root().join("examples/python-counter/counter.py");
    assert!(Path::new(&script).is_file());
    holds_the_contract(&["python3".into(), script.display().to_string()]);
}
