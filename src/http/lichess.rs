//! `/standard` and `/standard/mainline`: the lichess tablebase API's fields,
//! values and move order, so that its clients work unchanged.

use std::cmp::Reverse;

use axum::{extract::State, response::Response};
use serde::Serialize;
use shakmaty::Role;

use super::{Answer, AppState, Endpoint, FenQuery, FenRequest, answer_fen, openapi};
use crate::{
    domain::Category,
    error::ApiError,
    probe::{self, MoveInfo, MoveOrder, PositionInfo},
};

#[derive(Serialize, utoipa::ToSchema)]
struct PositionFields {
    checkmate: bool,
    stalemate: bool,
    variant_win: bool,
    variant_loss: bool,
    insufficient_material: bool,
    /// Stored DTZ, possibly rounded.
    dtz: Option<i32>,
    /// DTZ when known to be exact.
    precise_dtz: Option<i32>,
    dtm: Option<i32>,
    /// Only in chess variants and 8-piece tables; always null here.
    dtw: Option<i32>,
    dtc: Option<i32>,
    category: Category,
}

#[derive(Serialize, utoipa::ToSchema)]
struct MoveFields {
    uci: String,
    san: String,
    zeroing: bool,
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

fn fields(info: &PositionInfo, category: Category) -> PositionFields {
    PositionFields {
        checkmate: info.checkmate,
        stalemate: info.stalemate,
        variant_win: false,
        variant_loss: false,
        insufficient_material: info.insufficient_material,
        // lichess reports no DTZ for terminal positions it did not probe.
        dtz: info.dtz50.map(|d| d.plies),
        precise_dtz: info.dtz50.filter(|d| d.is_exact()).map(|d| d.plies),
        dtm: info.dtm.map(|d| d.plies),
        dtw: None,
        dtc: None,
        category,
    }
}

/// lichess's order of categories of the position after a move, best for the
/// mover first; an unknown result ranks just after a sure win.
fn lichess_rank(after: Category) -> u8 {
    match after {
        Category::Loss => 0,
        Category::Unknown => 1,
        Category::MaybeLoss => 2,
        Category::BlessedLoss => 3,
        Category::Draw => 4,
        Category::CursedWin => 5,
        Category::MaybeWin => 6,
        Category::Win => 7,
    }
}

type SortKey = (
    u8,
    bool,
    (bool, bool),
    Reverse<Option<i32>>,
    Option<Reverse<i32>>,
    bool,
    bool,
    Option<Reverse<i32>>,
    Reverse<Option<Role>>,
    Reverse<Option<Role>>,
);

fn sort_key(mv: &MoveInfo) -> SortKey {
    let after = &mv.after;
    let dtz = after.dtz50.map_or(0, |d| d.plies);
    let dtm = after.dtm.map(|d| d.plies);
    // The mover wins when the opponent's DTZ after the move is negative.
    let mover_not_losing = dtz <= 0;
    (
        lichess_rank(after.category),
        !after.checkmate,
        (!after.stalemate, !after.insufficient_material),
        // Winning: quickest mate (after-DTM closest to zero) first, unknown last.
        Reverse(if dtz < 0 { dtm } else { None }),
        // Losing: longest resistance first; unknown DTM before known.
        if dtz > 0 { dtm.map(Reverse) } else { None },
        // Zeroing and captures first unless losing.
        mv.zeroing ^ mover_not_losing,
        mv.capture ^ mover_not_losing,
        after.dtz50.map(|d| Reverse(d.plies)),
        Reverse(mv.m.capture()),
        Reverse(mv.m.promotion()),
    )
}

fn standard_response(info: &PositionInfo, moves: &mut [MoveInfo]) -> StandardResponse {
    moves.sort_by_cached_key(sort_key);
    let mut categories: Vec<Category> = moves.iter().map(|m| m.after.category).collect();
    let own = match categories.first() {
        Some(best) => best.flip(),
        None => info.category,
    };
    // A position's own verdict resolves "maybe" on its best moves.
    let resolve = match own {
        Category::Win => Some((Category::MaybeLoss, Category::Loss)),
        Category::CursedWin => Some((Category::MaybeLoss, Category::BlessedLoss)),
        Category::BlessedLoss => Some((Category::MaybeWin, Category::CursedWin)),
        Category::Loss => Some((Category::MaybeWin, Category::Win)),
        _ => None,
    };
    if let Some((maybe, sure)) = resolve {
        for c in categories.iter_mut().take_while(|c| **c == maybe) {
            *c = sure;
        }
    }
    StandardResponse {
        complete: info.pending.is_empty() && moves.iter().all(|m| m.after.pending.is_empty()),
        pos: fields(info, own),
        moves: moves
            .iter()
            .zip(categories)
            .map(|(m, category)| MoveFields {
                uci: m.uci.clone(),
                san: m.san.clone(),
                zeroing: m.zeroing,
                conversion: m.capture || m.promotion.is_some(),
                pos: fields(&m.after, category),
            })
            .collect(),
    }
}

/// The lichess tablebase API's answer (`tablebase.lichess.ovh/standard`).
#[utoipa::path(
    get, path = "/standard", tag = "lichess", params(FenQuery),
    responses((status = 200, body = StandardResponse, content(
        (StandardResponse = "application/json"), (StandardResponse = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn standard(
    State(state): State<AppState>,
    request: FenRequest,
) -> Result<Response, ApiError> {
    answer_fen(&state, request, Endpoint::Standard, |tb, pos| {
        probe::check_coverage(tb, pos)?;
        // Like lichess, missing tables give `unknown` values, not an error;
        // tables being generated are waited for, up to a point.
        let info = probe::position_info(tb, pos);
        if info.is_generating() {
            return Err(probe::generating(tb, pos, &info));
        }
        let mut moves = probe::move_infos(tb, pos, MoveOrder::ZeroingFirst);
        Ok(standard_response(&info, &mut moves))
    })
    .await
}

#[derive(Serialize, utoipa::ToSchema)]
struct MainlineStepFields {
    uci: String,
    san: String,
    dtz: Option<i32>,
    precise_dtz: Option<i32>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct MainlineResponse {
    dtz: Option<i32>,
    precise_dtz: Option<i32>,
    mainline: Vec<MainlineStepFields>,
    winner: Option<char>,
    #[serde(skip)]
    complete: bool,
}

impl Answer for MainlineResponse {
    fn is_complete(&self) -> bool {
        self.complete
    }
}

/// The lichess tablebase API's mainline (`/standard/mainline`).
#[utoipa::path(
    get, path = "/standard/mainline", tag = "lichess", params(FenQuery),
    responses((status = 200, body = MainlineResponse, content(
        (MainlineResponse = "application/json"), (MainlineResponse = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn mainline(
    State(state): State<AppState>,
    request: FenRequest,
) -> Result<Response, ApiError> {
    answer_fen(&state, request, Endpoint::StandardMainline, |tb, pos| {
        let line = probe::mainline(tb, pos, MoveOrder::ZeroingFirst)?;
        Ok(MainlineResponse {
                dtz: line.dtz50.map(|d| d.plies),
                precise_dtz: line.dtz50.filter(|d| d.is_exact()).map(|d| d.plies),
                mainline: line
                    .mainline
                    .iter()
                    .map(|s| MainlineStepFields {
                        uci: s.uci.clone(),
                        san: s.san.clone(),
                        dtz: s.dtz50.map(|d| d.plies),
                        precise_dtz: s.dtz50.filter(|d| d.is_exact()).map(|d| d.plies),
                    })
                    .collect(),
                winner: line.winner,
                complete: line.pending.is_empty(),
            })
    })
    .await
}
