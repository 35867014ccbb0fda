//! Owns the deliberate bugs the simulator uses to prove its checkers bite.
//!
//! Each [`Mutation`] names one broken behaviour at one place in the node (a read served
//! without its read index, a precondition skipped at apply, ...). The code at that place
//! asks [`active`]; without the `mutations` cargo feature `active` is a constant `false`
//! and the broken branch compiles away, so no mutation can reach a real binary. With the
//! feature (enabled only by the simulator's runner, `kuorum-sim --features mutations`),
//! a simulation selects one mutation for its own thread: turmoil runs every host on the
//! thread that drives the simulation, so the choice never leaks into other tests.

/// A deliberate bug, each caught by a named checker (see docs/simulation.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutation {
    /// A Most-Recent read answers from the local cache without a read index.
    StaleRead,
    /// The watch fan-out drops one event of every 50 it delivers to a watcher.
    DropEvent,
    /// An update's resourceVersion precondition is not checked at apply.
    SkipPrecondition,
    /// The log store reports an append durable before its fsync.
    AckBeforeFsync,
    /// A bookmark carries an RV ahead of the events delivered before it.
    EarlyBookmark,
    /// A node the leader says is not a member (it was removed) reads its own state as
    /// current instead of refusing.
    RemovedNodeServes,
}

impl Mutation {
    pub const ALL: [Mutation; 6] = [
        Mutation::StaleRead,
        Mutation::DropEvent,
        Mutation::SkipPrecondition,
        Mutation::AckBeforeFsync,
        Mutation::EarlyBookmark,
        Mutation::RemovedNodeServes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutation::StaleRead => "stale-read",
            Mutation::DropEvent => "drop-event",
            Mutation::SkipPrecondition => "skip-precondition",
            Mutation::AckBeforeFsync => "ack-before-fsync",
            Mutation::EarlyBookmark => "early-bookmark",
            Mutation::RemovedNodeServes => "removed-node-serves",
        }
    }

    pub fn parse(s: &str) -> Option<Mutation> {
        Mutation::ALL.into_iter().find(|m| m.name() == s)
    }
}

#[cfg(feature = "mutations")]
thread_local! {
    static ACTIVE: std::cell::Cell<Option<Mutation>> = const { std::cell::Cell::new(None) };
}

/// Whether `m` is the mutation selected on this thread.
#[inline(always)]
pub fn active(m: Mutation) -> bool {
    #[cfg(feature = "mutations")]
    {
        ACTIVE.with(|a| a.get() == Some(m))
    }
    #[cfg(not(feature = "mutations"))]
    {
        let _ = m;
        false
    }
}

/// Selects the mutation for this thread (None: the correct behaviour). Returns whether
/// mutations are compiled in at all.
pub fn select(m: Option<Mutation>) -> bool {
    #[cfg(feature = "mutations")]
    {
        ACTIVE.with(|a| a.set(m));
        true
    }
    #[cfg(not(feature = "mutations"))]
    {
        m.is_none()
    }
}
