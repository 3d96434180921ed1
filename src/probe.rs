//! The full answer for a position: its values, and every legal move with the
//! values of the position after it, sorted best first.

use std::cmp::Reverse;

use serde::Serialize;
use shakmaty::{Chess, Color, Move, Position, Role, san::SanPlus, uci::UciMove};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

use crate::{
    domain::{Category, Dtc, Dtm, Dtm50, Dtz50, Field, Source, Sourced, wdl50_value},
    error::NoAnswer,
    material,
    request::normalized_fen,
    search::{self, Derivation, MateBound, MateSide, NoBound},
    sources::{ProbeResult, TableError, Unanswered},
    tablebase::{DtzFound, Tablebases},
};

/// Which source gave each value (absent when the value is unknown). The
/// example: a KRvK position at clock 95 with Syzygy and chesstb configured,
/// where chesstb makes Syzygy's rounded DTZ exact.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sources {
    pub wdl50: Option<Source>,
    pub dtz50: Option<Source>,
    pub dtm: Option<Source>,
    pub dtm50: Option<Source>,
    pub dtc: Option<Source>,
}

/// The values of one position, from its side to move's point of view.
#[derive(Debug, Clone, Serialize)]
pub struct PositionInfo {
    /// The verdict at the position's real half-move clock.
    pub category: Category,
    /// WDL50 at half-move clock 0: −2 loss, −1 blessed loss, 0 draw,
    /// 1 cursed win, 2 win.
    pub wdl50: Option<i8>,
    pub dtz50: Option<Dtz50>,
    pub dtm: Option<Dtm>,
    /// Exact DTM50 at this clock, where tables have it (up to 4 pieces).
    pub dtm50: Option<Dtm50>,
    /// chesstb's distance to conversion at this clock, where its tables have
    /// it (pawn endings with a DTC table, pawnless endings from DTZ).
    pub dtc: Option<Dtc>,
    /// The proven range of the distance to mate under the 50-move rule at
    /// this clock (DTM50), from the tables alone; null when none can be given.
    pub mate_bound: Option<MateBound>,
    /// Why there is no mate bound (a draw, the 50-move rule, unusable tables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_mate_bound: Option<NoBound>,
    pub checkmate: bool,
    pub stalemate: bool,
    pub insufficient_material: bool,
    pub sources: Sources,
    /// A table needed for this position is broken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_error: Option<TableError>,
    /// Values not known yet because the built-in tables that hold them are
    /// being generated: ask again later. Absent when nothing is pending.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Field>,
    /// The material whose built-in tables are being generated.
    #[serde(skip)]
    pub generating: Option<String>,
}

impl PositionInfo {
    pub fn wdl(&self) -> Option<Wdl> {
        self.wdl50.map(|v| match v {
            -2 => Wdl::Loss,
            -1 => Wdl::BlessedLoss,
            0 => Wdl::Draw,
            1 => Wdl::CursedWin,
            _ => Wdl::Win,
        })
    }

    /// Whether anything is known beyond the rules.
    pub(crate) fn is_known(&self) -> bool {
        self.category != Category::Unknown
    }

    /// Takes a probe's value, or notes why there is none: a broken table
    /// (the first one is kept) or a table still being generated.
    fn take<T>(&mut self, field: Field, result: ProbeResult<T>) -> Option<T> {
        match result {
            Ok(found) => found,
            Err(Unanswered::Broken(err)) => {
                self.table_error.get_or_insert(err);
                None
            }
            Err(Unanswered::Generating { material }) => {
                self.pending.push(field);
                self.generating.get_or_insert(material);
                None
            }
        }
    }

    /// Nothing is known yet, but will be once built-in tables are generated.
    pub(crate) fn is_generating(&self) -> bool {
        !self.is_known() && !self.pending.is_empty()
    }
}

