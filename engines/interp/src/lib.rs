//! The `interp` component (under construction).
