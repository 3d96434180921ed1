//! Probing: reading a frame where it is stored, rebuilding it by a one-ply
//! search over the children where it is not (dropped side to move,
//! loss-only frames), and the en-passant overlay.

use shakmaty::{Chess, EnPassantMode, Position};

use super::{
    Chesstb, ProbeError,
    file::{Kind, TableFile},
    index::Placement,
    material::{TableMaterial, role_index},
    rebuilt::What,
};

/// chesstb's five classes, ordered from the side to move's worst to best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// The side to move loses, even with the 50-move rule.
    Loss = 0,
    /// The side to move loses without the 50-move rule, and draws with it.
    BlessedLoss = 1,
    /// A draw.
    Draw = 2,
    /// The side to move wins without the 50-move rule, and draws with it.
    CursedWin = 3,
    /// The side to move wins, even with the 50-move rule.
    Win = 4,
}

impl Class {
    /// The same five classes as Syzygy's.
    pub fn wdl(self) -> shakmaty_syzygy::Wdl {
        use shakmaty_syzygy::Wdl;
        match self {
            Class::Win => Wdl::Win,
            Class::CursedWin => Wdl::CursedWin,
            Class::Draw => Wdl::Draw,
            Class::BlessedLoss => Wdl::BlessedLoss,
            Class::Loss => Wdl::Loss,
        }
    }

    fn from_code(code: u16) -> Option<Class> {
        Some(match code {
            0 | 5 => Class::Loss,
            1 => Class::BlessedLoss,
            2 => Class::Draw,
            3 => Class::CursedWin,
            4 | 6 => Class::Win,
            _ => return None,
        })
    }
    pub(crate) fn invert(self) -> Class {
        match self {
            Class::Loss => Class::Win,
            Class::BlessedLoss => Class::CursedWin,
            Class::Draw => Class::Draw,
            Class::CursedWin => Class::BlessedLoss,
            Class::Win => Class::Loss,
        }
    }
    /// Without the 50-move rule cursed wins are wins.
    fn fold_dtm(self) -> Class {
        match self {
            Class::CursedWin => Class::Win,
            Class::BlessedLoss => Class::Loss,
            c => c,
        }
    }
    /// Under the rule cursed wins are draws.
    fn fold_50(self) -> Class {
        match self {
            Class::CursedWin | Class::BlessedLoss => Class::Draw,
            c => c,
        }
    }
    fn is_win(self) -> bool {
        matches!(self, Class::Win | Class::CursedWin)
    }
    fn decisive(self) -> bool {
        matches!(self, Class::Win | Class::Loss)
    }
}

/// A stored WDL code read across one quiet ply: the boundary markers (a
/// win or loss at exactly the last ply the rule allows) tip to cursed or
/// blessed.
fn invert_code(code: u16) -> Option<Class> {
    Some(match code {
        5 => Class::CursedWin,
        6 => Class::BlessedLoss,
        c => Class::from_code(c)?.invert(),
    })
}

/// Prefers a higher class, then a faster win or a slower loss.
fn better(new: (Class, u16), old: (Class, u16)) -> bool {
    if new.0 != old.0 {
        return new.0 > old.0;
    }
    if new.0.is_win() {
        new.1 < old.1
    } else if matches!(new.0, Class::Loss | Class::BlessedLoss) {
        new.1 > old.1
    } else {
        false
    }
}

/// Children a rebuild could not price: they spoil the answer if they might
/// have beaten the best one found.
#[derive(Default)]
struct Skipped {
    best: Option<Class>,
    blind: bool,
}

impl Skipped {
    fn of_class(&mut self, c: Class) {
        self.best = self.best.max(Some(c));
    }
    fn unpins(&self, best: Class) -> bool {
        self.blind || self.best.is_some_and(|c| c >= best)
    }
}

/// The DTZ that rides along a rebuilt layer 0.
#[derive(Default)]
struct DtzMinimax {
    best: Option<(Class, u16)>,
    skipped: Skipped,
}

impl DtzMinimax {
    fn offer(&mut self, child: Class, plies: u16) {
        let mut mine = child.invert();
        if plies > 100 {
            mine = match mine {
                Class::Win => Class::CursedWin,
                Class::Loss => Class::BlessedLoss,
                c => c,
            };
        }
        if self.best.is_none_or(|b| better((mine, plies), b)) {
            self.best = Some((mine, plies));
        }
    }
    fn quiet(&mut self, child: Class, child_dtz: Option<u16>) {
        match child_dtz {
            Some(d) => self.offer(child, d + 1),
            None => {
                let lifted = match child.invert() {
                    Class::Loss => Class::BlessedLoss,
                    c => c,
                };
                self.skipped.of_class(lifted)
            }
        }
    }
    fn finish(&self, any_legal: bool) -> Option<u16> {
        if !any_legal {
            return Some(0);
        }
        let (class, plies) = self.best?;
        if self.skipped.unpins(class) {
            return None;
        }
        Some(if class == Class::Draw { 0 } else { plies })
    }
}

/// DTM or DTM50 of one position: its class (W/D/L, or the five classes for
/// plain DTM) and plies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mate {
    /// The outcome for the side to move.
    pub class: Class,
    /// Plies to mate (0 when the side to move is mated).
    pub plies: u16,
}

/// A layer-0 or clock layer answer of the DTM50 pack; `dtz` rides along on
/// layer 0.
#[derive(Debug, Clone, Copy)]
struct PackAnswer {
    mate: Option<Mate>,
    dtz: Option<u16>,
}

/// A rebuilt answer as [`Chesstb`] keeps it; which variant goes with which
/// [`What`] is [`Memo`]'s business.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rebuilt {
    Class(Class),
    Mate(Mate),
    Flat(Mate, u16),
    Plies(u16),
}

/// A rebuilt answer as the rebuilt-answer cache keeps it: `keep` is `None`
/// for an incomplete answer, which is never kept.
trait Memo: Sized {
    fn keep(&self) -> Option<Rebuilt>;
    fn recall(r: Rebuilt) -> Option<Self>;
}

impl Memo for Option<Class> {
    fn keep(&self) -> Option<Rebuilt> {
        self.map(Rebuilt::Class)
    }
    fn recall(r: Rebuilt) -> Option<Self> {
        if let Rebuilt::Class(c) = r { Some(Some(c)) } else { None }
    }
}

impl Memo for Option<Mate> {
    fn keep(&self) -> Option<Rebuilt> {
        self.map(Rebuilt::Mate)
    }
    fn recall(r: Rebuilt) -> Option<Self> {
        if let Rebuilt::Mate(m) = r { Some(Some(m)) } else { None }
    }
}

