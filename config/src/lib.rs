//! The vector VM's built-in configuration: `config/default.toml`, the text `vm_init` uses when no
//! config file is found (see the file for the lookup order). A crate of its own so that every
//! build that embeds it, a source distribution of vmnp included, carries the file.

/// The text of `config/default.toml`.
pub const DEFAULT: &str = include_str!("../default.toml");
