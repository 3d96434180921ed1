//! Assembling the service from its configuration.

use std::sync::Arc;

use crate::{
    config::Config,
    config::BuiltinMode,
    sources::{TableSource, builtin::BuiltinSource, gaviota::GaviotaSource, syzygy::SyzygySource},
    tablebase::Tablebases,
};

/// Opens every configured source, in priority order: Syzygy, Gaviota,
/// built-in tables.
pub fn open_tablebases(config: &Config) -> Tablebases {
    let mut sources: Vec<Arc<dyn TableSource>> = Vec::new();
    if !config.syzygy.is_empty() {
        sources.push(Arc::new(SyzygySource::open(&config.syzygy)));
    }
    if !config.gaviota.is_empty() {
        sources.push(Arc::new(GaviotaSource::open(&config.gaviota, config.gaviota_cache_mib << 20)));
    }
    if config.builtin.mode != BuiltinMode::Off {
        sources.push(Arc::new(BuiltinSource::new(&config.builtin)));
    }
    Tablebases::new(sources)
}