impl Memo for Option<u16> {
    fn keep(&self) -> Option<Rebuilt> {
        self.map(Rebuilt::Plies)
    }
    fn recall(r: Rebuilt) -> Option<Self> {
        if let Rebuilt::Plies(p) = r { Some(Some(p)) } else { None }
    }
}

impl Memo for PackAnswer {
    fn keep(&self) -> Option<Rebuilt> {
        Some(Rebuilt::Flat(self.mate?, self.dtz?))
    }
    fn recall(r: Rebuilt) -> Option<Self> {
        if let Rebuilt::Flat(m, d) = r { Some(PackAnswer { mate: Some(m), dtz: Some(d) }) } else { None }
    }
}

/// chesstb's DTC at one half-move clock (README section "DTC"): on the
/// line that owes the fewest pawn pushes before a conversion (capture or
/// promotion) and still fits the clock, `order` pushes the winning side
/// owes and `plies` to the next zeroing move; at order 0 that zeroing move
/// is the conversion itself. `class` is the one the clock leaves (W/D/L).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conversion {
    /// The outcome for the side to move.
    pub class: Class,
    /// Pawn pushes the winning side still owes before the conversion.
    pub order: u16,
    /// Plies to the next zeroing move.
    pub plies: u16,
}

impl Conversion {
    const DRAW: Conversion = Conversion { class: Class::Draw, order: 0, plies: 0 };
}

/// Rows of a DTC pack: pack index 0 is the DTZ row, index j the budget of
/// `DTC_BUDGETS - j` pushes; a position's curve is indexed by budget.
const DTC_BUDGETS: usize = 29;
const DTC_ROWS: usize = DTC_BUDGETS + 1;

/// The plies a line may take before its zeroing move at `clock`.
fn dtc_budget_plies(clock: u32) -> u16 {
    100u32.saturating_sub(clock) as u16
}

/// Everything chesstb says about a position.
#[derive(Debug, Clone, Default)]
pub struct Values {
    /// The class at clock 0.
    pub wdl: Option<Class>,
    /// Unsigned plies to the next zeroing move.
    pub dtz_plies: Option<u16>,
    /// Unsigned plies to mate ignoring the 50-move rule (`wdl` says who).
    pub dtm_plies: Option<u16>,
    /// DTM50 at the requested clock: W/D/L and plies (0 for a draw).
    pub dtm50: Option<Mate>,
    /// DTC at the requested clock, where a DTC table (pawn endings) or the
    /// DTZ table (pawnless endings, where every zeroing move converts)
    /// answers; only from [`Chesstb::probe_with_dtc`].
    pub dtc: Option<Conversion>,
    /// Internal: the class the DTM figure was compared under (ep overlay).
    dtm_class: Option<Class>,
    dtz_class: Option<Class>,
}

const MAX_DEPTH: u32 = 16;

/// Rebuilds by search that one probe may start. A valid file needs a few
/// (a dropped side's children are stored); a damaged one whose frames all
/// read as dropped or loss-only would recurse to `MAX_DEPTH` with ~30
/// children a level, which never ends in practice (fuzzing produces such
/// files). Past the budget a rebuild answers "unknown", as at `MAX_DEPTH`.
const REBUILD_BUDGET: u32 = 20_000;

thread_local! {
    static REBUILDS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Starts a probe's rebuild budget afresh (at each public entry point).
pub(super) fn new_probe() {
    REBUILDS.with(|n| n.set(0));
}

/// Whether a rebuild at `depth` may go on; counts it against the budget.
fn may_rebuild(depth: u32) -> bool {
    depth < MAX_DEPTH
        && REBUILDS.with(|n| {
            let used = n.get();
            n.set(used.saturating_add(1));
            used < REBUILD_BUDGET
        })
}

/// A position seen from its table: material, placement in the table's
/// colours, and the side to move there (0 = the side named first).
pub(super) struct Canon {
    pub material: TableMaterial,
    pub placement: Placement,
    pub side: usize,
}

/// `pos` seen from the table of `on_board` (its material with the board's
/// colours: the full one, or a pair table's). A pair table's placement
/// holds all pawns; its index picks out the pair.
pub(super) fn canon_in(pos: &Chess, on_board: TableMaterial) -> Canon {
    let board = pos.board();
    let (material, swap) = on_board.canonical();
    let mut placement = Placement { kings: [0, 0], pieces: Default::default() };
    for (sq, piece) in board.iter() {
        let side = (piece.color.is_black() != swap) as usize;
        let s = if swap { sq as u8 ^ 56 } else { sq as u8 };
        match role_index(piece.role) {
            Some(r) => placement.pieces[side][r].push(s),
            None => placement.kings[side] = s,
        }
    }
    let side = (pos.turn().is_black() != swap) as usize;
    Canon { material, placement, side }
}

fn mirrored(p: &Placement) -> Placement {
    let flip = |v: &arrayvec::ArrayVec<u8, 8>| v.iter().map(|s| s ^ 56).collect();
    Placement {
        kings: [p.kings[1] ^ 56, p.kings[0] ^ 56],
        pieces: [std::array::from_fn(|r| flip(&p.pieces[1][r])), std::array::from_fn(|r| flip(&p.pieces[0][r]))],
    }
}

enum Located {
    Direct { side: usize, idx: u64 },
    Rebuild,
}

fn bare_kings(pos: &Chess) -> bool {
    pos.board().occupied().count() == 2
}

fn has_ep(pos: &Chess) -> bool {
    pos.ep_square(EnPassantMode::Legal).is_some()
}

fn children(pos: &Chess) -> impl Iterator<Item = (shakmaty::Move, Chess)> + '_ {
    pos.legal_moves().into_iter().map(move |m| {
        let mut c = pos.clone();
        c.play_unchecked(m);
        (m, c)
    })
}

type R<T> = Result<T, ProbeError>;

impl Chesstb {
    /// The material (colours as on the board) whose table answers for
    /// `pos`: as chesstb's prober, the opposing-pair table when the board
    /// has an opposing pair and that table's WDL file is there, else the
    /// full material. Asked of every node, so that a search's children
    /// route the same way.
    pub(super) fn routed(&self, board: &shakmaty::Board) -> TableMaterial {
        if self.has_pair_tables
            && let Some(m) = TableMaterial::pair_of_board(board)
            && self.slots.contains_key(&(m.canonical().0, Kind::Wdl))
        {
            return m;
        }
        TableMaterial::of_board(board)
    }

    pub(super) fn canon(&self, pos: &Chess) -> Canon {
        canon_in(pos, self.routed(pos.board()))
    }

    fn err(file: &TableFile, reason: String) -> ProbeError {
        ProbeError { table: file.name.clone(), reason }
    }

