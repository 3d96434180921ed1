//! DTM50 against the half-move clock: a position's exact DTM50 at every
//! clock 0–99 in one answer, where it changes, and the chart as SVG.
//!
//! The values are those `/api/v1/probe` reports at each clock (the same
//! sources in the same order); only positions an exact DTM50 table covers
//! (built-in or chesstb) have a chart.

use std::fmt::Write as _;

use serde::Serialize;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, FromSetup, Position, PositionError};

use crate::{
    domain::{Dtm50, Source},
    error::NoAnswer,
    material,
    probe::{self, api_error},
    request::normalized_fen,
    tablebase::Tablebases,
};

/// Clocks charted: 0 to 99. At 100 only a mate on the board still counts.
pub(crate) const CLOCKS: u32 = 100;

/// A position's DTM50 at every half-move clock 0–99.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Dtm50ByClock {
    pub fen: String,
    /// White's material `v` Black's, e.g. `KRBvKQ`.
    pub material: String,
    pub side_to_move: &'static str,
    /// The position's own half-move clock (100 or more lies beyond the chart).
    pub halfmove_clock: u32,
    /// Where the values come from (`builtin`, `chesstb`, or `rules` for a
    /// position already decided on the board).
    pub source: Source,
    /// DTM50 at clocks 0 to 99, in order (`dtm50[c].halfmove_clock == c`),
    /// as `/api/v1/probe` reports it at each clock.
    pub dtm50: Vec<Dtm50>,
    /// Where the value differs from the clock before, in clock order.
    pub changes: Vec<Dtm50Change>,
}

/// A clock at which DTM50 changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Dtm50Change {
    /// The first clock with the new value.
    pub halfmove_clock: u32,
    pub kind: ChangeKind,
    /// Signed DTM50 in plies at the clock before (0: drawn).
    pub before_plies: i32,
    /// Signed DTM50 in plies from this clock on (0: drawn).
    pub after_plies: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ChangeKind {
    /// The side to move still mates (or is mated), but the clock forces a
    /// longer way: the quicker mates need too many quiet moves.
    LongerMate,
    /// The mate gets shorter (never seen in a correct table; listed so that
    /// any change has a kind).
    ShorterMate,
    /// The side to move's win becomes a draw: no mate fits before clock 100.
    WinToDraw,
    /// The side to move's loss becomes a draw: the opponent can no longer
    /// mate in time.
    LossToDraw,
    /// A draw becomes a win or a loss (as `ShorterMate`: listed for
    /// completeness).
    DrawToWin,
    DrawToLoss,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::LongerMate => "longer_mate",
            ChangeKind::ShorterMate => "shorter_mate",
            ChangeKind::WinToDraw => "win_to_draw",
            ChangeKind::LossToDraw => "loss_to_draw",
            ChangeKind::DrawToWin => "draw_to_win",
            ChangeKind::DrawToLoss => "draw_to_loss",
        }
    }
}

/// `pos` with its half-move clock set to `clock`.
fn at_clock(pos: &Chess, clock: u32) -> Result<Chess, NoAnswer> {
    let mut setup = pos.to_setup(EnPassantMode::Legal);
    setup.halfmoves = clock;
    Chess::from_setup(setup, CastlingMode::Standard)
        .or_else(PositionError::ignore_impossible_check)
        .map_err(|e| NoAnswer::IllegalPosition(e.to_string()))
}

/// DTM50 of `pos` at its own clock as `/api/v1/probe` gives it: by the rules
/// when the game is over on the board, else from the first exact table.
fn dtm50_at(tb: &Tablebases, pos: &Chess) -> Result<Option<(Dtm50, Source)>, NoAnswer> {
    let clock = pos.halfmoves();
    if pos.is_checkmate() {
        // Clocks here are below 100: the mate counts.
        return Ok(Some((Dtm50::new(0, true, clock), Source::Rules)));
    }
    if pos.is_stalemate() || pos.is_insufficient_material() {
        return Ok(Some((Dtm50::new(0, false, clock), Source::Rules)));
    }
    match tb.dtm50_plies(pos) {
        Ok(found) => Ok(found.map(|s| (Dtm50::new(s.value, false, clock), s.source))),
        Err(err) => Err(api_error(tb, err)),
    }
}

/// The chart's values for `pos` (its own clock is reported, not used).
pub(crate) fn dtm50_by_clock(tb: &Tablebases, pos: &Chess) -> Result<Dtm50ByClock, NoAnswer> {
    probe::check_coverage(tb, pos)?;
    let mut dtm50 = Vec::with_capacity(CLOCKS as usize);
    let mut source = Source::Rules;
    for clock in 0..CLOCKS {
        let Some((value, from)) = dtm50_at(tb, &at_clock(pos, clock)?)? else {
            return Err(NoAnswer::NoDtm50Table { material: material::normalized(pos.board()) });
        };
        // Every clock comes from the same table; the first one names it.
        if clock == 0 {
            source = from;
        }
        dtm50.push(value);
    }
    let changes = dtm50.windows(2).filter_map(|w| change(w[0], w[1])).collect();
    Ok(Dtm50ByClock {
        fen: normalized_fen(pos),
        material: material::by_color(pos.board()),
        side_to_move: side_name(pos.turn()),
        halfmove_clock: pos.halfmoves(),
        source,
        dtm50,
        changes,
    })
}

