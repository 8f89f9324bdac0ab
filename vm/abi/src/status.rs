//! The status codes of the C ABIs: what every function of `vm.h` returns and what a plugin's
//! functions return through `vm_component.h` (`VM_OK`, `VM_ERR_*`), one per [`Error`] variant.
//! The C bridge renders them into `vm.h`; the host turns a plugin's status back into an error.

use std::ffi::{CStr, c_int};
use std::sync::OnceLock;
use vm_ir::Error;

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
}