    /// A rebuilt answer from the cache, or `search`ed and kept when it is
    /// complete. A hit spends no rebuild budget.
    fn remembered<T: Memo>(&self, pos: &Chess, what: What, search: impl FnOnce() -> R<T>) -> R<T> {
        if let Some(v) = self.rebuilt.get(pos, what).and_then(T::recall) {
            return Ok(v);
        }
        let v = search()?;
        if let Some(r) = v.keep() {
            self.rebuilt.insert(pos, what, r);
        }
        Ok(v)
    }

    /// Where the frame of the side to move holds `c`, given its class
    /// (`None`: WDL itself, which is never loss-only).
    fn locate(&self, file: &TableFile, c: &Canon, class: Option<Class>) -> R<Located> {
        use super::file::FrameData;
        let priced = |side: usize| !(file.frames[side].loss_only && class.is_some_and(Class::is_win));
        let index = |side: usize, p: &Placement| -> R<u64> {
            match &file.frames[side].data {
                FrameData::Stored(s) => {
                    file.index.index(&s.layout, p).ok_or_else(|| Self::err(file, "position outside the index".into()))
                }
                _ => Ok(0),
            }
        };
        if !matches!(file.frames[c.side].data, FrameData::Dropped) {
            if !priced(c.side) {
                return Ok(Located::Rebuild);
            }
            return Ok(Located::Direct { side: c.side, idx: index(c.side, &c.placement)? });
        }
        if !c.material.is_symmetric() {
            return Ok(Located::Rebuild);
        }
        let kept = 1 - c.side;
        if matches!(file.frames[kept].data, FrameData::Dropped) || !priced(kept) {
            return Ok(Located::Rebuild);
        }
        Ok(Located::Direct { side: kept, idx: index(kept, &mirrored(&c.placement))? })
    }

    /// Whether the files store the frame of `pos`'s side to move (itself or,
    /// for a symmetric material, mirrored) in WDL and, where there is one,
    /// in the DTM50 pack; `false` where a probe rebuilds it by search.
    pub(super) fn stored(&self, pos: &Chess) -> R<Option<bool>> {
        let c = self.canon(pos);
        let Some(wdl) = self.file(&c.material, Kind::Wdl)? else { return Ok(None) };
        let mut stored = matches!(self.locate(&wdl, &c, None)?, Located::Direct { .. });
        if let Some(pack) = self.file(&c.material, Kind::Dtm50)? {
            stored &= matches!(self.locate(&pack, &c, None)?, Located::Direct { .. });
        }
        Ok(Some(stored))
    }