fn side_name(color: Color) -> &'static str {
    match color {
        Color::White => "white",
        Color::Black => "black",
    }
}

/// Whether the side to move mates (+1), is mated (−1) or draws (0).
fn result(d: Dtm50) -> i32 {
    match d.mate_in_moves {
        None => 0,
        Some(_) if d.plies > 0 => 1,
        Some(_) => -1,
    }
}

/// The change from `before` to `after` (one clock later), if any.
fn change(before: Dtm50, after: Dtm50) -> Option<Dtm50Change> {
    let kind = match (result(before), result(after)) {
        (b, a) if b == a && (b == 0 || before.plies == after.plies) => return None,
        (b, a) if b == a => {
            if after.plies.abs() > before.plies.abs() {
                ChangeKind::LongerMate
            } else {
                ChangeKind::ShorterMate
            }
        }
        (1, _) => ChangeKind::WinToDraw,
        (-1, _) => ChangeKind::LossToDraw,
        (_, 1) => ChangeKind::DrawToWin,
        _ => ChangeKind::DrawToLoss,
    };
    Some(Dtm50Change {
        halfmove_clock: after.halfmove_clock,
        kind,
        before_plies: before.plies,
        after_plies: after.plies,
    })
}

// The SVG chart: plot area and margins in SVG units.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 44.0;
const WIN_COLOUR: &str = "#2e7d32";
const LOSS_COLOUR: &str = "#c62828";
const DRAW_COLOUR: &str = "#8a8a8a";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// "mate in 70 for White", "draw".
fn describe(d: Dtm50, side_to_move: Color) -> String {
    match d.mate_in_moves {
        None => "draw".to_owned(),
        Some(_) if d.plies == 0 => format!("{} is checkmated", side_label(side_to_move)),
        Some(m) => {
            let winner = if m > 0 { side_to_move } else { !side_to_move };
            format!("mate in {} for {}", m.abs(), side_label(winner))
        }
    }
}

fn side_label(color: Color) -> &'static str {
    match color {
        Color::White => "White",
        Color::Black => "Black",
    }
}

