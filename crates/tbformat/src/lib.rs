//! tbserver's built-in table format.
//!
//! A built-in table (`<material>.tbsb`) holds DTZ50'', DTM and optionally
//! DTM50 for every index of a material's [`Layout`], in independently
//! decodable zstd blocks behind a block index. This crate defines what the
//! values mean and how they are laid out on disk; it generates nothing and
//! runs no threads of its own.
//!
//! - [`material`]: which tables exist, their names and generation order;
//! - [`index`]: the positions of a table and their symmetric index;
//! - [`value`]: the 16-bit encoding of a DTZ50'' or DTM value in plies;
//! - [`dtm50`]: DTM50 as a step function of the half-move clock;
//! - [`format`]: the file's header, block index and block encoding.

#![warn(missing_docs)]

pub mod dtm50;
pub mod format;
pub mod index;
pub mod material;
pub mod value;

pub use format::FormatError;
pub use index::{Layout, Pos};
pub use material::Material;
