//! The rounds' broadcast ids across restarts: `<state>/lichess/rounds.esl`, a
//! journal in the sensor-log format that the boards' recordings use (the same
//! writer: whole lines, a torn last line cut off at start), holding the
//! decisions that concern no board.
//!
//! - `arbiter SetLichessRound 3 "AbCd1234"` (after `note decided by alice`
//!   when the caller is known): `ctl lichess 3 AbCd1234`, or the D-Bus call;
//!   `arbiter SetLichessRound 3 "AbCd1234 EfGh5678"` for a round over several
//!   broadcast rounds (since issue 60).
//! - `note configured {"1":"AbCd1234","2":["EfGh5678","IjKl9012"],...}`: the
//!   configuration's `rounds` when the daemon started or read it again
//!   (a round with one id as a string, as before), written when they differ
//!   from the last written.
//!
//! The latest word wins: replaying the journal, a decision sets a round's id,
//! and a `configured` line sets the ids of the rounds whose configured id it
//! changes. At start the configuration is such a line: a `ctl lichess` made
//! at run time survives a restart, unless the configuration's id of that
//! round was changed since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::api::lichess::{RoundDecision, RoundId};
use crate::log::{DECIDED_BY, Header, Journal, LogTime, Record, RecordKind};

/// The note of the configuration's rounds.
const CONFIGURED: &str = "configured ";

/// The ids in effect, by round: each round's broadcast rounds, in the order
/// of its boards.
pub type Ids = BTreeMap<u32, Vec<RoundId>>;

/// The journal open for writing, and the ids it gives.
pub struct RoundsJournal {
    path: PathBuf,
    journal: Journal,
    /// Log time at `started`.
    offset_us: u64,
    started: Instant,
    /// The configuration's rounds last written.
    configured: Ids,
}

/// What replaying a journal gives: the ids in effect, and the configuration's
/// rounds it last noted.
#[derive(Debug, Default, PartialEq)]
pub struct Replayed {
    pub ids: Ids,
    pub configured: Ids,
}

impl Replayed {
    /// One record of the journal.
    fn step(&mut self, kind: &RecordKind) {
        match kind {
            RecordKind::Note(text) => {
                if let Some(json) = text.strip_prefix(CONFIGURED) {
                    self.configure(&parse_ids(json));
                }
            }
            RecordKind::Arbiter { .. } => {
                if let Some(Ok(d)) = RoundDecision::from_record(kind) {
                    self.decide(&d);
                }
            }
            _ => {}
        }
    }

    /// A decision: the round's id is the one decided.
    pub fn decide(&mut self, d: &RoundDecision) {
        let RoundDecision::SetRound { round, ids } = d;
        if ids.is_empty() {
            self.ids.remove(round);
        } else {
            self.ids.insert(*round, ids.clone());
        }
    }

    /// The configuration's rounds: each round whose configured id changed
    /// takes it. Whether anything changed.
    pub fn configure(&mut self, now: &Ids) -> bool {
        let rounds: Vec<u32> = self.configured.keys().chain(now.keys()).copied().collect();
        let mut changed = false;
        for r in rounds {
            if self.configured.get(&r) == now.get(&r) {
                continue;
            }
            changed = true;
            match now.get(&r) {
                Some(id) => self.ids.insert(r, id.clone()),
                None => self.ids.remove(&r),
            };
        }
        self.configured = now.clone();
        changed
    }
}

/// A `configured` note's rounds: each an id, or a list of them; a round that
/// does not read is passed over.
fn parse_ids(json: &str) -> Ids {
    use serde_json::Value;
    let map: BTreeMap<String, Value> = serde_json::from_str(json).unwrap_or_default();
    map.into_iter()
        .filter_map(|(k, v)| {
            let texts: Vec<&str> = match &v {
                Value::String(id) => vec![id.as_str()],
                Value::Array(ids) => ids.iter().map(Value::as_str).collect::<Option<_>>()?,
                _ => return None,
            };
            Some((k.parse().ok()?, crate::api::lichess::parse_ids(texts).ok()?))
        })
        .collect()
}

fn ids_json(ids: &Ids) -> String {
    use serde_json::Value;
    let map: BTreeMap<String, Value> = ids
        .iter()
        .map(|(k, v)| {
            let v = match v.as_slice() {
                [one] => Value::from(one.as_str()),
                many => Value::from(many.iter().map(RoundId::as_str).collect::<Vec<_>>()),
            };
            (k.to_string(), v)
        })
        .collect();
    serde_json::to_string(&map).unwrap_or_else(|_| "{}".into())
}

