//! A run interrupted at each stage (build, start, verify, measure, record),
//! and a run whose results directory fills up or turns read-only while it
//! writes: a clear exit, nothing left running (processes, namespaces), no
//! temporary or partial file, and every file that stays is whole. Dev
//! builds; needs root (the row crosses network namespaces; tmpfs mounts).
//!
//! The run is stopped at a stage with `SHOOTOUT_HOLD_AT` (see
//! `src/hold_at.rs`): SIGINT there interrupts it at that very point,
//! SIGUSR1 lets it go on (after the disk was filled, say).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod support;
use support::{leftovers, namespaces_of, root, tagged};

/// One run at a time (the machine, the mounts).
static SERIAL: Mutex<()> = Mutex::new(());

/// One row across network namespaces: a server, a loadgen, namespaces and
/// veths to leave behind if anything goes wrong.
const SCENARIO: &str =
    "[defaults]\nwarmup = \"0s\"\nduration = \"2s\"\ninterval = \"250ms\"\nconnections = 4\n\
workers = 1\nrequest = \"post\"\n\n[[scenario]]\nname = \"row\"\nserver = \"ntex\"\n\
topology = \"netns\"\n";

struct Run {
    child: Child,
    /// stderr lines as they come.
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Run {
    /// `shootout run` of [`SCENARIO`] into `out`, in its own process group
    /// (as a shell's job: SIGINT to the group is a terminal's Ctrl-C).
    fn start(dir: &Path, out: &Path, hold_at: &str) -> Run {
        Run::of(dir, "stages.toml", SCENARIO, out, hold_at)
    }

    /// `shootout run` of scenario `text` (as `dir/name`) into `out`.
    fn of(dir: &Path, name: &str, text: &str, out: &Path, hold_at: &str) -> Run {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let mut child = tagged(&mut Command::new(env!("CARGO_BIN_EXE_shootout")))
            .args(["run", "--build-profile", "dev", "--out"])
            .arg(out)
            .arg(&file)
            .current_dir(root())
            .env("SHOOTOUT_HOLD_AT", hold_at)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Run {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for the "holding at stage" line (the first build may take
    /// minutes).
    fn wait_held(&mut self, stage: &str) {
        let want = format!("holding at stage {stage} ");
        let deadline = Instant::now() + Duration::from_secs(600);
        while Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => {
                    let found = l.contains(&want);
                    self.seen.push(l);
                    if found {
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("never held at {stage}: {:#?}", self.seen);
    }

    fn signal_group(&self, sig: i32) {
        // SAFETY: kill(2) on the process group of our own child.
        unsafe { libc::kill(-(self.child.id() as i32), sig) };
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Its exit code, which must come within 60 s, and all its stderr.
    fn finish(mut self) -> (Option<i32>, Vec<String>) {
        let started = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "shootout did not end: {:#?}",
                self.seen
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        (status.code(), self.seen)
    }
}

/// The run directories under `out`.
fn runs(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// Every file under `dir`, recursively: on disk, and the raw records
/// packed in a run's `raw.tar.xz` by the paths they were written at.
fn files(dir: &Path) -> Vec<PathBuf> {
    analysis::input::raw::walk(dir)
}

/// Fails on a temporary or partial file, and on any file that is not whole:
/// JSON that does not parse, a jsonl with a broken line or (a loadgen log)
/// without its summary last, TOML that does not parse, a page or chart
/// without its closing tag.
fn assert_whole(out: &Path) {
    for f in runs(out).iter().flat_map(|r| files(r)) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".partial") && !name.ends_with(".tmp"),
            "left behind: {}",
            f.display()
        );
        if name == analysis::input::raw::ARCHIVE {
            // The archive reads whole (its records are checked one by one).
            analysis::input::raw::packed(f.parent().unwrap()).unwrap();
            continue;
        }
        // A gzip'd file (meta.json.gz) is checked as what it holds.
        let (name, text) = match name.strip_suffix(".gz") {
            Some(plain) => {
                let bytes = analysis::input::raw::gunzip(&std::fs::read(&f).unwrap()).unwrap();
                (plain.to_string(), String::from_utf8(bytes).unwrap())
            }
            None => (name, analysis::input::raw::read_to_string(&f).unwrap()),
        };
        let whole = if name.ends_with(".jsonl") {
            let lines: Vec<serde_json::Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}")))
                .collect();
            let last = lines.last().map(|v| v["type"].clone());
            text.ends_with('\n')
                && (name.ends_with(".cpu.jsonl")
                    || last.is_some_and(|t| t == "summary" || t == "hold_summary"))
        } else if name.ends_with(".json") {
            serde_json::from_str::<serde_json::Value>(&text).is_ok()
        } else if name.ends_with(".toml") {
            text.parse::<toml::Table>().is_ok()
        } else if name.ends_with(".svg") {
            text.trim_end().ends_with("</svg>")
        } else if name.ends_with(".html") {
            text.trim_end().ends_with("</html>")
        } else {
            !text.is_empty()
        };
        assert!(whole, "not whole: {}\n{text}", f.display());
    }
}

/// Waits (30 s at most) until a loadgen log under `out` holds a first
/// record: loadgen writes records only once SIGINT is its to handle.
fn wait_first_record(out: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let started = runs(out).iter().flat_map(|r| files(r)).any(|f| {
            f.to_string_lossy().ends_with(".jsonl.partial")
                && std::fs::read_to_string(&f).is_ok_and(|t| t.contains('\n'))
        });
        if started {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("loadgen wrote no record under {}", out.display());
}

fn assert_nothing_left(out: &Path, pid: u32) {
    assert!(leftovers(out).is_empty(), "{:?}", leftovers(out));
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
}

#[test]
fn sigint_at_each_stage_leaves_nothing_running_and_no_half_file() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for stage in shootout::hold_at::STAGES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut run = Run::start(dir.path(), &out, stage);
        let pid = run.child.id();
        run.wait_held(stage);
        if stage == "measure" {
            // A Ctrl-C before loadgen has installed its handler kills it
            // (its partial log is then removed, as it should be); this
            // stage checks the other case, a loadgen that is running.
            wait_first_record(&out);
        }
        run.signal_group(libc::SIGINT);
        let (code, stderr) = run.finish();
        assert_eq!(code, Some(130), "{stage}: {stderr:#?}");
        assert_nothing_left(&out, pid);
        assert_whole(&out);
        let runs = runs(&out);
        if stage == "build" {
            // Nothing was measured: no run directory at all.
            assert!(runs.is_empty(), "{stage}: {runs:?}");
            continue;
        }
        assert_eq!(runs.len(), 1, "{stage}");
        let meta: serde_json::Value = serde_json::from_slice(
            &analysis::input::raw::read(&runs[0].join("meta.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(meta["interrupted"], true, "{stage}: {meta}");
        let row = &meta["rows"][0];
        let log = runs[0].join("stages/row.jsonl");
        match stage {
            // Interrupted before the load: the row says so, no log.
            "start" | "verify" => {
                assert_eq!(row["error"], "interrupted", "{stage}: {row}");
                assert!(!analysis::input::raw::is_file(&log), "{stage}");
            }
            // loadgen stopped by the SIGINT and wrote its summary: kept.
            "measure" => {
                assert_eq!(row["error"], "interrupted", "{stage}: {row}");
                assert!(
                    analysis::input::raw::is_file(&log),
                    "{stage}: {row} {:?}",
                    files(&runs[0])
                );
            }
            // The row had finished; the run stops before the next unit.
            _ => {
                assert!(row["error"].is_null(), "{stage}: {row}");
                assert!(analysis::input::raw::is_file(&log), "{stage}");
            }
        }
    }
}

/// A paired row whose server is moved off its CPUs once it is up: the
/// runner reads every thread's CPUs back, refuses the block (no raw file
/// under its final name), says why, and leaves nothing running.
#[test]
fn a_block_whose_server_left_its_cpus_is_not_recorded() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = "design = \"paired\"\nbaseline = \"a\"\n[paired]\nblock = \"2s\"\nsettle = \"1s\"\nblocks = 4\n\
                [defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\nconnections = 4\nworkers = 1\n\
                [[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\n";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut run = Run::of(dir.path(), "moved.toml", text, &out, "verify");
    let pid = run.child.id();
    run.wait_held("verify");
    // The first stack is up: move every thread of the runner's children
    // (the server's session) to CPU 0.
    move_children_to_cpu0(pid);
    run.signal(libc::SIGUSR1);
    let (code, stderr) = run.finish();
    assert_ne!(code, Some(0), "{stderr:#?}");
    let runs = runs(&out);
    assert_eq!(runs.len(), 1);
    let meta: serde_json::Value =
        serde_json::from_slice(&analysis::input::raw::read(&runs[0].join("meta.json")).unwrap())
            .unwrap();
    let error = meta["paired"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the server runs on CPUs 0 where the scenario says 1: not recorded"),
        "{meta}"
    );
    let raw: Vec<PathBuf> = files(&runs[0])
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .collect();
    assert!(raw.is_empty(), "{raw:?}");
    assert_nothing_left(&out, pid);
}

/// The same in the sequential design: a row whose server left its CPUs
/// (moved while the runner holds before verifying) fails before its load,
/// says why, and leaves no raw log.
#[test]
fn a_sequential_row_whose_server_left_its_cpus_fails_before_its_load() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = "[defaults]\nduration = \"2s\"\nwarmup = \"0s\"\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n\
                connections = 4\nworkers = 1\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut run = Run::of(dir.path(), "moved-seq.toml", text, &out, "verify");
    let pid = run.child.id();
    run.wait_held("verify");
    move_children_to_cpu0(pid);
    run.signal(libc::SIGUSR1);
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(1), "{stderr:#?}");
    let runs = runs(&out);
    assert_eq!(runs.len(), 1);
    let meta: serde_json::Value =
        serde_json::from_slice(&analysis::input::raw::read(&runs[0].join("meta.json")).unwrap())
            .unwrap();
    let error = meta["rows"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the server runs on CPUs 0 where the scenario says 1: not recorded"),
        "{meta}"
    );
    let raw: Vec<PathBuf> = files(&runs[0])
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .collect();
    assert!(raw.is_empty(), "{raw:?}");
    assert_nothing_left(&out, pid);
}

/// Moves every thread of `pid`'s children (a held runner's server
/// session) to CPU 0.
fn move_children_to_cpu0(pid: u32) {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    assert!(!children.trim().is_empty(), "no server started");
    for child in children.split_whitespace() {
        let ok = Command::new("taskset")
            .args(["-a", "-p", "-c", "0", child])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

/// A tmpfs of `kib` at a new directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(kib: u64) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "mount tmpfs (this test needs root)");
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills it up: writes until the disk says no.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
    }

    fn remount_read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_every_file_is_whole() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Full while loadgen streams its log: the row fails with loadgen's own
    // words; nothing half-written stays.
    for (stage, want) in [
        ("measure", "No space left on device"),
        ("record", "No space left on device"),
    ] {
        let disk = Tmpfs::mount(1024);
        let dir = tempfile::tempdir().unwrap();
        let out = disk.path().join("out");
        let mut run = Run::start(dir.path(), &out, stage);
        let pid = run.child.id();
        run.wait_held(stage);
        disk.fill();
        run.signal(libc::SIGUSR1);
        let (code, stderr) = run.finish();
        assert_eq!(code, Some(1), "{stage}: {stderr:#?}");
        let last = stderr.last().cloned().unwrap_or_default();
        assert!(
            last.starts_with("shootout: ") && stderr.iter().any(|l| l.contains(want)),
            "{stage}: {stderr:#?}"
        );
        std::fs::remove_file(disk.path().join("filler")).unwrap();
        assert_nothing_left(&out, pid);
        assert_whole(&out);
        if stage == "record" {
            // The row was measured before the disk filled: its raw log
            // stays, whole, though meta.json could not be written.
            let runs = runs(&out);
            assert_eq!(runs.len(), 1);
            assert!(analysis::input::raw::is_file(
                &runs[0].join("stages/row.jsonl")
            ));
        }
    }
}

#[test]
fn a_read_only_results_directory_is_a_clear_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Read-only from the start: one line, nothing built or started.
    let disk = Tmpfs::mount(1024);
    std::fs::create_dir(disk.path().join("out")).unwrap();
    disk.remount_read_only();
    let dir = tempfile::tempdir().unwrap();
    let out = disk.path().join("out");
    let run = Run::start(dir.path(), &out, "none");
    let pid = run.child.id();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(1), "{stderr:#?}");
    assert_eq!(stderr.len(), 1, "{stderr:#?}");
    assert!(stderr[0].contains("Read-only file system"), "{stderr:#?}");
    assert_nothing_left(&out, pid);
    drop(disk);

    // Read-only after the row, as meta.json is written.
    let disk = Tmpfs::mount(1024);
    let out = disk.path().join("out");
    let mut run = Run::start(dir.path(), &out, "record");
    let pid = run.child.id();
    run.wait_held("record");
    disk.remount_read_only();
    run.signal(libc::SIGUSR1);
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(1), "{stderr:#?}");
    assert!(
        stderr.last().is_some_and(|l| l.starts_with("shootout: ")
            && l.contains("meta.json")
            && l.contains("Read-only file system")),
        "{stderr:#?}"
    );
    assert_nothing_left(&out, pid);
    assert_whole(&out);
    assert!(analysis::input::raw::is_file(
        &runs(&out)[0].join("stages/row.jsonl")
    ));
}

