//! `alloc-reclaim`: when the server's open connections return to zero, ask
//! the allocator to give freed memory back ([`crate::alloc::reclaim`]), at
//! most once a second, and say so on stderr:
//!
//! `actix-server reclaim allocator=glibc call=malloc_trim(0) rss_before_kib=103412 rss_after_kib=5120 took_us=812`
//!
//! The open connections are counted the same way for both frameworks, from
//! outside them: once a second a thread walks `/proc/self/fd` and counts the
//! TCP sockets whose local port is the server's and which are not
//! listening (one `getsockname` per descriptor, so about 10,000 system calls
//! a second while 10,000 connections are open: a few milliseconds of CPU).
//! A connection that opens and closes between two looks is not seen; the
//! next return to zero after one that is seen reclaims.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How often the connections are counted; also the least time between two
/// reclaims.
pub const PERIOD: Duration = Duration::from_secs(1);

/// Accepted TCP connections open in this process on `port`.
pub fn open_connections(port: u16) -> std::io::Result<usize> {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Some(fd) = entry?
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if local_port(fd) == Some(port) && !is_listening(fd) {
            n += 1;
        }
    }
    Ok(n)
}

/// The local port of `fd` if it is an IPv4 or IPv6 socket.
fn local_port(fd: i32) -> Option<u16> {
    // SAFETY: an all-zero sockaddr_storage is valid; getsockname writes at
    // most `len` bytes into it and fails harmlessly on a descriptor that is
    // not a socket (or was closed since the directory was read).
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let rc = unsafe { libc::getsockname(fd, (&raw mut addr).cast(), &mut len) };
    if rc != 0 {
        return None;
    }
    match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(&raw const addr).cast() };
            Some(u16::from_be(a.sin_port))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(&raw const addr).cast() };
            Some(u16::from_be(a.sin6_port))
        }
        _ => None,
    }
}

fn is_listening(fd: i32) -> bool {
    let mut on: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_ACCEPTCONN writes one c_int.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&raw mut on).cast(),
            &mut len,
        )
    };
    rc == 0 && on != 0
}

/// Decides when to reclaim from successive connection counts: after the
/// count was above zero and is zero again, once per [`PERIOD`] at most.
#[derive(Debug, Default)]
pub struct Trigger {
    busy_since_reclaim: bool,
    last: Option<Instant>,
}

impl Trigger {
    /// Feeds one count taken at `now`; true when it is time to reclaim.
    pub fn observe(&mut self, open: usize, now: Instant) -> bool {
        if open > 0 {
            self.busy_since_reclaim = true;
            return false;
        }
        let rested = self.last.is_none_or(|t| now.duration_since(t) >= PERIOD);
        if self.busy_since_reclaim && rested {
            self.busy_since_reclaim = false;
            self.last = Some(now);
            return true;
        }
        false
    }
}

/// Starts the watcher thread for a server listening on `addr`.
pub fn spawn(binary: &'static str, addr: SocketAddr) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("reclaim".into())
        .spawn(move || {
            let mut trigger = Trigger::default();
            loop {
                std::thread::sleep(PERIOD);
                let open = match open_connections(addr.port()) {
                    Ok(n) => n,
                    Err(e) => {
                        eprintln!(
                            "{binary}: reclaim: cannot count connections: {e}; reclaim is off"
                        );
                        return;
                    }
                };
                if trigger.observe(open, Instant::now()) {
                    eprintln!("{}", reclaim_line(binary));
                }
            }
        })
        .map(drop)
}

fn reclaim_line(binary: &str) -> String {
    let before = crate::alloc::rss_kib();
    let started = Instant::now();
    let outcome = crate::alloc::reclaim();
    let took = started.elapsed().as_micros();
    let after = crate::alloc::rss_kib();
    let kib = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
    let error = outcome
        .err()
        .map_or(String::new(), |e| format!(" error={e:?}"));
    format!(
        "{binary} reclaim allocator={} call={} rss_before_kib={} rss_after_kib={} took_us={took}{error}",
        crate::alloc::NAME,
        crate::alloc::RECLAIM_CALL,
        kib(before),
        kib(after),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reclaims_once_per_return_to_zero() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut t = Trigger::default();
        assert!(
            !t.observe(0, at(1)),
            "idle from the start: nothing to give back"
        );
        assert!(!t.observe(5, at(2)));
        assert!(t.observe(0, at(3)), "back to zero");
        assert!(!t.observe(0, at(4)), "still zero: once only");
        assert!(!t.observe(3, at(5)));
        assert!(t.observe(0, at(6)));
    }

    #[test]
    fn at_most_once_a_second() {
        let t0 = Instant::now();
        let mut t = Trigger::default();
        assert!(!t.observe(1, t0));
        assert!(t.observe(0, t0 + Duration::from_millis(100)));
        assert!(!t.observe(1, t0 + Duration::from_millis(200)));
        assert!(!t.observe(0, t0 + Duration::from_millis(300)), "too soon");
        assert!(t.observe(0, t0 + Duration::from_millis(1100)), "rested");
    }

    #[test]
    fn counts_accepted_connections_not_the_listener() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(open_connections(port).unwrap(), 0);
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let accepted: Vec<_> = (0..3).map(|_| listener.accept().unwrap().0).collect();
        // The clients' sockets have other local ports; the accepted ones count.
        assert_eq!(open_connections(port).unwrap(), 3);
        drop(accepted);
        assert_eq!(open_connections(port).unwrap(), 0);
        drop(clients);
    }
}
