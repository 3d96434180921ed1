//! Retrograde-analysis generator for the built-in tables (up to 4 pieces).
