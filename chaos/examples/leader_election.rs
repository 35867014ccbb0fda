//! Lease-based leader election, written the way client-go's leaderelection package does
//! it, for a singleton worker with side effects outside the API server, and its chaos
//! test.
//!
//! Two replicas (`elector-a`, `elector-b`) contend for the Lease `default/singleton`:
//! - a replica that finds no lease, or one not renewed for [`LEASE_DURATION`] since it
//!   last saw it change, takes it (`leaseTransitions` + 1, with a resourceVersion
//!   precondition so only one taker wins);
//! - the holder renews it every [`RETRY_PERIOD`];
//! - while it leads, it does its work: an action on an external system (a payment
//!   processor, a DNS provider, a cloud API) that is not behind the API server and that
//!   it reaches even when the API server is out of its reach. Each action carries the
//!   leader's fencing token, the `leaseTransitions` it took the lease with.
//!
//! **The planted bug** ([`Version::Buggy`]): a renewal that fails (a timeout, a 5xx, a
//! partition) does not make the leader step down; "the API server is having a bad
//! moment, nobody else can have taken the lease". During a partition between the leader
//! and the API servers longer than the lease, the other replica takes over, and both act.
//!
//! **The fix** ([`Version::Fixed`]): client-go's `RenewDeadline`. A leader that has not
//! renewed within [`RENEW_DEADLINE`] of its last successful renewal's start stops acting,
//! before the lease can expire for anyone else ([`RENEW_DEADLINE`] < [`LEASE_DURATION`]).
//!
//! The invariant, checked at the external system: fencing tokens never go backwards, so
//! no action of a deposed leader comes after one of its successor. And at the end: a
//! leader acts again once the faults are over.
//!
//! Run it: `cargo run --release -p kuorum-chaos --example leader_election -- [buggy] [SEEDS]`;
//! its tests: `cargo test --release -p kuorum-chaos --example leader_election`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube::Client;
use kuorum_chaos::{Env, FaultKind, FaultMix, Outcome, Simulation};

const LEASE: &str = "singleton";
/// How long a lease holds without renewal (client-go's LeaseDuration; shortened, as
/// tests do, from the usual 15 s).
const LEASE_DURATION: Duration = Duration::from_secs(6);
/// How long a leader keeps acting without a successful renewal (RenewDeadline).
const RENEW_DEADLINE: Duration = Duration::from_secs(4);
/// How often every replica tries to take or renew the lease (RetryPeriod).
const RETRY_PERIOD: Duration = Duration::from_secs(1);

/// Which elector runs: the one with the planted bug, or the fixed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Buggy,
    Fixed,
}

/// One action on the external system.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub at: Duration,
    pub by: String,
    pub token: i32,
}

/// The external system the leader acts on: it records every action, in time order.
#[derive(Debug, Clone, Default)]
pub struct ExternalSystem(Arc<Mutex<Vec<Action>>>);

impl ExternalSystem {
    fn act(&self, by: &str, token: i32) {
        let at = turmoil::elapsed();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(Action { at, by: by.to_string(), token });
    }

    fn actions(&self) -> Vec<Action> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The lease record as an elector compares it: who holds it, since which transition,
/// renewed when.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    holder: String,
    transitions: i32,
    renewed: serde_json::Value,
}

fn record(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity.unwrap_or_default(),
        transitions: spec.lease_transitions.unwrap_or(0),
        renewed: serde_json::to_value(&spec.renew_time).unwrap_or_default(),
    }
}

/// The time now as a MicroTime (the simulation starts at 2026-01-01T00:00:00Z).
fn micro_time_now() -> String {
    let t = turmoil::elapsed();
    let secs = t.as_secs();
    format!("2026-01-01T{:02}:{:02}:{:02}.{:06}Z", secs / 3600, (secs / 60) % 60, secs % 60, t.subsec_micros())
}

/// What this elector last saw of the lease, and when it saw it change.
#[derive(Default)]
struct Observed {
    record: Option<Record>,
    changed_at: Duration,
}

impl Observed {
    fn saw(&mut self, r: Record) {
        if self.record.as_ref() != Some(&r) {
            self.record = Some(r);
            self.changed_at = turmoil::elapsed();
        }
    }
}

