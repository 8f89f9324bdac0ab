//! Status codes (the table of [`vm_abi::status`]), the per-thread last-error message (kept by
//! [`vm_host::last_error`], which vmnp records its errors in too), and
//! [`guard`], which every exported function runs its body in so that no error goes unreported and
//! no panic crosses the C ABI.

pub use vm_abi::status::{OK, Status, error_of_status, status_name, statuses};

pub use vm_host::last_error::{clear_last_error, last_error, last_error_ptr, set_last_error};

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use vm_ir::{Error, Result};

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