    /// Whether the `kind` file stores the frame of `pos`'s side to move
    /// (itself or, for a symmetric material, mirrored); `None` without one.
    pub(super) fn stored_in(&self, pos: &Chess, kind: Kind) -> R<Option<bool>> {
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, kind)? else { return Ok(None) };
        Ok(Some(matches!(self.locate(&file, &c, None)?, Located::Direct { .. })))
    }

    /// WDL at clock 0 including en-passant captures; `None` without a table.
    pub(super) fn wdl(&self, pos: &Chess, depth: u32) -> R<Option<Class>> {
        let Some(mut best) = self.wdl_no_ep(pos, depth)? else { return Ok(None) };
        if has_ep(pos) {
            for (m, child) in children(pos) {
                if !m.is_en_passant() {
                    continue;
                }
                if let Some(cw) = self.wdl_no_ep(&child, depth + 1)? {
                    best = best.max(cw.invert());
                }
            }
        }
        Ok(Some(best))
    }

    fn wdl_no_ep(&self, pos: &Chess, depth: u32) -> R<Option<Class>> {
        if bare_kings(pos) {
            return Ok(Some(Class::Draw));
        }
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Wdl)? else { return Ok(None) };
        let code = match self.locate(&file, &c, None)? {
            Located::Rebuild => return self.rebuild_wdl(pos, depth),
            Located::Direct { side, idx } => self.read_code(&file, side, idx)?,
        };
        let Some(class) = code.and_then(Class::from_code) else { return Ok(None) };
        self.raise_relaxed(&file, &c, class, pos, depth).map(Some)
    }

    /// The stored code, boundary markers kept; `None` for an illegal slot.
    fn read_code(&self, file: &TableFile, side: usize, idx: u64) -> R<Option<u16>> {
        let code = file.read_plain(&self.cache, side, idx).map_err(|e| Self::err(file, e))?;
        Ok(code.filter(|&c| c != 7))
    }

    fn raise_relaxed(&self, file: &TableFile, c: &Canon, class: Class, pos: &Chess, depth: u32) -> R<Class> {
        if !file.frames[c.side].relaxed {
            return Ok(class);
        }
        // The stored class is a lower bound; captures and promotions may raise it.
        let mut bound = class;
        for (m, child) in children(pos) {
            if !(m.is_capture() || m.is_promotion()) {
                continue;
            }
            if let Some(cw) = self.wdl(&child, depth + 1)? {
                bound = bound.max(cw.invert());
            }
        }
        Ok(bound)
    }

    /// The WDL code of a quiet child as the rebuild reads it: markers kept.
    fn wdl_code(&self, pos: &Chess, depth: u32) -> R<Option<u16>> {
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Wdl)? else { return Ok(None) };
        match self.locate(&file, &c, None)? {
            Located::Direct { side, idx } => {
                let Some(code) = self.read_code(&file, side, idx)? else { return Ok(None) };
                if code >= 5 || !file.frames[side].relaxed {
                    return Ok(Some(code));
                }
                let class = Class::from_code(code).expect("0..=4");
                Ok(Some(self.raise_relaxed(&file, &c, class, pos, depth)? as u16))
            }
            Located::Rebuild => Ok(self.rebuild_wdl(pos, depth)?.map(|c| c as u16)),
        }
    }

    fn rebuild_wdl(&self, pos: &Chess, depth: u32) -> R<Option<Class>> {
        self.remembered(pos, What::Wdl, || self.search_wdl(pos, depth))
    }

    fn search_wdl(&self, pos: &Chess, depth: u32) -> R<Option<Class>> {
        if !may_rebuild(depth) {
            return Ok(None);
        }
        let mut best: Option<Class> = None;
        let mut skipped = Skipped::default();
        let mut any = false;
        for (m, child) in children(pos) {
            any = true;
            let mine = if bare_kings(&child) {
                Some(Class::Draw)
            } else if m.is_zeroing() {
                self.wdl(&child, depth + 1)?.map(Class::invert)
            } else {
                self.wdl_code(&child, depth + 1)?.and_then(invert_code)
            };
            match mine {
                Some(c) => best = best.max(Some(c)),
                None => skipped.blind = true,
            }
        }
        if !any {
            return Ok(Some(if pos.is_check() { Class::Loss } else { Class::Draw }));
        }
        Ok(best.filter(|&b| !skipped.unpins(b)))
    }

    /// Everything about `pos`; `clock`: the DTM50 layer to answer (`None`:
    /// none). `None` when no WDL table covers the position.
    pub(super) fn values(&self, pos: &Chess, clock: Option<u32>, depth: u32) -> R<Option<Values>> {
        self.values_with(pos, clock, false, depth)
    }

    /// As [`Chesstb::values`], with DTC at `clock` when `dtc` is set (it
    /// decodes the DTC file's blocks, which nothing else needs).
    pub(super) fn values_with(&self, pos: &Chess, clock: Option<u32>, dtc: bool, depth: u32) -> R<Option<Values>> {
        let Some(wdl) = self.wdl_no_ep(pos, depth)? else { return Ok(None) };
        let mut v = Values { wdl: Some(wdl), ..Values::default() };
        if wdl == Class::Draw {
            v.dtm_plies = Some(0);
            v.dtz_plies = Some(0);
            v.dtm50 = clock.map(|_| Mate { class: Class::Draw, plies: 0 });
        } else {
            let c = self.canon(pos);
            if self.file(&c.material, Kind::Dtm50)?.is_some() {
                let flat = self.pack(pos, wdl, None, depth)?;
                v.dtm_plies = flat.mate.map(|m| m.plies);
                v.dtz_plies = flat.dtz;
                if let Some(clock) = clock {
                    v.dtm50 = self.dtm50_at(pos, wdl, &flat, clock, depth)?;
                }
            } else if self.file(&c.material, Kind::Dtm)?.is_some() {
                v.dtm_plies = self.dtm(pos, wdl, depth)?;
            }
            if v.dtz_plies.is_none() && self.file(&c.material, Kind::Dtz)?.is_some() {
                v.dtz_plies = self.dtz(pos, wdl, depth)?;
            }
        }
        if let Some(clock) = clock.filter(|_| dtc) {
            v.dtc = self.dtc(pos, wdl, v.dtz_plies, clock, depth)?;
        }
        v.dtm_class = Some(wdl.fold_dtm());
        v.dtz_class = Some(wdl);
        if has_ep(pos) {
            return self.ep_overlay(pos, v, clock.is_some(), dtc, depth);
        }
        Ok(Some(v))
    }

    /// DTM50 at `clock` from the flat answer and, where needed, the layer.
    fn dtm50_at(&self, pos: &Chess, wdl: Class, flat: &PackAnswer, clock: u32, depth: u32) -> R<Option<Mate>> {
        match settled_without_layer(wdl, flat, clock) {
            Some(answer) => Ok(answer),
            None => Ok(self.pack(pos, wdl, Some(clock), depth)?.mate),
        }
    }

    /// DTM50 at every clock 0–99 at once: the same answers as
    /// [`Chesstb::values`] clock by clock, but each child of a rebuilt
    /// frame is read once (for exhaustive checks).
    pub(super) fn curve(&self, pos: &Chess) -> R<Option<Vec<Option<Mate>>>> {
        let per_clock = || -> R<Option<Vec<Option<Mate>>>> {
            let mut out = Vec::with_capacity(100);
            for clock in 0..100 {
                let Some(v) = self.values(pos, Some(clock), 0)? else { return Ok(None) };
                out.push(v.dtm50);
            }
            Ok(Some(out))
        };
        if has_ep(pos) {
            return per_clock();
        }
        let Some(wdl) = self.wdl_no_ep(pos, 0)? else { return Ok(None) };
        if wdl == Class::Draw {
            return Ok(Some(vec![Some(Mate { class: Class::Draw, plies: 0 }); 100]));
        }
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Dtm50)? else { return per_clock() };
        let flat = self.pack(pos, wdl, None, 0)?;
        let located = self.locate(&file, &c, Some(wdl))?;
        let mut layer: Box<dyn FnMut(u32) -> R<Option<Mate>>> = match located {
            Located::Direct { side, idx } => {
                let record = file.read_record(&self.cache, side, idx).map_err(|e| Self::err(&file, e))?;
                Box::new(move |clock| Ok(Some(mate_from_record(record.as_ref(), wdl, Some(clock)))))
            }
            Located::Rebuild => {
                let children = self.curve_children(pos, wdl)?;
                Box::new(move |clock| self.combine_children(pos, wdl, &children, clock))
            }
        };
        let mut out = Vec::with_capacity(100);
        for clock in 0..100 {
            out.push(match settled_without_layer(wdl, &flat, clock) {
                Some(answer) => answer,
                None => layer(clock)?,
            });
        }
        Ok(Some(out))
    }

    /// The children of a rebuilt frame, read once for every clock.
    fn curve_children(&self, pos: &Chess, wdl: Class) -> R<Vec<CurveChild>> {
        let mut out = Vec::new();
        for (m, child) in children(pos) {
            let entry = if bare_kings(&child) {
                CurveChild::Fixed(Mate { class: Class::Draw, plies: 0 })
            } else if m.is_zeroing() {
                // The clock restarts: one answer at clock 0 serves every clock.
                if has_ep(&child) {
                    match self.values(&child, Some(0), 1)? {
                        None => CurveChild::Blind,
                        Some(Values { dtm50: Some(d), .. }) => CurveChild::Fixed(d),
                        Some(v) => CurveChild::SkipClass(v.wdl.expect("set").fold_50().invert()),
                    }
                } else {
                    match self.wdl_no_ep(&child, 1)? {
                        None => CurveChild::Blind,
                        Some(cw) if cw.invert() < wdl => CurveChild::Pruned,
                        Some(cw) => match self.pack(&child, cw, Some(0), 1)?.mate {
                            Some(d) => CurveChild::Fixed(d),
                            None => CurveChild::SkipClass(cw.fold_50().invert()),
                        },
                    }
                }
            } else {
                let class = self.wdl_no_ep(&child, 1)?;
                let record = match class {
                    Some(cw) => {
                        let cc = self.canon(&child);
                        match self.file(&cc.material, Kind::Dtm50)? {
                            Some(f) => match self.locate(&f, &cc, Some(cw))? {
                                Located::Direct { side, idx } => Some(
                                    f.read_record(&self.cache, side, idx).map_err(|e| Self::err(&f, e))?.map(Box::new),
                                ),
                                Located::Rebuild => None,
                            },
                            None => None,
                        }
                    }
                    None => None,
                };
                CurveChild::Quiet { mated: child.is_checkmate(), class, record, child }
            };
            out.push(entry);
        }
        Ok(out)
    }

    /// One clock of a rebuilt frame from its children (as `rebuild_layer`).
    fn combine_children(&self, pos: &Chess, wdl: Class, children: &[CurveChild], clock: u32) -> R<Option<Mate>> {
        if children.is_empty() {
            return Ok(Some(Mate { class: if pos.is_check() { Class::Loss } else { Class::Draw }, plies: 0 }));
        }
        let mut best: Option<(Class, u16)> = None;
        let mut skipped = Skipped::default();
        for child in children {
            let d = match child {
                CurveChild::Fixed(d) => *d,
                CurveChild::Blind => {
                    skipped.blind = true;
                    continue;
                }
                CurveChild::SkipClass(c) => {
                    skipped.of_class(*c);
                    continue;
                }
                CurveChild::Pruned => continue,
                CurveChild::Quiet { mated, class, record, child } => {
                    if clock + 1 >= 100 {
                        Mate { class: if *mated { Class::Loss } else { Class::Draw }, plies: 0 }
                    } else {
                        let Some(cw) = *class else {
                            skipped.blind = true;
                            continue;
                        };
                        if cw.invert() < wdl {
                            continue;
                        }
                        let answer = match record {
                            Some(r) => Some(mate_from_record(r.as_deref(), cw, Some(clock + 1))),
                            None => self.pack(child, cw, Some(clock + 1), 1)?.mate,
                        };
                        match answer {
                            Some(d) => d,
                            None => {
                                skipped.of_class(cw.fold_50().invert());
                                continue;
                            }
                        }
                    }
                }
            };
            let mine = (d.class.fold_50().invert(), d.plies + 1);
            if best.is_none_or(|b| better(mine, b)) {
                best = Some(mine);
            }
        }
        Ok(best.filter(|b| !skipped.unpins(b.0)).map(|(class, plies)| {
            if class.decisive() { Mate { class, plies } } else { Mate { class: Class::Draw, plies: 0 } }
        }))
    }

    /// The DTM50 pack's answer at layer 0 (`clock` `None`) or at a clock,
    /// read or rebuilt.
    fn pack(&self, pos: &Chess, wdl: Class, clock: Option<u32>, depth: u32) -> R<PackAnswer> {
        let unknown = PackAnswer { mate: None, dtz: None };
        if clock.is_some_and(|c| c >= 100) {
            return Ok(PackAnswer { mate: Some(Mate { class: Class::Draw, plies: 0 }), dtz: None });
        }
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Dtm50)? else { return Ok(unknown) };
        let (side, idx) = match self.locate(&file, &c, Some(wdl))? {
            Located::Direct { side, idx } => (side, idx),
            Located::Rebuild => {
                return match clock {
                    None => self.rebuild_flat(pos, wdl, depth),
                    Some(clock) => Ok(PackAnswer { mate: self.rebuild_layer(pos, wdl, clock, depth)?, dtz: None }),
                };
            }
        };
        if clock.is_some() && wdl.fold_50() == Class::Draw {
            return Ok(PackAnswer { mate: Some(Mate { class: Class::Draw, plies: 0 }), dtz: None });
        }
        let record = file.read_record(&self.cache, side, idx).map_err(|e| Self::err(&file, e))?;
        let flip = record.as_ref().map_or(0, |r| r.draw_flip());
        let mate = mate_from_record(record.as_ref(), wdl, clock);
        let dtz = if clock.is_some() { None } else { dtz_from_flip(flip, wdl, pos) };
        Ok(PackAnswer { mate: Some(mate), dtz })
    }

    /// Layer 0 of a frame the file leaves out: plain DTM by a one-ply
    /// search, DTZ beside it.
    fn rebuild_flat(&self, pos: &Chess, wdl: Class, depth: u32) -> R<PackAnswer> {
        self.remembered(pos, What::Flat, || self.search_flat(pos, wdl, depth))
    }

    fn search_flat(&self, pos: &Chess, wdl: Class, depth: u32) -> R<PackAnswer> {
        let unknown = PackAnswer { mate: None, dtz: None };
        if !may_rebuild(depth) {
            return Ok(unknown);
        }
        let pinned = wdl.fold_dtm();
        let mut best: Option<(Class, u16)> = None;
        let mut skipped = Skipped::default();
        let mut dtz = DtzMinimax::default();
        let mut any = false;
        for (m, child) in children(pos) {
            any = true;
            let (cw, cd) = if bare_kings(&child) {
                dtz.offer(Class::Draw, 1);
                (Class::Draw, 0)
            } else if has_ep(&child) {
                let Some(cr) = self.values(&child, None, depth + 1)? else {
                    skipped.blind = true;
                    dtz.skipped.blind = true;
                    continue;
                };
                let cw = cr.wdl.expect("set");
                dtz.offer(cw, 1);
                let Some(d) = cr.dtm_plies else {
                    skipped.of_class(cw.fold_dtm().invert());
                    continue;
                };
                (cw, d)
            } else {
                let Some(raw) = self.wdl_no_ep(&child, depth + 1)? else {
                    skipped.blind = true;
                    dtz.skipped.blind = true;
                    continue;
                };
                if raw.fold_dtm().invert() < pinned {
                    continue;
                }
                let answer = self.pack(&child, raw, None, depth + 1)?;
                if m.is_zeroing() {
                    dtz.offer(raw, 1);
                } else {
                    dtz.quiet(raw, answer.dtz);
                }
                let Some(mate) = answer.mate else {
                    skipped.of_class(raw.fold_dtm().invert());
                    continue;
                };
                (mate.class, mate.plies)
            };
            let mine = (cw.fold_dtm().invert(), cd + 1);
            if best.is_none_or(|b| better(mine, b)) {
                best = Some(mine);
            }
        }
        let mate = if !any {
            Some(Mate { class: if pos.is_check() { Class::Loss } else { Class::Draw }, plies: 0 })
        } else {
            best.filter(|b| !skipped.unpins(b.0)).map(|(class, plies)| {
                if class.decisive() { Mate { class, plies } } else { Mate { class: Class::Draw, plies: 0 } }
            })
        };
        Ok(PackAnswer { mate, dtz: dtz.finish(any) })
    }

    /// A clock layer of a frame the file leaves out: each child at the clock
    /// after the move.
    fn rebuild_layer(&self, pos: &Chess, wdl: Class, clock: u32, depth: u32) -> R<Option<Mate>> {
        self.remembered(pos, What::Layer(clock as u8), || self.search_layer(pos, wdl, clock, depth))
    }

    fn search_layer(&self, pos: &Chess, wdl: Class, clock: u32, depth: u32) -> R<Option<Mate>> {
        if !may_rebuild(depth) {
            return Ok(None);
        }
        let mut best: Option<(Class, u16)> = None;
        let mut skipped = Skipped::default();
        let mut any = false;
        for (m, child) in children(pos) {
            any = true;
            let child_clock = if m.is_zeroing() { 0 } else { clock + 1 };
            let cd = if bare_kings(&child) {
                Mate { class: Class::Draw, plies: 0 }
            } else if child_clock >= 100 {
                let class = if child.is_checkmate() { Class::Loss } else { Class::Draw };
                Mate { class, plies: 0 }
            } else if has_ep(&child) {
                let Some(cr) = self.values(&child, Some(child_clock), depth + 1)? else {
                    skipped.blind = true;
                    continue;
                };
                let Some(d) = cr.dtm50 else {
                    skipped.of_class(cr.wdl.expect("set").fold_50().invert());
                    continue;
                };
                d
            } else {
                let Some(cw) = self.wdl_no_ep(&child, depth + 1)? else {
                    skipped.blind = true;
                    continue;
                };
                if cw.invert() < wdl {
                    continue;
                }
                match self.pack(&child, cw, Some(child_clock), depth + 1)?.mate {
                    Some(d) => d,
                    None => {
                        skipped.of_class(cw.fold_50().invert());
                        continue;
                    }
                }
            };
            let mine = (cd.class.fold_50().invert(), cd.plies + 1);
            if best.is_none_or(|b| better(mine, b)) {
                best = Some(mine);
            }
        }
        if !any {
            return Ok(Some(Mate { class: if pos.is_check() { Class::Loss } else { Class::Draw }, plies: 0 }));
        }
        Ok(best.filter(|b| !skipped.unpins(b.0)).map(|(class, plies)| {
            if class.decisive() { Mate { class, plies } } else { Mate { class: Class::Draw, plies: 0 } }
        }))
    }

    /// Plain DTM from a `dtm/` file (materials without a DTM50 pack).
    fn dtm(&self, pos: &Chess, wdl: Class, depth: u32) -> R<Option<u16>> {
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Dtm)? else { return Ok(None) };
        match self.locate(&file, &c, Some(wdl))? {
            Located::Direct { side, idx } => {
                let s = file.read_plain(&self.cache, side, idx).map_err(|e| Self::err(&file, e))?;
                Ok(Some(match (s, wdl.fold_dtm()) {
                    (Some(s), Class::Win) => 2 * s + 1,
                    (Some(s), Class::Loss) => 2 * s,
                    _ => 0,
                }))
            }
            Located::Rebuild => self.remembered(pos, What::Dtm, || {
                if !may_rebuild(depth) {
                    return Ok(None);
                }
                let pinned = wdl.fold_dtm();
                let mut best: Option<(Class, u16)> = None;
                let mut skipped = Skipped::default();
                let mut any = false;
                for (_, child) in children(pos) {
                    any = true;
                    let (cw, cd) = if bare_kings(&child) {
                        (Class::Draw, 0)
                    } else if has_ep(&child) {
                        match self.values(&child, None, depth + 1)? {
                            Some(Values { wdl: Some(cw), dtm_plies: Some(d), .. }) => (cw, d),
                            Some(Values { wdl: Some(cw), .. }) => {
                                skipped.of_class(cw.fold_dtm().invert());
                                continue;
                            }
                            _ => {
                                skipped.blind = true;
                                continue;
                            }
                        }
                    } else {
                        let Some(cw) = self.wdl_no_ep(&child, depth + 1)? else {
                            skipped.blind = true;
                            continue;
                        };
                        if cw.fold_dtm().invert() < pinned {
                            continue;
                        }
                        match self.dtm(&child, cw, depth + 1)? {
                            Some(d) => (cw, d),
                            None => {
                                skipped.of_class(cw.fold_dtm().invert());
                                continue;
                            }
                        }
                    };
                    let mine = (cw.fold_dtm().invert(), cd + 1);
                    if best.is_none_or(|b| better(mine, b)) {
                        best = Some(mine);
                    }
                }
                if !any {
                    return Ok(Some(0));
                }
                Ok(best.filter(|b| !skipped.unpins(b.0)).map(|(c, p)| if c.decisive() { p } else { 0 }))
            }),
        }
    }

    /// DTZ from a `dtz/` file (where the pack did not price it).
    fn dtz(&self, pos: &Chess, wdl: Class, depth: u32) -> R<Option<u16>> {
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Dtz)? else { return Ok(None) };
        match self.locate(&file, &c, Some(wdl))? {
            Located::Direct { side, idx } => {
                let s = file.read_plain(&self.cache, side, idx).map_err(|e| Self::err(&file, e))?;
                let one_byte = file.entry_bytes(side) == 1;
                Ok(Some(match (s, wdl) {
                    (_, Class::Draw) | (None, _) => 0,
                    (Some(s), Class::CursedWin | Class::BlessedLoss) if one_byte => (2 * s).saturating_sub(1),
                    (Some(s), _) => s,
                }))
            }
            Located::Rebuild => self.remembered(pos, What::Dtz, || {
                if !may_rebuild(depth) {
                    return Ok(None);
                }
                let mut dtz = DtzMinimax::default();
                let mut any = false;
                for (m, child) in children(pos) {
                    any = true;
                    if bare_kings(&child) {
                        dtz.offer(Class::Draw, 1);
                    } else if m.is_zeroing() {
                        match self.wdl(&child, depth + 1)? {
                            Some(cw) => dtz.offer(cw, 1),
                            None => dtz.skipped.blind = true,
                        }
                    } else {
                        let Some(cw) = self.wdl_no_ep(&child, depth + 1)? else {
                            dtz.skipped.blind = true;
                            continue;
                        };
                        let child_dtz = if cw == Class::Draw { Some(0) } else { self.dtz(&child, cw, depth + 1)? };
                        dtz.quiet(cw, child_dtz);
                    }
                }
                Ok(dtz.finish(any))
            }),
        }
    }

    /// A position with an en-passant capture: the tables hold it without
    /// the right, so the captures are searched beside the stored answer.
    fn ep_overlay(
        &self,
        pos: &Chess,
        mut best: Values,
        with_clock: bool,
        with_dtc: bool,
        depth: u32,
    ) -> R<Option<Values>> {
        let mut dtm50_class = best.dtm50.map(|m| m.class).or(best.wdl.map(Class::fold_50));
        // DTC compares on the class its clock leaves, (order, plies) breaking ties.
        let mut dtc_best = best.dtc.map_or((best.wdl.expect("set"), 0, 0), |d| (d.class, d.order, d.plies));
        for (m, child) in children(pos) {
            if !m.is_en_passant() {
                continue;
            }
            let Some(cr) = self.values(&child, with_clock.then_some(0), depth + 1)? else { return Ok(None) };
            let cw = cr.wdl.expect("set");
            let mine = cw.invert();
            best.wdl = best.wdl.max(Some(mine));
            let dtz_class = best.dtz_class.expect("set");
            if mine > dtz_class || best.dtz_plies.is_some_and(|d| better((mine, 1), (dtz_class, d))) {
                best.dtz_class = Some(mine);
                best.dtz_plies = Some(if mine == Class::Draw { 0 } else { 1 });
            }
            if let (Some(d), Some(cd)) = (best.dtm_plies, cr.dtm_plies) {
                let mine = (mine.fold_dtm(), cd + 1);
                if better(mine, (best.dtm_class.expect("set"), d)) {
                    best.dtm_class = Some(mine.0);
                    best.dtm_plies = Some(if mine.0.decisive() { mine.1 } else { 0 });
                }
            }
            if with_clock && with_dtc {
                // An en-passant capture converts one ply out, owing nothing.
                let mine = (cw.invert().fold_50(), 0, 1);
                if mine.0 > dtc_best.0 || (best.dtc.is_some() && better_dtc(mine, dtc_best)) {
                    dtc_best = mine;
                    best.dtc = Some(if mine.0 == Class::Draw {
                        Conversion::DRAW
                    } else {
                        Conversion { class: mine.0, order: 0, plies: 1 }
                    });
                }
            }
            if let (Some(d), Some(cd)) = (best.dtm50, cr.dtm50) {
                let mine = (cd.class.invert(), cd.plies + 1);
                if better(mine, (dtm50_class.expect("set"), d.plies)) {
                    dtm50_class = Some(mine.0);
                    best.dtm50 = Some(Mate { class: mine.0, plies: if mine.0.decisive() { mine.1 } else { 0 } });
                }
            }
        }
        Ok(Some(best))
    }
}

