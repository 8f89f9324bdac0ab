//! The `cpu` component (under construction).
