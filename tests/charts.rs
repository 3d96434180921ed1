//! The DTM50 clock chart and the statistics of the built-in tables, against
//! independent figures: `/api/v1/probe` at each clock (the chart), and
//! Syzygy's published statistics and longest DTZ (the tables).

#[macro_use]
mod common;

use std::collections::BTreeMap;

use common::{TestServer, enc};
use serde_json::Value;

/// KRBvKQ, White to move: Black mates in 70 at clock 0, in 72 from clock 11.
const KRBVKQ: &str = "k4B2/8/8/8/6q1/8/K3R3/8 w - - 0 1";

fn with_clock(fen: &str, clock: u32) -> String {
    let fields: Vec<&str> = fen.split(' ').collect();
    format!("{} {} {} {} {clock} {}", fields[0], fields[1], fields[2], fields[3], fields[5])
}

/// chesstb's tables alone (its KQKRB is tbserver's KRBvKQ).
fn chesstb_server() -> Option<TestServer> {
    let mut config =
        tbserver::config::Config { chesstb: vec![common::chesstb_dir()?], cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    Some(TestServer::start(config))
}

#[test]
fn clock_chart_equals_the_probe_at_every_clock() {
    let Some(server) = chesstb_server() else { return };
    let (status, chart) = server.get(&format!("/api/v1/dtm50-by-clock?fen={}", enc(&with_clock(KRBVKQ, 15))));
    assert_eq!(status, 200, "{chart}");
    assert_eq!((chart["material"].as_str(), chart["source"].as_str()), (Some("KRBvKQ"), Some("chesstb")));
    assert_eq!((chart["side_to_move"].as_str(), chart["halfmove_clock"].as_u64()), (Some("white"), Some(15)));
    let values = chart["dtm50"].as_array().unwrap();
    assert_eq!(values.len(), 100);
    for (clock, value) in values.iter().enumerate() {
        let (status, probe) = server.get(&format!("/api/v1/probe?fen={}", enc(&with_clock(KRBVKQ, clock as u32))));
        assert_eq!(status, 200, "{probe}");
        assert_eq!(value, &probe["dtm50"], "clock {clock}");
        assert_eq!(value["halfmove_clock"], clock);
    }
    // The position's values: mate in 70 for Black at clock 0, 72 at clock 11.
    assert_eq!((values[0]["plies"].as_i64(), values[0]["mate_in_moves"].as_i64()), (Some(-140), Some(-70)));
    assert_eq!((values[11]["plies"].as_i64(), values[11]["mate_in_moves"].as_i64()), (Some(-144), Some(-72)));

    // The changes are exactly the clocks whose value differs from the one
    // before, named by what happens there.
    let mut expected = Vec::new();
    for clock in 1..100 {
        let (before, after) = (&values[clock - 1], &values[clock]);
        let key = |v: &Value| (v["plies"].clone(), v["mate_in_moves"].clone());
        if key(before) == key(after) {
            continue;
        }
        let (b, a) = (before["plies"].as_i64().unwrap(), after["plies"].as_i64().unwrap());
        let kind = match (b.signum(), a.signum()) {
            (1, 0) => "win_to_draw",
            (-1, 0) => "loss_to_draw",
            (x, y) if x == y && a.abs() > b.abs() => "longer_mate",
            other => panic!("unexpected change {other:?} at clock {clock}"),
        };
        expected.push(serde_json::json!({"halfmove_clock": clock, "kind": kind, "before_plies": b, "after_plies": a}));
    }
    assert_eq!(chart["changes"].as_array().unwrap(), &expected);
    assert_eq!(expected[0]["halfmove_clock"], 11);
    assert_eq!(expected[0]["kind"], "longer_mate");

    // The SVG export draws the same values.
    let svg = reqwest::blocking::get(format!("{}/dtm50-chart.svg?fen={}", server.base, enc(&with_clock(KRBVKQ, 15))))
        .unwrap();
    assert_eq!(svg.status(), 200);
    assert_eq!(svg.headers()["content-type"], "image/svg+xml");
    let text = svg.text().unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let steps: Vec<_> = doc.descendants().filter(|n| n.attribute("class") == Some("step")).collect();
    assert_eq!(steps.len(), 100);
    for (clock, step) in steps.iter().enumerate() {
        assert_eq!(step.attribute("data-clock"), Some(clock.to_string().as_str()));
        assert_eq!(step.attribute("data-plies"), Some(values[clock]["plies"].to_string().as_str()));
    }
    let own = doc.descendants().find(|n| n.attribute("class") == Some("own-clock")).unwrap();
    assert_eq!((own.attribute("data-clock"), own.attribute("data-plies")), (Some("15"), Some("-144")));
    let changes: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("change"))
        .map(|n| n.attribute("data-clock").unwrap())
        .collect();
    assert_eq!(changes.len(), expected.len());
    report!(
        "dtm50-by-clock: 100 clocks of {KRBVKQ} equal /api/v1/probe's dtm50; {} changes; SVG steps match",
        expected.len()
    );
}

