//! Status codes, the per-thread last-error message, and [`guard`], which every exported function
//! runs its body in so that no error goes unreported and no panic crosses the C ABI.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use vm_ir::{Error, Result};

/// `VM_OK`: the status of a call that succeeded.
pub const OK: c_int = 0;

/// One status code of the C ABI, as the header declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// The code (`Error::code()`; 0 for `VM_OK`).
    pub code: c_int,
    /// The constant's name in `vm.h` (`VM_OK`, `VM_ERR_...`).
    pub name: &'static CStr,
    /// What it means, one line.
    pub doc: &'static str,
}

/// The header name and meaning of an error's status. The match is exhaustive, so a new
/// [`Error`] variant cannot be added without naming its status here.
fn describe(e: &Error) -> (&'static CStr, &'static str) {
    match e {
        Error::InvalidInstruction { .. } => (
            c"VM_ERR_INVALID_INSTRUCTION",
            "a malformed instruction: arity, operand kind, dtype, shape, a view outside its base, a dead base",
        ),
        Error::UnknownOpcode(_) => {
            (c"VM_ERR_UNKNOWN_OPCODE", "an opcode not in the table, or an extension opcode never registered")
        }
        Error::UnknownDType(_) => (c"VM_ERR_UNKNOWN_DTYPE", "a dtype id that names no dtype"),
        Error::UnknownBase(_) => (c"VM_ERR_UNKNOWN_BASE", "a base handle never created or already freed"),
        Error::Parse { .. } => (c"VM_ERR_PARSE", "bytecode text that does not parse"),
        Error::Config { .. } => {
            (c"VM_ERR_CONFIG", "a bad configuration: file not found, TOML syntax, unknown key, engine or stack")
        }
        Error::Unsupported(_) => (c"VM_ERR_UNSUPPORTED", "nothing in the stack implements it (e.g. an extension)"),
        Error::Execution(_) => {
            (c"VM_ERR_EXECUTION", "a data-dependent failure while executing, e.g. an index out of range")
        }
        Error::InvalidArgument(_) => {
            (c"VM_ERR_INVALID_ARGUMENT", "a null pointer, a dead context, or another unusable argument")
        }
        Error::Protocol(_) => (c"VM_ERR_PROTOCOL", "breaks the ownership protocol, e.g. reading a base not synced"),
        Error::Device(_) => (c"VM_ERR_DEVICE", "an engine's device or library is unavailable"),
        Error::OutOfMemory(_) => (c"VM_ERR_OUT_OF_MEMORY", "an allocation failed"),
        Error::Internal(_) => (c"VM_ERR_INTERNAL", "a bug in the VM (a panic is reported as this)"),
        Error::Interrupted => {
            (c"VM_ERR_INTERRUPTED", "the flush was stopped by vm_interrupt; the bases it wrote are unspecified")
        }
        // A foreign cause keeps the status of the error it caused.
        Error::Caused { error, .. } => describe(error),
    }
}

/// One error of each variant, to read the codes from.
fn samples() -> Vec<Error> {
    let s = String::new;
    vec![
        Error::invalid(None, ""),
        Error::UnknownOpcode(0),
        Error::UnknownDType(s()),
        Error::UnknownBase(0),
        Error::Parse { line: 0, message: s() },
        Error::config("", None, ""),
        Error::Unsupported(s()),
        Error::Execution(s()),
        Error::InvalidArgument(s()),
        Error::Protocol(s()),
        Error::Device(s()),
        Error::OutOfMemory(s()),
        Error::Internal(s()),
        Error::Interrupted,
    ]
}

/// Every status, `VM_OK` first, then the errors by code.
pub fn statuses() -> &'static [Status] {
    static TABLE: OnceLock<Vec<Status>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = vec![Status { code: OK, name: c"VM_OK", doc: "success" }];
        for e in samples() {
            let (name, doc) = describe(&e);
            t.push(Status { code: e.code(), name, doc });
        }
        t.sort_by_key(|s| s.code);
        t
    })
}

/// The header name of status `code` (`VM_OK`, `VM_ERR_...`), or `VM_ERR_UNKNOWN_STATUS`.
pub fn status_name(code: c_int) -> &'static CStr {
    statuses().iter().find(|s| s.code == code).map_or(c"VM_ERR_UNKNOWN_STATUS", |s| s.name)
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error (interior NULs become spaces).
pub fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // A thread being torn down has no last error to keep; ignoring that is right.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = text);
}

/// Clears this thread's last error (it reads as "" until the next failure).
pub fn clear_last_error() {
    // Most calls succeed after a success: leave the empty message be rather than allocate a
    // new one.
    let _ = LAST_ERROR.try_with(|e| {
        if !e.borrow().is_empty() {
            *e.borrow_mut() = CString::default();
        }
    });
}

