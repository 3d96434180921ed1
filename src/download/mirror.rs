//! Where a file is fetched from: a base URL under which it sits by its name
//! within its set (`--mirror URL`), or one of the public Syzygy mirrors that
//! syzygy-tables.info lists, each in its own folder layout.

use super::catalog::syzygy_pieces;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mirror {
    /// `BASE/NAME`: `KQvK.rtbw`, `wdl/KQK.lzw`.
    Flat(String),
    /// tablebase.lichess.ovh: `3-4-5-wdl/`, `3-4-5-dtz/`, `6-wdl/`, `6-dtz/`,
    /// `7/<white>v<black>_<pawnful|pawnless>/` (men per side, kings included).
    Lichess(String),
    /// tablebase.sesse.net: `3-4-5/`, `6-WDL/`, `6-DTZ/`, `7-WDL/`, `7-DTZ/`.
    Sesse(String),
}

/// The public Syzygy mirrors, in the order they are tried.
pub fn public_syzygy() -> Vec<Mirror> {
    vec![
        Mirror::Lichess("https://tablebase.lichess.ovh/tables/standard".to_owned()),
        Mirror::Sesse("http://tablebase.sesse.net/syzygy".to_owned()),
    ]
}

impl Mirror {
    /// A `--mirror` argument: a base URL over HTTP or HTTPS.
    pub fn parse_flat(url: &str) -> Result<Mirror, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("--mirror {url:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "--mirror {url:?}: only http:// and https:// are fetched (mirror an FTP or rsync source to a local \
                 directory first, see docs/tables.md)"
            ));
        }
        Ok(Mirror::Flat(url.trim_end_matches('/').to_owned()))
    }

    /// The URL of the file `name` (its path within its set).
    pub fn url(&self, name: &str) -> String {
        let wdl = name.ends_with(".rtbw");
        match self {
            Mirror::Flat(base) => format!("{base}/{name}"),
            Mirror::Lichess(base) => match syzygy_pieces(name) {
                ..=5 => format!("{base}/3-4-5-{}/{name}", if wdl { "wdl" } else { "dtz" }),
                6 => format!("{base}/6-{}/{name}", if wdl { "wdl" } else { "dtz" }),
                _ => {
                    let stem = name.split('.').next().unwrap_or(name);
                    let (white, black) = stem.split_once('v').unwrap_or((stem, ""));
                    let pawns = if stem.contains('P') { "pawnful" } else { "pawnless" };
                    format!("{base}/7/{}v{}_{pawns}/{name}", white.len(), black.len())
                }
            },
            Mirror::Sesse(base) => match syzygy_pieces(name) {
                ..=5 => format!("{base}/3-4-5/{name}"),
                n => format!("{base}/{n}-{}/{name}", if wdl { "WDL" } else { "DTZ" }),
            },
        }
    }

    /// The host part, for log lines.
    pub fn label(&self) -> String {
        let (Mirror::Flat(base) | Mirror::Lichess(base) | Mirror::Sesse(base)) = self;
        base.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts as syzygy-tables.info's download lists spell them.
    #[test]
    fn layouts() {
        let [lichess, sesse] = <[Mirror; 2]>::try_from(public_syzygy()).unwrap();
        let l = "https://tablebase.lichess.ovh/tables/standard";
        assert_eq!(lichess.url("KQvK.rtbw"), format!("{l}/3-4-5-wdl/KQvK.rtbw"));
        assert_eq!(lichess.url("KRPvKR.rtbz"), format!("{l}/3-4-5-dtz/KRPvKR.rtbz"));
        assert_eq!(lichess.url("KRPPvKR.rtbw"), format!("{l}/6-wdl/KRPPvKR.rtbw"));
        assert_eq!(lichess.url("KQRBvKQR.rtbz"), format!("{l}/7/4v3_pawnless/KQRBvKQR.rtbz"));
        assert_eq!(lichess.url("KRPPPvKR.rtbw"), format!("{l}/7/5v2_pawnful/KRPPPvKR.rtbw"));
        let s = "http://tablebase.sesse.net/syzygy";
        assert_eq!(sesse.url("KQvK.rtbz"), format!("{s}/3-4-5/KQvK.rtbz"));
        assert_eq!(sesse.url("KRPPvKR.rtbw"), format!("{s}/6-WDL/KRPPvKR.rtbw"));
        assert_eq!(sesse.url("KQRBvKQR.rtbz"), format!("{s}/7-DTZ/KQRBvKQR.rtbz"));
        let flat = Mirror::parse_flat("http://127.0.0.1:8000/tb/").unwrap();
        assert_eq!(flat.url("wdl/KQK.lzw"), "http://127.0.0.1:8000/tb/wdl/KQK.lzw");
        assert!(Mirror::parse_flat("ftp://ftp.example.org/pub").is_err());
        assert!(Mirror::parse_flat("not a url").is_err());
    }
}