impl Chesstb {
    /// DTC of `pos` (class `wdl` at clock 0, no en-passant right) at
    /// `clock`. `None` where no table answers.
    fn dtc(&self, pos: &Chess, wdl: Class, dtz: Option<u16>, clock: u32, depth: u32) -> R<Option<Conversion>> {
        if wdl == Class::Draw {
            return Ok(Some(Conversion::DRAW));
        }
        let c = self.canon(pos);
        if !c.material.has_pawns() {
            // No push to budget: every zeroing move converts, so DTC is DTZ
            // at order 0, drawn where the clock leaves no room for it.
            let Some(dtz) = dtz else { return Ok(None) };
            return Ok(Some(if !wdl.decisive() || clock + u32::from(dtz) > 100 {
                Conversion::DRAW
            } else {
                Conversion { class: wdl, order: 0, plies: dtz }
            }));
        }
        let Some(file) = self.file(&c.material, Kind::Dtc)? else { return Ok(None) };
        if !wdl.decisive() {
            // The budgets hold only what the 50-move rule settles.
            return Ok(Some(Conversion::DRAW));
        }
        match self.locate(&file, &c, Some(wdl))? {
            Located::Direct { side, idx } => {
                let record = file.read_record(&self.cache, side, idx).map_err(|e| Self::err(&file, e))?;
                Ok(Some(dtc_from_record(record.as_ref(), wdl, clock)))
            }
            Located::Rebuild if !may_rebuild(depth) => Ok(None),
            Located::Rebuild if wdl == Class::Win => self.rebuild_dtc_win(pos, clock, depth),
            Located::Rebuild => self.rebuild_dtc_loss(pos, clock, depth),
        }
    }