/// Two paired rows here, short blocks: a stage between blocks, and a
/// report, to stop at.
const PAIRED: &str = "design = \"paired\"\nbaseline = \"a\"\n[paired]\nblock = \"1s\"\nsettle = \"0s\"\nblocks = 4\n\
    [defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\nconnections = 4\nworkers = 1\nrequest = \"post\"\n\
    [[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\n";

/// The shared files of a results directory, as text (absent: `None`).
fn shared(out: &Path) -> [Option<String>; 2] {
    ["history.json", "index.html"].map(|f| std::fs::read_to_string(out.join(f)).ok())
}

/// SIGINT (a terminal's Ctrl-C, to the whole group) and SIGTERM (to the
/// runner alone, as `kill` or a service manager sends it), each during the
/// builds, between two blocks and during the report: exit 130, nothing
/// left running, every file whole, the run folder marked interrupted (or
/// complete, when the stop came once it was recorded), and the shared
/// history and index unchanged or complete.
#[test]
fn sigint_and_sigterm_at_builds_between_blocks_and_in_the_report() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for sig in [libc::SIGINT, libc::SIGTERM] {
        for stage in ["build", "block", "report"] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            // A results directory that keeps a history (as results/ does).
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join("history.json"), "{}\n").unwrap();
            let before = shared(&out);
            let mut run = Run::of(dir.path(), "paired.toml", PAIRED, &out, stage);
            let pid = run.child.id();
            run.wait_held(stage);
            if sig == libc::SIGINT {
                run.signal_group(sig);
            } else {
                run.signal(sig);
            }
            let (code, stderr) = run.finish();
            let at = format!("signal {sig} at {stage}");
            assert_eq!(code, Some(130), "{at}: {stderr:#?}");
            assert_nothing_left(&out, pid);
            assert_whole(&out);
            let after = shared(&out);
            for (b, a) in before.iter().zip(&after) {
                let whole = a.as_deref().is_some_and(|t| {
                    serde_json::from_str::<serde_json::Value>(t).is_ok()
                        || t.trim_end().ends_with("</html>")
                });
                assert!(a == b || whole, "{at}: a shared file half-written: {a:?}");
            }
            let runs = runs(&out);
            if stage == "build" {
                assert!(runs.is_empty(), "{at}: {runs:?}");
                assert_eq!(after, before, "{at}");
                continue;
            }
            assert_eq!(runs.len(), 1, "{at}");
            let meta: serde_json::Value = serde_json::from_slice(
                &analysis::input::raw::read(&runs[0].join("meta.json")).unwrap(),
            )
            .unwrap();
            let blocks = meta["paired"][0]["blocks"].as_array().map_or(0, Vec::len);
            if stage == "block" {
                assert_eq!(meta["interrupted"], true, "{at}: {meta}");
                assert_eq!(blocks, 1, "{at}: {meta}");
                assert_eq!(meta["paired"][0]["stopped_by"], "interrupted", "{at}");
            } else {
                // Recorded before the stop came: complete, its history
                // and index written.
                assert_eq!(meta["interrupted"], false, "{at}: {meta}");
                assert_eq!(blocks, 4, "{at}: {meta}");
                let name = runs[0].file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    after[0].as_deref().is_some_and(|h| h.contains(&name)),
                    "{at}: the history does not name the run"
                );
                assert!(after[1].is_some(), "{at}: no index");
                assert!(
                    stderr
                        .iter()
                        .any(|l| l.contains("stopped during the report")),
                    "{at}: {stderr:#?}"
                );
            }
        }
    }
}