#[test]
fn clock_chart_errors_have_stable_codes() {
    // Syzygy and Gaviota only: no exact DTM50 anywhere.
    let Some(server) = TestServer::with_shared_tables() else { return };
    for (fen, status, code) in [
        ("8/8/8/8/8/2k5/8/R3K3 w - - 0 1", 404, "no_dtm50_table"),
        ("not a fen", 400, "invalid_fen"),
        ("4k3/8/8/8/8/8/8/4K2R w K - 0 1", 422, "castling_rights"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1", 422, "too_many_pieces"),
    ] {
        for path in ["/api/v1/dtm50-by-clock", "/dtm50-chart.svg"] {
            let (got, body) = server.get(&format!("{path}?fen={}", enc(fen)));
            assert_eq!((got, body["error"]["code"].as_str()), (status, Some(code)), "{path} {fen}: {body}");
        }
    }
    let (status, body) = server.get("/api/v1/dtm50-by-clock");
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("missing_parameter")));
    // A position decided on the board is charted by the rules.
    let Some(server) = chesstb_server() else { return };
    let (status, chart) = server.get(&format!("/api/v1/dtm50-by-clock?fen={}", enc("R3k3/8/4K3/8/8/8/8/8 b - - 0 1")));
    assert_eq!(status, 200, "{chart}");
    assert_eq!(chart["source"], "rules");
    assert!(chart["dtm50"].as_array().unwrap().iter().all(|d| d["plies"] == 0 && d["mate_in_moves"] == 0));
    assert_eq!(chart["changes"].as_array().unwrap().len(), 0);
}

/// Syzygy's published statistics of one table, one side to move.
#[derive(Debug, Default)]
struct Published {
    wins: u64,
    cursed_wins: u64,
    draws: u64,
    cursed_losses: u64,
    losses: u64,
    /// DTZ plies → positions.
    win_in: BTreeMap<u64, u64>,
    lose_in: BTreeMap<u64, u64>,
}