    /// A child's DTC at its own clock, its en-passant right included (a
    /// child reached without converting keeps the parent's pawns).
    fn child_dtc(&self, child: &Chess, class: Class, clock: u32, depth: u32) -> R<Option<Conversion>> {
        if has_ep(child) {
            // Only a double push gives the right: the child's clock is 0 = `clock`.
            return Ok(self.values_with(child, Some(clock), true, depth)?.and_then(|v| v.dtc));
        }
        self.dtc(child, class, None, clock, depth)
    }

    /// A winning frame the file leaves out: the move owing the fewest
    /// pushes, then the quickest, among those whose line fits the clock.
    fn rebuild_dtc_win(&self, pos: &Chess, clock: u32, depth: u32) -> R<Option<Conversion>> {
        let budget = dtc_budget_plies(clock);
        let mut best: Option<(u16, u16)> = None;
        for (m, child) in children(pos) {
            if bare_kings(&child) {
                continue;
            }
            let conversion = m.is_capture() || m.is_promotion();
            let push = !conversion && m.role() == shakmaty::Role::Pawn;
            let Some(cw) = self.wdl(&child, depth + 1)? else { return Ok(None) };
            if cw != Class::Loss {
                continue;
            }
            let (order, plies) = if conversion {
                (0, 1)
            } else {
                let child_clock = if push { 0 } else { clock + 1 };
                let Some(cell) = self.child_dtc(&child, cw, child_clock, depth + 1)? else { return Ok(None) };
                if cell.class == Class::Draw {
                    continue;
                }
                if push { (cell.order + 1, 1) } else { (cell.order, cell.plies + 1) }
            };
            if plies <= budget && best.is_none_or(|b| (order, plies) < b) {
                best = Some((order, plies));
            }
        }
        Ok(Some(best.map_or(Conversion::DRAW, |(order, plies)| Conversion { class: Class::Win, order, plies })))
    }

