//! `syncStatus`: an original's status written forward to its copy, never
//! back.

use super::*;

impl RelatedPass<'_> {
    /// `syncStatus`: write the original's status to the copy through
    /// `/status`. A copy without the subresource gets a Warning Event (on
    /// the kcp-side related object) instead of an endless retry.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn forward_status(
        &self,
        r: &Related,
        dest_api: &SideApi,
        dest_ns: &str,
        dest_name: &str,
        dest_what: &str,
        original: &Value,
        status: Value,
    ) -> Result<bool, RelatedError> {
        let field = r.field();
        let kerr = |action: &'static str| {
            let (field, what) = (field.clone(), dest_what.to_string());
            move |source| RelatedError::Kube {
                field,
                action,
                what,
                source,
            }
        };
        let Some(current) = dest_api
            .get(dest_ns, dest_name)
            .await
            .map_err(kerr("reading the copy"))?
        else {
            return Ok(false);
        };
        let mut cur = serde_json::to_value(&current)
            .map_err(|e| config_err(&field, format!("the copy is not JSON: {e}")))?;
        if patch::json_eq(cur.get("status").unwrap_or(&Value::Null), &status) {
            return Ok(false);
        }
        cur["status"] = status;
        let obj: DynamicObject = serde_json::from_value(cur.clone())
            .map_err(|e| config_err(&field, format!("the copy is not a valid object: {e}")))?;
        match dest_api
            .api(dest_ns)
            .replace_status(dest_name, &PostParams::default(), &obj)
            .await
        {
            Ok(updated) => {
                dest_api.remember(updated);
                debug!(key = %self.key, identifier = %r.spec.identifier, copy = %dest_what, "forwarded status of related object");
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                warn!(key = %self.key, identifier = %r.spec.identifier, copy = %dest_what, "syncStatus is set but the copy has no status subresource");
                let kcp_side = if r.is_service() { &cur } else { original };
                self.emit(
                    self.key,
                    kcp_side,
                    true,
                    STATUS_SUBRESOURCE_MISSING,
                    format!(
                        "{field}: cannot sync status: the destination resource has no status subresource; set syncStatus: false or add subresources.status to its CRD"
                    ),
                );
                Ok(false)
            }
            Err(e) => Err(kerr("updating the status of the copy")(e)),
        }
    }
}
