//! The in-sync memo: which versions of a kcp object and its copy the last
//! reconcile left in sync, so that a check finding both unchanged does
//! nothing (no plugin call, no request), and which versions a reconcile
//! wrote itself.

use super::*;

tokio::task_local! {
    /// The (kcp object, copy) resourceVersions the running reconcile wrote.
    pub(super) static WROTE: std::cell::Cell<(Option<u64>, Option<u64>)>;
}

/// What a reconcile left in sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InSync {
    /// The (kcp object, copy) resourceVersions.
    pub(super) versions: (u64, u64),
    /// When the reconcile wrote (a finalizer, a new copy): the plugins ran
    /// on the objects *before* those writes, not on these versions (a copy
    /// just placed was computed with no copy for `other` to read). Such an
    /// entry answers the echoes of the writes for half a resync period;
    /// the periodic check after that runs the plugins on what was written,
    /// so a mutation that reads the copy is seen, without a second plugin
    /// run per new object in a burst.
    pub(super) written_at: Option<tokio::time::Instant>,
}

impl SyncContext {
    /// The agent wrote `obj` (the kcp object): into the cache, and noted as
    /// this reconcile's own version of it.
    pub(super) fn kcp_written(&self, obj: DynamicObject) {
        let rv = crate::sync::pack::resource_version(&obj);
        let _ = WROTE.try_with(|w| w.set((rv, w.get().1)));
        self.cache.write_through(obj);
    }

    /// The agent wrote the copy `obj`: as [`SyncContext::kcp_written`].
    pub(super) fn copy_written(&self, obj: DynamicObject) {
        let rv = crate::sync::pack::resource_version(&obj);
        let _ = WROTE.try_with(|w| w.set((w.get().0, rv)));
        self.copies.write_through(obj);
    }

    /// The (kcp object, copy) resourceVersions of `key` as the caches hold
    /// them, when the in-sync shortcut applies.
    /// Read from the caches' index, without decoding either object: this
    /// runs twice per reconcile.
    pub(super) fn versions(&self, key: &ObjectKey) -> Option<(u64, u64)> {
        if !self.plugins().related.is_empty()
            || self.namespace_filter.is_some()
            || !self.copies.synced()
        {
            return None;
        }
        let remote = self.cache.resource_version(key)?;
        let copy = self.copies.resource_version(&key.to_string())?;
        Some((remote, copy))
    }
}