    /// A losing frame the file leaves out: per budget the longest
    /// resistance over all moves, then the smallest budget that fits.
    fn rebuild_dtc_loss(&self, pos: &Chess, clock: u32, depth: u32) -> R<Option<Conversion>> {
        let mut worst = [0u16; DTC_ROWS];
        let mut drawn = [false; DTC_ROWS];
        let mut raise = |k: usize, v: u16| {
            if v > 100 {
                drawn[k] = true;
            } else {
                worst[k] = worst[k].max(v);
            }
        };
        let mut any = false;
        for (m, child) in children(pos) {
            any = true;
            if m.is_capture() || m.is_promotion() || bare_kings(&child) {
                (0..DTC_ROWS).for_each(|k| raise(k, 1));
                continue;
            }
            let push = m.role() == shakmaty::Role::Pawn;
            if has_ep(&child) {
                match self.ep_conversion_wins(&child, depth + 1)? {
                    None => return Ok(None),
                    Some(true) => {
                        (0..DTC_ROWS).for_each(|k| raise(k, 1));
                        continue;
                    }
                    Some(false) => {}
                }
            }
            let Some(curve) = self.dtc_curve(&child)? else { return Ok(None) };
            for (k, v) in curve.into_iter().enumerate() {
                // A budget where the child is drawn is drawn here too.
                raise(k, v.map_or(u16::MAX, |v| if push { 1 } else { v + 1 }));
            }
        }
        if !any {
            return Ok(Some(Conversion { class: Class::Loss, order: 0, plies: 0 }));
        }
        let budget = dtc_budget_plies(clock);
        Ok(Some((0..DTC_ROWS).find(|&k| !drawn[k] && worst[k] <= budget).map_or(Conversion::DRAW, |k| Conversion {
            class: Class::Loss,
            order: k as u16,
            plies: worst[k],
        })))
    }

