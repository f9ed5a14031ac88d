//! `org.eboardbridge.Board1`: one object per board, its properties read from
//! the board's snapshot, its methods handed to the board's task.

use std::collections::{BTreeMap, HashMap};

use tokio::sync::{mpsc, watch};
use zbus::object_server::SignalEmitter;

use super::{BusError, caller};
use crate::api::{Decision, Request, Snapshot, ask_as, check_pairing, check_tags};
use crate::rules::{Event, EventKind};

/// The `org.eboardbridge.Board1` object of one board.
pub struct Board1 {
    snapshot: watch::Receiver<Snapshot>,
    /// True while signals are out ahead of the snapshot they lead to.
    publishing: watch::Receiver<bool>,
    commands: mpsc::Sender<Request>,
    /// The board's decisions and alerts in words (`History`).
    history: Option<crate::api::history::History>,
}

impl Board1 {
    pub fn new(
        snapshot: watch::Receiver<Snapshot>,
        publishing: watch::Receiver<bool>,
        commands: mpsc::Sender<Request>,
    ) -> Board1 {
        Board1 {
            snapshot,
            publishing,
            commands,
            history: None,
        }
    }

    /// The same, answering `History` from `history`.
    pub fn with_history(mut self, history: crate::api::history::History) -> Board1 {
        self.history = Some(history);
        self
    }

    async fn ask(&self, cmd: Decision, by: Option<String>) -> Result<(), BusError> {
        self.ask_confirmed(cmd, by, false).await
    }

    /// The same, `force`: confirmed by the arbiter (`rules::book`).
    async fn ask_confirmed(&self, cmd: Decision, by: Option<String>, force: bool) -> Result<(), BusError> {
        let who = crate::api::Asker {
            by,
            door: crate::api::history::Door::Bus,
            force,
        };
        Ok(ask_as(&self.commands, cmd, who).await?)
    }

    /// The snapshot, once the one the signals sent last lead to is in.
    async fn snap(&self) -> watch::Ref<'_, Snapshot> {
        // Closed: the board's task has stopped; what it published last stands.
        let _ = self.publishing.clone().wait_for(|p| !*p).await;
        self.snapshot.borrow()
    }
}

#[zbus::interface(name = "org.eboardbridge.Board1")]
impl Board1 {
    #[zbus(property)]
    async fn connected(&self) -> bool {
        self.snap().await.connected
    }
    #[zbus(property)]
    async fn device(&self) -> String {
        self.snap().await.device.clone()
    }
    #[zbus(property)]
    async fn serial_number(&self) -> String {
        self.snap().await.serial_number.clone()
    }
    #[zbus(property)]
    async fn orientation(&self) -> String {
        self.snap().await.orientation.clone()
    }
    #[zbus(property)]
    async fn status(&self) -> String {
        self.snap().await.status.clone()
    }
    #[zbus(property)]
    async fn fen(&self) -> String {
        self.snap().await.fen.clone()
    }
    #[zbus(property)]
    async fn moves(&self) -> Vec<String> {
        self.snap().await.moves.clone()
    }
    #[zbus(property)]
    async fn pgn(&self) -> String {
        self.snap().await.pgn.clone()
    }
    #[zbus(property)]
    async fn last_move(&self) -> String {
        self.snap().await.last_move.clone()
    }
    #[zbus(property)]
    async fn white_clock_ms(&self) -> i64 {
        self.snap().await.white_clock_ms
    }
    #[zbus(property)]
    async fn black_clock_ms(&self) -> i64 {
        self.snap().await.black_clock_ms
    }
    #[zbus(property)]
    async fn clock_running(&self) -> String {
        self.snap().await.clock_running.clone()
    }
    #[zbus(property)]
    async fn result(&self) -> String {
        self.snap().await.result.clone()
    }
    #[zbus(property)]
    async fn termination(&self) -> String {
        self.snap().await.termination.clone()
    }
    #[zbus(property)]
    async fn irregularity(&self) -> String {
        self.snap().await.irregularity.clone()
    }
    #[zbus(property)]
    async fn event(&self) -> String {
        self.snap().await.event.clone()
    }
    #[zbus(property)]
    async fn round(&self) -> String {
        self.snap().await.round.clone()
    }
    #[zbus(property)]
    async fn board_number(&self) -> u32 {
        self.snap().await.board_number
    }
    #[zbus(property)]
    async fn white(&self) -> String {
        self.snap().await.white.clone()
    }
    #[zbus(property)]
    async fn black(&self) -> String {
        self.snap().await.black.clone()
    }
    #[zbus(property)]
    async fn time_control(&self) -> String {
        self.snap().await.time_control.clone()
    }
    #[zbus(property)]
    async fn tags(&self) -> HashMap<String, String> {
        self.snap().await.tags.clone().into_iter().collect()
    }
    /// What went wrong with the board's task, or empty.
    #[zbus(property)]
    async fn fault(&self) -> String {
        self.snap().await.fault.clone()
    }