/// This thread's last error message; "" when the last call succeeded. The pointer stays valid
/// until the next call of the C ABI on this thread.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// This thread's last error message, as Rust text.
pub fn last_error() -> String {
    LAST_ERROR.try_with(|e| e.borrow().to_string_lossy().into_owned()).unwrap_or_default()
}

/// The error a status code stands for, with `message`: what a plugin's `VM_ERR_*` return becomes
/// on the host. An unknown status is an internal error naming it.
pub fn error_of_status(status: c_int, message: String) -> Error {
    match samples().into_iter().find(|e| e.code() == status) {
        Some(Error::InvalidInstruction { .. }) => Error::invalid(None, message),
        Some(Error::Config { .. }) => Error::config("<plugin>", None, message),
        Some(Error::Unsupported(_)) => Error::Unsupported(message),
        Some(Error::InvalidArgument(_)) => Error::InvalidArgument(message),
        Some(Error::Protocol(_)) => Error::Protocol(message),
        Some(Error::Device(_)) => Error::Device(message),
        Some(Error::OutOfMemory(_)) => Error::OutOfMemory(message),
        Some(Error::Internal(_)) => Error::Internal(message),
        Some(Error::Interrupted) => Error::Interrupted,
        // The codes of input a plugin never parses (opcode and dtype ids, base handles, text) and
        // of failed execution.
        Some(_) => Error::Execution(message),
        None => Error::Internal(format!("unknown status {status}: {message}")),
    }
}

/// Runs `f` and turns its outcome into a status: `VM_OK` (and an empty last error) on success,
/// the error's code and message otherwise. A panic inside `f` is caught and reported as
/// `VM_ERR_INTERNAL`; it never unwinds into C.
pub fn guard(f: impl FnOnce() -> Result<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(Error::Internal(format!("panic: {}", vm_ir::error::panic_message(payload.as_ref()))))
    });
    match outcome {
        Ok(()) => {
            clear_last_error();
            OK
        }
        Err(e) => {
            set_last_error(&e.to_string());
            e.code()
        }
    }
}

/// [`guard`] for functions that return a value instead of a status: on failure the last error
/// is set and `fallback` returned.
pub fn guard_value<T>(fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    let mut out = None;
    let status = guard(|| {
        out = Some(f()?);
        Ok(())
    });
    if status == OK { out.unwrap_or(fallback) } else { fallback }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_dense_unique_and_match_error_codes() {
        let t = statuses();
        for (i, s) in t.iter().enumerate() {
            assert_eq!(s.code, i as c_int, "codes are 0..n without gaps: {t:?}");
            let name = s.name.to_str().unwrap();
            assert!(name == "VM_OK" || name.starts_with("VM_ERR_"), "{name}");
            assert_eq!(status_name(s.code), s.name);
        }
        assert_eq!(t.len(), samples().len() + 1);
        assert_eq!(status_name(-1), c"VM_ERR_UNKNOWN_STATUS");
        assert_eq!(status_name(9999), c"VM_ERR_UNKNOWN_STATUS");
    }

    #[test]
    fn guard_reports_errors_and_clears_on_success() {
        assert_eq!(guard(|| Err(Error::UnknownBase(7))), 4);
        assert!(last_error().contains("unknown base 7"), "{}", last_error());
        assert_eq!(guard(|| Ok(())), OK);
        assert_eq!(last_error(), "");
        assert_eq!(guard(|| Err(Error::InvalidArgument("a\0b".into()))), 9);
        assert_eq!(last_error(), "invalid argument: a b");
    }

    #[test]
    fn guard_catches_panics() {
        let code = guard(|| panic!("boom {}", 42));
        assert_eq!(code, Error::Internal(String::new()).code());
        assert!(last_error().contains("panic: boom 42"), "{}", last_error());
        let code = guard(|| std::panic::panic_any(3u8));
        assert_eq!(status_name(code), c"VM_ERR_INTERNAL");
        assert_eq!(guard_value(5, || -> Result<i32> { panic!("x") }), 5);
        assert_eq!(guard_value(5, || Ok(6)), 6);
    }

    #[test]
    fn last_error_is_per_thread() {
        guard(|| Err(Error::UnknownOpcode(5)));
        let other = std::thread::spawn(|| {
            let before = last_error();
            guard(|| Err(Error::UnknownBase(1)));
            (before, last_error())
        })
        .join()
        .unwrap();
        assert_eq!(other.0, "");
        assert!(other.1.contains("unknown base"));
        assert_eq!(last_error(), "unknown opcode 5");
    }
}