/// One legal move and the values of the position after it, from the point of
/// view of the side to move there (the opponent).
#[derive(Debug, Clone, Serialize)]
pub struct MoveInfo {
    pub uci: String,
    pub san: String,
    pub capture: bool,
    /// Promotion piece in lower case (`q`, `r`, `b`, `n`).
    pub promotion: Option<char>,
    /// A capture or pawn move: resets the half-move clock.
    pub zeroing: bool,
    #[serde(flatten)]
    pub after: PositionInfo,
    #[serde(skip)]
    pub m: Move,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeAnswer {
    pub fen: String,
    /// White's material `v` Black's, e.g. `KBNvK`.
    pub material: String,
    pub pieces: usize,
    pub halfmove_clock: u32,
    pub side_to_move: &'static str,
    #[serde(flatten)]
    pub info: PositionInfo,
    /// Best first for the side to move.
    pub moves: Vec<MoveInfo>,
}

impl ProbeAnswer {
    /// No value of the position or of any move is pending.
    pub fn is_complete(&self) -> bool {
        self.info.pending.is_empty() && self.moves.iter().all(|m| m.after.pending.is_empty())
    }
}

/// How much of a position's values a caller needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Every value tbserver serves.
    Full,
    /// What lichess's API carries (WDL50, DTZ50'', DTM, DTC and the rules'
    /// verdicts): no DTM50 and no mate bound, neither probed nor searched.
    Lichess,
}

/// Values of `pos`, whose half-move clock is `pos.halfmoves()`.
pub fn position_info(tb: &Tablebases, pos: &Chess) -> PositionInfo {
    position_info_with(tb, pos, Detail::Full)
}

/// [`position_info`], leaving out what `detail` does not need (those
/// fields stay `None`).
pub(crate) fn position_info_with(tb: &Tablebases, pos: &Chess, detail: Detail) -> PositionInfo {
    let mut info = PositionInfo {
        category: Category::Unknown,
        wdl50: None,
        dtz50: None,
        dtm: None,
        dtm50: None,
        dtc: None,
        mate_bound: None,
        no_mate_bound: None,
        checkmate: false,
        stalemate: false,
        insufficient_material: pos.is_insufficient_material(),
        sources: Sources::default(),
        table_error: None,
        pending: Vec::new(),
        generating: None,
    };
    let legal = pos.legal_moves();
    if legal.is_empty() {
        if pos.is_check() {
            info.checkmate = true;
            info.category = Category::Loss;
            // Syzygy convention: a mated side's DTZ is −1; the mate is 0 plies away.
            set_rules(&mut info, Wdl::Loss, -1, 0);
            // A mate given after the clock reached 100 came too late.
            info.dtm50 = Some(Dtm50::new(0, pos.halfmoves() <= 100, pos.halfmoves()));
        } else {
            info.stalemate = true;
            info.category = Category::Draw;
            set_rules(&mut info, Wdl::Draw, 0, 0);
            info.dtm50 = Some(Dtm50::new(0, false, pos.halfmoves()));
        }
        set_mate_bound(&mut info, pos);
        return info;
    }
    if info.insufficient_material {
        info.category = Category::Draw;
        set_rules(&mut info, Wdl::Draw, 0, 0);
        info.dtm50 = Some(Dtm50::new(0, false, pos.halfmoves()));
        set_mate_bound(&mut info, pos);
        return info;
    }

    let clock = pos.halfmoves();
    if let Some(DtzFound { dtz: Sourced { value: dtz, source }, rounded_in }) =
        info.take(Field::Dtz50, tb.dtz_found(pos))
    {
        let wdl = Wdl::from_dtz_after_zeroing(dtz);
        let dtz50 = Dtz50 { rounded_in, ..Dtz50::from_syzygy(dtz) };
        info.wdl50 = Some(wdl50_value(wdl));
        info.dtz50 = Some(dtz50);
        // WDL is the first source's; only the distance came from another.
        info.sources.wdl50 = Some(rounded_in.unwrap_or(source));
        info.sources.dtz50 = Some(source);
        info.category = Category::at_clock(wdl, dtz50, clock);
    }
    if info.wdl50.is_none()
        && let Some(Sourced { value: wdl, source }) = info.take(Field::Wdl50, tb.wdl(pos))
    {
        info.wdl50 = Some(wdl50_value(wdl));
        info.sources.wdl50 = Some(source);
        // Without DTZ the clock can only be ignored when it is 0 or
        // the position is drawn anyway.
        if clock == 0 || wdl == Wdl::Draw {
            info.category = Category::from_wdl(wdl);
        }
    }
    if let Some(Sourced { value, source }) = info.take(Field::Dtm, tb.dtm_plies(pos)) {
        info.dtm = Some(Dtm::from_plies(value));
        info.sources.dtm = Some(source);
    }
    if detail == Detail::Full
        && let Some(Sourced { value, source }) = info.take(Field::Dtm50, tb.dtm50_plies(pos))
    {
        info.dtm50 = Some(Dtm50::new(value, false, clock));
        info.sources.dtm50 = Some(source);
    }
    if let Some(Sourced { value, source }) = info.take(Field::Dtc, tb.dtc(pos)) {
        info.dtc = Some(value);
        info.sources.dtc = Some(source);
    }
    if detail == Detail::Full {
        set_mate_bound(&mut info, pos);
    }
    info
}

