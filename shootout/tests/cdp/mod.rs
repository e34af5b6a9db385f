//! Headless chromium driven over the DevTools protocol through its
//! `--remote-debugging-pipe` (JSON messages, each ended by a NUL byte, in
//! on fd 3, out on fd 4), for the browser test.
//!
//! Written here rather than taken from a crate: the test needs five
//! commands and three events, and headless_chrome (the crate it used) cost
//! about 100 s of one core to build on every clean test run (its generated
//! protocol types alone 57 s, then ureq, rustls and ring for its build
//! script), measured with `cargo build --timings` on the 2-core machine
//! where the test command's time is the maintainer's open issue. A pipe
//! needs no websocket, no port and no extra crate.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

/// A chromium started headless, killed when dropped. Every call waits for
/// its answer; a browser that stops answering is killed by a watchdog
/// after `limit`, which ends the wait with a panic, not a hang.
pub struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: BufReader<std::io::PipeReader>,
    next_id: u64,
    done: Arc<AtomicBool>,
    _profile: tempfile::TempDir,
}

/// A page target, attached in flat mode: its commands carry its session.
pub struct Tab {
    session: String,
    /// Console errors and warnings, uncaught exceptions and failed loads
    /// the page reported, as they arrived.
    pub errors: Vec<String>,
}

impl Browser {
    pub fn launch(chromium: &Path, limit: Duration) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = std::io::pipe().unwrap();
        let (out_r, out_w) = std::io::pipe().unwrap();
        let (cmd_fd, out_fd) = (cmd_r.as_raw_fd(), out_w.as_raw_fd());
        let mut command = Command::new(chromium);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--remote-debugging-pipe",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: fcntl and dup2 are async-signal-safe. The pipe's ends are
        // first copied above 9 (so that neither is 3 or 4 already, where
        // dup2 would keep close-on-exec or overwrite the other), then put
        // where chromium's pipe mode reads (3) and writes (4).
        unsafe {
            command.pre_exec(move || {
                let a = libc::fcntl(cmd_fd, libc::F_DUPFD, 10);
                let b = libc::fcntl(out_fd, libc::F_DUPFD, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium starts headless");
        drop((cmd_r, out_w));
        let done = Arc::new(AtomicBool::new(false));
        let (pid, flag) = (child.id() as libc::pid_t, done.clone());
        std::thread::spawn(move || {
            let step = Duration::from_millis(100);
            let mut waited = Duration::ZERO;
            while waited < limit {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(step);
                waited += step;
            }
            if !flag.load(Ordering::Relaxed) {
                // SAFETY: kill(2) on the child's pid, which is not reaped
                // before `done` is set.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        });
        Browser {
            child,
            to: cmd_w,
            from: BufReader::new(out_r),
            next_id: 0,
            done,
            _profile: profile,
        }
    }

    /// Sends `method` (to `tab`'s session, if any) and returns its result;
    /// the events that arrive meanwhile are given to `tab`.
    pub fn call(&mut self, mut tab: Option<&mut Tab>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(t) = &tab {
            msg["sessionId"] = json!(t.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("chromium takes a command");
        loop {
            let m = self.next_message(method);
            if m["id"] == id {
                assert!(m["error"].is_null(), "{method}: {}", m["error"]);
                return m["result"].clone();
            }
            if let Some(t) = tab.as_deref_mut() {
                t.take(&m);
            }
        }
    }

    /// Waits for `event` on `tab`'s session, giving it every event before.
    pub fn wait_for(&mut self, tab: &mut Tab, event: &str) {
        loop {
            let m = self.next_message(event);
            tab.take(&m);
            if m["method"] == event && m["sessionId"] == tab.session.as_str() {
                return;
            }
        }
    }

    fn next_message(&mut self, waiting_for: &str) -> Value {
        let mut buf = Vec::new();
        let n = self.from.read_until(0, &mut buf).unwrap();
        assert!(
            n > 0 && buf.last() == Some(&0),
            "chromium closed its pipe (or the watchdog killed it) waiting for {waiting_for}"
        );
        buf.pop();
        serde_json::from_slice(&buf).unwrap()
    }

    /// A new page target, `width` x 900 px (a phone's below 600: a headless
    /// window cannot be narrower than 500 px, so the width is emulated, as
    /// DevTools' device mode does), with its console, log and page events on.
    pub fn new_tab(&mut self, width: u32) -> Tab {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        let mut tab = Tab {
            session: attached["sessionId"].as_str().unwrap().to_string(),
            errors: Vec::new(),
        };
        let metrics = json!({
            "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600
        });
        self.call(
            Some(&mut tab),
            "Emulation.setDeviceMetricsOverride",
            metrics,
        );
        for domain in ["Log", "Runtime", "Page"] {
            self.call(Some(&mut tab), &format!("{domain}.enable"), json!({}));
        }
        tab
    }

    /// Opens `url` in `tab` and waits for its load event.
    pub fn navigate(&mut self, tab: &mut Tab, url: &str) {
        let r = self.call(Some(tab), "Page.navigate", json!({ "url": url }));
        assert!(r["errorText"].is_null(), "{url}: {}", r["errorText"]);
        self.wait_for(tab, "Page.loadEventFired");
    }

    /// Evaluates `js` in `tab`; its value must be a string.
    pub fn evaluate(&mut self, tab: &mut Tab, js: &str) -> String {
        let r = self.call(
            Some(tab),
            "Runtime.evaluate",
            json!({ "expression": js, "returnByValue": true }),
        );
        assert!(r["exceptionDetails"].is_null(), "{}", r["exceptionDetails"]);
        r["result"]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("not a string: {}", r["result"]))
            .to_string()
    }

    /// `tab`'s whole page as PNG bytes.
    pub fn screenshot(&mut self, tab: &mut Tab) -> Vec<u8> {
        use base64::Engine;
        let r = self.call(
            Some(tab),
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        );
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap()
    }
}

impl Tab {
    /// Keeps what the page reports as a problem: console errors, warnings
    /// and failed assertions, log entries at error or warning (failed
    /// loads among them) and uncaught exceptions.
    fn take(&mut self, m: &Value) {
        if m["sessionId"] != self.session.as_str() {
            return;
        }
        let p = &m["params"];
        let problem = match m["method"].as_str() {
            Some("Log.entryAdded") => {
                let level = p["entry"]["level"].as_str().unwrap_or("");
                matches!(level, "error" | "warning")
                    .then(|| format!("log {level}: {}", p["entry"]["text"]))
            }
            Some("Runtime.consoleAPICalled") => {
                let kind = p["type"].as_str().unwrap_or("");
                matches!(kind, "error" | "warning" | "assert").then(|| format!("console {kind}"))
            }
            Some("Runtime.exceptionThrown") => {
                Some(format!("exception: {}", p["exceptionDetails"]["text"]))
            }
            _ => None,
        };
        self.errors.extend(problem);
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
