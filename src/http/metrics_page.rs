//! `/metrics`: a plain HTML page (no JavaScript needed) explaining what the
//! numbers tbserver reports mean, illustrated by reference positions drawn
//! by `/board.svg`.

use std::fmt::Write as _;

use serde_json::Value;

use crate::{
    probe::{self, MoveOrder},
    request::parse_fen,
    tablebase::Tablebases,
};

/// A reference position shown on the page.
pub(crate) struct Example {
    pub fen: &'static str,
    pub caption: &'static str,
}

/// The reference positions (see the project's metrics documentation).
pub(crate) const ROUNDING: Example = Example {
    fen: "1kb5/8/1KN5/3N4/8/8/8/8 b - - 0 1",
    caption: "KNN v KB, Black to move. Black's only legal move is Ka8, and the stored distance to zeroing does not shrink after it.",
};
pub(crate) const CURSED: Example = Example {
    fen: "8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1",
    caption: "KNN v KP, Black to move. Black can promote within 7 plies, yet the table reports a distance of 107: the win that follows is cursed.",
};
pub(crate) const ORDINARY: Example = Example {
    fen: "3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1",
    caption: "KBN v K, White to move. An ordinary win: the distance to zeroing is 24 plies, far from the 100-ply limit.",
};

#[cfg(test)]
pub(crate) const EXAMPLES: [&Example; 3] = [&ROUNDING, &CURSED, &ORDINARY];