fn set_mate_bound(info: &mut PositionInfo, pos: &Chess) {
    // Exact DTM50 (up to 4 pieces) is the bound itself.
    let from_table = info.dtm50.filter(|_| info.sources.dtm50 != Some(Source::Rules)).map(|d| {
        if d.is_decided() {
            let side = if d.plies > 0 { MateSide::Win } else { MateSide::Loss };
            Ok(MateBound::new(side, d.plies.unsigned_abs(), d.plies.unsigned_abs(), Derivation::Dtm50))
        } else if info.wdl().is_some_and(|w| w != Wdl::Draw) {
            Err(NoBound::FiftyMoveRule)
        } else {
            Err(NoBound::Draw)
        }
    });
    let bound = from_table.unwrap_or_else(|| {
        let (wdl, dtz, dtm) = (info.wdl(), dtz_of(info), info.dtm.map(|d| d.plies));
        if info.checkmate || info.stalemate || info.insufficient_material {
            search::mate_bound(pos, pos.halfmoves(), wdl, dtz, dtm)
        } else {
            // The legal moves were generated above: no second terminal test.
            search::bounds::live_mate_bound(pos, pos.halfmoves(), wdl, dtz, dtm)
        }
    });
    match bound {
        Ok(bound) => info.mate_bound = Some(bound),
        Err(reason) => info.no_mate_bound = Some(reason),
    }
}

fn set_rules(info: &mut PositionInfo, wdl: Wdl, dtz_plies: i32, dtm_plies: i32) {
    info.wdl50 = Some(wdl50_value(wdl));
    info.dtz50 = Some(Dtz50::exact(dtz_plies));
    info.dtm = Some(Dtm::from_plies(dtm_plies));
    info.sources = Sources {
        wdl50: Some(Source::Rules),
        dtz50: Some(Source::Rules),
        dtm: Some(Source::Rules),
        dtm50: Some(Source::Rules),
        dtc: None,
    };
}

/// Checks that the position is one tables could cover at all.
pub(crate) fn check_coverage(tb: &Tablebases, pos: &Chess) -> Result<(), NoAnswer> {
    let pieces = pos.board().occupied().count();
    let max = tb.max_pieces().max(2);
    if pieces > max {
        // Built-in tables make tables of up to 5 pieces on request: say so.
        let generate = crate::builtin::Material::parse_table(&material::normalized(pos.board()))
            .filter(|m| tb.generation(m, false).is_some())
            .map(|m| m.name());
        return Err(NoAnswer::TooManyPieces { pieces, max, generate });
    }
    Ok(())
}

