//! Assembling the service from its configuration.

use std::sync::Arc;

use crate::{
    config::BuiltinMode,
    config::Config,
    domain::Source,
    sources::{TableSource, builtin::BuiltinSource, chesstb::ChesstbSource, gaviota::GaviotaSource, syzygy::SyzygySource},
    tablebase::Tablebases,
};

/// Opens every configured source, in priority order: Syzygy, Gaviota,
/// chesstb, built-in tables.
pub fn open_tablebases(config: &Config) -> Tablebases {
    let mut sources = file_sources(config, false);
    if config.builtin.mode != BuiltinMode::Off {
        sources.push(Arc::new(BuiltinSource::new(&config.builtin)));
    }
    Tablebases::new(sources)
}

/// Indexes the table directories again (files added, replaced or removed
/// since), keeping the built-in source of `current`: its store holds the
/// tables generated so far. Probes holding `current` keep using it, and its
/// maps of replaced files stay valid until the last of them finishes.
pub fn rescan_tablebases(config: &Config, current: &Tablebases) -> Tablebases {
    let mut sources = file_sources(config, true);
    sources.extend(current.source_handles().filter(|s| s.source() == Source::Builtin).cloned());
    Tablebases::new(sources)
}

fn file_sources(config: &Config, rescan: bool) -> Vec<Arc<dyn TableSource>> {
    let mut sources: Vec<Arc<dyn TableSource>> = Vec::new();
    if !config.syzygy.is_empty() {
        sources.push(Arc::new(SyzygySource::open(&config.syzygy, config.syzygy_io)));
    }
    if !config.gaviota.is_empty() {
        let cache_bytes = config.gaviota_cache_mib << 20;
        sources.push(Arc::new(if rescan {
            GaviotaSource::reopen(&config.gaviota, cache_bytes)
        } else {
            GaviotaSource::open(&config.gaviota, cache_bytes)
        }));
    }
    if !config.chesstb.is_empty() {
        sources.push(Arc::new(ChesstbSource::open(&config.chesstb, config.chesstb_cache_mib << 20)));
    }
    sources
}
