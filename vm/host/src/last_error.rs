//! The per-thread last error message, which C and Python share: the C ABI's `vm_last_error`
//! reads it, and every frontend linked into the same library records its failures in it (the C
//! bridge's exported functions, vmnp's errors). It lives here, with the table of contexts, so
//! that no frontend depends on another to reach it.

use std::cell::RefCell;
use std::ffi::{CString, c_char};

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
/// until the next call that sets or clears the last error on this thread.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// This thread's last error message, as Rust text.
pub fn last_error() -> String {
    LAST_ERROR.try_with(|e| e.borrow().to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_nuls_and_clear_empties() {
        set_last_error("a\0b");
        assert_eq!(last_error(), "a b");
        clear_last_error();
        assert_eq!(last_error(), "");
    }

    #[test]
    fn last_error_is_per_thread() {
        set_last_error("here");
        let other = std::thread::spawn(|| {
            let before = last_error();
            set_last_error("there");
            (before, last_error())
        })
        .join()
        .unwrap();
        assert_eq!(other, (String::new(), "there".to_string()));
        assert_eq!(last_error(), "here");
    }
}