/// How to order winning (and losing) moves among themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
pub enum MoveOrder {
    /// Fastest mate under the 50-move rule first where DTM50 is known, then
    /// DTM, then DTZ (tbserver's own API).
    #[default]
    #[serde(rename = "dtm50")]
    Dtm50First,
    /// Fastest mate ignoring the 50-move rule first (DTM), then DTZ.
    #[serde(rename = "dtm")]
    DtmFirst,
    /// DTZ only (the lichess-compatible mainline).
    #[serde(rename = "dtz")]
    ZeroingFirst,
}

/// Full answer with every move.
pub fn probe(tb: &Tablebases, pos: &Chess, order: MoveOrder) -> Result<ProbeAnswer, NoAnswer> {
    check_coverage(tb, pos)?;
    let info = position_info(tb, pos);
    if info.is_generating() {
        return Err(generating(tb, pos, &info));
    }
    if let Some(err) = &info.table_error
        && !info.is_known()
    {
        return Err(NoAnswer::Table(err.clone()));
    }
    if !info.is_known() {
        return Err(NoAnswer::MissingTable {
            material: material::normalized(pos.board()),
            missing: missing_names(tb, pos),
        });
    }
    let moves = move_infos(tb, pos, order);
    Ok(ProbeAnswer {
        fen: normalized_fen(pos),
        material: material::by_color(pos.board()),
        pieces: pos.board().occupied().count(),
        halfmove_clock: pos.halfmoves(),
        side_to_move: match pos.turn() {
            Color::White => "white",
            Color::Black => "black",
        },
        info,
        moves,
    })
}

/// The error for a position nothing can answer until built-in tables are
/// generated, with how far they are.
pub(crate) fn generating(tb: &Tablebases, pos: &Chess, info: &PositionInfo) -> NoAnswer {
    let material = info.generating.clone().unwrap_or_else(|| material::normalized(pos.board()));
    api_error(tb, Unanswered::Generating { material })
}

/// Why a source gave no value, as the API's error: a broken table, or the
/// progress of the built-in tables being generated.
pub(crate) fn api_error(tb: &Tablebases, err: Unanswered) -> NoAnswer {
    match err {
        Unanswered::Broken(err) => NoAnswer::Table(err),
        Unanswered::Generating { material } => {
            let progress =
                tb.progress(&material).unwrap_or_else(|| crate::builtin::schedule::Progress::ready(material));
            NoAnswer::Generating(Box::new(progress))
        }
    }
}

fn missing_names(tb: &Tablebases, pos: &Chess) -> String {
    let key = material::normalized(pos.board());
    let mut names: Vec<String> = Vec::new();
    for source in tb.sources() {
        match source {
            // With the command that fetches them (docs/tables.md); SIGHUP picks them up.
            Source::Syzygy => names.push(format!(
                "{key}.rtbw, {key}.rtbz (tbserver download syzygy --material {key} --to DIR, then SIGHUP)"
            )),
            Source::Gaviota => names.push(format!("{}.gtb.cp4", key.replace('v', "").to_lowercase())),
            Source::Builtin => names.push(match tbformat::material::Material::parse(&key) {
                Some(m) if m.is_builtin() => format!("{key} (built-in, made by `tbserver generate {key}`)"),
                _ => format!("{key} (beyond the built-in generator)"),
            }),
            Source::Chesstb => names.push(format!("{} (chesstb)", crate::sources::chesstb::file_stem(pos.board()))),
            Source::Rules => {}
        }
    }
    if names.is_empty() { "no table source is configured".to_owned() } else { names.join(", ") }
}

/// Every legal move with the values after it, best first.
pub(crate) fn move_infos(tb: &Tablebases, pos: &Chess, order: MoveOrder) -> Vec<MoveInfo> {
    let mut moves = legal_move_infos(tb, pos);
    sort_moves(&mut moves, order);
    moves
}

/// Every legal move with the values after it, in the order of
/// `pos.legal_moves()` (the lichess-compatible endpoints sort them as
/// lichess does, ties included).
pub(crate) fn legal_move_infos(tb: &Tablebases, pos: &Chess) -> Vec<MoveInfo> {
    legal_move_infos_with(tb, pos, Detail::Full)
}

