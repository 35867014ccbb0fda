//! Start-up work a node must finish before `/readyz` passes: kube-apiserver's post-start
//! hooks that gate readiness (`poststarthook/rbac/bootstrap-roles`). Until this node has
//! seen the bootstrap roles and bindings, RBAC would refuse what they grant (a user's
//! `selfsubjectreviews`, a kubelet's node access), so a load balancer must not send it
//! requests yet.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The names of the hooks still running on this node; none by default (a router built
/// for a test is ready as soon as it has a leader).
#[derive(Debug, Default)]
pub struct StartHooks {
    pending: Mutex<BTreeSet<&'static str>>,
}

impl StartHooks {
    /// `name` has started: `/readyz` fails until [`StartHooks::finished`] is called for it.
    pub fn started(&self, name: &'static str) {
        self.pending.lock().expect("start hooks").insert(name);
    }

    /// `name` is done.
    pub fn finished(&self, name: &'static str) {
        self.pending.lock().expect("start hooks").remove(name);
    }

    /// The first hook still running, if any.
    pub fn first_pending(&self) -> Option<&'static str> {
        self.pending.lock().expect("start hooks").first().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_hook_is_pending_until_finished() {
        let hooks = StartHooks::default();
        assert_eq!(hooks.first_pending(), None);
        hooks.started("rbac/bootstrap-roles");
        assert_eq!(hooks.first_pending(), Some("rbac/bootstrap-roles"));
        hooks.finished("rbac/bootstrap-roles");
        assert_eq!(hooks.first_pending(), None);
    }
}
