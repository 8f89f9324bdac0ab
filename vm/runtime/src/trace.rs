//! Spans of what the engines do (compiling a kernel, running one, a matrix product), recorded
//! process-wide while a frontend's profile is open (vmnp's `vmnp.profile`, `python -m vmnp
//! --profile`), for a Chrome trace-event file. Off, recording costs one atomic load per span.
//!
//! Times are seconds since the process's first use of [`clock`], which frontends use for their
//! own spans so that everything lands on one timeline.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// One span: what, which kind (`compile`, `kernel`, ...), when and how long (seconds on
/// [`clock`]'s timeline), and numbers about it (elements, bytes, operations).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// What was done.
    pub name: Cow<'static, str>,
    /// The kind of work, the trace's category.
    pub cat: &'static str,
    /// Start, in seconds on the [`clock`].
    pub start: f64,
    /// Duration in seconds.
    pub seconds: f64,
    /// Named numbers about the work.
    pub args: Vec<(&'static str, u64)>,
}

/// The most spans kept; later ones are counted as dropped.
pub const MAX_SPANS: usize = 1 << 20;

static ON: AtomicBool = AtomicBool::new(false);
static SPANS: Mutex<(Vec<Span>, u64)> = Mutex::new((Vec::new(), 0));
static EPOCH: OnceLock<Instant> = OnceLock::new();

fn epoch() -> Instant {
    *EPOCH.get_or_init(Instant::now)
}

/// Seconds since the process's first trace clock reading: the timeline of every span.
pub fn clock() -> f64 {
    epoch().elapsed().as_secs_f64()
}

/// Starts recording, dropping what was recorded before.
pub fn start() {
    epoch();
    *SPANS.lock().unwrap_or_else(|e| e.into_inner()) = (Vec::new(), 0);
    ON.store(true, Ordering::Relaxed);
}

/// Stops recording: the spans in the order they ended, and how many were dropped past
/// [`MAX_SPANS`].
pub fn stop() -> (Vec<Span>, u64) {
    ON.store(false, Ordering::Relaxed);
    std::mem::take(&mut *SPANS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// True while recording.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// A copy of the spans recorded so far, recording going on.
pub fn snapshot() -> Vec<Span> {
    SPANS.lock().unwrap_or_else(|e| e.into_inner()).0.clone()
}

/// The start of a span when recording is on.
#[inline]
pub fn begin() -> Option<Instant> {
    ON.load(Ordering::Relaxed).then(Instant::now)
}

/// Records the span begun at `begun` (nothing when recording was off then); `name` and `args`
/// are only evaluated when it is recorded. (Inlined: off, a call costs a test of `begun`.)
#[inline]
pub fn end<N: Into<Cow<'static, str>>>(
    begun: Option<Instant>,
    cat: &'static str,
    name: impl FnOnce() -> N,
    args: impl FnOnce() -> Vec<(&'static str, u64)>,
) {
    if let Some(t0) = begun {
        push(t0, cat, name().into(), args());
    }
}

/// Adds the span begun at `t0` to the record.
#[cold]
#[inline(never)]
fn push(t0: Instant, cat: &'static str, name: Cow<'static, str>, args: Vec<(&'static str, u64)>) {
    let span = Span {
        name,
        cat,
        start: t0.saturating_duration_since(epoch()).as_secs_f64(),
        seconds: t0.elapsed().as_secs_f64(),
        args,
    };
    let mut spans = SPANS.lock().unwrap_or_else(|e| e.into_inner());
    if spans.0.len() < MAX_SPANS {
        spans.0.push(span);
    } else {
        spans.1 += 1;
    }
}

/// [`end`] for a span whose start the caller took anyway, for its own timing: recorded when
/// recording is on now.
pub fn record<N: Into<Cow<'static, str>>>(
    started: Instant,
    cat: &'static str,
    name: impl FnOnce() -> N,
    args: impl FnOnce() -> Vec<(&'static str, u64)>,
) {
    if enabled() {
        end(Some(started), cat, name, args);
    }
}

/// The trace file `VM_PROFILE` names, when its value ends in `.json` (`VM_PROFILE=trace.json`:
/// the engines' statistics at exit as for `VM_PROFILE=1`, and a trace of their spans, which
/// every runtime writes when it shuts down: the process's spans so far).
pub fn file_from_env() -> Option<std::path::PathBuf> {
    let value = std::env::var_os("VM_PROFILE")?;
    value.to_str().is_some_and(|v| v.ends_with(".json")).then(|| value.into())
}

/// Writes `spans` as a Chrome trace-event file (JSON; it opens in Perfetto and
/// chrome://tracing): one complete event per span, times in microseconds.
pub fn write_chrome_trace(path: &std::path::Path, spans: &[Span]) -> std::io::Result<()> {
    use std::io::Write;
    fn quoted(s: &str) -> String {
        let mut q = String::with_capacity(s.len() + 2);
        q.push('"');
        for c in s.chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
                c => q.push(c),
            }
        }
        q.push('"');
        q
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let pid = std::process::id();
    write!(out, "{{\"traceEvents\": [")?;
    for (k, s) in spans.iter().enumerate() {
        let args: Vec<String> = s.args.iter().map(|(key, v)| format!("{}: {v}", quoted(key))).collect();
        write!(
            out,
            "{}\n{{\"name\": {}, \"cat\": {}, \"ph\": \"X\", \"ts\": {:.3}, \"dur\": {:.3}, \"pid\": {pid}, \"tid\": 1, \"args\": {{{}}}}}",
            if k == 0 { "" } else { "," },
            quoted(&s.name),
            quoted(s.cat),
            s.start * 1e6,
            s.seconds * 1e6,
            args.join(", ")
        )?;
    }
    writeln!(out, "\n], \"displayTimeUnit\": \"ms\"}}")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_recorded_only_while_on() {
        end(begin(), "kernel", || "before", Vec::new);
        start();
        let t = begin();
        assert!(t.is_some());
        end(t, "kernel", || "k", || vec![("elements", 10)]);
        let (spans, dropped) = stop();
        end(begin(), "kernel", || "after", Vec::new);
        assert_eq!(dropped, 0);
        assert_eq!(spans.len(), 1, "{spans:?}");
        assert_eq!(
            (spans[0].name.as_ref(), spans[0].cat, spans[0].args.clone()),
            ("k", "kernel", vec![("elements", 10)])
        );
        assert!(spans[0].start >= 0.0 && spans[0].seconds >= 0.0 && spans[0].start <= clock());
        assert!(stop().0.is_empty());
        let path = std::env::temp_dir().join(format!("vm-trace-test-{}.json", std::process::id()));
        let odd = Span { name: "a \"quoted\" \\ name".into(), ..spans[0].clone() };
        write_chrome_trace(&path, &[spans[0].clone(), odd]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(
            text.starts_with("{\"traceEvents\": [\n{\"name\": \"k\", \"cat\": \"kernel\", \"ph\": \"X\""),
            "{text}"
        );
        assert!(text.contains("\"args\": {\"elements\": 10}}"), "{text}");
        assert!(text.contains("\"a \\\"quoted\\\" \\\\ name\""), "{text}");
        assert!(text.trim_end().ends_with("], \"displayTimeUnit\": \"ms\"}"), "{text}");
    }
}