/// [`legal_move_infos`] with the values `detail` asks for.
pub(crate) fn legal_move_infos_with(tb: &Tablebases, pos: &Chess, detail: Detail) -> Vec<MoveInfo> {
    pos.legal_moves()
        .into_iter()
        .map(|m| {
            let mut after = pos.clone();
            let uci = UciMove::from_standard(m).to_string();
            let san = SanPlus::from_move_and_play_unchecked(&mut after, m).to_string();
            let mut after_info = position_info_with(tb, &after, detail);
            // A mate given once the clock has reached 100 comes too late: the
            // defender could already claim the draw.
            if after_info.checkmate && pos.halfmoves() >= 100 {
                after_info.category = Category::BlessedLoss;
            }
            MoveInfo {
                uci,
                san,
                capture: m.is_capture(),
                promotion: m.promotion().map(Role::char),
                zeroing: m.is_zeroing(),
                after: after_info,
                m,
            }
        })
        .collect()
}

impl MoveOrder {
    pub(crate) fn metric(self) -> &'static str {
        match self {
            MoveOrder::Dtm50First => "dtm50",
            MoveOrder::DtmFirst => "dtm",
            MoveOrder::ZeroingFirst => "dtz",
        }
    }
}

/// Rank of a move's result for the mover: lower is better.
fn result_rank(after: Category) -> u8 {
    match after.flip() {
        Category::Win => 0,
        Category::MaybeWin => 1,
        Category::CursedWin => 2,
        Category::Draw => 3,
        Category::BlessedLoss => 4,
        Category::MaybeLoss => 5,
        Category::Loss => 6,
        Category::Unknown => 7,
    }
}

/// Sorts best first for the side to move: by result, then winning moves by
/// speed (mate now, shortest DTM50, shortest DTM, zeroing, shortest DTZ),
/// losing moves by resistance (longest DTM50, longest DTM, non-zeroing,
/// longest DTZ). `order` says which distances count; with DTZ alone, DTM
/// breaks ties. Remaining ties go to a queen promotion, then to a move that
/// does not promote, underpromotions last (one that gains nothing is never
/// chosen), then by UCI.
pub(crate) fn sort_moves(moves: &mut [MoveInfo], order: MoveOrder) {
    moves.sort_by_cached_key(|mv| {
        let rank = result_rank(mv.after.category);
        let dtm50 = mv.after.dtm50.filter(|d| d.is_decided() && order == MoveOrder::Dtm50First).map(|d| d.plies.abs());
        let dtm = mv.after.dtm.map(|d| d.plies.abs());
        // A DTZ line breaks ties between equal DTZ by DTM, so that it mates
        // rather than wanders where both keep the same distance to zeroing.
        let (dtm, dtm_tie) = if order == MoveOrder::ZeroingFirst { (None, dtm) } else { (dtm, None) };
        let dtz = mv.after.dtz50.map_or(i32::MAX, |d| d.plies.abs());
        let key = if rank <= 2 {
            (
                !mv.after.checkmate,
                dtm50.unwrap_or(i32::MAX),
                dtm.unwrap_or(i32::MAX),
                !mv.zeroing,
                dtz,
                dtm_tie.unwrap_or(i32::MAX),
            )
        } else if (4..=6).contains(&rank) {
            (
                false,
                dtm50.map_or(i32::MAX, |d| -d),
                dtm.map_or(i32::MAX, |d| -d),
                mv.zeroing,
                if dtz == i32::MAX { i32::MAX } else { -dtz },
                dtm_tie.map_or(i32::MAX, |d| -d),
            )
        } else {
            (false, 0, 0, false, 0, 0)
        };
        (rank, key, Reverse(mv.after.stalemate), promotion_rank(mv.m.promotion()), mv.uci.clone())
    });
}