/// The chart as a standalone SVG document: a step line of the mate
/// distance (full moves) over clocks 0–99, coloured by who mates, grey
/// where drawn; the position's own clock marked; each change circled.
/// Steps, changes and the marker carry `data-*` attributes with their
/// values, for machines as well as eyes.
pub(crate) fn render_svg(chart: &Dtm50ByClock) -> String {
    let turn = if chart.side_to_move == "white" { Color::White } else { Color::Black };
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let longest_moves = chart.dtm50.iter().filter_map(|d| d.mate_in_moves).map(i32::abs).max().unwrap_or(0);
    // Grid lines every 10 moves (20 beyond 100), the top the next line up.
    let tick_moves = if longest_moves > 100 { 20 } else { 10 };
    let top_moves = ((longest_moves + tick_moves - 1) / tick_moves * tick_moves).max(tick_moves);
    let x = |clock: f64| LEFT + clock * plot_w / f64::from(CLOCKS);
    let y = |moves: i32| TOP + plot_h - f64::from(moves.abs()) * plot_h / f64::from(top_moves);
    let colour = |d: Dtm50| match result(d) {
        1 => WIN_COLOUR,
        -1 => LOSS_COLOUR,
        _ => DRAW_COLOUR,
    };
    let moves_of = |d: Dtm50| d.mate_in_moves.unwrap_or(0);

    let mut s = String::with_capacity(24 * 1024);
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" class="dtm50-chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-family="system-ui, sans-serif" font-size="12" data-fen="{}" data-halfmove-clock="{}">"##,
        escape(&chart.fen),
        chart.halfmove_clock
    );
    let _ =
        write!(s, "<title>DTM50 by half-move clock for {} ({} to move)</title>", escape(&chart.fen), side_label(turn));
    s.push_str(r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = write!(
        s,
        r##"<text x="{LEFT}" y="18" font-size="14" font-weight="600" fill="#222">DTM50 by half-move clock · {} to move</text>"##,
        side_label(turn)
    );
    // Legend.
    let legend = [
        (WIN_COLOUR, format!("{} mates", side_label(turn))),
        (LOSS_COLOUR, format!("{} mates", side_label(!turn))),
        (DRAW_COLOUR, "draw".to_owned()),
    ];
    let mut lx = LEFT;
    for (c, label) in &legend {
        let _ = write!(
            s,
            r##"<line x1="{lx}" y1="34" x2="{}" y2="34" stroke="{c}" stroke-width="3"/><text x="{}" y="38" fill="#333">{label}</text>"##,
            lx + 16.0,
            lx + 20.0
        );
        lx += 30.0 + 7.0 * label.len() as f64;
    }

    // Axes and grid.
    let _ = write!(s, r##"<g class="axes" stroke="#ccc" stroke-width="1">"##);
    for moves in (0..=top_moves).step_by(tick_moves as usize) {
        let yy = y(moves);
        let _ = write!(s, r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/>"##, LEFT + plot_w);
    }
    s.push_str("</g>");
    let _ = write!(s, r##"<g class="labels" fill="#555" font-size="11">"##);
    for moves in (0..=top_moves).step_by(tick_moves as usize) {
        let _ =
            write!(s, r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{moves}</text>"##, LEFT - 6.0, y(moves) + 4.0);
    }
    for clock in (0..=CLOCKS).step_by(10) {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{clock}</text>"##,
            x(f64::from(clock)),
            TOP + plot_h + 16.0
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#333">half-move clock (plies since the last capture or pawn move)</text>"##,
        LEFT + plot_w / 2.0,
        HEIGHT - 8.0
    );
    let _ = write!(
        s,
        r##"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" fill="#333">mate in (moves)</text>"##,
        TOP + plot_h / 2.0
    );
    s.push_str("</g>");

    // The steps, and the rises between them.
    s.push_str(r##"<g class="steps" stroke-width="3" stroke-linecap="butt">"##);
    for (i, d) in chart.dtm50.iter().enumerate() {
        let c = i as f64;
        let yy = y(moves_of(*d));
        let _ = write!(
            s,
            r##"<line class="step" x1="{:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" data-clock="{i}" data-plies="{}" data-mate-in-moves="{}"><title>clock {i}: {}</title></line>"##,
            x(c),
            x(c + 1.0),
            colour(*d),
            d.plies,
            d.mate_in_moves.map_or_else(|| "null".to_owned(), |m| m.to_string()),
            describe(*d, turn)
        );
        if let Some(prev) = i.checked_sub(1).map(|p| chart.dtm50[p])
            && moves_of(prev) != moves_of(*d)
        {
            let _ = write!(
                s,
                r##"<line class="rise" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" stroke-width="1.5"/>"##,
                x(c),
                y(moves_of(prev)),
                x(c),
                colour(*d)
            );
        }
    }
    s.push_str("</g>");

    // Where the result changes.
    s.push_str(r##"<g class="changes">"##);
    for ch in &chart.changes {
        let d = chart.dtm50[ch.halfmove_clock as usize];
        let _ = write!(
            s,
            r##"<circle class="change" cx="{:.1}" cy="{:.1}" r="4.5" fill="#fff" stroke="#222" stroke-width="1.5" data-clock="{}" data-kind="{}"><title>from clock {}: {}</title></circle>"##,
            x(f64::from(ch.halfmove_clock)),
            y(moves_of(d)),
            ch.halfmove_clock,
            ch.kind.as_str(),
            ch.halfmove_clock,
            describe(d, turn)
        );
    }
    s.push_str("</g>");

    // The position's own clock.
    if let Some(own) = chart.dtm50.get(chart.halfmove_clock as usize) {
        let cx = x(f64::from(chart.halfmove_clock) + 0.5);
        let label = format!("clock {}: {}", chart.halfmove_clock, describe(*own, turn));
        // The label sits on the side of the marker with more room.
        let anchor = if chart.halfmove_clock < CLOCKS / 2 { "start" } else { "end" };
        let dx = if anchor == "start" { 6.0 } else { -6.0 };
        let _ = write!(
            s,
            r##"<g class="own-clock" data-clock="{}" data-plies="{}"><line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#1565c0" stroke-width="1.5" stroke-dasharray="4 3"/><circle cx="{cx:.1}" cy="{:.1}" r="5" fill="#1565c0"/><text x="{:.1}" y="{:.1}" text-anchor="{anchor}" fill="#1565c0" font-weight="600">{}</text></g>"##,
            chart.halfmove_clock,
            own.plies,
            TOP - 4.0,
            TOP + plot_h,
            y(moves_of(*own)),
            cx + dx,
            TOP - 6.0,
            escape(&label)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(plies: i32, clock: u32) -> Dtm50 {
        Dtm50::new(plies, false, clock)
    }

    #[test]
    fn changes_are_named_by_what_happens() {
        assert_eq!(change(at(-139, 10), at(-139, 11)), None);
        assert_eq!(change(at(0, 10), at(0, 11)), None);
        let longer = change(at(-139, 10), at(-143, 11)).unwrap();
        assert_eq!(
            (longer.kind, longer.halfmove_clock, longer.before_plies, longer.after_plies),
            (ChangeKind::LongerMate, 11, -139, -143)
        );
        assert_eq!(change(at(31, 69), at(0, 70)).unwrap().kind, ChangeKind::WinToDraw);
        assert_eq!(change(at(-31, 69), at(0, 70)).unwrap().kind, ChangeKind::LossToDraw);
        // A checkmated side (0 plies, decided) stays mated at every clock.
        assert_eq!(change(Dtm50::new(0, true, 3), Dtm50::new(0, true, 4)), None);
    }
}
