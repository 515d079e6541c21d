//! Status up: the copy's status (after the status mutations) replaces the
//! kcp object's.

use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};
use tracing::info;

use super::context::Pass;
use super::converge::Phase;
use super::error::{SyncError, from_json, kerr};
use super::{events, patch};

/// Status up for `pass`, from the copy `local` (and its JSON).
pub(super) async fn run(
    pass: &Pass<'_>,
    local: &DynamicObject,
    local_json: &Value,
) -> Result<(), SyncError> {
    let (key, origin, kcp_api, remote) = (pass.key, &pass.origin, &pass.kcp_api, pass.object);
    // Only a status mutation needs a copy of its own to change.
    let mutated;
    let local_json = match &pass.plugins.mutator {
        Some(m) => {
            let mut copy = local_json.clone();
            let reports = m
                .mutate_status(origin, &mut copy, Some(remote))
                .await
                .map_err(|e| SyncError::Mutation(e, key.clone()))?;
            pass.reported(reports);
            mutated = copy;
            &mutated
        }
        None => local_json,
    };
    let status = local_json.get("status").cloned().unwrap_or(Value::Null);
    let current = remote.get("status").cloned().unwrap_or(Value::Null);
    if patch::json_eq(&status, &current) {
        pass.convergence.settled(key, Phase::Status);
        return Ok(());
    }
    // The status's inputs: the copy, and the kcp object's spec (a
    // status mutation may read it), not the kcp object's own
    // resourceVersion, which each status write changes.
    let inputs = format!(
        "{}/{}",
        local
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default(),
        remote
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or_default()
    );
    let status_patch = json!({ "status": status.clone() });
    pass.convergence
        .check(key, Phase::Status, &inputs, &status_patch)
        .map_err(|e| SyncError::NotConverging(e, key.clone()))?;
    // A status cleared on the service side is cleared in kcp too.
    let mut updated = remote.clone();
    match updated.as_object_mut() {
        Some(o) if status.is_null() => {
            o.remove("status");
        }
        Some(o) => {
            o.insert("status".into(), status);
        }
        None => {}
    }
    let written = kcp_api
        .replace_status(
            &key.name,
            &PostParams::default(),
            &from_json(key, "the kcp object with the copy's status", updated)?,
        )
        .await
        .map_err(kerr("updating status in kcp of", key))?;
    pass.kcp_written(written);
    pass.convergence
        .wrote(key, Phase::Status, &inputs, &status_patch);
    info!(%key, "synced status to kcp");
    pass.emit(
        key,
        remote,
        false,
        events::OBJECT_STATUS_SYNCED,
        "status synced from the service cluster".into(),
    );
    Ok(())
}