/// One try to take or renew the lease: `Some(token)` if this elector holds it now,
/// `None` if another does.
async fn try_acquire_or_renew(api: &Api<Lease>, me: &str, seen: &mut Observed) -> Result<Option<i32>, kube::Error> {
    let now = micro_time_now();
    let Some(current) = api.get_opt(LEASE).await? else {
        let lease: Lease = serde_json::from_value(serde_json::json!({
            "metadata": {"name": LEASE},
            "spec": {"holderIdentity": me, "leaseDurationSeconds": LEASE_DURATION.as_secs(),
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
        }))
        .expect("a lease");
        return match api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                seen.saw(record(&created));
                Ok(Some(0))
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
            Err(e) => Err(e),
        };
    };
    let r = record(&current);
    seen.saw(r.clone());
    if r.holder != me && turmoil::elapsed() < seen.changed_at + LEASE_DURATION {
        return Ok(None);
    }
    let token = if r.holder == me { r.transitions } else { r.transitions + 1 };
    let mut next = serde_json::to_value(&current).expect("a lease as JSON");
    next["spec"]["holderIdentity"] = me.into();
    next["spec"]["renewTime"] = now.clone().into();
    next["spec"]["leaseTransitions"] = token.into();
    if r.holder != me {
        next["spec"]["acquireTime"] = now.into();
    }
    let next: Lease = serde_json::from_value(next).expect("a lease");
    // The resourceVersion in `next` makes this a compare-and-swap.
    match api.replace(LEASE, &PostParams::default(), &next).await {
        Ok(written) => {
            seen.saw(record(&written));
            Ok(Some(token))
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

/// One replica: takes or renews the lease every retry period, and acts while it leads.
async fn elector(client: Client, me: String, version: Version, external: ExternalSystem) -> Outcome {
    let api: Api<Lease> = Api::namespaced(client, "default");
    let mut seen = Observed::default();
    // While leading: the fencing token, and when the last successful renewal started.
    let mut leading: Option<(i32, Duration)> = None;
    loop {
        let started = turmoil::elapsed();
        match try_acquire_or_renew(&api, &me, &mut seen).await {
            Ok(Some(token)) => leading = Some((token, started)),
            Ok(None) => leading = None,
            // A failed try says nothing about who leads: the renew deadline decides.
            Err(_) => {}
        }
        if let Some((token, renewed)) = leading {
            // BUG (Buggy): no renew deadline; a leader that cannot renew goes on acting.
            if version == Version::Buggy || turmoil::elapsed() < renewed + RENEW_DEADLINE {
                external.act(&me, token);
            } else {
                // The fix: past the renew deadline, step down before anyone can take over.
                leading = None;
            }
        }
        tokio::time::sleep(RETRY_PERIOD).await;
    }
}

/// The invariant at the external system: fencing tokens never go backwards.
fn tokens_never_go_backwards(actions: &[Action]) -> Outcome {
    let mut newest: Option<&Action> = None;
    for a in actions {
        if let Some(n) = newest {
            if a.token < n.token {
                return Err(format!(
                    "split brain: {} acted with token {} at {:.3}s, after {} acted with token {} at {:.3}s",
                    a.by,
                    a.token,
                    a.at.as_secs_f64(),
                    n.by,
                    n.token,
                    n.at.as_secs_f64()
                ));
            }
        }
        if newest.is_none_or(|n| a.token > n.token) {
            newest = Some(a);
        }
    }
    Ok(())
}

/// One run: two electors on a 3-node cluster; faults aimed at what a lease survives.
pub fn scenario(seed: u64, version: Version) -> Simulation {
    let external = ExternalSystem::default();
    let mut sim = Simulation::new(seed).duration(Duration::from_secs(60)).settle(Duration::from_secs(25)).faults(
        FaultMix::only(&[
            FaultKind::IsolateHost,
            FaultKind::RestartHost,
            FaultKind::CrashNode,
            FaultKind::MoveLeader,
            FaultKind::Latency,
            FaultKind::Errors,
        ]),
    );
    for me in ["elector-a", "elector-b"] {
        let external = external.clone();
        sim = sim.controller(me, move |env: Env| elector(env.client(), me.to_string(), version, external.clone()));
    }
    sim.check(move |env| async move {
        let actions = external.actions();
        tokens_never_go_backwards(&actions)?;
        let since = env.faults_end() + Duration::from_secs(10);
        if !actions.iter().any(|a| a.at >= since) {
            return Err(format!(
                "no leader acted in the {:.0}s after the faults",
                (env.elapsed() - since).as_secs_f64()
            ));
        }
        Ok(())
    })
}

/// `leader_election [buggy] [FIRST..END]`: runs the seeds and prints each verdict.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let version = if args.iter().any(|a| a == "buggy") { Version::Buggy } else { Version::Fixed };
    println!("the elector, {} version", if version == Version::Buggy { "buggy" } else { "fixed" });
    kuorum_chaos::seeds::main_over_seeds(&args, |seed| scenario(seed, version));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planted bug is caught within the first 10 seeds, by the invariant it breaks,
    /// and the failing seed replays the same failure.
    #[test]
    fn the_planted_bug_is_caught() {
        kuorum_chaos::seeds::assert_caught(0..10, |seed| scenario(seed, Version::Buggy), "split brain");
    }

    /// The fixed elector passes 1,000 seeds (`KUORUM_CHAOS_SEEDS` for another number).
    #[test]
    fn the_fixed_elector_passes() {
        let n = kuorum_chaos::seeds::seed_count(1000);
        kuorum_chaos::check_seeds(0..n, |seed| scenario(seed, Version::Fixed));
    }

    #[test]
    fn the_invariant_sees_a_deposed_leader_act() {
        let act = |at: u64, by: &str, token| Action { at: Duration::from_secs(at), by: by.into(), token };
        assert!(tokens_never_go_backwards(&[act(1, "a", 0), act(2, "a", 0), act(3, "b", 1), act(4, "b", 1)]).is_ok());
        let err = tokens_never_go_backwards(&[act(1, "a", 0), act(3, "b", 1), act(4, "a", 0)]).unwrap_err();
        assert!(err.contains("a acted with token 0 at 4.000s, after b acted with token 1"), "{err}");
    }
}