    /// Any decision, as its `arbiter` record names it: `method` (`NewGame`,
    /// `SetResult`, `Undo`, ...) and its arguments as a JSON array (`["1-0",
    /// "time forfeit"]`), `force`: confirmed by the arbiter. A decision that
    /// reopens a finished game, replaces it in its round or ends one under way
    /// is made only confirmed (else `NeedsForce`, saying what it would change);
    /// the methods named after a decision are this with `force` false.
    async fn decide(
        &self,
        method: String,
        args: String,
        force: bool,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let cmd = crate::api::decision::from_json_call(&method, &args)?;
        self.ask_confirmed(cmd, caller(conn, &header).await, force).await
    }
    /// A new game from `fen` (empty: the standard start).
    async fn new_game(
        &self,
        fen: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::new_game(&fen)?, caller(conn, &header).await)
            .await
    }
    /// The arbiter sets the position: the game goes on from `fen`.
    async fn set_position(
        &self,
        fen: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::set_position(&fen)?, caller(conn, &header).await)
            .await
    }
    /// Back to ply `ply` of the game (7.5.1).
    async fn reinstate(
        &self,
        ply: u32,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::Reinstate(ply), caller(conn, &header).await)
            .await
    }
    /// The result (`1-0`, `0-1`, `1/2-1/2`, `*`).
    async fn set_result(
        &self,
        result: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::set_result(&result, None)?, caller(conn, &header).await)
            .await
    }
    /// The result and the words of the game's PGN `Termination` tag (`time
    /// forfeit`, `adjudication`); journaled as `SetResult` with a second argument.
    async fn set_result_with(
        &self,
        result: String,
        termination: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(
            Decision::set_result(&result, Some(&termination))?,
            caller(conn, &header).await,
        )
        .await
    }
    /// The board's decisions and alerts, in words, oldest first: a JSON array
    /// of at most `limit` entries (0: all kept), each with `time` (seconds
    /// since 1970), `game`, `kind` (`decision`, `alert`, `game`), `text`, and
    /// for decisions `by`, `via` and `undone` (`docs/INTERFACES.md`).
    async fn history(&self, limit: u32) -> String {
        let Some(h) = &self.history else {
            return "[]".into();
        };
        let all = h.borrow().clone();
        let skip = match limit {
            0 => 0,
            n => all.len().saturating_sub(n as usize),
        };
        serde_json::to_string(&all[skip..]).unwrap_or_else(|_| "[]".into())
    }
    /// Takes back the board's last decision (an undo undone gives it back);
    /// `force`: even when plies recorded since are dropped by it.
    async fn undo(
        &self,
        force: bool,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::Undo { force }, caller(conn, &header).await)
            .await
    }
    /// Sets and starts the clock: `MINUTES[+INCREMENT]`, for example `90+30`.
    async fn set_time_control(
        &self,
        spec: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(
            Decision::set_time_control(&spec, crate::rules::ClockMode::Drive)?,
            caller(conn, &header).await,
        )
        .await
    }
    /// The players of the game under way (with none under way, of the next game).
    async fn set_players(
        &self,
        white: String,
        black: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::SetPlayers(white, black), caller(conn, &header).await)
            .await
    }
    /// The arbiter sets both times (milliseconds; the clock shows whole seconds);
    /// the running side goes on running.
    async fn set_clock(
        &self,
        white_ms: i64,
        black_ms: i64,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(
            Decision::set_clock(white_ms, black_ms)?,
            caller(conn, &header).await,
        )
        .await
    }
    /// The arbiter adds `seconds` (negative: takes them) to `side`'s time
    /// (`white` or `black`), from the clock's last report.
    async fn add_time(
        &self,
        side: String,
        seconds: i32,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(
            Decision::add_time(&side, i64::from(seconds))?,
            caller(conn, &header).await,
        )
        .await
    }
    /// The pairing's tags (`WhiteElo`, `BlackElo`, `WhiteFideId`, `BlackFideId`,
    /// `WhiteTitle`, `BlackTitle`, `WhiteTeam`, `BlackTeam`) of the game under way
    /// (if not over) and of the next games; an empty value removes the tag.
    async fn set_tags(
        &self,
        tags: HashMap<String, String>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let tags: BTreeMap<String, String> = tags.into_iter().collect();
        check_tags(&tags, false).map_err(BusError::InvalidArgument)?;
        self.ask(Decision::SetTags(tags), caller(conn, &header).await)
            .await
    }
    /// A round's pairing for the board's next game (or the game not begun, no
    /// move and no result): `round` (0: the board's round stays), `White`,
    /// `Black` and the pairing's tags. A game under way keeps its own.
    async fn set_pairing(
        &self,
        round: u32,
        tags: HashMap<String, String>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let tags: BTreeMap<String, String> = tags.into_iter().collect();
        check_pairing(&tags).map_err(BusError::InvalidArgument)?;
        self.ask(Decision::SetPairing(round, tags), caller(conn, &header).await)
            .await
    }
    /// Shows `text` (up to 8 characters) on the clock for `seconds`.
    async fn show_text(
        &self,
        text: String,
        seconds: u32,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Decision::ShowText(text, seconds), caller(conn, &header).await)
            .await
    }

    #[zbus(signal)]
    async fn game_started(e: &SignalEmitter<'_>, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn piece_touched(
        e: &SignalEmitter<'_>,
        side: &str,
        square: &str,
        piece: &str,
        first: bool,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn move_made(e: &SignalEmitter<'_>, ply: u32, san: &str, uci: &str, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn move_amended(
        e: &SignalEmitter<'_>,
        ply: u32,
        was: &str,
        san: &str,
        uci: &str,
        fen: &str,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn move_completed(e: &SignalEmitter<'_>, ply: u32) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn take_back(e: &SignalEmitter<'_>, to_ply: u32, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn touch_move(
        e: &SignalEmitter<'_>,
        article: &str,
        side: &str,
        touched: Vec<String>,
        played: &str,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn irregular(
        e: &SignalEmitter<'_>,
        kind: &str,
        side: &str,
        squares: Vec<String>,
        completed: bool,
        count: u32,
    ) -> zbus::Result<()>;
    /// A completed violation's penalty, just before the `Irregular` signal it
    /// belongs to: the offender, their completed violations so far, the rules
    /// profile, whether the extra time went on the clock, and the words the
    /// journal and `/api/events` give it (`eboard_core::words`).
    #[zbus(signal)]
    async fn penalty(
        e: &SignalEmitter<'_>,
        side: &str,
        count: u32,
        profile: &str,
        to_clock: bool,
        words: &str,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn resolved(e: &SignalEmitter<'_>, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn draw_claimable(e: &SignalEmitter<'_>, reason: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn game_ended(e: &SignalEmitter<'_>, result: &str, termination: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn flag(e: &SignalEmitter<'_>, side: &str, ply: u32, count_met: bool) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn clock_button(e: &SignalEmitter<'_>, button: &str) -> zbus::Result<()>;
    /// The clock did not acknowledge a command, sent and sent again (its bytes
    /// in hex): it may be off, or its cable loose.
    #[zbus(signal)]
    async fn clock_unresponsive(e: &SignalEmitter<'_>, command: &str) -> zbus::Result<()>;
}

/// A change's signals, in order.
pub(super) async fn emit(e: &SignalEmitter<'_>, events: &[Event]) -> zbus::Result<()> {
    for ev in events {
        match &ev.kind {
            EventKind::GameStart { fen, .. } => Board1::game_started(e, fen).await?,
            EventKind::Touch {
                side,
                square,
                piece,
                first,
                ..
            } => {
                let piece = piece.char().to_string();
                Board1::piece_touched(e, side.name(), &square.to_string(), &piece, *first).await?
            }
            EventKind::Move {
                ply, san, uci, fen, ..
            } => Board1::move_made(e, *ply, san, uci, fen).await?,
            EventKind::MoveAmended {
                ply,
                was,
                san,
                uci,
                fen,
                ..
            } => Board1::move_amended(e, *ply, was, san, uci, fen).await?,
            EventKind::MoveCompleted { ply, .. } => Board1::move_completed(e, *ply).await?,
            EventKind::Takeback { to_ply, fen } => Board1::take_back(e, *to_ply, fen).await?,
            EventKind::TouchMove {
                article,
                side,
                touched,
                played,
            } => Board1::touch_move(e, article.number(), side.name(), names(touched), played).await?,
            EventKind::Irregular {
                kind,
                side,
                squares,
                completed,
                count,
                penalty,
                ..
            } => {
                if let Some(p) = penalty {
                    let words = p.to_string();
                    Board1::penalty(
                        e,
                        p.offender.name(),
                        p.count,
                        p.profile.name(),
                        p.to_clock,
                        &words,
                    )
                    .await?;
                }
                Board1::irregular(e, kind.name(), side.name(), names(squares), *completed, *count).await?
            }
            EventKind::Resolved { fen } => Board1::resolved(e, fen).await?,
            EventKind::DrawClaimable { reason } => Board1::draw_claimable(e, reason.name()).await?,
            EventKind::GameEnd { result, termination } => {
                Board1::game_ended(e, result.as_str(), termination.name()).await?
            }
            EventKind::Flag {
                side, ply, count_met, ..
            } => Board1::flag(e, side.name(), *ply, *count_met).await?,
            EventKind::ClockButton { button } => Board1::clock_button(e, button.name()).await?,
            EventKind::ClockUnresponsive { command } => Board1::clock_unresponsive(e, command).await?,
            // Their effects show in the properties.
            EventKind::Clock { .. } | EventKind::Arbiter { .. } => {}
        }
    }
    Ok(())
}

/// Squares as the names the signals carry (`e4`).
fn names(squares: &[shakmaty::Square]) -> Vec<String> {
    squares.iter().map(ToString::to_string).collect()
}
