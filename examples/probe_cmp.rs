//! Compares built-in values with Syzygy for a FEN and each of its children:
//! `cargo run --release --example probe_cmp -- DIR SYZYGY_DIR FEN`.
use shakmaty::{CastlingMode, Chess, Position, fen::Fen};
use shakmaty_syzygy::Tablebase;
use tbformat::value;
use tbserver::builtin::Store;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let store = Store::new(&a[0], false);
    let mut tb = Tablebase::<Chess>::new();
    tb.add_directory(&a[1]).unwrap();
    let pos: Chess = a[2].parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap();
    let show = |p: &Chess, what: &str| {
        let (z, m) = store.probe(p).unwrap().unwrap();
        println!(
            "{what:>8}: builtin dtz {} dtm {} | syzygy wdl {:?} dtz {:?}",
            value::signed_plies(z),
            value::signed_plies(m),
            tb.probe_wdl_after_zeroing(p).ok(),
            tb.probe_dtz(p).ok()
        );
    };
    show(&pos, "root");
    for m in pos.legal_moves() {
        let mut c = pos.clone();
        c.play_unchecked(m);
        show(&c, &m.to_string());
    }
}
