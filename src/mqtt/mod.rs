//! Every board on an MQTT broker (`[mqtt]`, off by default), for the halls of an
//! event that D-Bus cannot reach. Topics under the prefix `P`
//! (`docs/MQTT.md`):
//! - `P/status`: `online`, retained; the last will `offline` when the daemon dies.
//! - `P/boards/<id>/state`: the D-Bus properties by name (JSON), retained.
//! - `P/boards/<id>/events`: the jsonl events, one a message, each with the
//!   board's `seq`, in order.
//! - `P/boards/<id>/pgn`: the current game's PGN, retained.
//! - `P/boards/<id>/cmd/<Method>`: arbiter calls (MQTT 5 request/response).
//!
//! One task owns the link. Boards offer it their publications ([`Outbox`], a
//! sink) through an unbounded channel and never wait for it: a slow or absent
//! broker delays no board and no D-Bus signal, and drops nothing on the way
//! (the channel is emptied by the link's task at once, whatever the broker
//! does). Events go to a queue on disk first (`spool`) and leave it when the
//! broker acknowledges them, so nothing is lost while the broker is away or the
//! daemon restarts; only past `queue_limit` events waiting do the oldest go
//! (counted, said in the log). The events' text is the publication's JSON with
//! `seq` added; the state document is the snapshot with `Id` and `Seq`, made
//! here (its form is MQTT's own).
//!
//! Order: publications go out on one connection at one QoS; the broker
//! acknowledges them in the order it received them (MQTT 5 §4.6), so the
//! acknowledgements are matched to a queue of what was sent.

mod calls;
pub mod config;
mod connect;
pub mod spool;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, EventLoop};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use config::MqttConfig;
use connect::tls_config;
use spool::Queue;

use crate::api::{BoardRef, Publication, Sink, Snapshot};

/// Publications awaiting the broker's acknowledgement at once.
const WINDOW: usize = 64;
/// Retry after a failed connection: from 1 s, doubling, up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// On shutdown, how long the queue may take to reach the broker.
const CLOSE_GRACE: Duration = Duration::from_secs(3);
/// How long an arbiter call may take before its caller is told it timed out.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// What a board hands over after each change.
#[derive(Debug)]
pub struct Update {
    pub board: Arc<str>,
    /// The events' JSON, with the board (as the publication made it).
    pub events: Vec<Arc<str>>,
    /// The board's properties, when they changed.
    pub state: Option<Arc<Snapshot>>,
}

/// Where boards send their updates: the link's sink.
#[derive(Debug, Clone)]
pub struct Outbox(mpsc::UnboundedSender<Update>);

/// The boards' side of the link and the link's.
pub fn outbox() -> (Outbox, mpsc::UnboundedReceiver<Update>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Outbox(tx), rx)
}

