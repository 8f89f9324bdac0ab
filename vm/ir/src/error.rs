//! The one error type of the VM. Every fallible function in every crate returns [`Result`].

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Shorthand for results carrying the VM's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the VM, by cause. The C ABI maps each variant to a status
/// code (see [`Error::code`]) and keeps the `Display` text as the last-error message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A bytecode instruction is malformed: wrong arity, wrong dtypes, shape mismatch, a view
    /// outside its base, a base that does not exist. `index` is the instruction's position in
    /// its batch (when known) and `operand` the offending operand (when one is to blame).
    #[error("{}", fmt_invalid(*.index, *.operand, .message))]
    InvalidInstruction {
        /// Position of the instruction in the submitted batch, if known.
        index: Option<usize>,
        /// Offending operand (0 = first operand), if one is to blame.
        operand: Option<usize>,
        /// What is wrong, in words.
        message: String,
    },
    /// An opcode number that is not in the opcode table, or an extension id never registered.
    #[error("{}", fmt_unknown_opcode(*.0))]
    UnknownOpcode(u32),
    /// A dtype number or name that does not name a dtype.
    #[error("unknown dtype {0}")]
    UnknownDType(String),
    /// A base handle that was never created or has already been freed.
    #[error("unknown base {0} (never created, or already freed)")]
    UnknownBase(u64),
    /// Text bytecode that does not parse; `line` is 1-based.
    #[error("bytecode text, line {line}: {message}")]
    Parse {
        /// 1-based line of the offending text.
        line: usize,
        /// What is wrong, in words.
        message: String,
    },
    /// A configuration file is wrong: bad TOML, an unknown key, an unknown engine, a cycle.
    /// `file` and `line` (1-based) say where, when known.
    #[error("{}", fmt_config(.file, *.line, .message))]
    Config {
        /// The file (or `<embedded default>`, `<environment>`) the error is in.
        file: String,
        /// 1-based line, when the error can be placed.
        line: Option<usize>,
        /// What is wrong, in words.
        message: String,
    },
    /// An instruction no component of the stack implements (e.g. an extension method).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Data-dependent failure while executing a batch, e.g. a gather index out of range.
    #[error("execution failed: {0}")]
    Execution(String),
    /// A null pointer or otherwise unusable argument across the C ABI.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A host-data access that breaks the ownership protocol, e.g. reading a base not synced.
    #[error("ownership protocol: {0}")]
    Protocol(String),
    /// An engine's device or library is unavailable (no OpenCL platform, MPI absent, ...).
    #[error("device unavailable: {0}")]
    Device(String),
    /// Allocation failed.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A bug in the VM itself: an invariant that should always hold did not.
    #[error("internal error (a bug in the VM): {0}")]
    Internal(String),
    /// The flush was stopped part way by an interrupt request (`vm_interrupt`, Ctrl-C in vmnp);
    /// the bases the batch wrote are in an unspecified state and the context stays usable.
    #[error("interrupted: the batch was stopped before it finished")]
    Interrupted,
    /// `error`, caused by a failure of a library or system call the VM made (Cranelift, OpenCL,
    /// the file system, the thread system), which is kept as the
    /// [`source`](std::error::Error::source). The text and the C status code are `error`'s: its
    /// message already names what went wrong (the C message must), so the foreign error's text
    /// is not repeated. Match on [`Error::without_cause`] to read the classification.
    #[error("{error}")]
    Caused {
        /// What went wrong, as the VM classifies it.
        error: Box<Error>,
        /// The foreign error.
        #[source]
        cause: Cause,
    },
}

/// A foreign error kept as the cause of an [`Error::Caused`]. Shared, so that errors stay
/// cheap to clone; two causes are equal when they say the same. It dereferences to the foreign
/// error, which [`std::error::Error::source`] returns (so it can be downcast).
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Cause {
    /// Keeps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(error))
    }
}