impl RoundsJournal {
    /// Opens (or makes) the journal in `dir`, replays it, and notes the
    /// configuration's `rounds`: the journal and the ids in effect.
    pub fn open(dir: &Path, configured: &Ids) -> Result<(RoundsJournal, Ids), String> {
        let path = dir.join("rounds.esl");
        let mut replayed = Replayed::default();
        let (records, journal, last) = crate::log::journal::open_kept(&path, || {
            let mut header = Header::default();
            header.set("source", "eboard-bridge lichess: the rounds' broadcast ids");
            header.set("started", &httpdate::fmt_http_date(std::time::SystemTime::now()));
            header
        })?;
        for r in &records {
            replayed.step(&r.kind);
        }
        let mut j = RoundsJournal {
            path,
            journal,
            offset_us: last,
            started: Instant::now(),
            configured: replayed.configured.clone(),
        };
        j.configure(configured, &mut replayed);
        Ok((j, replayed.ids))
    }

    fn now(&self) -> LogTime {
        let us = self.offset_us + self.started.elapsed().as_micros() as u64;
        LogTime::from_micros(us.min(LogTime::MAX.micros()))
    }

    fn write(&mut self, kind: RecordKind) {
        let time = self.now();
        self.journal.write(&Record { time, kind });
    }

    fn flush(&mut self) {
        if let crate::log::Flushed::Failing(e) = self.journal.flush() {
            tracing::error!(
                "{}: cannot write: {e}; the rounds' ids are held until it works again",
                self.path.display()
            );
        }
    }

    /// The configuration's rounds (at start, or read again): noted when they
    /// changed, and applied to `replayed` by the same rule as a replay.
    pub fn configure(&mut self, now: &Ids, replayed: &mut Replayed) {
        let changed = replayed.configure(now);
        if changed || self.configured != *now {
            self.write(RecordKind::Note(format!("{CONFIGURED}{}", ids_json(now))));
            self.flush();
        }
        self.configured = now.clone();
    }

