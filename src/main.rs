//! The `toolscore` binary: the process-wide choices (allocator, pages), then
//! the command line, which lives in the library ([`toolscore::cli`]) so that
//! the Python wheel's `toolscore` command runs the same code.

use std::process::ExitCode;

/// Spans are decoded on the I/O threads and freed on the scoring threads;
/// mimalloc handles that pattern with far less CPU than glibc malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Decoded spans are short-lived and freed on another thread than the one
/// that made them, so the allocator keeps taking fresh pages; as 2 MiB
/// transparent huge pages each costs a 2 MiB clear, which measured as a
/// quarter of a replay's time. 4 KiB pages cost that only where touched.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and only
    // sets a flag of this process; failure (old kernels) changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    no_huge_pages();
    // Here, where no other thread exists yet; not in the library, which
    // the Python module runs inside a process with threads of its own.
    if std::env::args_os().nth(1).is_some_and(|a| a == "serve") {
        // SAFETY: called before any thread is started.
        unsafe { toolscore::serve::keep_freed_memory() };
    }
    ExitCode::from(toolscore::cli::run(std::env::args_os()))
}