impl Sink for Outbox {
    /// Events and a changed state to the link's task; never waits, never drops.
    fn offer(&self, p: &Arc<Publication>) {
        if p.events.is_empty() && p.snapshot.is_none() {
            return;
        }
        // The link's task ended only if the daemon is stopping.
        let _ = self.0.send(Update {
            board: p.board.clone(),
            events: p.events.iter().map(|e| e.json().clone()).collect(),
            state: p.snapshot.clone(),
        });
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    #[error("[mqtt] {0}")]
    Config(String),
    #[error("[mqtt] {0}")]
    Tls(String),
}

/// Whether arbiter calls are taken, and why not.
#[derive(Debug, Clone, PartialEq)]
enum Calls {
    Allowed,
    Refused(String),
}

/// One board's publications.
struct BoardOut {
    queue: Queue,
    state: Option<String>,
    state_sent: bool,
    pgn: Option<String>,
    pgn_sent: bool,
    /// The last `seq` handed to the connection.
    sent: u64,
}

/// What an acknowledgement stands for.
enum Tag {
    Event(String, u64),
    Other,
}

struct Link {
    client: AsyncClient,
    events: EventLoop,
    connected: bool,
    inflight: VecDeque<Tag>,
}

/// A reply to an arbiter call.
struct Reply {
    topic: String,
    correlation: Option<Bytes>,
    body: String,
}

struct Service {
    cfg: MqttConfig,
    prefix: String,
    qos: QoS,
    dir: PathBuf,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// TLS without the client certificate, for the anonymous probe.
    tls_anonymous: Option<Arc<rustls::ClientConfig>>,
    boards: BTreeMap<String, BoardOut>,
    list: watch::Receiver<Vec<BoardRef>>,
    calls: Calls,
    replies: VecDeque<Reply>,
    /// The failure last said, so that a broker that stays away is said once.
    last_error: Option<String>,
}

/// The running link's task.
pub struct Mqtt {
    task: JoinHandle<()>,
}

impl Mqtt {
    /// Starts the link to the broker. It ends when every `Outbox` is dropped, after
    /// a last try to deliver the queue and to say `offline`.
    pub fn start(
        cfg: MqttConfig,
        state_dir: PathBuf,
        boards: watch::Receiver<Vec<BoardRef>>,
        updates: mpsc::UnboundedReceiver<Update>,
    ) -> Result<Mqtt, MqttError> {
        cfg.check().map_err(MqttError::Config)?;
        let (tls, tls_anonymous) = if cfg.broker.tls {
            (
                Some(Arc::new(tls_config(&cfg, true)?)),
                Some(Arc::new(tls_config(&cfg, false)?)),
            )
        } else {
            (None, None)
        };
        let qos = if cfg.qos == 2 {
            QoS::ExactlyOnce
        } else {
            QoS::AtLeastOnce
        };
        let calls = if cfg.commands {
            Calls::Refused("the broker has not been asked yet whether it refuses anonymous clients".into())
        } else {
            Calls::Refused("commands over MQTT are off ([mqtt] commands = false)".into())
        };
        let svc = Service {
            prefix: cfg.prefix(),
            qos,
            dir: state_dir.join("mqtt"),
            tls,
            tls_anonymous,
            boards: BTreeMap::new(),
            list: boards,
            calls,
            replies: VecDeque::new(),
            last_error: None,
            cfg,
        };
        tracing::info!(
            "MQTT: publishing to {} under {}/ as {}",
            svc.cfg.broker,
            svc.prefix,
            svc.cfg.client_id()
        );
        Ok(Mqtt {
            task: tokio::spawn(svc.run(updates)),
        })
    }