/// A runner killed by SIGKILL stops nothing: its server, loadgen and
/// namespaces stay, its folder half-written. The next run finds them, ends
/// them, says so in one line, and runs; nothing of the killed run is left,
/// and every file is whole. Killed mid-load in its first unit, its folder
/// goes (nothing in it finished); killed between two paired blocks, its
/// folder stays, marked interrupted, with the block it finished.
#[test]
fn the_next_run_ends_what_a_killed_runner_left() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (text, stage) in [(SCENARIO, "measure"), (PAIRED, "block")] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut killed = Run::of(dir.path(), "killed.toml", text, &out, stage);
        let pid = killed.child.id();
        killed.wait_held(stage);
        if stage == "measure" {
            wait_first_record(&out);
        }
        killed.signal(libc::SIGKILL);
        // Still there mid-load: what no process could stop once its runner
        // was killed (between blocks nothing runs; the folder is left).
        if stage == "measure" {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && leftovers(&out).is_empty() {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(!leftovers(&out).is_empty(), "{stage}: nothing left to end");
        }
        let first = runs(&out);
        // The killed runner is not reaped yet (a zombie): gone all the same.
        let next = Run::of(dir.path(), "next.toml", SCENARIO, &out, "none");
        let (code, stderr) = next.finish();
        assert_eq!(code, Some(0), "{stage}: {stderr:#?}");
        let said: Vec<&String> = stderr
            .iter()
            .filter(|l| l.contains(&format!("a run killed earlier (pid {pid})")))
            .collect();
        assert_eq!(said.len(), 1, "{stage}: {stderr:#?}");
        assert_nothing_left(&out, pid);
        assert_whole(&out);
        let runs = runs(&out);
        let meta = |dir: &Path| -> serde_json::Value {
            serde_json::from_slice(&analysis::input::raw::read(&dir.join("meta.json")).unwrap())
                .unwrap()
        };
        if stage == "measure" {
            assert!(said[0].contains("namespace(s)"), "{said:?}");
            assert!(said[0].contains("removed"), "{said:?}");
            assert_eq!(runs.len(), 1, "{runs:?}");
        } else {
            assert!(said[0].contains("marked interrupted"), "{said:?}");
            assert_eq!(runs.len(), 2, "{runs:?}");
            let m = meta(&first[0]);
            assert_eq!(m["interrupted"], true, "{m}");
            assert_eq!(
                m["paired"][0]["blocks"].as_array().map(Vec::len),
                Some(1),
                "{m}"
            );
        }
        let newest = runs.iter().find(|r| !first.contains(r)).unwrap();
        assert_eq!(meta(newest)["interrupted"], false);
        let _ = killed.finish();
    }
}
