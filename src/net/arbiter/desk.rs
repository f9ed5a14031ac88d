//! The console's alerts for the other doors (`api::alerts::Desk`): D-Bus
//! (`Manager1.AckAlert`, `ctl ack`) acknowledges an alert as the console's
//! button does, kept in the same file and shown on every arbiter's page.

use crate::api::Error;
use crate::api::alerts::{Alert, Desk};
use crate::net::now_ms;

use super::Console;

impl Console {
    /// Keeps the store on disk after an acknowledgement (blocking).
    fn kept(&self) -> Result<(), Error> {
        self.store.save().map_err(|e| {
            tracing::error!("arbiter console: cannot write its state: {e}");
            Error::Unavailable(format!(
                "acknowledged, but it could not be kept on disk ({e}): a restart forgets it"
            ))
        })
    }
}

impl Desk for Console {
    fn alerts(&self) -> Vec<Alert> {
        let st = self.store.state();
        st.alerts.values().flatten().cloned().collect()
    }

    fn ack(&self, id: u64, user: &str) -> Result<Alert, Error> {
        let alert = {
            let mut st = self.store.state();
            if !st.ack(id, user, now_ms()) {
                return Err(Error::InvalidArgument(format!(
                    "no alert {id}: the console keeps each board's last {} alerts",
                    super::store::ALERTS_PER_BOARD
                )));
            }
            st.alerts.values().flatten().find(|a| a.id == id).cloned()
        };
        self.kept()?;
        tracing::info!(
            "arbiter console: alert {id} acknowledged by {} (over D-Bus)",
            crate::log::escaped(user)
        );
        alert.ok_or_else(|| Error::InvalidArgument(format!("no alert {id}")))
    }

    fn ack_board(&self, board: &str, user: &str) -> Result<Vec<Alert>, Error> {
        let now = now_ms();
        let acked: Vec<Alert> = {
            let mut st = self.store.state();
            let list = st.alerts.get_mut(board).into_iter().flatten();
            list.filter(|a| a.active && a.acked_by.is_none())
                .map(|a| {
                    a.acked_by = Some(user.to_string());
                    a.acked_ms = now;
                    a.clone()
                })
                .collect()
        };
        if !acked.is_empty() {
            self.kept()?;
            tracing::info!(
                "arbiter console: {} alert(s) of board {} acknowledged by {} (over D-Bus)",
                acked.len(),
                crate::log::escaped(board),
                crate::log::escaped(user)
            );
        }
        Ok(acked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_acknowledged_one_or_a_boards_all_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("arbiters");
        let line = crate::arbiters::passwd_line("alice", "a long password").unwrap();
        std::fs::write(&users, format!("{line}\n")).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&users, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let (_tx, boards) = tokio::sync::watch::channel(Vec::new());
        let open = || {
            Console::open(
                &users,
                dir.path(),
                false,
                crate::net::names::ServerNames::new(&[], &[]),
                boards.clone(),
                None,
            )
            .unwrap()
        };
        let console = open();
        {
            let mut st = console.store.state();
            st.raise("b1", "flag", "f".into(), "white's flag".into(), "6.9", 1);
            st.raise("b1", "touch_move", "t".into(), "touched".into(), "4.3.1", 2);
            st.raise("b2", "flag", "f".into(), "black's flag".into(), "6.9", 3);
        }
        let desk: &dyn Desk = &*console;
        assert_eq!(desk.alerts().len(), 3);
        let a = desk.ack(3, "bob").unwrap();
        assert_eq!((a.board.as_str(), a.acked_by.as_deref()), ("b2", Some("bob")));
        // Acknowledged before: it stays as it was.
        assert_eq!(desk.ack(3, "carol").unwrap().acked_by.as_deref(), Some("bob"));
        assert!(desk.ack(9, "bob").unwrap_err().to_string().contains("no alert 9"));
        let all = desk.ack_board("b1", "alice").unwrap();
        assert_eq!(all.iter().map(|a| a.id).collect::<Vec<_>>(), [1, 2]);
        assert!(desk.ack_board("b1", "alice").unwrap().is_empty(), "nothing left");
        assert!(desk.ack_board("b9", "alice").unwrap().is_empty());
        drop(console);
        let again = open();
        let kept: Vec<Option<String>> = Desk::alerts(&*again).into_iter().map(|a| a.acked_by).collect();
        assert_eq!(
            kept,
            [Some("alice".into()), Some("alice".into()), Some("bob".into())]
        );
    }
}
