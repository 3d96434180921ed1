//! Assembling the service from its configuration.

use std::sync::Arc;

use crate::{
    builtin::Waiting,
    config::BuiltinMode,
    config::Config,
    domain::Source,
    sources::{
        DiskSnapshot, TableSource, builtin::BuiltinSource, chesstb::ChesstbSource, gaviota::GaviotaSource,
        syzygy::SyzygySource,
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
/// tables generated so far. A file source whose directories hold the same
/// files as when it was opened ([`DiskSnapshot`]) is kept as it is, with its
/// maps and caches; `None` when that holds for every source (nothing to
/// swap). Probes holding `current` keep using it, and its maps of replaced
/// files stay valid until the last of them finishes.
pub(crate) fn rescan_tablebases(config: &Config, current: &Tablebases) -> Option<Tablebases> {
    let kept = |source: Source, dirs: &[std::path::PathBuf]| {
        current
            .source_handles()
            .find(|s| s.source() == source)
            .filter(|s| s.opened_from().is_some_and(|then| *then == DiskSnapshot::take(dirs)))
            .cloned()
    };
    let mut changed = false;
    let mut sources: Vec<Arc<dyn TableSource>> = Vec::new();
    for (kind, dirs) in FileSource::configured(config) {
        match kept(kind.source(), dirs) {
            Some(same) => sources.push(same),
            None => {
                changed = true;
                sources.push(kind.open(config, true));
            }
        }
    }
    if !changed {
        return None;
    }
    sources.extend(current.source_handles().filter(|s| s.source() == Source::Builtin).cloned());
    Some(Tablebases::new(sources))
}

fn file_sources(config: &Config, rescan: bool) -> Vec<Arc<dyn TableSource>> {
    FileSource::configured(config).map(|(kind, _)| kind.open(config, rescan)).collect()
}

/// The sources that read table files, in priority order.
#[derive(Clone, Copy)]
enum FileSource {
    Syzygy,
    Gaviota,
    Chesstb,
}

impl FileSource {
    /// The file sources with directories configured, and their directories.
    fn configured(config: &Config) -> impl Iterator<Item = (FileSource, &[std::path::PathBuf])> {
        [
            (FileSource::Syzygy, config.syzygy.as_slice()),
            (FileSource::Gaviota, config.gaviota.as_slice()),
            (FileSource::Chesstb, config.chesstb.as_slice()),
        ]
        .into_iter()
        .filter(|(_, dirs)| !dirs.is_empty())
    }

    fn source(self) -> Source {
        match self {
            FileSource::Syzygy => Source::Syzygy,
            FileSource::Gaviota => Source::Gaviota,
            FileSource::Chesstb => Source::Chesstb,
        }
    }

    /// Opens the configured directories of this source; `rescan` restarts
    /// libgtb even with the same directories.
    fn open(self, config: &Config, rescan: bool) -> Arc<dyn TableSource> {
        match self {
            FileSource::Syzygy => Arc::new(SyzygySource::open(&config.syzygy, config.syzygy_io)),
            FileSource::Gaviota => {
                let cache_bytes = config.gaviota_cache_mib << 20;
                Arc::new(if rescan {
                    GaviotaSource::reopen(&config.gaviota, cache_bytes)
                } else {
                    GaviotaSource::open(&config.gaviota, cache_bytes)
                })
            }
            FileSource::Chesstb => Arc::new(ChesstbSource::open(
                &config.chesstb,
                config.chesstb_cache_mib << 20,
                config.chesstb_max_open_files,
            )),
        }
    }
}