/// `../shared/data/syzygy-stats-regular.txt`: table → [white, black], and
/// the longest DTZ of each table's wins (cursed ones included), either side.
fn published_stats(text: &str) -> (BTreeMap<String, [Published; 2]>, BTreeMap<String, u64>) {
    let mut longest = BTreeMap::new();
    let mut all = BTreeMap::new();
    let mut table: Option<String> = None;
    let mut side = 0;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("########## ").and_then(|l| l.strip_suffix(" ##########")) {
            table = Some(name.to_owned());
            all.insert(name.to_owned(), [Published::default(), Published::default()]);
            continue;
        }
        let Some(t) = &table else { continue };
        // "Longest win for white: 62 ply; 8/8/2k5/1r6/8/8/8/2KQ4 b - -"
        if let Some(rest) = line.strip_prefix("Longest ") {
            let plies: u64 = rest.split(": ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
            let entry = longest.entry(t.clone()).or_insert(0);
            *entry = plies.max(*entry);
            continue;
        }
        if line == "White to move:" {
            side = 0;
            continue;
        }
        if line == "Black to move:" {
            side = 1;
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(n) = words.first().and_then(|w| w.parse::<u64>().ok()) else { continue };
        let p = &mut all.get_mut(t).unwrap()[side];
        match &words[1..] {
            ["positions", "win", "in", k, "ply."] => drop(p.win_in.insert(k.parse().unwrap(), n)),
            ["positions", "lose", "in", k, "ply."] => drop(p.lose_in.insert(k.parse().unwrap(), n)),
            ["positions", "are", "wins."] => p.wins = n,
            ["positions", "are", "cursed", "wins."] => p.cursed_wins = n,
            ["positions", "are", "draws."] => p.draws = n,
            ["positions", "are", "cursed", "losses."] => p.cursed_losses = n,
            ["positions", "are", "losses."] => p.losses = n,
            other => panic!("unexpected line in the statistics of {t}: {other:?}"),
        }
    }
    (all, longest)
}

/// A board symmetry as a square map: bit 0 mirrors files, bit 1 ranks,
/// bit 2 then transposes.
fn symmetry(s: u8, sq: u8) -> u8 {
    let mut x = sq;
    if s & 1 != 0 {
        x ^= 7;
    }
    if s & 2 != 0 {
        x ^= 56;
    }
    if s & 4 != 0 {
        x = ((x & 7) << 3) | (x >> 3);
    }
    x
}

/// The table's figures recounted from its values, position by position:
/// `[white, black]` as Syzygy counts them, and the distinct positions by
/// category (as the statistics count them). Syzygy's generator tells
/// identical pieces apart: a position with two identical men counts twice,
/// unless a board symmetry swaps them and fixes everything else (then the
/// two labellings are one position under the symmetries).
fn recount(table: &tbserver::builtin::Table) -> ([Published; 2], [[u64; 5]; 2]) {
    use tbformat::value;
    let layout = &table.layout;
    let men = &layout.men[..layout.n];
    let pair: Option<(usize, usize)> =
        (0..men.len()).find_map(|i| (i + 1..men.len()).find(|&j| men[i] == men[j]).map(|j| (i, j)));
    let mut syzygy = [Published::default(), Published::default()];
    let mut distinct = [[0u64; 5]; 2];
    for idx in 0..layout.size as u32 {
        // Legal by the index, not the values: a file holds values at
        // indexes no legal position has (whatever compresses best).
        let Some(pos) = layout.decode(idx) else { continue };
        let dtz = table.dtz(idx);
        let side = usize::from(pos.turn == shakmaty::Color::Black);
        let weight = match pair {
            None => 1,
            Some((i, j)) => {
                let swapped_by_symmetry = (1..if layout.pawns { 2 } else { 8 }).any(|s| {
                    (0..men.len()).all(|k| {
                        let target = if k == i {
                            pos.sq[j]
                        } else if k == j {
                            pos.sq[i]
                        } else {
                            pos.sq[k]
                        };
                        symmetry(s, pos.sq[k]) == target
                    })
                });
                if swapped_by_symmetry { 1 } else { 2 }
            }
        };
        let p = &mut syzygy[side];
        let plies = u64::from(value::plies(dtz));
        let category = match value::wdl50(dtz) {
            shakmaty_syzygy::Wdl::Win => {
                p.wins += weight;
                4
            }
            shakmaty_syzygy::Wdl::CursedWin => {
                p.cursed_wins += weight;
                3
            }
            shakmaty_syzygy::Wdl::Draw => {
                p.draws += weight;
                2
            }
            shakmaty_syzygy::Wdl::BlessedLoss => {
                p.cursed_losses += weight;
                1
            }
            shakmaty_syzygy::Wdl::Loss => {
                p.losses += weight;
                0
            }
        };
        distinct[side][category] += 1;
        if value::is_win(dtz) {
            *p.win_in.entry(plies).or_default() += weight;
        } else if value::is_loss(dtz) {
            *p.lose_in.entry(plies).or_default() += weight;
        }
    }
    (syzygy, distinct)
}

fn histogram(side: &Value, metric: &str, result: &str) -> BTreeMap<u64, u64> {
    side[format!("{metric}_histogram")][result]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["plies"].as_u64().unwrap(), b["positions"].as_u64().unwrap()))
        .collect()
}

