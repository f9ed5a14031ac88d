//! What the console keeps across restarts, shared by every arbiter: the alerts
//! (what needed an arbiter, and who acknowledged it). The decisions are each
//! board's own history (`api::history`), made from its journal.
//! One small JSON file under the state directory (`arbiter/console.json`),
//! replaced whole and atomically (written to a temporary file, synced, renamed),
//! so a kill at any moment leaves the old file or the new one.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use crate::api::alerts::Alert;

/// Alerts kept per board (the oldest go first).
pub const ALERTS_PER_BOARD: usize = 40;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub next_id: u64,
    pub alerts: BTreeMap<String, VecDeque<Alert>>,
}

pub struct Store {
    path: PathBuf,
    state: Mutex<State>,
    /// Held while a file is written, so writes land in order.
    writing: Mutex<()>,
}

impl Store {
    /// The store in `dir` (made if missing), with what an earlier run left there.
    pub fn open(dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot make it: {e}", dir.display()))?;
        let path = dir.join("console.json");
        let state = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                // A file that does not read (written by hand?) must not keep the
                // daemon from starting: it is set aside and the console starts empty.
                let aside = path.with_extension("json.bad");
                tracing::warn!(
                    "arbiter console: {}: {e}; moved to {} and starting afresh",
                    path.display(),
                    aside.display()
                );
                let _ = std::fs::rename(&path, &aside);
                State::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Store {
            path,
            state: Mutex::new(state),
            writing: Mutex::new(()),
        })
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the file (blocking: call it off the server's thread).
    pub fn save(&self) -> std::io::Result<()> {
        let _w = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = serde_json::to_vec(&*self.state()).map_err(std::io::Error::other)?;
        let tmp = self.path.with_extension("json.tmp");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl State {
    /// Raises an alert, or updates the active one with the same key.
    pub fn raise(&mut self, board: &str, kind: &str, key: String, text: String, article: &str, now_ms: u64) {
        let list = self.alerts.entry(board.to_string()).or_default();
        if let Some(a) = list.iter_mut().find(|a| a.active && a.key == key) {
            a.text = text;
            return;
        }
        self.next_id += 1;
        list.push_back(Alert {
            id: self.next_id,
            board: board.to_string(),
            kind: kind.to_string(),
            text,
            article: article.to_string(),
            t_ms: now_ms,
            active: true,
            key,
            acked_by: None,
            acked_ms: 0,
        });
        while list.len() > ALERTS_PER_BOARD {
            list.pop_front();
        }
    }

    /// The board's active alerts of the kinds `which` accepts no longer stand.
    pub fn settle(&mut self, board: &str, which: impl Fn(&str) -> bool) -> bool {
        let mut changed = false;
        for a in self.alerts.get_mut(board).into_iter().flatten() {
            if a.active && which(&a.kind) {
                a.active = false;
                changed = true;
            }
        }
        changed
    }

    /// Acknowledges alert `id`: true if it is one (an acknowledged one stays as it was).
    pub fn ack(&mut self, id: u64, user: &str, now_ms: u64) -> bool {
        for a in self.alerts.values_mut().flatten() {
            if a.id == id {
                if a.acked_by.is_none() {
                    a.acked_by = Some(user.to_string());
                    a.acked_ms = now_ms;
                }
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_and_acks_survive_a_new_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        {
            let mut s = store.state();
            s.raise("b1", "flag", "flag:white".into(), "white's flag".into(), "6.9", 5);
            s.raise(
                "b1",
                "flag",
                "flag:white".into(),
                "white's flag (again)".into(),
                "6.9",
                6,
            );
            s.raise("b2", "touch_move", "t1".into(), "touch".into(), "4.3.1", 7);
            assert_eq!(s.alerts["b1"].len(), 1, "a repeat updates the alert");
            assert!(s.ack(1, "alice", 8));
            assert!(!s.ack(99, "alice", 8));
        }
        store.save().unwrap();
        let again = Store::open(dir.path()).unwrap();
        let s = again.state();
        assert_eq!(s.alerts["b1"][0].acked_by.as_deref(), Some("alice"));
        assert_eq!(s.alerts["b1"][0].text, "white's flag (again)");
        assert_eq!(s.alerts["b2"][0].id, 2);
        assert_eq!(s.next_id, 2);
    }

    #[test]
    fn a_damaged_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("console.json"), "{ not json").unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.state().next_id, 0);
        assert!(dir.path().join("console.json.bad").exists());
    }
}
