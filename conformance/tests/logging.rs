//! Each log sink writes exactly one access line per request.

use conformance::{sets, Framework, Server, Variant};

const GETS: usize = 40;
const POSTS: usize = 60;

/// Sends the requests on one connection and returns how many of each kind.
fn drive(server: &Server) {
    let mut conn = server.conn();
    for _ in 0..GETS {
        assert_eq!(conn.get().unwrap().status, 200);
    }
    for _ in 0..POSTS {
        assert_eq!(conn.post(b"1").unwrap().status, 200);
    }
}

fn count_access_lines(log: &str, fw: Framework) {
    let gets = log
        .lines()
        .filter(|l| l.contains("\"GET / HTTP/1.1\" 200"))
        .count();
    let posts = log
        .lines()
        .filter(|l| l.contains("\"POST / HTTP/1.1\" 200"))
        .count();
    assert_eq!((gets, posts), (GETS, POSTS), "{fw:?} log:\n{log}");
}

#[test]
fn stdout_sink_writes_one_access_line_per_request() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::PERSISTENT), &[]);
        drive(&server);
        let exit = server.stop();
        assert!(exit.status.success());
        count_access_lines(&String::from_utf8_lossy(&exit.stdout), fw);
    }
}

#[test]
fn file_sink_writes_one_access_line_per_request_by_shutdown() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::TUNED), &[]);
        drive(&server);
        let exit = server.stop();
        assert!(exit.status.success());
        assert!(exit.stdout.is_empty(), "file sink wrote to stdout");
        let log = std::fs::read_to_string(exit.dir.path().join("access.log")).unwrap();
        count_access_lines(&log, fw);
    }
}

#[test]
fn builds_without_a_log_feature_log_nothing() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::DEFAULT), &[]);
        drive(&server);
        let exit = server.stop();
        assert!(
            exit.stdout.is_empty(),
            "{fw:?}: {:?}",
            String::from_utf8_lossy(&exit.stdout)
        );
        assert_eq!(
            exit.stderr.len(),
            1,
            "{fw:?}: only the start-up line: {:?}",
            exit.stderr
        );
    }
}
