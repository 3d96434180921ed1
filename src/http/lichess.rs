//! `/standard` and `/standard/mainline`: the lichess tablebase API
//! (`lichess-org/lila-tablebase`) with its fields, category words, null
//! cases, move order, mainline and status codes, so that its clients work
//! unchanged. docs/lichess.md lists what still differs, and why.

use std::cmp::Reverse;

use axum::{
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::Serialize;
use shakmaty::{Chess, Position, Role, san::SanPlus, uci::UciMove};
use shakmaty_syzygy::{AmbiguousWdl, Dtz, MaybeRounded};

use super::{Answer, AppState, Endpoint, FenQuery, FenRequest, answer_parsed};
use crate::{
    domain::{Category, Source},
    error::NoAnswer,
    http::error::{ApiError, ErrorBody},
    probe::{self, MAX_MAINLINE_PLIES, MoveInfo, PositionInfo},
    request::parse_position,
    tablebase::Tablebases,
};

/// lichess's verdict words. The order is lichess's sort order of the
/// position after a move, best for the mover first: an unknown result ranks
/// just after a sure win. (lichess's `maybe-win`/`maybe-loss` come only from
/// DTC tables of 8 pieces, which tbserver does not have.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
enum LichessCategory {
    Loss,
    Unknown,
    /// A loss by the tables, but the rounded DTZ cannot tell whether the
    /// 50-move rule saves it (DTZ plus clock is exactly 100).
    SyzygyLoss,
    BlessedLoss,
    Draw,
    CursedWin,
    /// A win by the tables, but the rounded DTZ cannot tell whether the
    /// 50-move rule spoils it (DTZ plus clock is exactly 100).
    SyzygyWin,
    Win,
}

impl LichessCategory {
    fn flip(self) -> LichessCategory {
        use LichessCategory::*;
        match self {
            Loss => Win,
            Unknown => Unknown,
            SyzygyLoss => SyzygyWin,
            BlessedLoss => CursedWin,
            Draw => Draw,
            CursedWin => BlessedLoss,
            SyzygyWin => SyzygyLoss,
            Win => Loss,
        }
    }

    fn is_positive(self) -> bool {
        matches!(self, LichessCategory::CursedWin | LichessCategory::SyzygyWin | LichessCategory::Win)
    }

    /// lichess's rule: `halfmoves` is the position's clock, `halfmoves_before`
    /// the clock before the move that reached it; once that was 100 or more,
    /// the opponent could already claim a draw, so nothing decisive is left.
    fn of(
        info: &PositionInfo,
        dtz: Option<MaybeRounded<Dtz>>,
        halfmoves: u32,
        halfmoves_before: u32,
    ) -> LichessCategory {
        use LichessCategory::*;
        let claimable = halfmoves_before >= 100;
        if info.stalemate || info.insufficient_material || dtz.is_some_and(|d| d.is_zero()) {
            Draw
        } else if info.checkmate {
            if claimable { BlessedLoss } else { Loss }
        } else if let Some(dtz) = dtz {
            if claimable {
                if dtz.is_negative() { BlessedLoss } else { CursedWin }
            } else {
                match AmbiguousWdl::from_dtz_and_halfmoves(dtz, halfmoves) {
                    AmbiguousWdl::Loss => Loss,
                    AmbiguousWdl::MaybeLoss => SyzygyLoss,
                    AmbiguousWdl::BlessedLoss => BlessedLoss,
                    AmbiguousWdl::Draw => Draw,
                    AmbiguousWdl::CursedWin => CursedWin,
                    AmbiguousWdl::MaybeWin => SyzygyWin,
                    AmbiguousWdl::Win => Win,
                }
            }
        } else {
            // Without DTZ lichess knows nothing; tbserver may still know WDL
            // (a WDL table without its DTZ table), valid at this clock.
            match info.category {
                Category::Win | Category::MaybeWin if claimable => CursedWin,
                Category::Loss | Category::MaybeLoss if claimable => BlessedLoss,
                Category::Win | Category::MaybeWin => Win,
                Category::Loss | Category::MaybeLoss => Loss,
                Category::CursedWin => CursedWin,
                Category::BlessedLoss => BlessedLoss,
                Category::Draw => Draw,
                Category::Unknown => Unknown,
            }
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct PositionFields {
    checkmate: bool,
    stalemate: bool,
    variant_win: bool,
    variant_loss: bool,
    insufficient_material: bool,
    /// DTZ50'' in plies as the table stores it, possibly rounded; null when
    /// unknown.
    dtz: Option<i32>,
    /// DTZ when known to be exact: Syzygy's where it stores it exactly (as
    /// lichess), else the built-in tables' or chesstb's exact value where
    /// Syzygy's is rounded (lichess leaves it null there).
    precise_dtz: Option<i32>,
    /// Signed plies to mate ignoring the 50-move rule; 0 for a draw, null
    /// when unknown and for a checkmated position (as lichess's DTM tables).
    dtm: Option<i32>,
    /// Only in chess variants; always null here.
    dtw: Option<i32>,
    /// Distance to conversion (capture, promotion or mate) in full moves,
    /// signed as `dtz`, as lichess's op1 DTC: here from chesstb's DTC at the
    /// position's clock where the next zeroing move is the conversion
    /// (no pawn push owed first); null otherwise and without chesstb.
    dtc: Option<i32>,
    category: LichessCategory,
}

#[derive(Serialize, utoipa::ToSchema)]
struct MoveFields {
    uci: String,
    san: String,
    zeroing: bool,
    /// A capture or promotion.
    conversion: bool,
    #[serde(flatten)]
    pos: PositionFields,
}

#[derive(Serialize, utoipa::ToSchema)]
struct StandardResponse {
    #[serde(flatten)]
    pos: PositionFields,
    moves: Vec<MoveFields>,
    /// No value is pending (lichess's fields have no room to say which).
    #[serde(skip)]
    complete: bool,
}

impl Answer for StandardResponse {
    fn is_complete(&self) -> bool {
        self.complete
    }
}

/// DTZ as lichess reports it. lichess probes Syzygy even where the game is
/// over; for a checkmated side the table may say the −1 is rounded.
fn lichess_dtz(tb: &Tablebases, pos: &Chess, info: &PositionInfo) -> Option<MaybeRounded<Dtz>> {
    if info.checkmate
        && let Some(syzygy) = tb.source_handles().find(|s| s.source() == Source::Syzygy)
        && let Ok(Some(dtz)) = syzygy.probe_dtz(pos)
    {
        return Some(dtz);
    }
    info.dtz50.map(|d| d.to_syzygy())
}

/// 0 means a draw in lichess's DTM, so a mate on the board has none.
fn lichess_dtm(info: &PositionInfo) -> Option<i32> {
    info.dtm.filter(|_| !info.checkmate).map(|d| d.plies)
}

/// lichess's `dtc` counts full moves (lila-tablebase doubles it to compare
/// with DTZ plies): a conversion `n` plies away is ⌈n/2⌉ moves, signed.
fn lichess_dtc(info: &PositionInfo) -> Option<i32> {
    info.dtc.and_then(|d| d.conversion_plies).map(|p| p.signum() * ((p.abs() + 1) / 2))
}

fn fields(info: &PositionInfo, dtz: Option<MaybeRounded<Dtz>>, category: LichessCategory) -> PositionFields {
    PositionFields {
        checkmate: info.checkmate,
        stalemate: info.stalemate,
        variant_win: false,
        variant_loss: false,
        insufficient_material: info.insufficient_material,
        dtz: dtz.map(|d| d.ignore_rounding().0),
        precise_dtz: dtz.and_then(MaybeRounded::precise).map(|d| d.0),
        dtm: lichess_dtm(info),
        dtw: None,
        dtc: lichess_dtc(info),
        category,
    }
}

/// One move as lichess rates it, before its verdict may be resolved.
struct Rated {
    mv: MoveInfo,
    dtz: Option<MaybeRounded<Dtz>>,
    category: LichessCategory,
}

/// lichess's order for a metric that tightens towards mate: the mover's
/// quickest win first (the opponent's negative value closest to zero), then
/// unknown and draws, then the longest resistance.
fn tightening(metric: Option<i32>) -> (Reverse<Option<i32>>, Option<Reverse<i32>>) {
    (Reverse(metric.filter(|m| *m < 0)), metric.filter(|m| *m > 0).map(Reverse))
}

type SortKey = (
    LichessCategory,
    Reverse<bool>,
    (Reverse<bool>, Reverse<bool>),
    (Reverse<Option<i32>>, Option<Reverse<i32>>),
    (bool, (Reverse<Option<i32>>, Option<Reverse<i32>>)),
    (bool, Option<Reverse<i32>>),
    (Reverse<Option<Role>>, Reverse<Option<Role>>),
);

/// lichess's `MoveInfo::sort_key`, without the fields that are constant
/// here (variant outcomes, DTW).
fn sort_key(r: &Rated) -> SortKey {
    let after = &r.mv.after;
    let not_losing = !r.category.is_positive();
    (
        r.category,
        Reverse(after.checkmate),
        (Reverse(after.stalemate), Reverse(after.insufficient_material)),
        tightening(lichess_dtm(after)),
        (r.mv.m.is_conversion() ^ not_losing, tightening(lichess_dtc(after))),
        (r.mv.zeroing ^ not_losing, r.dtz.map(|d| Reverse(d.ignore_rounding().0))),
        (Reverse(r.mv.m.capture()), Reverse(r.mv.m.promotion())),
    )
}

/// What is sorted in place of lichess's own move type: the standard
/// library's unstable sort picks its algorithm by the element's size and
/// whether it is `Copy`, and equal keys (drawn king moves, say) come out in
/// lichess's order only with the same algorithm. lichess's `MoveInfo` is 64
/// bytes and not `Copy`.
struct SortSlot {
    key: SortKey,
    index: u8,
    _size_as_lichess: [u8; SLOT_PADDING],
}

const SLOT_PADDING: usize = 64 - std::mem::size_of::<SortKey>() - 1;
const _: () = assert!(std::mem::size_of::<SortSlot>() == 64);

/// lichess's `sort_unstable_by_key(MoveInfo::sort_key)` on moves in
/// `legal_moves()` order, ties included.
fn sort_as_lichess(rated: Vec<Rated>) -> Vec<Rated> {
    let mut slots: Vec<SortSlot> = rated
        .iter()
        .enumerate()
        .map(|(i, r)| SortSlot { key: sort_key(r), index: i as u8, _size_as_lichess: [0; SLOT_PADDING] })
        .collect();
    slots.sort_unstable_by_key(|slot| slot.key);
    let mut rated: Vec<Option<Rated>> = rated.into_iter().map(Some).collect();
    slots.iter().filter_map(|slot| rated[usize::from(slot.index)].take()).collect()
}

fn standard_response(tb: &Tablebases, pos: &Chess) -> Result<StandardResponse, NoAnswer> {
    let clock = pos.halfmoves();
    // lichess's answer has no DTM50 and no mate bound: neither is computed.
    let info = probe::position_info_with(tb, pos, probe::Detail::Lichess);
    // Tables being generated are waited for, up to a point, when nothing
    // else answers.
    if info.is_generating() {
        return Err(probe::generating(tb, pos, &info));
    }
    let dtz = lichess_dtz(tb, pos, &info);
    let moves = probe::legal_move_infos_with(tb, pos, probe::Detail::Lichess);
    let complete = info.pending.is_empty() && moves.iter().all(|m| m.after.pending.is_empty());
    let rated: Vec<Rated> = moves
        .into_iter()
        .map(|mv| {
            let mut after = pos.clone();
            after.play_unchecked(mv.m);
            let dtz = lichess_dtz(tb, &after, &mv.after);
            let category = LichessCategory::of(&mv.after, dtz, after.halfmoves(), clock);
            Rated { mv, dtz, category }
        })
        .collect();
    let mut rated = sort_as_lichess(rated);

    let own = LichessCategory::of(&info, dtz, clock, clock.saturating_sub(1));
    // The position's own verdict resolves the ambiguity of its best moves.
    use LichessCategory::*;
    let resolved = match own {
        Win => Some((SyzygyLoss, Loss)),
        CursedWin => Some((SyzygyLoss, BlessedLoss)),
        BlessedLoss => Some((SyzygyWin, CursedWin)),
        Loss => Some((SyzygyWin, Win)),
        _ => None,
    };
    if let Some((ambiguous, sure)) = resolved {
        for r in rated.iter_mut().take_while(|r| r.category == ambiguous) {
            r.category = sure;
        }
    }
    let own = rated.first().map_or(own, |best| best.category.flip());
    Ok(StandardResponse {
        complete,
        pos: fields(&info, dtz, own),
        moves: rated
            .into_iter()
            .map(|r| MoveFields {
                uci: r.mv.uci,
                san: r.mv.san,
                zeroing: r.mv.zeroing,
                conversion: r.mv.m.is_conversion(),
                pos: fields(&r.mv.after, r.dtz, r.category),
            })
            .collect(),
    })
}

/// lichess's status codes: 400 for every FEN it cannot use (illegal
/// positions included), 404 for a position without a mainline. The body
/// stays tbserver's JSON error with its stable code.
fn lichess_status(result: Result<Response, ApiError>) -> Response {
    match result {
        Ok(response) => response,
        Err(err) => {
            let status = match err {
                ApiError::IllegalPosition(_) => Some(StatusCode::BAD_REQUEST),
                ApiError::CastlingRights | ApiError::TooManyPieces { .. } => Some(StatusCode::NOT_FOUND),
                _ => None,
            };
            let mut response = err.into_response();
            if let Some(status) = status {
                *response.status_mut() = status;
            }
            response
        }
    }
}

/// Errors of `/standard`.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // describes responses; never constructed
enum StandardErrors {
    /// `missing_parameter`, `invalid_parameter`, `invalid_fen` or
    /// `illegal_position` (lichess answers 400 for all of them).
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// `table_error`: a table file is broken on the server's side;
    /// `generating`: only built-in tables can answer and they are being
    /// generated (`Retry-After`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// The lichess tablebase API's answer (`tablebase.lichess.ovh/standard`):
/// any legal position, castling rights and uncovered material included;
/// what no table covers is `unknown`.
#[utoipa::path(
    get, path = "/standard", tag = "lichess", params(FenQuery),
    responses((status = 200, body = StandardResponse, content(
        (StandardResponse = "application/json"), (StandardResponse = "application/cbor"))), StandardErrors)
)]
pub async fn standard(State(state): State<AppState>, request: FenRequest) -> Response {
    lichess_status(answer_parsed(&state, request, Endpoint::Standard, parse_position, standard_response).await)
}

#[derive(Serialize, utoipa::ToSchema)]
struct MainlineStepFields {
    uci: String,
    san: String,
    /// DTZ after the move, from the point of view of the side to move there.
    dtz: i32,
    /// As `dtz` when known to be exact (see `/standard`).
    precise_dtz: Option<i32>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct MainlineResponse {
    mainline: Vec<MainlineStepFields>,
    /// `w`, `b`, or null when the line does not end in mate.
    winner: Option<char>,
    dtz: i32,
    precise_dtz: Option<i32>,
}

/// Follows DTZ alone: complete once its DTZ is known, whatever else is pending.
impl Answer for MainlineResponse {
    fn is_complete(&self) -> bool {
        true
    }
}

/// lichess's mainline: the root's DTZ, then, unless it is a draw, the best
/// move of `shakmaty_syzygy` (or the same rule on other sources) until the
/// game ends or the half-move clock reaches 100.
fn lichess_mainline(tb: &Tablebases, pos: &Chess) -> Result<MainlineResponse, NoAnswer> {
    let info = probe::position_info(tb, pos);
    if info.is_generating() {
        return Err(probe::generating(tb, pos, &info));
    }
    if let Some(err) = info.table_error.clone().filter(|_| info.dtz50.is_none()) {
        return Err(err.into());
    }
    let root = lichess_dtz(tb, pos, &info).ok_or_else(|| probe::not_covered(tb, pos))?;
    let mut pos = pos.clone();
    let mut mainline = Vec::new();
    if !root.is_zero() {
        while pos.halfmoves() < 100 && mainline.len() < MAX_MAINLINE_PLIES {
            let Some((m, dtz)) = probe::dtz_best_move(tb, &pos)? else { break };
            let uci = UciMove::from_standard(m).to_string();
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, m).to_string();
            mainline.push(MainlineStepFields {
                uci,
                san,
                dtz: dtz.ignore_rounding().0,
                precise_dtz: dtz.precise().map(|d| d.0),
            });
        }
    }
    Ok(MainlineResponse {
        mainline,
        winner: pos.outcome().winner().map(|c| c.char()),
        dtz: root.ignore_rounding().0,
        precise_dtz: root.precise().map(|d| d.0),
    })
}

/// Errors of `/standard/mainline`.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // describes responses; never constructed
enum MainlineErrors {
    /// `missing_parameter`, `invalid_parameter`, `invalid_fen` or
    /// `illegal_position`.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// Not in the tablebases: `castling_rights`, `too_many_pieces`, or
    /// `missing_table` (for the position or one on its line).
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// `table_error`: a table file is broken on the server's side;
    /// `generating`: only built-in tables can answer and they are being
    /// generated (`Retry-After`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// The lichess tablebase API's mainline (`/standard/mainline`).
#[utoipa::path(
    get, path = "/standard/mainline", tag = "lichess", params(FenQuery),
    responses((status = 200, body = MainlineResponse, content(
        (MainlineResponse = "application/json"), (MainlineResponse = "application/cbor"))), MainlineErrors)
)]
pub async fn mainline(State(state): State<AppState>, request: FenRequest) -> Response {
    lichess_status(answer_parsed(&state, request, Endpoint::StandardMainline, parse_position, lichess_mainline).await)
}
