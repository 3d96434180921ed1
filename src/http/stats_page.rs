//! `/tables` and `/tables/{material}`: plain HTML pages (no JavaScript) with
//! the statistics of the built-in tables: positions by category, the longest
//! values with example positions linked to the probe page, and histograms
//! drawn as inline SVG.

use std::fmt::Write as _;

use tbgen::stats::{Example, Histogram, SideStats, TableStats};

use super::metrics_page::encode_fen;

/// A section of the page: its id, its title and what it shows of each side.
type Section<T> = (&'static str, &'static str, fn(&SideStats) -> &T);

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn head(title: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{} · tbserver</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/site.css">
<style>
.stats-hist{{display:block;width:100%;max-width:46rem;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px;margin:.4rem 0 1rem}}
table.values td.num{{text-align:right;font-variant-numeric:tabular-nums;font-weight:400}}
figure.example img{{width:160px}}
.table-scroll{{overflow-x:auto}}
</style>
</head>
<body>
<header class="site"><a class="brand" href="/">tbserver</a><nav><a href="/">Probe</a><a href="/tables" aria-current="page">Tables</a><a href="/metrics">What the numbers mean</a></nav></header>
<main class="prose">
"#,
        escape(title)
    )
}

const FOOT: &str = r#"</main>
<footer class="site">tbserver is free software under the GNU GPL, version 3 or later. Piece images: cburnett set, see <a href="/static/LICENSES.md">licences</a>.</footer>
</body>
</html>
"#;

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The list of tables with statistics: `(material, pieces)`, sorted.
pub(crate) fn render_index(tables: &[(String, usize)]) -> String {
    let mut html = head("Table statistics");
    html.push_str("<h1>Table statistics</h1>\n");
    if tables.is_empty() {
        html.push_str("<p>No built-in table has been generated yet (or built-in tables are turned off). Statistics are kept for every built-in table once it exists.</p>\n");
    } else {
        html.push_str("<p>Every built-in table, with its positions by category for each side to move, its longest DTZ50'', DTM and DTM50, and histograms. The same figures are served as JSON by <code>/api/v1/tables/{material}/stats</code>.</p>\n");
        let mut pieces = 0;
        for (name, n) in tables {
            if *n != pieces {
                if pieces != 0 {
                    html.push_str("</p>\n");
                }
                pieces = *n;
                let _ = write!(html, "<h2>{n} pieces</h2>\n<p class=\"table-list\">");
            }
            let _ = write!(html, "<a href=\"/tables/{0}\">{0}</a> ", escape(name));
        }
        html.push_str("</p>\n");
    }
    html.push_str(FOOT);
    html
}

