//! The `node` component (under construction).
