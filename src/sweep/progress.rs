//! Progress of a sweep's simulations on stderr: an indicatif bar on a terminal, else (Slurm
//! logs, CI, `| tee`) a plain line every few seconds with points done/total, rate and ETA, no
//! escape codes. Nothing here reaches an output file.

use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::{Condvar, Mutex};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Shown while points run; [`Progress::finish`] ends it.
pub(crate) enum Progress {
    None,
    Bar(ProgressBar),
    Plain(PlainProgress),
}

impl Progress {
    /// The bar on a terminal, plain lines every `every` otherwise; nothing when `quiet` or when
    /// there is nothing to run.
    pub fn start(total: u64, quiet: bool, every: Duration) -> Progress {
        if quiet || total == 0 {
            return Progress::None;
        }
        if std::io::stderr().is_terminal() {
            let b = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} points, ETA {eta}  {msg}",
            ) {
                b.set_style(style.progress_chars("=> "));
            }
            b.enable_steady_tick(Duration::from_millis(200));
            Progress::Bar(b)
        } else {
            Progress::Plain(PlainProgress::start(total, every, |line| {
                eprintln!("{line}")
            }))
        }
    }

    /// The best point so far (shown by the bar only).
    pub fn set_message(&self, msg: String) {
        if let Progress::Bar(b) = self {
            b.set_message(msg);
        }
    }

    /// One more point finished.
    pub fn inc(&self) {
        match self {
            Progress::None => {}
            Progress::Bar(b) => b.inc(1),
            Progress::Plain(p) => p.inc(),
        }
    }

    pub fn finish(self) {
        match self {
            Progress::None => {}
            Progress::Bar(b) => b.finish_and_clear(),
            Progress::Plain(p) => p.finish(),
        }
    }
}

/// A thread printing [`plain_line`] every interval until finished.
pub(crate) struct PlainProgress {
    done: Arc<AtomicU64>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PlainProgress {
    pub fn start(total: u64, every: Duration, print: impl Fn(&str) + Send + 'static) -> Self {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let (done, stop) = (done.clone(), stop.clone());
            let started = Instant::now();
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    let (lock, cv) = &*stop;
                    let mut stopped = lock.lock();
                    while !*stopped {
                        if cv.wait_for(&mut stopped, every).timed_out() && !*stopped {
                            let n = done.load(Ordering::SeqCst);
                            print(&plain_line(n, total, started.elapsed()));
                        }
                    }
                })
                .ok()
        };
        PlainProgress { done, stop, thread }
    }

    pub fn inc(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
    }

    pub fn finish(mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// `progress: 12/30 points (40%), 0.80 points/s, elapsed 0:00:15, ETA 0:00:23`.
pub(crate) fn plain_line(done: u64, total: u64, elapsed: Duration) -> String {
    let pct = (done * 100).checked_div(total).unwrap_or(100);
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let eta = if done == 0 || rate <= 0.0 {
        "unknown".to_string()
    } else {
        clock(Duration::from_secs_f64(
            (total.saturating_sub(done)) as f64 / rate,
        ))
    };
    format!(
        "progress: {done}/{total} points ({pct}%), {rate:.2} points/s, elapsed {}, ETA {eta}",
        clock(elapsed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_line_has_counts_rate_and_eta_and_no_escapes() {
        let l = plain_line(12, 30, Duration::from_secs(15));
        assert_eq!(
            l,
            "progress: 12/30 points (40%), 0.80 points/s, elapsed 0:00:15, ETA 0:00:22"
        );
        assert!(!l.contains('\x1b'));
        let l = plain_line(0, 30, Duration::from_secs(3));
        assert!(
            l.contains("0/30 points (0%)") && l.ends_with("ETA unknown"),
            "{l}"
        );
    }

    #[test]
    fn plain_progress_prints_periodically_and_stops_at_once() {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = lines.clone();
        let p = PlainProgress::start(4, Duration::from_millis(20), move |l| {
            sink.lock().push(l.to_string())
        });
        p.inc();
        std::thread::sleep(Duration::from_millis(150));
        let t = Instant::now();
        p.finish();
        assert!(t.elapsed() < Duration::from_secs(1));
        let lines = lines.lock();
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines.iter().all(|l| l.starts_with("progress: 1/4 points")));
    }
}