/// Percent-encode a FEN for use in a query string.
pub(crate) fn encode_fen(fen: &str) -> String {
    let mut out = String::with_capacity(fen.len() + 8);
    for b in fen.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => out.push(b as char),
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The probe answer for a reference position as JSON (the same answer the
/// API gives), or `None` when the tables are not available.
pub(crate) fn live_answer(tb: &Tablebases, fen: &str) -> Option<Value> {
    let pos = parse_fen(fen).ok()?;
    let answer = probe::probe(tb, &pos, MoveOrder::Dtm50First).ok()?;
    serde_json::to_value(&answer).ok()
}

/// Live answers for the three examples, in the order rounding, cursed, ordinary.
pub(crate) fn live_answers(tb: &Tablebases) -> [Option<Value>; 3] {
    [live_answer(tb, ROUNDING.fen), live_answer(tb, CURSED.fen), live_answer(tb, ORDINARY.fen)]
}

fn signed(n: i64) -> String {
    if n > 0 { format!("+{n}") } else { n.to_string().replace('-', "&minus;") }
}

fn dtz_words(dtz: &Value) -> Option<String> {
    let plies = dtz.get("plies")?.as_i64()?;
    let unit = if plies.abs() == 1 { "ply" } else { "plies" };
    let mut s = format!("DTZ50 {} {unit}", signed(plies));
    if dtz.get("rounding")?.as_str()? == "maybe_rounded" {
        let mut r: Vec<i64> =
            dtz.get("range_plies")?.as_array()?.iter().filter_map(Value::as_i64).map(i64::abs).collect();
        r.sort_unstable();
        if let [lo, hi] = r[..] {
            let _ = write!(s, " (possibly rounded: really {lo} or {hi})");
        }
    } else {
        s.push_str(" (exact)");
    }
    Some(s)
}

/// One sentence with the values this server reports for an example.
fn live_summary(answer: &Value) -> Option<String> {
    let side = match answer.get("side_to_move")?.as_str()? {
        "white" => "White",
        _ => "Black",
    };
    let category = answer.get("category")?.as_str()?;
    let mut s =
        format!("Measured by this server: <strong>{}</strong> for {side} to move", escape(&category.replace('-', " ")));
    if let Some(w) = answer.get("wdl50").and_then(Value::as_i64) {
        let _ = write!(s, ", WDL50 {}", signed(w));
    }
    if let Some(d) = answer.get("dtz50").and_then(dtz_words) {
        let _ = write!(s, ", {d}");
    }
    s.push('.');
    if let Some(best) = answer.get("moves").and_then(Value::as_array).and_then(|m| m.first()) {
        let san = best.get("san").and_then(Value::as_str).unwrap_or("?");
        let n = answer.get("moves").and_then(Value::as_array).map_or(0, Vec::len);
        let lead = if n == 1 { "Only move" } else { "Best move" };
        let _ = write!(s, " {lead} {}", escape(san));
        if let Some(d) = best.get("dtz50").and_then(dtz_words) {
            let _ = write!(s, "; after it, for the opponent: {d}");
        }
        s.push('.');
    }
    Some(s)
}

fn figure(ex: &Example, live: Option<&Value>) -> String {
    let q = encode_fen(ex.fen);
    let live = match live.and_then(live_summary) {
        Some(text) => format!("<p class=\"live\">{text}</p>"),
        None => "<p class=\"live\">(The tables for this position are not installed on this server.)</p>".to_owned(),
    };
    format!(
        r#"<figure class="example">
  <a href="/?fen={q}" title="Open this position on the probe board"><img src="/board.svg?fen={q}&amp;size=280" width="280" height="280" alt="Board: {alt}"></a>
  <figcaption>{caption}<br><code>{fen}</code>{live}<a href="/?fen={q}">Probe this position</a></figcaption>
</figure>"#,
        alt = escape(ex.fen),
        caption = escape(ex.caption),
        fen = escape(ex.fen),
    )
}

/// The full HTML page; `live` holds the server's answers for the examples
/// (rounding, cursed, ordinary), see [`live_answers`].
pub fn render(live: &[Option<Value>; 3]) -> String {
    let mut html = String::with_capacity(16 * 1024);
    html.push_str(HEAD);
    html.push_str(
        r#"<main class="prose">
<h1>What the numbers mean</h1>
<p>Every value tbserver reports is seen <strong>from the side to move</strong>: positive numbers
are good for the player whose turn it is, negative numbers are good for the opponent.
Distances are counted in <em>plies</em> (half-moves: one move by one side). Each board below
is drawn by tbserver; click it to open the position on the <a href="/">probe board</a>.</p>

<h2 id="wdl50">WDL50: five possible verdicts</h2>
<p>The fifty-move rule lets a player claim a draw once 100 plies in a row have passed without
a capture or a pawn move. WDL50 folds that rule into the verdict, so there are five outcomes
instead of three:</p>
<table class="values">
<thead><tr><th scope="col">WDL50</th><th scope="col">Verdict</th><th scope="col">In practice</th></tr></thead>
<tbody>
<tr class="cat-win"><td>+2</td><td>win</td><td>The side to move can force mate without the fifty-move rule ever getting in the way.</td></tr>
<tr class="cat-cursed-win"><td>+1</td><td>cursed win</td><td>Mate could be forced in unlimited time, but the defender can always reach the fifty-move limit first: a draw under the rules of play.</td></tr>
<tr class="cat-draw"><td>0</td><td>draw</td><td>Neither side can force a win.</td></tr>
<tr class="cat-blessed-loss"><td>&minus;1</td><td>blessed loss</td><td>The opponent could mate in unlimited time, but the side to move can run out the fifty-move clock: a draw under the rules.</td></tr>
<tr class="cat-loss"><td>&minus;2</td><td>loss</td><td>The opponent can force mate in time.</td></tr>
</tbody>
</table>
<p>Syzygy WDL tables answer as if the move counter had just been reset (a capture or pawn move
was just played). A position reached after many quiet moves may be closer to the limit than
that; the verdict at the real half-move clock therefore also needs the DTZ value below.</p>
"#,
    );
    html.push_str(&figure(&ORDINARY, live[2].as_ref()));

    html.push_str(
        r#"
<h2 id="dtz50">DTZ50'': distance to the next zeroing move</h2>
<p>DTZ50'' counts the plies until the next <em>zeroing</em> move (a capture or a pawn move,
which resets the fifty-move counter) or until mate, when both sides play so that the best
outcome reachable under the fifty-move rule is kept. It is positive when the side to move
wins, negative when it loses, and 0 for a draw. In the board above, White wins and the
tables give a DTZ of 24: a capture, pawn move or mate can be forced within 24 plies (25 at
most, because this table stores whole moves, see <a href="/metrics#rounding">rounding</a>), comfortably
inside the limit.</p>
<p>The DTZ value does not measure how far mate is; the winning side converts to a smaller
endgame (or mates) first, and the count starts again there.</p>

<h2 id="beyond-100">Values above 100: cursed wins</h2>
<p>A DTZ between 1 and 100 means a real win. A value <strong>above 100</strong> marks a
<em>cursed win</em>: the win exists on the board but the fifty-move rule takes it away. The
number then means: zeroing can be forced in that many plies, <em>or</em> in 100 fewer, when
the rule only bites in a later phase of the endgame. Adding 100 in those cases keeps the
meaning of small values exact: 1 to 100 is always a win that survives the rule. Negative
values below &minus;100 are the mirror image, blessed losses.</p>
"#,
    );
    html.push_str(&figure(&CURSED, live[1].as_ref()));
    html.push_str(
        r#"
<p>Here Black promotes the pawn after only 7 plies, yet the table says 107. After promotion
the game is king and queen against king and two knights, and in that phase White can
defend long enough to claim a draw by the fifty-move rule. So Black's win is cursed, and the
extra 100 in the number records that the rule bites in the later phase, not in this one.</p>

<h2 id="rounding">Rounding: exact or possibly one ply short</h2>
<p>To keep the files small, some Syzygy DTZ tables store whole moves instead of plies where
the difference cannot change the verdict. A stored value <var>n</var> then means the true
distance is <var>n</var> or <var>n</var>&nbsp;+&nbsp;1. The tables never round where the
rounding could turn a win into a draw or back. tbserver says for every DTZ whether it is
<strong>exact</strong> or <strong>maybe rounded</strong>; tables that tbserver generates
itself are always exact.</p>
"#,
    );
    html.push_str(&figure(&ROUNDING, live[0].as_ref()));
    html.push_str(
        r#"
<p>In this position Black has only one legal move, Ka8. A strict ply count would have to
go down by one after it, but the table shows the same distance before and after: the stored
values are in whole moves here, so one of them is really one ply more than shown.</p>

<h2 id="fifty-move-edge">Near the fifty-move edge, every ply counts</h2>
<p>Because a rounded value may be one ply short, a line that simply follows the tables can
already spend one ply more than the number promised. That is harmless while there is room
to spare, but when the half-move clock plus the distance comes close to 100, a player who
wastes <strong>one more</strong> ply (a slower move, a detour) can push the zeroing move past
the limit and throw the win away. When the clock plus DTZ is exactly 100 and the value may
be rounded, tbserver cannot tell whether the win survives and reports
<code>maybe-win</code> (or <code>maybe-loss</code> for the defender).</p>

<h2 id="categories">Verdict at the real half-move clock</h2>
<p>With half-move clock <var>h</var> and distance <var>d</var> for a winning position:</p>
<ul>
<li><strong>win</strong> when <var>d</var> + <var>h</var> &le; 100;</li>
<li><strong>cursed win</strong> when <var>d</var> + <var>h</var> &gt; 100 (a draw under the rule);</li>
<li><strong>maybe win</strong> when <var>d</var> + <var>h</var> = 100 exactly, <var>h</var> &gt; 0 and <var>d</var> may be rounded;</li>
<li>losses mirror these: <strong>loss</strong>, <strong>blessed loss</strong>, <strong>maybe loss</strong>;</li>
<li><strong>unknown</strong> when the tables needed are not installed.</li>
</ul>

<h2 id="dtm">DTM and DTM50: distance to mate</h2>
<p><strong>DTM</strong> (from the Gaviota tables, or from tbserver's own tables for up to
four pieces) is the number of plies to mate with best play, shown also as "mate in
<var>N</var> moves". It <em>ignores</em> the fifty-move rule, so a DTM mate may be impossible
to reach in a real game. <strong>DTM50</strong> is the shortest mate that does respect the
rule at the actual half-move clock. The <strong>mate bound</strong> shown on the probe page
is a guaranteed range for it, worked out from whichever tables answered (WDL, DTZ or DTM)
without any search; the <em>Analyse</em> button runs a search that narrows the range, often
down to the exact value.</p>

<h2 id="moves">The move table</h2>
<p>For every legal move the probe page shows the same values for the position after it, but
turned around to the mover's point of view, and lists the moves best first: wins before
cursed wins before draws before blessed losses before losses; the fastest win first, the
slowest loss first.</p>
</main>
"#,
    );
    html.push_str(FOOT);
    html
}

const HEAD: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>What the numbers mean · tbserver</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/site.css">
</head>
<body>
<header class="site"><a class="brand" href="/">tbserver</a><nav><a href="/">Probe</a><a href="/tables">Tables</a><a href="/metrics" aria-current="page">What the numbers mean</a></nav></header>
"#;

const FOOT: &str = r#"<footer class="site">tbserver is free software under the GNU GPL, version 3 or later. Piece images: cburnett set, see <a href="/static/LICENSES.md">licences</a>.</footer>
</body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_fens() {
        assert_eq!(encode_fen("8/8 b - - 0 1"), "8/8+b+-+-+0+1");
        assert_eq!(encode_fen("a&b#c"), "a%26b%23c");
    }

    #[test]
    fn page_links_every_example() {
        let page = render(&[None, None, None]);
        for ex in EXAMPLES {
            let q = encode_fen(ex.fen);
            assert!(page.contains(&format!("/board.svg?fen={q}")));
            assert!(page.contains(&format!("href=\"/?fen={q}\"")));
        }
    }
}
