//! The task's loop: one input, the deadlines due, then what they changed
//! published.

use tokio::sync::{mpsc, watch};

use super::BoardTask;
use crate::daemon::Input;
use crate::daemon::device::DeviceEvent;
use crate::log::RecordKind;
use crate::protocol::{ClockCommand, HostCommand};

impl BoardTask {
    /// Runs until `stop` turns true or every sender is gone; then flushes.
    /// A panic in it leaves `input` to `supervise`, which starts the board again.
    pub async fn run(mut self, input: &mut mpsc::Receiver<Input>, mut stop: watch::Receiver<bool>) {
        // The first publication: what the journal's last turn decided (perhaps
        // never published: `resume::Opened::unsaid`), then what resuming
        // decided as the daemon came back (a move whose release threshold
        // passed only then, an amendment the journal's last dump asked), go
        // out as any change does, their signals before the properties that
        // show them (the event campaign's seed 956: a resumed `Moves` showed
        // 13. Nd5 before `MoveAmended` said 13. b3 was amended).
        let mut events = std::mem::take(&mut self.own_events);
        events.append(&mut self.session.take_events());
        self.publish(events).await;
        let mut immediate = 0u32;
        // An arbiter's call is answered once its change is on disk and published.
        let mut answer = None;
        loop {
            let next = [
                self.session.core().next_deadline(),
                self.next_ask(),
                self.clock.text_end,
                self.clock.queue.deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            let now = self.time.now_us();
            // A deadline already due is handled at once, not by a timer (which
            // would round it up to the runtime's next millisecond), unless input is
            // waiting: input goes first, and the core handles the deadlines before
            // its time itself. At most a few times in a row, so that a deadline that
            // did not move on could never spin here.
            let wake = if next.is_some_and(|d| d <= now) && immediate < 8 {
                immediate += 1;
                match input.try_recv() {
                    Ok(msg) => Wake::Input(Some(msg)),
                    Err(mpsc::error::TryRecvError::Empty) => Wake::Deadline,
                    Err(mpsc::error::TryRecvError::Disconnected) => Wake::Input(None),
                }
            } else {
                immediate = 0;
                let wait = self.time.wall(next.unwrap_or(now).saturating_sub(now));
                let sleep = async {
                    match next {
                        Some(_) => tokio::time::sleep(wait).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    _ = stop.changed() => Wake::Stop,
                    msg = input.recv() => Wake::Input(msg),
                    _ = sleep => Wake::Deadline,
                }
            };
            match wake {
                Wake::Input(msg) => {
                    let Some(msg) = msg else { break };
                    let t = self.time.now_us();
                    match msg {
                        Input::Device(DeviceEvent::Connected(device)) => {
                            tracing::info!("{}: connected", device.display());
                            self.connected = true;
                            let note = if device == self.setup.device {
                                "connected".to_string()
                            } else {
                                format!("connected on {}", device.display())
                            };
                            self.setup.device = device;
                            // What the board did while away is not known: a gap,
                            // until the dump the start-up commands ask for.
                            self.time.given(t);
                            self.journal_step(t, RecordKind::Gap(note));
                            for cmd in crate::device::serial::start_up_commands() {
                                self.send(cmd).await;
                            }
                            self.asked.dump = Some(t);
                            self.asked.checked_shown = self.session.core().moves_shown();
                        }
                        Input::Device(DeviceEvent::Bytes(b, at)) => {
                            let t = self.time.read_time(at);
                            self.bytes(&b, t);
                            // A deadline the bytes made due already (a placement
                            // with `release_ms = 0`) is met in this turn, not the next.
                            let now = self.time.core_now();
                            if self.session.core().next_deadline().is_some_and(|d| d <= now) {
                                self.session.advance(now);
                            }
                        }
                        Input::Device(DeviceEvent::Disconnected(why)) => {
                            tracing::warn!(
                                "{}: disconnected ({why}); the game is kept",
                                self.setup.device.display()
                            );
                            self.connected = false;
                            self.clock.queue.clear();
                            self.clock.next.clear();
                            self.journal_step(t, RecordKind::Note(format!("disconnected: {why}")));
                            // The line is away from here: what the board does
                            // until it is back (a piece sliding on from where it
                            // was set down) is judged by the dump then.
                            self.journal_step(t, RecordKind::Gap("line lost".into()));
                        }
                        Input::Reload(update) => self.reload(update),
                        Input::Command((cmd, who, reply)) => {
                            let r = self.command(cmd, who).await;
                            // On disk before the caller hears it was accepted: a
                            // decision acknowledged survives a SIGKILL right after.
                            self.flush();
                            answer = Some((reply, r));
                        }
                    }
                }
                Wake::Deadline => {
                    let t = self.time.core_now();
                    self.session.advance(t);
                    if self.clock.text_end.is_some_and(|e| e <= t) {
                        self.clock.text_end = None;
                        if self.connected {
                            self.send(HostCommand::Clock(ClockCommand::End)).await;
                        }
                    }
                }
                Wake::Stop => break,
            }
            self.apply_configured_time_control();
            self.send_core_clock().await;
            self.drive_clock().await;
            self.flush();
            let mut events = self.session.take_events();
            for n in self.session.take_notes() {
                tracing::warn!(board = %self.setup.id, "{}", crate::log::escaped(&n));
            }
            events.append(&mut self.own_events);
            self.show_on_clock(&events).await;
            self.publish(events).await;
            // Answered after the publication: a caller reading a property once
            // its call returns sees what the call changed.
            if let Some((reply, r)) = answer.take() {
                let _ = reply.send(r);
            }
            // Asked of the board once the publication is out: a move's signal does
            // not wait for the dump that checks it.
            self.keep_in_step().await;
            self.flush();
            crate::daemon::fault::after_turn(
                &self.setup.id,
                self.session.core().game().map_or(0, |g| g.moves.len() as u64),
            );
        }
        let t = self.time.now_us();
        self.journal_step(t, RecordKind::Note("stopped".into()));
        self.flush();
        let events = self.session.take_events();
        self.publish(events).await;
    }
}

/// What woke a board's task. It lives on the stack for one turn of the loop;
/// boxing the input would allocate for every read.
#[allow(clippy::large_enum_variant)]
enum Wake {
    Input(Option<Input>),
    Deadline,
    Stop,
}
