//! The mmap-backend counter: survives a clean restart and a kill -9, and a
//! file that is not a counter file stops the server at start-up untouched.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use conformance::{sets, Conn, Framework, Server, Variant};

fn file_count(path: &std::path::Path) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len(), 16);
    assert_eq!(&bytes[..8], b"SHOOTCN1");
    u64::from_le_bytes(bytes[8..].try_into().unwrap())
}

#[test]
fn count_survives_a_clean_restart() {
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::PERSISTENT);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("count");
        let flag = ["--counter-file", file.to_str().unwrap()];

        let server = Server::start(&variant, &flag);
        assert_eq!(server.conn().post(b"500").unwrap().text(), "500");
        assert_eq!(server.conn().post(b"42").unwrap().text(), "542");
        assert!(server.stop().status.success());
        assert_eq!(file_count(&file), 542);

        let server = Server::start(&variant, &flag);
        assert_eq!(server.conn().get().unwrap().text(), "542", "{fw:?}");
        assert_eq!(server.conn().post(b"1").unwrap().text(), "543");
        assert!(server.stop().status.success());
    }
}

/// Clients POST until the server is killed with SIGKILL mid-load. Every value
/// answered with 200 is in the file; at most the requests that were in flight
/// without an answer may also be in it.
#[test]
fn every_acknowledged_increment_survives_kill_9() {
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::PERSISTENT);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("count");
        let flag = ["--counter-file", file.to_str().unwrap()];
        let server = Server::start(&variant, &flag);

        let acked = Arc::new(AtomicU64::new(0));
        let unanswered = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..4u64)
            .map(|c| {
                let (addr, acked, unanswered, stop) =
                    (server.addr, acked.clone(), unanswered.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut conn = Conn::open(addr).unwrap();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) && i < 100_000 {
                        let value = (c * 7 + i) % 500 + 1;
                        i += 1;
                        match conn.post(value.to_string().as_bytes()) {
                            Ok(res) if res.status == 200 => {
                                acked.fetch_add(value, Ordering::SeqCst);
                            }
                            Ok(res) => panic!("unexpected {res:?}"),
                            Err(_) => {
                                unanswered.fetch_add(value, Ordering::SeqCst);
                                return;
                            }
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(700));
        let exit = server.kill9();
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            c.join().unwrap();
        }
        assert!(!exit.status.success());
        let (acked, unanswered) = (
            acked.load(Ordering::SeqCst),
            unanswered.load(Ordering::SeqCst),
        );
        let on_disk = file_count(&file);
        assert!(acked > 0, "{fw:?}: no request was answered before the kill");
        assert!(
            on_disk >= acked && on_disk <= acked + unanswered,
            "{fw:?}: file holds {on_disk}, acknowledged {acked}, unanswered {unanswered}"
        );

        let server = Server::start(&variant, &flag);
        assert_eq!(server.conn().get().unwrap().text(), on_disk.to_string());
    }
}

#[test]
fn a_file_that_is_not_a_counter_stops_start_up_untouched() {
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::PERSISTENT);
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in [
            ("short", &b"123"[..]),
            ("magic", &[9u8; 16][..]),
            ("long", &[0u8; 17][..]),
        ] {
            let file = dir.path().join(name);
            std::fs::write(&file, content).unwrap();
            let err = Server::try_start(&variant, &["--counter-file", file.to_str().unwrap()])
                .err()
                .unwrap_or_else(|| panic!("{fw:?} started on a bad {name} file"));
            assert!(
                err.contains("not a shootout counter file"),
                "{fw:?} {name}: {err}"
            );
            assert!(err.contains("exit status: 1"), "{fw:?} {name}: {err}");
            assert_eq!(
                std::fs::read(&file).unwrap(),
                content,
                "{fw:?} {name}: file changed"
            );
        }
    }
}

#[test]
fn two_servers_cannot_share_a_counter_file() {
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::PERSISTENT);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("count");
        let flag = ["--counter-file", file.to_str().unwrap()];
        let _first = Server::start(&variant, &flag);
        let err = Server::try_start(&variant, &flag)
            .err()
            .expect("second server started");
        assert!(err.contains("in use by another process"), "{fw:?}: {err}");
    }
}
