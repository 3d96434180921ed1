//! The DTM50-style bounded search.
