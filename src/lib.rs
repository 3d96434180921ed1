//! tbserver: the truth about chess endgames, over HTTP/JSON.
//!
//! Layout: [`sources`] holds one module per source of truth (Syzygy, Gaviota,
//! built-in tables) behind [`sources::TableSource`]; [`tablebase`] decides
//! which source answers what; [`probe`] composes a full answer for a FEN in the
//! types of [`domain`]; [`http`] is the thin web layer; [`builtin`] generates
//! tables by retrograde analysis; [`search`] is the DTM50-style bounded search;
//! [`telemetry`] counts what operators watch (`/prometheus`).

pub mod app;
pub mod board_svg;
pub mod builtin;
pub(crate) mod clock_chart;
pub mod config;
pub mod domain;
pub mod download;
pub mod error;
pub mod http;
pub mod material;
pub(crate) mod panics;
pub mod probe;
pub(crate) mod probe_counts;
pub mod request;
pub mod search;
pub mod sources;
pub mod tablebase;
pub mod telemetry;
pub mod verify;
