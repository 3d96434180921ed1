//! `tbserver analyse FEN`: UCI-style progress lines on stdout.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

use super::{Limits, Oracle, Score, SearchOptions, SearchResult, analyse};

fn uci_score(s: &Score) -> String {
    match s {
        Score::Mate { mate_in_moves, bound, .. } => {
            // UCI bounds are on the score: a win in at most N moves is at
            // least as good as "mate N", a loss in at most N at most as good.
            let winning = *mate_in_moves > 0;
            let b = match bound {
                super::ScoreBound::Exact => "",
                super::ScoreBound::AtMost if winning => " lowerbound",
                super::ScoreBound::AtLeast if !winning => " lowerbound",
                _ => " upperbound",
            };
            format!("mate {mate_in_moves}{b}")
        }
        Score::Draw { swindle_cp } => format!("cp {swindle_cp}"),
        Score::Cp { cp } => format!("cp {cp}"),
    }
}

pub(crate) fn info_line(r: &SearchResult) -> String {
    let nps = r.nodes * 1000 / r.elapsed_ms.max(1);
    let pv: Vec<&str> = r.pv.iter().map(|m| m.uci.as_str()).collect();
    format!(
        "info depth {} score {} nodes {} nps {} tbhits {} time {} pv {}",
        r.depth,
        uci_score(&r.score),
        r.nodes,
        nps,
        r.tb_hits,
        r.elapsed_ms,
        pv.join(" ")
    )
}

/// Analyses `fen` and prints one `info` line per completed depth, then
/// `bestmove`. Returns the final result (also for tests).
pub fn run_analyse_cli(
    fen: &str,
    oracle: &dyn Oracle,
    movetime_ms: Option<u64>,
    depth: Option<u32>,
    out: &mut dyn Write,
) -> Result<SearchResult, String> {
    let pos: Chess = fen
        .parse::<Fen>()
        .map_err(|e| format!("bad FEN: {e}"))?
        .into_position(CastlingMode::Standard)
        .map_err(|e| e.to_string())?; // "illegal position: ..." 
    let limits = Limits { movetime: Some(Duration::from_millis(movetime_ms.unwrap_or(5_000))), nodes: None, depth };
    let cancel = Arc::new(AtomicBool::new(false));
    let mut sink = |r: &SearchResult| {
        let _ = writeln!(out, "{}", info_line(r));
    };
    let result = analyse(&pos, oracle, &limits, &SearchOptions::default(), &cancel, &mut sink);
    let best = result.best_move.as_ref().map_or("(none)", |m| m.uci.as_str());
    if let Some(stop) = result.stop {
        let reason = serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let _ = writeln!(out, "info string stop {reason}");
    }
    let _ = writeln!(out, "bestmove {best}");
    Ok(result)
}