impl Deref for Cause {
    type Target = dyn std::error::Error + Send + Sync + 'static;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

/// The text of a caught panic's payload (what [`std::panic::catch_unwind`] returns), for the
/// [`Error::Internal`] that reports it.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}

fn fmt_invalid(index: Option<usize>, operand: Option<usize>, message: &str) -> String {
    let mut s = String::from("invalid instruction");
    if let Some(i) = index {
        s += &format!(" {i}");
    }
    if let Some(o) = operand {
        s += &format!(", operand {o}");
    }
    s + ": " + message
}

fn fmt_unknown_opcode(id: u32) -> String {
    if id >= crate::opcode::EXTENSION_BASE {
        format!(
            "unknown opcode {id}: extension number {} was never registered (register the method by name first: \
             vm_extension / Runtime::register_extension)",
            id - crate::opcode::EXTENSION_BASE
        )
    } else {
        format!("unknown opcode {id}")
    }
}

fn fmt_config(file: &str, line: Option<usize>, message: &str) -> String {
    match line {
        Some(l) => format!("config {file}:{l}: {message}"),
        None => format!("config {file}: {message}"),
    }
}

impl Error {
    /// An [`Error::InvalidInstruction`] not yet tied to a batch position.
    pub fn invalid(operand: Option<usize>, message: impl fmt::Display) -> Self {
        Error::InvalidInstruction { index: None, operand, message: message.to_string() }
    }

    /// Ties an [`Error::InvalidInstruction`] to its position in a batch; other errors pass.
    pub fn at_instruction(self, position: usize) -> Self {
        match self {
            Error::InvalidInstruction { operand, message, .. } => {
                Error::InvalidInstruction { index: Some(position), operand, message }
            }
            other => other,
        }
    }

    /// An [`Error::Config`] error.
    pub fn config(file: impl Into<String>, line: Option<usize>, message: impl fmt::Display) -> Self {
        Error::Config { file: file.into(), line, message: message.to_string() }
    }

    /// This error with `cause`, the foreign error it comes from, kept as its
    /// [`source`](std::error::Error::source) ([`Error::Caused`]).
    pub fn caused_by(self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Caused { error: Box::new(self), cause: Cause::new(cause) }
    }

    /// The VM's classification of this error: the error a [`Error::Caused`] wraps, else the
    /// error itself.
    pub fn without_cause(&self) -> &Error {
        match self {
            Error::Caused { error, .. } => error.without_cause(),
            e => e,
        }
    }

    /// The status code the C ABI returns for this error (`VM_ERR_*` in `vm.h`; 0 is success).
    pub fn code(&self) -> i32 {
        match self {
            Error::Caused { error, .. } => error.code(),
            Error::InvalidInstruction { .. } => 1,
            Error::UnknownOpcode(_) => 2,
            Error::UnknownDType(_) => 3,
            Error::UnknownBase(_) => 4,
            Error::Parse { .. } => 5,
            Error::Config { .. } => 6,
            Error::Unsupported(_) => 7,
            Error::Execution(_) => 8,
            Error::InvalidArgument(_) => 9,
            Error::Protocol(_) => 10,
            Error::Device(_) => 11,
            Error::OutOfMemory(_) => 12,
            Error::Internal(_) => 13,
            Error::Interrupted => 14,
        }
    }
}

/// Returns early with an [`Error::InvalidInstruction`] for `operand` when `cond` is false.
#[macro_export]
macro_rules! ensure_valid {
    ($cond:expr, $operand:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::Error::invalid($operand, format!($($fmt)+)));
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_instruction_names_position_and_operand() {
        let e = Error::invalid(Some(2), "dtype mismatch").at_instruction(7);
        assert_eq!(e.to_string(), "invalid instruction 7, operand 2: dtype mismatch");
    }

    #[test]
    fn a_foreign_cause_is_the_source_and_keeps_text_and_code() {
        use std::error::Error as _;
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = Error::config("vm.toml", None, format!("cannot read: {io}")).caused_by(io);
        assert_eq!(e.to_string(), "config vm.toml: cannot read: no such file");
        assert_eq!(e.code(), 6);
        assert!(matches!(e.without_cause(), Error::Config { .. }));
        let source = e.source().expect("the cause is the source");
        assert_eq!(source.downcast_ref::<std::io::Error>().map(|e| e.kind()), Some(std::io::ErrorKind::NotFound));
        assert_eq!(e.clone(), e);
        assert!(Error::Internal("x".into()).source().is_none());
    }

    #[test]
    fn config_error_names_file_and_line() {
        let e = Error::config("vm.toml", Some(3), "unknown key `thraeds`");
        assert_eq!(e.to_string(), "config vm.toml:3: unknown key `thraeds`");
    }
}