/// One table's statistics page.
pub fn render(stats: &TableStats) -> String {
    let name = escape(&stats.material);
    let mut html = head(&format!("{}: statistics", stats.material));
    let _ = write!(
        html,
        "<h1>{name}: statistics of the built-in table</h1>\n<p>{} legal positions (distinct under the board's symmetries). \
         Categories are at half-move clock 0, from the side to move's point of view. As JSON: \
         <a href=\"/api/v1/tables/{name}/stats\"><code>/api/v1/tables/{name}/stats</code></a>.</p>\n",
        thousands(stats.legal_positions)
    );
    let sides = [("White to move", &stats.white_to_move), ("Black to move", &stats.black_to_move)];

    html.push_str("<h2 id=\"categories\">Positions by category</h2>\n<div class=\"table-scroll\"><table class=\"values categories\">\n<thead><tr><th scope=\"col\">Side to move</th><th scope=\"col\">Positions</th>");
    for (class, label) in [
        ("win", "Win"),
        ("cursed-win", "Cursed win"),
        ("draw", "Draw"),
        ("blessed-loss", "Blessed loss"),
        ("loss", "Loss"),
    ] {
        let _ = write!(html, "<th scope=\"col\" class=\"cat-{class}\">{label}</th>");
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for (label, s) in sides {
        let _ = write!(html, "<tr><th scope=\"row\">{label}</th><td class=\"num\">{}</td>", thousands(s.positions));
        for n in [s.wins, s.cursed_wins, s.draws, s.blessed_losses, s.losses] {
            let _ = write!(html, "<td class=\"num\">{}</td>", thousands(n));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table></div>\n");

    html.push_str("<h2 id=\"longest\">Longest values</h2>\n<p>The decisive position farthest from its goal for each side to move, in plies, signed from the side to move's point of view (positive: it wins). Click a board to probe it.</p>\n");
    let metrics: [Section<Option<Example>>; 3] = [
        ("dtz50", "DTZ50'' (to the next capture, pawn move or mate)", |s| &s.longest_dtz50),
        ("dtm", "DTM (to mate, ignoring the 50-move rule)", |s| &s.longest_dtm),
        ("dtm50", "DTM50 at half-move clock 0 (to mate under the 50-move rule)", |s| &s.longest_dtm50),
    ];
    for (id, title, get) in metrics {
        let _ = writeln!(html, "<h3>{}</h3>", escape(title));
        for (label, s) in sides {
            match get(s) {
                Some(e) => {
                    let link = format!("/?fen={}", encode_fen(&e.fen));
                    let _ = writeln!(
                        html,
                        "<figure class=\"example longest\" data-metric=\"{id}\" data-plies=\"{}\"><a href=\"{link}\"><img src=\"/board.svg?fen={}&amp;size=160\" alt=\"{}\" width=\"160\" height=\"160\" loading=\"lazy\"></a>\
                         <figcaption><strong>{label}: {} plies</strong><br><a href=\"{link}\"><code>{}</code></a></figcaption></figure>",
                        e.plies,
                        encode_fen(&e.fen),
                        escape(&e.fen),
                        e.plies,
                        escape(&e.fen)
                    );
                }
                None => {
                    let _ = writeln!(html, "<p>{label}: no decisive position.</p>");
                }
            }
        }
    }

    html.push_str("<h2 id=\"histograms\">Histograms</h2>\n<p>Positions by distance in plies: wins of the side to move above the line, losses below it. Hover over a bar for its count.</p>\n");
    let histograms: [Section<Histogram>; 3] = [
        ("dtz50", "DTZ50''", |s| &s.dtz50_histogram),
        ("dtm", "DTM", |s| &s.dtm_histogram),
        ("dtm50", "DTM50 at clock 0", |s| &s.dtm50_histogram),
    ];
    for (id, title, get) in histograms {
        if id == "dtm50" && !stats.has_dtm50 {
            continue;
        }
        let _ = writeln!(html, "<h3>{title}</h3>");
        for (label, s) in sides {
            let _ = writeln!(html, "<h4>{label}</h4>");
            html.push_str(&histogram_svg(get(s), id, label));
        }
    }
    html.push_str(FOOT);
    html
}

/// Bars of wins above a middle line and losses below it, one per ply from
/// 0 to the longest; linear counts, the largest bar full height.
fn histogram_svg(h: &Histogram, metric: &str, side: &str) -> String {
    const W: f64 = 720.0;
    const HALF: f64 = 90.0;
    const LEFT: f64 = 8.0;
    const AXIS_LABELS: f64 = 18.0;
    let longest = h.wins.iter().chain(&h.losses).map(|b| b.plies).max().unwrap_or(0) as f64;
    let most = h.wins.iter().chain(&h.losses).map(|b| b.positions).max().unwrap_or(1).max(1) as f64;
    let bar = (W - 2.0 * LEFT) / (longest + 1.0);
    let mid = HALF + 4.0;
    let height = 2.0 * HALF + 8.0 + AXIS_LABELS;
    let mut s = format!(
        r##"<svg class="stats-hist" data-metric="{metric}" viewBox="0 0 {W} {height}" role="img" aria-label="{metric} histogram, {side}" font-family="system-ui, sans-serif" font-size="11">"##
    );
    for (bins, up, colour) in [(&h.wins, true, "#1b7a2e"), (&h.losses, false, "#b01c1c")] {
        for b in bins {
            let len = (b.positions as f64 / most * HALF).max(0.5);
            let x = LEFT + f64::from(b.plies) * bar;
            let y = if up { mid - len } else { mid };
            let result = if up { "win" } else { "loss" };
            let _ = write!(
                s,
                r##"<rect x="{x:.2}" y="{y:.2}" width="{:.2}" height="{len:.2}" fill="{colour}" data-plies="{}" data-positions="{}" data-result="{result}"><title>{} positions {} in {} plies</title></rect>"##,
                (bar * 0.9).max(0.5),
                b.plies,
                b.positions,
                thousands(b.positions),
                if up { "win" } else { "lose" },
                b.plies
            );
        }
    }
    let _ = write!(s, r##"<line x1="{LEFT}" y1="{mid}" x2="{:.1}" y2="{mid}" stroke="#555"/>"##, W - LEFT);
    // Tick labels every 10 or 50 plies, as the longest allows.
    let step = if longest > 300.0 {
        50
    } else if longest > 60.0 {
        20
    } else {
        10
    };
    for p in (0..=longest as u32).step_by(step) {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">{p}</text>"##,
            LEFT + f64::from(p) * bar + bar / 2.0,
            height - 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2_467_122), "2,467,122");
    }
}