    /// Waits for the task to end (every `Outbox` dropped).
    pub async fn stopped(self) {
        let _ = self.task.await;
    }
}

/// The next event of a link, or never without one.
async fn poll(link: Option<&mut Link>) -> Result<Event, ConnectionError> {
    match link {
        Some(l) => l.events.poll().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Service {
    fn status_topic(&self) -> String {
        format!("{}/status", self.prefix)
    }

    fn board(&mut self, id: &str) -> &mut BoardOut {
        if !self.boards.contains_key(id) {
            let queue = match Queue::open(&self.dir, id, self.cfg.queue_limit) {
                Ok(q) => q,
                Err(e) => {
                    tracing::error!(
                        "MQTT: board {id}: the queue in {} cannot be opened ({e}); its events are held in memory only",
                        self.dir.display()
                    );
                    Queue::in_memory(self.cfg.queue_limit)
                }
            };
            if queue.waiting() > 0 {
                tracing::info!(
                    "MQTT: board {id}: {} event(s) from before the restart wait for the broker",
                    queue.waiting()
                );
            }
            let sent = queue.acked();
            self.boards.insert(
                id.to_string(),
                BoardOut {
                    queue,
                    state: None,
                    state_sent: true,
                    pgn: None,
                    pgn_sent: true,
                    sent,
                },
            );
        }
        self.boards.get_mut(id).expect("inserted above")
    }

    fn update(&mut self, u: Update) {
        let b = self.board(&u.board);
        for json in &u.events {
            b.queue.push(json, &u.board);
        }
        if b.queue.dropped > 0 {
            tracing::warn!(
                "MQTT: board {}: {} event(s) dropped, over queue_limit ({}) while the broker is away",
                u.board,
                b.queue.dropped,
                b.queue.waiting()
            );
            b.queue.dropped = 0;
        }
        if let Some(s) = u.state {
            let mut v = serde_json::to_value(&*s).unwrap_or_default();
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("Id".into(), u.board.to_string().into());
                m.insert("Seq".into(), b.queue.last().into());
            }
            let json = v.to_string();
            if b.state.as_deref() != Some(json.as_str()) {
                b.state = Some(json);
                b.state_sent = false;
            }
            if b.pgn.as_deref() != Some(s.pgn.as_str()) {
                b.pgn = Some(s.pgn.clone());
                b.pgn_sent = false;
            }
        }
    }

    /// The link is up: what is waiting goes out, up to the window.
    fn pump(&mut self, link: &mut Link) {
        let qos = self.qos;
        while link.inflight.len() < WINDOW {
            let Some(r) = self.replies.pop_front() else { break };
            let props = PublishProperties {
                correlation_data: r.correlation.clone(),
                content_type: Some("application/json".into()),
                ..Default::default()
            };
            if link
                .client
                .try_publish_with_properties(r.topic.clone(), qos, false, r.body.clone(), props)
                .is_err()
            {
                self.replies.push_front(r);
                return;
            }
            link.inflight.push_back(Tag::Other);
        }
        let prefix = self.prefix.clone();
        for (id, b) in self.boards.iter_mut() {
            let room = WINDOW.saturating_sub(link.inflight.len());
            if room == 0 {
                return;
            }
            let batch: Vec<(u64, String)> = b.queue.after(b.sent).take(room).cloned().collect();
            for (seq, line) in batch {
                let topic = format!("{prefix}/boards/{id}/events");
                if link.client.try_publish(topic, qos, false, line).is_err() {
                    return;
                }
                b.sent = seq;
                link.inflight.push_back(Tag::Event(id.clone(), seq));
            }
            if b.queue.after(b.sent).next().is_some() {
                continue;
            }
            for (what, body, sent) in [
                ("state", &b.state, &mut b.state_sent),
                ("pgn", &b.pgn, &mut b.pgn_sent),
            ] {
                if *sent || link.inflight.len() >= WINDOW {
                    continue;
                }
                let Some(body) = body else { continue };
                let topic = format!("{prefix}/boards/{id}/{what}");
                if link.client.try_publish(topic, qos, true, body.clone()).is_err() {
                    return;
                }
                *sent = true;
                link.inflight.push_back(Tag::Other);
            }
        }
    }

    /// The broker acknowledged the oldest publication in flight.
    fn acknowledged(&mut self, link: &mut Link, refused: Option<String>) {
        let Some(tag) = link.inflight.pop_front() else {
            return;
        };
        if let Some(why) = &refused {
            tracing::error!(
                "MQTT: the broker refused a publication ({}): give this client the right to publish under {}/ in the broker's ACL",
                crate::log::escaped(why),
                self.prefix
            );
        }
        if let Tag::Event(id, seq) = tag {
            if let Some(b) = self.boards.get_mut(&id) {
                b.queue.ack(seq);
            }
        }
    }

    /// The connection came up: status, the subscription to calls, and every
    /// retained document again (a broker restarted without persistence lost them).
    fn connected(&mut self, link: &mut Link) {
        link.connected = true;
        if self.last_error.take().is_some() {
            tracing::info!("MQTT: connected to {} again", self.cfg.broker);
        } else {
            tracing::info!("MQTT: connected to {}", self.cfg.broker);
        }
        // Only what was handed to the client is awaited (the FIFO matches acks).
        if link
            .client
            .try_publish(self.status_topic(), self.qos, true, "online")
            .is_ok()
        {
            link.inflight.push_back(Tag::Other);
        }
        let _ = link
            .client
            .try_subscribe(format!("{}/boards/+/cmd/+", self.prefix), self.qos);
        for b in self.boards.values_mut() {
            b.state_sent = b.state.is_none();
            b.pgn_sent = b.pgn.is_none();
        }
    }

    /// The connection is gone: what was in flight goes again on the next one.
    fn disconnected(&mut self, why: String) {
        for b in self.boards.values_mut() {
            b.sent = b.queue.acked();
        }
        if self.last_error.as_deref() != Some(why.as_str()) {
            tracing::warn!(
                "MQTT: {}: {}; events are queued and sent when it is back",
                self.cfg.broker,
                crate::log::escaped(&why)
            );
            self.last_error = Some(why);
        }
    }

    fn save_acked(&mut self) {
        for (id, b) in self.boards.iter_mut() {
            if let Err(e) = b.queue.save_acked() {
                tracing::warn!("MQTT: board {id}: cannot note what the broker has: {e}");
            }
        }
    }

    fn delivered(&self, link: &Link) -> bool {
        link.inflight.is_empty()
            && self.replies.is_empty()
            && self.boards.values().all(|b| b.queue.waiting() == 0)
    }

    async fn run(mut self, mut updates: mpsc::UnboundedReceiver<Update>) {
        let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Reply>();
        let mut link: Option<Link> = None;
        let mut retry_at = Instant::now();
        let mut backoff = Duration::from_secs(1);
        let mut closing: Option<Instant> = None;
        let mut said_offline = false;
        let mut save_at: Option<Instant> = None;
        loop {
            if link.is_none() && closing.is_none() && Instant::now() >= retry_at {
                match self.connect().await {
                    Ok(l) => link = Some(l),
                    Err(e) => {
                        self.disconnected(e);
                        retry_at = Instant::now() + MAX_BACKOFF;
                    }
                }
            }
            if save_at.is_none() && self.boards.values().any(|b| b.queue.acked_unsaved()) {
                save_at = Some(Instant::now() + Duration::from_secs(1));
            }
            tokio::select! {
                ev = poll(link.as_mut()) => {
                    let l = link.as_mut().expect("polled a link");
                    match ev {
                        Ok(Event::Incoming(Packet::ConnAck(_))) => {
                            backoff = Duration::from_secs(1);
                            self.connected(l);
                        }
                        Ok(Event::Incoming(Packet::PubAck(a))) if self.qos == QoS::AtLeastOnce => {
                            use rumqttc::v5::mqttbytes::v5::PubAckReason as R;
                            let refused = (!matches!(a.reason, R::Success | R::NoMatchingSubscribers))
                                .then(|| format!("{:?}", a.reason));
                            self.acknowledged(l, refused);
                        }
                        Ok(Event::Incoming(Packet::PubRec(r))) if self.qos == QoS::ExactlyOnce => {
                            use rumqttc::v5::mqttbytes::v5::PubRecReason as R;
                            // A refused QoS 2 publication ends here: no PUBCOMP follows.
                            if !matches!(r.reason, R::Success | R::NoMatchingSubscribers) {
                                self.acknowledged(l, Some(format!("{:?}", r.reason)));
                            }
                        }
                        Ok(Event::Incoming(Packet::PubComp(_))) if self.qos == QoS::ExactlyOnce => {
                            self.acknowledged(l, None);
                        }
                        Ok(Event::Incoming(Packet::Publish(p))) => self.call(p, &reply_tx),
                        Ok(Event::Outgoing(Outgoing::Disconnect)) if said_offline => break,
                        Ok(_) => {}
                        Err(e) => {
                            link = None;
                            self.disconnected(e.to_string());
                            if closing.is_some() {
                                break;
                            }
                            retry_at = Instant::now() + backoff;
                            backoff = (backoff * 2).min(MAX_BACKOFF);
                        }
                    }
                }
                u = updates.recv(), if closing.is_none() => match u {
                    Some(u) => self.update(u),
                    None => {
                        if link.as_ref().is_none_or(|l| !l.connected) {
                            break;
                        }
                        closing = Some(Instant::now() + CLOSE_GRACE);
                    }
                },
                Some(r) = reply_rx.recv() => self.replies.push_back(r),
                _ = sleep_until(Some(retry_at)), if link.is_none() && closing.is_none() => {}
                _ = sleep_until(save_at) => {
                    save_at = None;
                    self.save_acked();
                }
                _ = sleep_until(closing) => {
                    tracing::warn!("MQTT: stopping with events not yet acknowledged; they are sent after the next start");
                    break;
                }
            }
            if let Some(l) = link.as_mut().filter(|l| l.connected) {
                self.pump(l);
                if closing.is_some() && !said_offline && self.delivered(l) {
                    let _ = l
                        .client
                        .try_publish(self.status_topic(), self.qos, true, "offline");
                    let _ = l.client.try_disconnect();
                    said_offline = true;
                }
            }
        }
        self.save_acked();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Event, EventKind, Side};

    #[test]
    fn the_outbox_hands_over_the_json_the_publication_made() {
        let (outbox, mut rx) = outbox();
        let e = Event {
            t_us: 1_000_000,
            kind: EventKind::MoveCompleted {
                ply: 1,
                side: Side::White,
            },
        };
        let p = Arc::new(Publication::new("b1".into(), vec![e], None, Vec::new()));
        outbox.offer(&p);
        let u = rx.try_recv().unwrap();
        assert_eq!(&*u.board, "b1");
        assert!(Arc::ptr_eq(&u.events[0], p.events[0].json()));
        assert!(u.state.is_none());
        // Nothing to say: nothing sent.
        outbox.offer(&Arc::new(Publication::new(
            "b1".into(),
            Vec::new(),
            None,
            Vec::new(),
        )));
        assert!(rx.try_recv().is_err());
    }
}