/// Whether a table has two men of the same kind and colour (`KQQvK`).
fn identical_men(name: &str) -> bool {
    name.split('v').any(|side| side.chars().zip(side.chars().skip(1)).any(|(a, b)| a == b))
}

#[test]
fn table_statistics_agree_with_syzygys_published_figures() {
    let Some(shared) = common::shared_dir("data/syzygy-stats-regular.txt") else { return };
    let (published, published_longest) =
        published_stats(&std::fs::read_to_string(shared.join("data/syzygy-stats-regular.txt")).unwrap());
    let max_dtz: BTreeMap<String, i64> = std::fs::read_to_string(shared.join("data/max-dtz.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(t, v)| (t.to_owned(), v.trim().parse().unwrap()))
        .collect();
    let dir = common::generated_builtin_dir();
    let mut config = tbserver::config::Config { cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Lazy;
    config.builtin.dir = dir.clone();
    let server = TestServer::start(config);

    let materials = tbserver::builtin::all_materials(4);
    let (mut compared, mut bins, mut examples, mut texel_exact, mut served_equal) = (0, 0, 0, 0, 0);
    let store = tbserver::builtin::Store::new(&dir, false);
    for material in &materials {
        let name = material.name();
        let (status, stats) = server.get(&format!("/api/v1/tables/{name}/stats"));
        assert_eq!(status, 200, "{name}: {stats}");
        // Stored beside the table, and that is what is served.
        let sidecar = dir.join(format!("{name}.stats.json"));
        let stored: Value = serde_json::from_slice(&std::fs::read(&sidecar).unwrap()).unwrap();
        assert_eq!(stored, stats, "{name}: served statistics differ from {}", sidecar.display());

        let syzygy = published.get(&name).unwrap_or_else(|| panic!("{name} missing from Syzygy's statistics"));
        let table = store.table(material).unwrap();
        let (recounted, distinct) = recount(&table);
        let mut sum = 0;
        for (side, key) in [(0, "white_to_move"), (1, "black_to_move")] {
            let s = &stats[key];
            let (p, r) = (&syzygy[side], &recounted[side]);
            // Syzygy's figures, recounted from the table's values as Syzygy counts.
            assert_eq!(
                [r.wins, r.cursed_wins, r.draws, r.cursed_losses, r.losses],
                [p.wins, p.cursed_wins, p.draws, p.cursed_losses, p.losses],
                "{name} {key}: categories as Syzygy counts them"
            );
            assert_eq!(
                (&r.win_in, &r.lose_in),
                (&p.win_in, &p.lose_in),
                "{name} {key}: DTZ histogram as Syzygy counts it"
            );
            // The statistics served: distinct positions.
            let ours = ["losses", "blessed_losses", "draws", "cursed_wins", "wins"].map(|k| s[k].as_u64().unwrap());
            assert_eq!(ours, distinct[side], "{name} {key}: categories");
            if !identical_men(&name) {
                assert_eq!(
                    ours,
                    [p.losses, p.cursed_losses, p.draws, p.cursed_wins, p.wins],
                    "{name} {key}: categories"
                );
                assert_eq!(histogram(s, "dtz50", "wins"), p.win_in, "{name} {key}: DTZ of wins");
                assert_eq!(histogram(s, "dtz50", "losses"), p.lose_in, "{name} {key}: DTZ of losses");
                served_equal += 1;
            }
            assert_eq!(ours.iter().sum::<u64>(), s["positions"].as_u64().unwrap(), "{name} {key}");
            // The other histograms cover the decisive positions: DTM every
            // win and loss, cursed ones included; DTM50 at clock 0 exactly
            // those the 50-move rule leaves decisive.
            let total = |metric: &str, result: &str| histogram(s, metric, result).values().sum::<u64>();
            let [losses, blessed, _, cursed, wins] = ours;
            assert_eq!(
                (total("dtz50", "wins"), total("dtz50", "losses")),
                (wins + cursed, losses + blessed),
                "{name} {key}: DTZ50''"
            );
            assert_eq!(
                (total("dtm", "wins"), total("dtm", "losses")),
                (wins + cursed, losses + blessed),
                "{name} {key}: DTM"
            );
            assert_eq!((total("dtm50", "wins"), total("dtm50", "losses")), (wins, losses), "{name} {key}: DTM50");
            sum += s["positions"].as_u64().unwrap();
            bins += p.win_in.len() + p.lose_in.len();
            compared += 5;
        }
        assert_eq!(sum, stats["legal_positions"].as_u64().unwrap(), "{name}: categories add up to the legal positions");

        // The longest DTZ of the table, either side to move: Syzygy's own
        // "longest win" figures exactly. max-dtz.tsv (Texel's figures) takes
        // the winner-to-move value for some tables and the loser-to-move one
        // (a ply more) for others, as its header says: within 1 ply.
        let longest = ["white_to_move", "black_to_move"]
            .iter()
            .filter_map(|k| stats[k]["longest_dtz50"]["plies"].as_i64())
            .map(i64::abs)
            .max()
            .unwrap_or(-1);
        let syzygy_longest = published_longest.get(&name).map_or(-1, |&p| p as i64);
        assert_eq!(longest, syzygy_longest, "{name}: longest DTZ, against Syzygy's published longest win");
        let texel = *max_dtz.get(&name).unwrap_or_else(|| panic!("{name} missing from max-dtz.tsv"));
        assert!((longest - texel).abs() <= 1, "{name}: longest DTZ {longest}, max-dtz.tsv {texel}");
        texel_exact += usize::from(longest == texel);

        // Each example, probed, has the stated value.
        for key in ["white_to_move", "black_to_move"] {
            for (metric, field) in [("longest_dtz50", "dtz50"), ("longest_dtm", "dtm"), ("longest_dtm50", "dtm50")] {
                let example = &stats[key][metric];
                if example.is_null() {
                    continue;
                }
                let fen = example["fen"].as_str().unwrap();
                let (status, probe) = server.get(&format!("/api/v1/probe?fen={}", enc(fen)));
                assert_eq!(status, 200, "{name} {fen}: {probe}");
                if example["plies"] == 0 {
                    // A checkmated side: 0 plies to mate (DTZ −1 in Syzygy's convention).
                    assert_eq!(probe["checkmate"], true, "{name} {key} {metric}: {fen}");
                } else {
                    assert_eq!(probe[field]["plies"], example["plies"], "{name} {key} {metric}: {fen}");
                }
                assert_eq!(probe["side_to_move"].as_str().unwrap().chars().next(), key.chars().next(), "{name} {fen}");
                examples += 1;
            }
        }
    }
    report!(
        "table statistics: {} tables, {compared} category counts and {bins} DTZ histogram bins equal Syzygy's \
         (served as is for {served_equal} sides to move; tables with identical men recounted as Syzygy counts them), \
         longest DTZ equal Syzygy's longest win ({texel_exact} also equal max-dtz.tsv, the others 1 ply off as it documents), \
         {examples} example positions probed",
        materials.len()
    );
    assert_eq!(materials.len(), 35);
}

#[test]
fn statistics_are_stored_when_a_table_is_generated() {
    let dir = std::env::temp_dir().join(format!("tbserver-stats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = tbserver::builtin::Store::new(&dir, true);
    let material = tbserver::builtin::Material::parse("KRvK").unwrap();
    let table = store.table(&material).unwrap();
    // Written beside the table by its generation, before anyone asked.
    let sidecar = dir.join("KRvK.stats.json");
    let stored: tbgen::stats::TableStats = serde_json::from_slice(&std::fs::read(&sidecar).unwrap()).unwrap();
    assert_eq!(stored, tbgen::stats::compute(table.as_ref()));
    assert_eq!(stored.white_to_move.longest_dtz50.as_ref().map(|e| e.plies), Some(31));
    assert_eq!(stored.black_to_move.longest_dtz50.as_ref().map(|e| e.plies), Some(-32));
    // A table generated again (another checksum) does not take old figures.
    let mut stale = stored.clone();
    stale.table_crc32 ^= 1;
    std::fs::write(&sidecar, serde_json::to_vec(&stale).unwrap()).unwrap();
    assert_eq!(tbgen::stats::read_sidecar(table.as_ref()), None);
    assert_eq!(tbgen::stats::load_or_compute(table.as_ref()), stored);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A server started on a directory that holds the 35 tables of 3–4 pieces
/// lists every one of them, and serves their statistics, before any probe
/// has opened one; a table not made yet says how to make it.
#[test]
fn tables_on_disk_are_listed_and_their_statistics_served_from_the_start() {
    let source = common::generated_builtin_dir();
    let dir = std::env::temp_dir().join(format!("tbserver-listed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let materials = tbserver::builtin::all_materials(4);
    for m in &materials {
        for name in [format!("{}.tbsb", m.name()), format!("{}.stats.json", m.name())] {
            std::os::unix::fs::symlink(source.join(&name), dir.join(&name)).unwrap();
        }
    }
    let mut config = tbserver::config::Config { cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Lazy;
    config.builtin.dir = dir.clone();
    let server = TestServer::start(config);
    let (status, tables) = server.get("/api/v1/tables");
    assert_eq!(status, 200);
    let builtin: Vec<&Value> =
        tables["tables"].as_array().unwrap().iter().filter(|t| t["source"] == "builtin").collect();
    assert_eq!(builtin.len(), 35, "{tables:#}");
    assert_eq!(tables["count"], 35);
    for t in &builtin {
        let name = t["material"].as_str().unwrap();
        assert_eq!(t["stats"]["api"], format!("/api/v1/tables/{name}/stats"));
        let file = std::fs::metadata(source.join(format!("{name}.tbsb"))).unwrap().len();
        assert_eq!(t["bytes"].as_u64(), Some(file), "{name}");
    }
    // Statistics straight from the files beside the tables, none opened.
    let (status, stats) = server.get("/api/v1/tables/KRvK/stats");
    assert_eq!(status, 200, "{stats:#}");
    let stored: Value = serde_json::from_slice(&std::fs::read(source.join("KRvK.stats.json")).unwrap()).unwrap();
    assert_eq!(stats["white_to_move"], stored["white_to_move"]);
    assert_eq!(stats["white_to_move"]["longest_dtz50"]["plies"], 31);
    let page = reqwest::blocking::get(format!("{}/tables", server.base)).unwrap().text().unwrap();
    for m in &materials {
        assert!(page.contains(&format!("/tables/{}", m.name())), "the /tables page lacks {}", m.name());
    }
    // A 5-piece table not made yet: 404 with how to make it.
    let (status, missing) = server.get("/api/v1/tables/KRBvKQ/stats");
    assert_eq!(status, 404);
    let message = missing["error"]["message"].as_str().unwrap();
    assert!(message.contains("tbserver generate KRBvKQ") && message.contains("material=KRBvKQ"), "{message}");
    report!("35 built-in tables listed and KRvK's statistics served before any probe");
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