    /// Whether an en-passant capture out of `child` wins for its mover
    /// under the rule; `None` when a table is missing.
    fn ep_conversion_wins(&self, child: &Chess, depth: u32) -> R<Option<bool>> {
        let mut unknown = false;
        for (m, grandchild) in children(child) {
            if !m.is_en_passant() {
                continue;
            }
            let gw = if bare_kings(&grandchild) { Some(Class::Draw) } else { self.wdl(&grandchild, depth + 1)? };
            match gw {
                None => unknown = true,
                Some(gw) if gw.invert().fold_50() == Class::Win => return Ok(Some(true)),
                Some(_) => {}
            }
        }
        Ok(if unknown { None } else { Some(false) })
    }

    /// A stored winning position's DTC value at every budget (`None`:
    /// drawn there); `None` if its frame is not stored.
    fn dtc_curve(&self, pos: &Chess) -> R<Option<[Option<u16>; DTC_ROWS]>> {
        let c = self.canon(pos);
        let Some(file) = self.file(&c.material, Kind::Dtc)? else { return Ok(None) };
        let Located::Direct { side, idx } = self.locate(&file, &c, Some(Class::Win))? else { return Ok(None) };
        let record = file.read_record(&self.cache, side, idx).map_err(|e| Self::err(&file, e))?;
        Ok(Some(std::array::from_fn(|budget| record.as_ref().and_then(|r| r.at(DTC_BUDGETS - budget)))))
    }
}

/// Prefers a higher class, then fewer pushes owed and a quicker zeroing
/// move when winning, more and a slower one when losing.
fn better_dtc(new: (Class, u16, u16), old: (Class, u16, u16)) -> bool {
    if new.0 != old.0 {
        return new.0 > old.0;
    }
    let (n, o) = ((new.1, new.2), (old.1, old.2));
    match new.0 {
        Class::Win | Class::CursedWin => n < o,
        Class::Loss | Class::BlessedLoss => n > o,
        Class::Draw => false,
    }
}

/// A stored record's DTC at `clock` (class `wdl`, W or L): the fewest pushes
/// whose line fits the clock. Budgets shrink as the pack index grows and the
/// values grow with it, so the last segment that fits owes the fewest.
fn dtc_from_record(record: Option<&super::cache::Record>, wdl: Class, clock: u32) -> Conversion {
    let Some(r) = record else { return Conversion::DRAW };
    let budget = dtc_budget_plies(clock);
    let decisive = r.values.len();
    for s in (0..decisive).rev() {
        if r.values[s] > budget {
            continue;
        }
        let last_index = r.starts.get(s + 1).map_or(DTC_ROWS - 1, |&next| next as usize - 1);
        return Conversion { class: wdl, order: (DTC_BUDGETS - last_index) as u16, plies: r.values[s] };
    }
    Conversion::DRAW
}

/// A child of a rebuilt frame, for [`Chesstb::curve`].
enum CurveChild {
    /// The same answer at every clock (bare kings, a zeroing move).
    Fixed(Mate),
    /// No table answered: the rebuild cannot be trusted.
    Blind,
    /// Unpriced, but no better for the mover than this class.
    SkipClass(Class),
    /// Its class cannot beat the parent's.
    Pruned,
    /// A quiet move: the clock goes on, so the answer depends on it.
    Quiet { mated: bool, class: Option<Class>, record: Option<Option<Box<super::cache::Record>>>, child: Chess },
}

/// DTM50 at `clock` when the layer need not be read: past the claim, a
/// cursed class, a mate that fits the window, or a count that cannot be
/// reset in time. `None`: read the layer.
fn settled_without_layer(wdl: Class, flat: &PackAnswer, clock: u32) -> Option<Option<Mate>> {
    let draw = Some(Mate { class: Class::Draw, plies: 0 });
    let dtm = flat.mate.map(|m| m.plies);
    if clock >= 100 {
        // Only a mate already on the board outruns the claim.
        if dtm.is_none() && wdl == Class::Loss {
            return Some(None);
        }
        return Some(if wdl == Class::Loss && dtm == Some(0) {
            Some(Mate { class: Class::Loss, plies: 0 })
        } else {
            draw
        });
    }
    if wdl.fold_50() == Class::Draw {
        return Some(draw);
    }
    if let Some(d) = dtm.filter(|&d| clock + d as u32 <= 100) {
        // The whole mating line fits in the window.
        return Some(Some(Mate { class: wdl, plies: d }));
    }
    if clock + flat.dtz.unwrap_or(0) as u32 > 100 {
        // No line resets the count in time.
        return Some(draw);
    }
    None
}

/// A record's answer at layer 0 (`clock` `None`) or at a clock, in the
/// class the WDL companion gives (a clock layer never holds cursed wins).
fn mate_from_record(record: Option<&super::cache::Record>, wdl: Class, clock: Option<u32>) -> Mate {
    let draw = Mate { class: Class::Draw, plies: 0 };
    if clock.is_some() && wdl.fold_50() == Class::Draw {
        return draw;
    }
    let layer = clock.map_or(0, |c| c as usize + 1);
    match record.and_then(|r| r.at(layer)) {
        None => draw,
        Some(s) => {
            let plies = match (clock, wdl) {
                (None, Class::Win | Class::CursedWin) | (Some(_), Class::Win) => 2 * s + 1,
                (None, Class::Loss | Class::BlessedLoss) | (Some(_), Class::Loss) => 2 * s,
                _ => 0,
            };
            Mate { class: if clock.is_none() { wdl } else { wdl.fold_50() }, plies }
        }
    }
}

/// The layer where a record turns DRAW pins DTZ: a W/L position still
/// decisive at clock 100 − dtz turns one clock later, at layer 102 − dtz.
/// Layer 1 (drawn at a fresh clock) is the cursed band, which says nothing
/// of the distance; no flip means dtz ≤ 1, which only a mate tells apart.
fn dtz_from_flip(flip: u8, wdl: Class, pos: &Chess) -> Option<u16> {
    match wdl {
        Class::Draw => Some(0),
        Class::Win | Class::Loss => match flip {
            0 => Some(if wdl == Class::Loss && pos.is_checkmate() { 0 } else { 1 }),
            1 => None,
            h => Some(102 - h as u16),
        },
        _ => None,
    }
}

impl Values {
    /// DTM in signed plies (positive: the side to move mates).
    pub fn signed_dtm(&self) -> Option<i32> {
        let d = self.dtm_plies? as i32;
        Some(match self.dtm_class? {
            Class::Win | Class::CursedWin => d,
            Class::Loss | Class::BlessedLoss => -d,
            Class::Draw => 0,
        })
    }

    /// DTZ in signed plies, with the class it was measured under.
    pub fn signed_dtz(&self) -> Option<i32> {
        let d = self.dtz_plies? as i32;
        Some(match self.dtz_class? {
            Class::Win | Class::CursedWin => d,
            Class::Loss | Class::BlessedLoss => -d,
            Class::Draw => 0,
        })
    }
}
