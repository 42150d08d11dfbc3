//! How dynosim stops when asked to: SIGINT (Ctrl-C), SIGTERM (how Slurm, Kubernetes and systemd
//! stop a job) and SIGHUP are one kind of request, told apart only by the exit code they lead to
//! (128 + the signal: 130, 143, 129).
//!
//! A sweep stops gracefully: the first signal stops it starting points and lets the running ones
//! finish (within its grace period) before the leaderboards are written; a second one aborts at
//! once. `run` stops at once. Either way the files registered with [`create_removable`] (the
//! temporary files of every output being written, see `output_file`) are removed first, so a
//! stopped process leaves nothing half-written behind.
//!
//! Signal handling is process-wide by nature; this module owns that state and nothing else (no
//! result ever depends on it).

use parking_lot::Mutex;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Once;

/// How the process reacts to the first signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// Record it; the caller polls [`stop_requested`] and winds down (a second signal aborts).
    Graceful,
    /// Remove the registered files and exit.
    Exit,
}

static RECEIVED: AtomicU64 = AtomicU64::new(0);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();
static TO_REMOVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The exit code for a process stopped by `signal` (shell convention).
pub fn exit_code_for(signal: i32) -> i32 {
    128 + signal
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "interrupted (SIGINT)",
        SIGTERM => "terminated (SIGTERM)",
        SIGHUP => "hung up (SIGHUP)",
        _ => "stopped",
    }
}

fn remove_registered(list: &mut Vec<PathBuf>) {
    for p in list.drain(..) {
        let _ = std::fs::remove_file(&p);
    }
}

/// Installs (once per process) the handler for SIGINT, SIGTERM and SIGHUP. Returns the number of
/// signals received so far, for [`stop_requested`].
pub fn watch(mode: OnSignal) -> u64 {
    INSTALL.call_once(|| {
        let signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]);
        let mut signals = match signals {
            Ok(s) => s,
            Err(e) => {
                eprintln!("dynosim: warning: cannot watch for Ctrl-C and SIGTERM: {e}");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    LAST_SIGNAL.store(signal, Ordering::SeqCst);
                    let n = RECEIVED.fetch_add(1, Ordering::SeqCst) + 1;
                    if mode == OnSignal::Exit {
                        // Held until the process ends: no file is created in between.
                        let mut list = TO_REMOVE.lock();
                        remove_registered(&mut list);
                        eprintln!("\ndynosim: {}", name(signal));
                        std::process::exit(exit_code_for(signal));
                    }
                    if n >= 2 {
                        // Files being written now are removed, as on a stopped `run`.
                        let mut list = TO_REMOVE.lock();
                        remove_registered(&mut list);
                        eprintln!(
                            "\ndynosim: {} again: aborting (rerun with --resume to continue)",
                            name(signal)
                        );
                        std::process::exit(exit_code_for(signal));
                    }
                    eprintln!(
                        "\ndynosim: {}: finishing the points already running, then writing the \
                         leaderboards (a second signal aborts)",
                        name(signal)
                    );
                }
            });
        if let Err(e) = spawned {
            eprintln!("dynosim: warning: cannot watch for Ctrl-C and SIGTERM: {e}");
        }
    });
    RECEIVED.load(Ordering::SeqCst)
}

/// Ends the process with `code`: how a sweep whose running points outlast its grace period
/// ends once it has written the leaderboards of the finished ones (the sweep decides the code;
/// only this module and `main.rs` end the process).
pub fn end_process(code: i32) -> ! {
    std::process::exit(code)
}

/// Whether a signal arrived since `baseline` (a value [`watch`] returned).
pub fn stop_requested(baseline: u64) -> bool {
    RECEIVED.load(Ordering::SeqCst) > baseline
}

/// The most recent signal received, if any.
pub fn last_signal() -> Option<i32> {
    match LAST_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Creates (truncating) a file that is removed if a signal stops the process (see
/// [`OnSignal::Exit`]) before [`keep`] is called for it. Created and registered in one step, so
/// a signal never leaves it behind unregistered.
pub fn create_removable(path: &Path) -> std::io::Result<std::fs::File> {
    let mut list = TO_REMOVE.lock();
    let f = std::fs::File::create(path)?;
    list.push(path.to_path_buf());
    Ok(f)
}

/// Forgets a file registered with [`create_removable`] (call it after renaming the file into
/// place: a signal in between only fails to remove a name that is gone).
pub fn keep(path: &Path) {
    TO_REMOVE.lock().retain(|p| p != path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code_for(SIGINT), 130);
        assert_eq!(exit_code_for(SIGTERM), 143);
        assert_eq!(exit_code_for(SIGHUP), 129);
    }

    #[test]
    fn registered_files_are_removed_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.tmp"), dir.path().join("b.tmp"));
        create_removable(&a).unwrap();
        create_removable(&b).unwrap();
        keep(&b);
        let mut list: Vec<PathBuf> = TO_REMOVE
            .lock()
            .iter()
            .filter(|p| p.starts_with(dir.path()))
            .cloned()
            .collect();
        assert_eq!(list, vec![a.clone()]);
        remove_registered(&mut list);
        keep(&a);
        assert!(!a.exists());
        assert!(b.exists());
    }
}
