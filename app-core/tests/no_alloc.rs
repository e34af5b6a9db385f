//! Counts heap allocations on the handler path (body collection, decoding,
//! counting, encoding, for GET, POST and every refusal).
//!
//! With `no-alloc` the count must be zero. Without it the same path must
//! allocate (the heap body and heap answer), which also proves the counting
//! allocator sees what it should. Run both ways by `scripts/test`.
// The allocator features bring their own global allocator.
#![cfg(not(any(feature = "snmalloc", feature = "mimalloc", feature = "jemalloc")))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use app_core::counter::CounterOptions;
use app_core::App;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set on the thread whose handler path is measured: allocations on
    /// other threads are not its (the test harness's own thread, delayed
    /// on a loaded machine, once allocated 4 times inside the window).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    // `try_with`: no panic in an allocation made while the thread's
    // locals are torn down; a const-initialised Cell never allocates.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One round of every request kind, as the servers run them; returns a value
/// derived from the replies so nothing is optimised away.
fn handler_path(app: &App, bodies: &[&[u8]]) -> usize {
    let mut seen = app.get().body.as_bytes().len();
    for body in bodies {
        if let Err(reply) = app.check_length(Some(body.len() as u64)) {
            seen += reply.status as usize;
            continue;
        }
        let mut buf = app.body_buf();
        let reply = match buf.push(body) {
            Ok(()) => app.post(&buf),
            Err(err) => app_core::Reply::body_error(err),
        };
        seen += reply.body.as_bytes().len() + reply.status as usize;
    }
    seen + app.get().body.as_bytes().len()
}

#[test]
fn handler_path_allocations_match_the_no_alloc_feature() {
    let dir = std::env::temp_dir().join(format!("no-alloc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = CounterOptions {
        workers: 2,
        file: cfg!(feature = "mmap-backend").then(|| dir.join("count")),
    };
    let app = App::new(opts, 64).unwrap();
    let long = [b'7'; 100];
    let binary = 500u16.to_le_bytes();
    let bodies: [&[u8]; 8] = [b"500", b"1", b"", b"501", b"-1", b"12345", &binary, &long];
    // Warm up once: thread-local slot assignment and lazy statics are set-up,
    // not the per-request path.
    handler_path(&app, &bodies);

    let before = ALLOCATIONS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    let mut sink = 0;
    for _ in 0..1000 {
        sink += handler_path(&app, &bodies);
    }
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert!(sink > 0);
    std::fs::remove_dir_all(&dir).unwrap();

    if cfg!(feature = "no-alloc") {
        assert_eq!(allocations, 0, "the no-alloc handler path allocated");
    } else {
        // At least one allocation per accepted POST and per GET.
        assert!(
            allocations >= 1000 * 2,
            "only {allocations} allocations counted"
        );
    }
}