    /// A decision, journaled before it is applied (who made it first, when known).
    pub fn decided(&mut self, d: &RoundDecision, by: Option<&str>) {
        if let Some(by) = by {
            self.write(RecordKind::Note(format!("{DECIDED_BY}{by}")));
        }
        self.write(d.record());
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(pairs: &[(u32, &str)]) -> Ids {
        pairs
            .iter()
            .map(|(r, i)| {
                let ids = i.split(' ').map(|i| RoundId::parse(i).unwrap()).collect();
                (*r, ids)
            })
            .collect()
    }

    fn set(round: u32, ids: &str) -> RoundDecision {
        RoundDecision::SetRound {
            round,
            ids: ids
                .split(' ')
                .filter(|i| !i.is_empty())
                .map(|i| RoundId::parse(i).unwrap())
                .collect(),
        }
    }

    #[test]
    fn a_decision_survives_a_restart_until_the_configuration_changes_that_round() {
        let dir = tempfile::tempdir().unwrap();
        let conf = ids(&[(1, "Conf0001"), (2, "Conf0002")]);
        let (mut j, got) = RoundsJournal::open(dir.path(), &conf).unwrap();
        assert_eq!(got, conf);
        let mut r = Replayed {
            ids: got,
            configured: conf.clone(),
        };
        let d = set(1, "Ctl00001");
        j.decided(&d, Some("alice"));
        r.decide(&d);
        let off = set(2, "");
        j.decided(&off, None);
        drop(j);
        let text = std::fs::read_to_string(dir.path().join("rounds.esl")).unwrap();
        assert!(text.contains("note decided by alice\n"), "{text}");
        assert!(
            text.contains("arbiter SetLichessRound 1 \"Ctl00001\"\n"),
            "{text}"
        );
        assert!(text.contains("arbiter SetLichessRound 2 \"\"\n"), "{text}");
        // Restarted with the same configuration: the decisions stand.
        let (_, got) = RoundsJournal::open(dir.path(), &conf).unwrap();
        assert_eq!(got, ids(&[(1, "Ctl00001")]));
        // The configuration changed round 2 only: round 2 takes it, round 1's
        // decision stands; and a round added.
        let conf2 = ids(&[(1, "Conf0001"), (2, "Conf0022"), (3, "Conf0003")]);
        let (_, got) = RoundsJournal::open(dir.path(), &conf2).unwrap();
        assert_eq!(got, ids(&[(1, "Ctl00001"), (2, "Conf0022"), (3, "Conf0003")]));
        // Once more with the same: nothing new noted, the same ids.
        let before = std::fs::read_to_string(dir.path().join("rounds.esl")).unwrap();
        let (_, again) = RoundsJournal::open(dir.path(), &conf2).unwrap();
        assert_eq!(again, got);
        let after = std::fs::read_to_string(dir.path().join("rounds.esl")).unwrap();
        assert_eq!(
            before.lines().filter(|l| l.contains("configured")).count(),
            after.lines().filter(|l| l.contains("configured")).count()
        );
    }

    #[test]
    fn a_torn_last_line_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let conf = ids(&[(1, "Conf0001")]);
        let (mut j, _) = RoundsJournal::open(dir.path(), &conf).unwrap();
        j.decided(&set(1, "Ctl00001"), None);
        drop(j);
        let path = dir.path().join("rounds.esl");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("9.000000 arbiter SetLichessRound 1 \"Torn");
        std::fs::write(&path, &text).unwrap();
        let (_, got) = RoundsJournal::open(dir.path(), &conf).unwrap();
        assert_eq!(got, ids(&[(1, "Ctl00001")]));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("Torn"), "{text}");
        assert!(text.ends_with('\n'));
    }

    /// Issue 60: a round over several broadcast rounds, configured and
    /// decided, survives a restart; a configuration of one id per round is
    /// noted as before (a string), so a journal written before reads the same.
    #[test]
    fn several_broadcast_rounds_for_a_round_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let conf = ids(&[(1, "Conf0001 Conf0002"), (2, "Conf0003")]);
        let (mut j, got) = RoundsJournal::open(dir.path(), &conf).unwrap();
        assert_eq!(got, conf);
        let text = std::fs::read_to_string(dir.path().join("rounds.esl")).unwrap();
        assert!(
            text.contains("note configured {\"1\":[\"Conf0001\",\"Conf0002\"],\"2\":\"Conf0003\"}\n"),
            "{text}"
        );
        j.decided(&set(2, "Ctl00001 Ctl00002 Ctl00003"), Some("alice"));
        drop(j);
        let text = std::fs::read_to_string(dir.path().join("rounds.esl")).unwrap();
        assert!(
            text.contains("arbiter SetLichessRound 2 \"Ctl00001 Ctl00002 Ctl00003\"\n"),
            "{text}"
        );
        let (_, got) = RoundsJournal::open(dir.path(), &conf).unwrap();
        assert_eq!(
            got,
            ids(&[(1, "Conf0001 Conf0002"), (2, "Ctl00001 Ctl00002 Ctl00003")])
        );
        // Round 1's configuration now one id: it takes it.
        let conf2 = ids(&[(1, "Conf0001"), (2, "Conf0003")]);
        let (_, got) = RoundsJournal::open(dir.path(), &conf2).unwrap();
        assert_eq!(got, ids(&[(1, "Conf0001"), (2, "Ctl00001 Ctl00002 Ctl00003")]));
    }

    /// A journal as 2728c8f wrote it reads the same through the one parser of
    /// method names: its decisions stand; records that do not hold one (round
    /// 0, an id that is not one, a board's method, arguments of the wrong
    /// kind) are passed over.
    #[test]
    fn a_journal_written_before_reads_through_the_one_parser() {
        let dir = tempfile::tempdir().unwrap();
        let text = "# eboard-sensor-log 1\n\
                    # source: eboard-bridge lichess: the rounds' broadcast ids\n\
                    # started: Fri, 27 Nov 2026 21:00:00 GMT\n\
                    0.000000 note configured {\"1\":\"Conf0001\"}\n\
                    1.000000 note decided by alice\n\
                    1.000000 arbiter SetLichessRound 1 \"Ctl00001\"\n\
                    2.000000 arbiter SetLichessRound 2 \"AbCd1234\"\n\
                    3.000000 arbiter SetLichessRound 2 \"\"\n\
                    4.000000 arbiter SetLichessRound 0 \"Zero0000\"\n\
                    5.000000 arbiter SetLichessRound 3 \"nope\"\n\
                    6.000000 arbiter SetResult \"1-0\"\n\
                    7.000000 arbiter SetLichessRound \"4\" \"Four0004\"\n";
        std::fs::write(dir.path().join("rounds.esl"), text).unwrap();
        let (_, got) = RoundsJournal::open(dir.path(), &ids(&[(1, "Conf0001")])).unwrap();
        assert_eq!(got, ids(&[(1, "Ctl00001")]));
    }
}
