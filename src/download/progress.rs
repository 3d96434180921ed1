//! Progress of a long run: a bar (bytes, rate, time left) on a terminal,
//! plain lines elsewhere (a log file, a container's output).

use std::{
    io::IsTerminal,
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    done_bytes: AtomicU64,
    started: Instant,
}

impl Progress {
    /// A bar over `total_bytes` when stderr is a terminal.
    pub fn new(total_bytes: u64, what: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total_bytes);
            bar.set_style(
                ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_message(what.to_owned());
            bar
        });
        Progress { bar, done_bytes: AtomicU64::new(0), started: Instant::now() }
    }

    /// Bytes done (negative: bytes that must be done again).
    pub fn add(&self, delta: i64) {
        let magnitude = delta.unsigned_abs();
        if delta >= 0 {
            self.done_bytes.fetch_add(magnitude, Ordering::Relaxed);
        } else {
            let _ = self
                .done_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(magnitude)));
        }
        if let Some(bar) = &self.bar {
            bar.set_position(self.done_bytes.load(Ordering::Relaxed));
        }
    }

    /// A line above the bar, or on stdout without one.
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => println!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}

/// Bytes for people: `938.4 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes() {
        assert_eq!(super::human_bytes(80), "80 B");
        assert_eq!(super::human_bytes(983_936_000), "938.4 MiB");
        assert_eq!(super::human_bytes(18_389_000_000_000), "16.7 TiB");
    }
}
