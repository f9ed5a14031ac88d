//! Arbiter calls over MQTT (`P/boards/<id>/cmd/<Method>`, MQTT 5
//! request/response): handed to the board as D-Bus calls are.

use rumqttc::v5::mqttbytes::v5::Publish;
use tokio::sync::mpsc;

use super::{CALL_TIMEOUT, Calls, Reply, Service};
use crate::api;

/// What a call's payload is, said when it is not.
const PAYLOAD: &str =
    "the payload must be the arguments as a JSON array, or {\"args\": [...], \"force\": true}";

impl Service {
    /// An arbiter call: `P/boards/<id>/cmd/<Method>`, the arguments a JSON array.
    pub(super) fn call(&mut self, p: Publish, replies: &mpsc::UnboundedSender<Reply>) {
        let topic = String::from_utf8_lossy(&p.topic).to_string();
        let props = p.properties.unwrap_or_default();
        let reply_to = props.response_topic.clone();
        let correlation = props.correlation_data.clone();
        let replies = replies.clone();
        let answer = move |body: String| {
            if let Some(topic) = &reply_to {
                let _ = replies.send(Reply {
                    topic: topic.clone(),
                    correlation: correlation.clone(),
                    body,
                });
            }
        };
        let error = |name: &str, message: &str| {
            serde_json::json!({"error": format!("{}.{name}", api::ERROR_PREFIX), "message": message})
                .to_string()
        };
        let Some((id, method)) = topic
            .strip_prefix(&format!("{}/boards/", self.prefix))
            .and_then(|rest| rest.split_once("/cmd/"))
        else {
            return;
        };
        let (id, method) = (id.to_string(), method.to_string());
        if let Calls::Refused(why) = &self.calls {
            tracing::warn!(
                "MQTT: {} on board {} refused: {why}",
                crate::log::escaped(&method),
                crate::log::escaped(&id)
            );
            answer(error("NotAllowed", why));
            return;
        }
        // The arguments as a JSON array, or `{"args": [...], "force": true}`
        // for a decision the arbiter confirms (`rules::book`).
        let (args, force): (Vec<serde_json::Value>, bool) = match serde_json::from_slice(&p.payload) {
            Ok(serde_json::Value::Array(a)) => (a, false),
            Ok(serde_json::Value::Object(o)) => match (o.get("args"), o.get("force")) {
                (Some(serde_json::Value::Array(a)), Some(serde_json::Value::Bool(f))) => (a.clone(), *f),
                (Some(serde_json::Value::Array(a)), None) => (a.clone(), false),
                _ => {
                    answer(error("InvalidArgument", PAYLOAD));
                    return;
                }
            },
            _ if p.payload.is_empty() => (Vec::new(), false),
            _ => {
                answer(error("InvalidArgument", PAYLOAD));
                return;
            }
        };
        let command = match crate::api::decision::from_call(&method, &args) {
            Ok(c) => c,
            Err(e) => {
                answer(error("InvalidArgument", e.message()));
                return;
            }
        };
        let Some(target) = self
            .list
            .borrow()
            .iter()
            .find(|b| b.id == id)
            .map(|b| b.commands.clone())
        else {
            answer(error("NoBoard", &format!("no board {id} on this daemon")));
            return;
        };
        tracing::info!(
            "MQTT: {}{} on board {}",
            crate::log::escaped(&method),
            serde_json::Value::Array(args),
            crate::log::escaped(&id)
        );
        tokio::spawn(async move {
            let who = api::Asker {
                by: None,
                door: api::history::Door::Mqtt,
                force,
            };
            let outcome = tokio::time::timeout(CALL_TIMEOUT, api::ask_as(&target, command, who))
                .await
                .unwrap_or_else(|_| {
                    Err(api::Error::Unavailable(format!(
                        "board {id} did not answer in 10 s"
                    )))
                });
            answer(match outcome {
                Ok(()) => serde_json::json!({"ok": true}).to_string(),
                Err(api::Error::NeedsForce(what)) => serde_json::json!({
                    "error": api::Error::NeedsForce(String::new()).name(),
                    "message": crate::rules::book::refusal(&what),
                    "confirm": what,
                })
                .to_string(),
                Err(e) => serde_json::json!({"error": e.name(), "message": e.message()}).to_string(),
            });
        });
    }
}
