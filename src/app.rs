//! Assembling the service from its configuration.

use std::sync::Arc;

use crate::{
    builtin::Waiting,
    config::BuiltinMode,
    config::Config,
    domain::Source,
    sources::{
        TableSource, builtin::BuiltinSource, chesstb::ChesstbSource, gaviota::GaviotaSource, syzygy::SyzygySource,
    },
    tablebase::Tablebases,
};

/// Opens every configured source, in priority order: Syzygy, Gaviota,
/// chesstb, built-in tables. A probe that needs a built-in table not
/// generated yet waits for it: for tools and tests; the server uses
/// [`open_for_server`].
pub fn open_tablebases(config: &Config) -> Tablebases {
    open_with(config, Waiting::Block)
}

/// As [`open_tablebases`], but a probe never waits for a built-in table: it
/// answers with what the other sources give and says what is pending, while
/// the table is generated in the background.
pub fn open_for_server(config: &Config) -> Tablebases {
    open_with(config, Waiting::Never)
}

fn open_with(config: &Config, waiting: Waiting) -> Tablebases {
    let mut sources = file_sources(config, false);
    if config.builtin.mode != BuiltinMode::Off {
        sources.push(Arc::new(BuiltinSource::new(&config.builtin, waiting)));
    }
    Tablebases::new(sources)
}

/// Syzygy and Gaviota directories only, without built-in tables: the table
/// files under test, for tests, benchmarks and tools.
pub fn open_table_dirs(syzygy: &[std::path::PathBuf], gaviota: &[std::path::PathBuf]) -> Tablebases {
    let mut config = Config { syzygy: syzygy.to_vec(), gaviota: gaviota.to_vec(), ..Config::default() };
    config.builtin.mode = BuiltinMode::Off;
    open_tablebases(&config)
}

/// Indexes the table directories again (files added, replaced or removed
/// since), keeping the built-in source of `current`: its store holds the
/// tables generated so far. Probes holding `current` keep using it, and its
/// maps of replaced files stay valid until the last of them finishes.
pub(crate) fn rescan_tablebases(config: &Config, current: &Tablebases) -> Tablebases {
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
        sources.push(Arc::new(ChesstbSource::open(
            &config.chesstb,
            config.chesstb_cache_mib << 20,
            config.chesstb_max_open_files,
        )));
    }
    sources
}