/// Tie-break among equally good moves: queen promotion, no promotion, then
/// underpromotions from the strongest piece down.
fn promotion_rank(promotion: Option<Role>) -> u8 {
    match promotion {
        Some(Role::Queen) => 0,
        None => 1,
        Some(Role::Rook) => 2,
        Some(Role::Bishop) => 3,
        Some(_) => 4,
    }
}

/// How a mainline ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MainlineEnd {
    Checkmate,
    Stalemate,
    InsufficientMaterial,
    /// The half-move clock reached 100: the defender claims a draw.
    DrawClaim,
    /// The position is drawn with best play: no line is needed.
    Draw,
    /// Tables for a position on the line are missing.
    Unknown,
    /// Safety stop; never reached by a correct table.
    LengthLimit,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct MainlineStep {
    pub uci: String,
    pub san: String,
    /// Values after the move, from the point of view of the side to move there.
    pub category: Category,
    pub dtz50: Option<Dtz50>,
    pub dtm: Option<Dtm>,
    pub dtm50: Option<Dtm50>,
    /// chesstb's distance to conversion after the move, where its tables
    /// have it (as in `/api/v1/probe`).
    pub dtc: Option<Dtc>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Mainline {
    pub fen: String,
    /// The distance the line follows: `dtm50`, `dtm` or `dtz`.
    pub metric: &'static str,
    pub category: Category,
    pub dtz50: Option<Dtz50>,
    pub dtm: Option<Dtm>,
    pub dtm50: Option<Dtm50>,
    pub dtc: Option<Dtc>,
    pub mainline: Vec<MainlineStep>,
    /// `w`, `b`, or null for a draw.
    pub winner: Option<char>,
    pub end: MainlineEnd,
    /// Values not known yet on this line or its alternatives (built-in
    /// tables being generated): the line may change once they are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Field>,
}

/// Longest line tbserver follows; far above any real table's DTZ sum.
pub(crate) const MAX_MAINLINE_PLIES: usize = 1024;

/// Follows the best move of [`probe`] until mate, a draw claim or a drawn
/// position.
pub(crate) fn mainline(tb: &Tablebases, pos: &Chess, order: MoveOrder) -> Result<Mainline, NoAnswer> {
    let first = probe(tb, pos, order)?;
    let mut line = Mainline {
        fen: first.fen.clone(),
        metric: order.metric(),
        category: first.info.category,
        dtz50: first.info.dtz50,
        dtm: first.info.dtm,
        dtm50: first.info.dtm50,
        dtc: first.info.dtc,
        mainline: Vec::new(),
        winner: None,
        end: MainlineEnd::Draw,
        pending: Vec::new(),
    };
    let mut pos = pos.clone();
    let mut answer = first;
    loop {
        for field in answer.info.pending.iter().chain(answer.moves.iter().flat_map(|m| &m.after.pending)) {
            if !line.pending.contains(field) {
                line.pending.push(*field);
            }
        }
        let info = &answer.info;
        if info.checkmate {
            line.end = MainlineEnd::Checkmate;
            line.winner = Some((!pos.turn()).char());
            break;
        }
        if info.stalemate {
            line.end = MainlineEnd::Stalemate;
            break;
        }
        if info.insufficient_material {
            line.end = MainlineEnd::InsufficientMaterial;
            break;
        }
        if pos.halfmoves() >= 100 {
            line.end = MainlineEnd::DrawClaim;
            break;
        }
        match info.category {
            Category::Draw => {
                line.end = MainlineEnd::Draw;
                break;
            }
            Category::Unknown => {
                line.end = MainlineEnd::Unknown;
                break;
            }
            _ => {}
        }
        if line.mainline.len() >= MAX_MAINLINE_PLIES {
            line.end = MainlineEnd::LengthLimit;
            break;
        }
        let Some(best) = answer.moves.first() else { break };
        line.mainline.push(MainlineStep {
            uci: best.uci.clone(),
            san: best.san.clone(),
            category: best.after.category,
            dtz50: best.after.dtz50,
            dtm: best.after.dtm,
            dtm50: best.after.dtm50,
            dtc: best.after.dtc,
        });
        pos.play_unchecked(best.m);
        answer = probe(tb, &pos, order)?;
    }
    Ok(line)
}

/// DTZ as `shakmaty_syzygy` types.
fn dtz_of(info: &PositionInfo) -> Option<MaybeRounded<Dtz>> {
    info.dtz50.map(Dtz50::to_syzygy)
}

/// Why a position has no value: castling rights, more pieces than any
/// table, or a missing table (named).
pub(crate) fn not_covered(tb: &Tablebases, pos: &Chess) -> NoAnswer {
    if pos.castles().any() {
        return NoAnswer::CastlingRights;
    }
    if let Err(err) = check_coverage(tb, pos) {
        return err;
    }
    NoAnswer::MissingTable { material: material::normalized(pos.board()), missing: missing_names(tb, pos) }
}

/// WDL50 at clock 0, and DTZ50'' where a table has it.
type WdlDtz = (Wdl, Option<MaybeRounded<Dtz>>);

/// WDL50 (at clock 0) and DTZ50'' of a position, by the rules where the game
/// is over. `Ok(None)` when no table has it.
fn wdl_dtz(tb: &Tablebases, pos: &Chess) -> Result<Option<WdlDtz>, NoAnswer> {
    let legal = pos.legal_moves();
    if legal.is_empty() {
        return Ok(Some(if pos.is_check() {
            (Wdl::Loss, Some(MaybeRounded::Precise(Dtz(-1))))
        } else {
            (Wdl::Draw, Some(MaybeRounded::Precise(Dtz(0))))
        }));
    }
    if pos.is_insufficient_material() {
        return Ok(Some((Wdl::Draw, Some(MaybeRounded::Precise(Dtz(0))))));
    }
    if let Some(dtz) = tb.dtz(pos).map_err(|e| api_error(tb, e))? {
        return Ok(Some((Wdl::from_dtz_after_zeroing(dtz.value), Some(dtz.value))));
    }
    Ok(tb.wdl(pos).map_err(|e| api_error(tb, e))?.map(|wdl| (wdl.value, None)))
}

/// The move `shakmaty_syzygy::Tablebase::best_move` would choose, for
/// sources other than Syzygy files, by the same rule: among the moves with
/// the best WDL50 (the clock ignored), a mate first, then zeroing moves
/// first when winning and last when losing, then the DTZ after the move
/// closest to zero when winning and farthest when losing; the first such
/// move in `legal_moves()` order. `Ok(None)` when there is no legal move;
/// an error when a move's result is unknown.
pub fn dtz_best_move(tb: &Tablebases, pos: &Chess) -> Result<Option<(Move, MaybeRounded<Dtz>)>, NoAnswer> {
    if let Some(best) = tb.best_move(pos).map_err(|e| api_error(tb, e))? {
        return Ok(best.value);
    }
    let mut rated = Vec::new();
    for m in pos.legal_moves() {
        let mut after = pos.clone();
        after.play_unchecked(m);
        let Some((wdl, dtz)) = wdl_dtz(tb, &after)? else { return Err(not_covered(tb, &after)) };
        rated.push((m, after, wdl, dtz));
    }
    let Some(best_wdl) = rated.iter().map(|r| r.2).min() else { return Ok(None) };
    let mut candidates = Vec::new();
    for (m, after, _, dtz) in rated.into_iter().filter(|r| r.2 == best_wdl) {
        // Like the library, DTZ is needed only for the moves that keep the best WDL.
        let dtz = dtz.ok_or_else(|| not_covered(tb, &after))?;
        let mate = dtz.ignore_rounding() == Dtz(-1) && after.is_checkmate();
        candidates.push((m, dtz, mate));
    }
    Ok(candidates
        .into_iter()
        .min_by_key(|&(m, dtz, mate)| {
            (Reverse(mate), m.is_zeroing() ^ dtz.is_negative(), Reverse(dtz.ignore_rounding()))
        })
        .map(|(m, dtz, _)| (m, dtz)))
}
