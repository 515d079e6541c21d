//! Outages and crashes at scale: the servers killed, frozen and restarted
//! while the agent syncs, and the agent itself killed over and over. Each
//! test ends with the same ledger: every object has exactly one copy, every
//! spec went down, every status came up, every deletion completed with its
//! finalizer and state Secret gone.
//!
//! In `tests/run.sh` these run small (a few dozen objects, short freezes);
//! `tests/faults.sh` runs them at full scale (300 objects, 60 s freezes,
//! 15 kills over 1 000 objects in 20 workspaces). Figures are in
//! docs/reliability.md.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;
use syncweave::sync::labels::OBJECT_STATE_LABEL;
use syncweave_tests::env::*;
use syncweave_tests::*;

/// How long everything may take to converge once a fault is over. The
/// periodic check runs every 300 s, so converging within this proves that
/// the watches resumed (or relisted), not that a resync papered over them.
const CONVERGE: Duration = Duration::from_secs(180);

/// One consumer namespace's part of the ledger: the objects in kcp, their
/// copies on the service cluster, and the objects' names.
type Ledger = (Api<DynamicObject>, Api<DynamicObject>, Vec<String>);

/// Sizes of a run: small in the test suite, full with
/// `SYNCWEAVE_FAULT_SCALE=full` (`tests/faults.sh`).
struct Scale {
    objects: usize,
    freeze: Duration,
    /// How long the crash test's creations (and deletions) keep arriving.
    crash_phase: Duration,
    crash_objects: usize,
    crash_workspaces: usize,
    kills: usize,
}

fn scale() -> Scale {
    if std::env::var("SYNCWEAVE_FAULT_SCALE").as_deref() == Ok("full") {
        Scale {
            objects: 300,
            freeze: Duration::from_secs(60),
            crash_phase: Duration::from_secs(40),
            crash_objects: 1000,
            crash_workspaces: 20,
            kills: 15,
        }
    } else {
        Scale {
            objects: 40,
            // Longer than the 30 s in which a server that answers nothing
            // turns /readyz unready (three heartbeat periods).
            freeze: Duration::from_secs(40),
            crash_phase: Duration::from_secs(8),
            crash_objects: 60,
            crash_workspaces: 3,
            kills: 3,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// kill -9 the service cluster's kube-apiserver; start it again on the
    /// same etcd after 10 s.
    KillService,
    /// SIGSTOP the service cluster's kube-apiserver for the freeze time.
    FreezeService,
    /// SIGSTOP kcp for the freeze time.
    FreezeKcp,
    /// kill -9 kcp and start it again on the same data.
    RestartKcp,
}

async fn readyz(port: u16) -> Option<u16> {
    http_get(port, "/readyz").await.ok().map(|(code, _)| code)
}

/// Poll `/readyz` until it is not 200 and names the failing `check`
/// (`kcp` or `service-cluster`), for at most `within`; how long that took,
/// if it happened.
async fn becomes_unready(port: u16, check: &str, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Ok((code, body)) = http_get(port, "/readyz").await
            && code != 200
            && body.contains(&format!("[-]{check} failed"))
        {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    None
}

/// Create `names` as CronTabs in `api`, a few at a time.
async fn create_all(api: &Api<DynamicObject>, names: &[String], image: &str) {
    futures::stream::iter(names)
        .for_each_concurrent(8, |n| async move {
            create(api, crontab(n, image)).await;
        })
        .await;
}

async fn names_in(api: &Api<DynamicObject>) -> Result<BTreeSet<String>, String> {
    Ok(api
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect())
}

/// The copies each object of `names` (in `default`) must have, exactly.
fn copy_names(names: &[String]) -> BTreeSet<String> {
    names
        .iter()
        .map(|n| default_copy_name("default", n))
        .collect()
}

/// Wait until the copies in `copies` are exactly `expected`, each with
/// `spec.image == image`: none missing, none extra.
async fn converged(
    what: &str,
    copies: &Api<DynamicObject>,
    expected: &BTreeSet<String>,
    image: &str,
    within: Duration,
) {
    eventually(what, within, || async {
        let list = copies
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let names: BTreeSet<String> = list
            .items
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        let extra: Vec<_> = names.difference(expected).collect();
        if !extra.is_empty() {
            return Err(format!("copies that belong to no object: {extra:?}"));
        }
        let stale = list
            .items
            .iter()
            .filter(|o| str_at(o, "/spec/image") != Some(image))
            .count();
        let missing = expected.len() - names.len();
        if missing > 0 || stale > 0 {
            return Err(format!("{missing} copies missing, {stale} not updated yet"));
        }
        Ok(Some(()))
    })
    .await
}

/// Write a status on every copy and wait until every object in kcp shows it.
async fn statuses_go_up(kcp_apis: &[Ledger], phase: &str) {
    for (kcp_api, copies, names) in kcp_apis {
        futures::stream::iter(names)
            .for_each_concurrent(8, |n| async move {
                let patch = json!({"status": {"phase": phase}});
                copies
                    .patch_status(
                        &default_copy_name("default", n),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("status of the copy of {n}: {e}"));
            })
            .await;
        eventually("every status in kcp", CONVERGE, || async {
            let list = kcp_api
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let behind = list
                .items
                .iter()
                .filter(|o| str_at(o, "/status/phase") != Some(phase))
                .count();
            if behind > 0 {
                return Err(format!("{behind} objects without the status yet"));
            }
            Ok(Some(()))
        })
        .await;
    }
}

/// Create (or delete) the objects of every ledger entry one at a time,
/// spread evenly over `over`, so that the agent is killed while the work
/// keeps arriving, not after it is all done.
async fn paced(ledger: &[Ledger], over: Duration, create_them: bool) {
    let total: usize = ledger.iter().map(|(_, _, n)| n.len()).sum();
    let step = over / total.max(1) as u32;
    let mut next = tokio::time::Instant::now();
    for (api, _, names) in ledger {
        for n in names {
            tokio::time::sleep_until(next).await;
            next += step;
            if create_them {
                create(api, crontab(n, "image-1")).await;
            } else {
                api.delete(n, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("deleting {n} in kcp: {e}"));
            }
        }
    }
}

/// Delete every object in each kcp API (concurrently).
async fn delete_all(kcp_apis: &[Ledger]) {
    for (kcp_api, _, names) in kcp_apis {
        futures::stream::iter(names)
            .for_each_concurrent(8, |n| async move {
                kcp_api
                    .delete(n, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("deleting {n} in kcp: {e}"));
            })
            .await;
    }
}

/// Wait until every object is gone from kcp (so the agent removed its
/// finalizer), every copy from the service cluster, and every state Secret.
async fn all_gone(env: &Env, kcp_apis: &[Ledger], within: Duration) {
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(env.service_client.clone(), AGENT_NAMESPACE);
    eventually(
        "every object, copy and state Secret gone",
        within,
        || async {
            for (kcp_api, copies, _) in kcp_apis {
                let left = names_in(kcp_api).await?;
                if !left.is_empty() {
                    return Err(format!("{} objects still in kcp", left.len()));
                }
                let copies_left = names_in(copies).await?;
                if !copies_left.is_empty() {
                    return Err(format!("{} copies left", copies_left.len()));
                }
            }
            let states = secrets
                .list(&ListParams::default().labels(&format!("{OBJECT_STATE_LABEL}=true")))
                .await
                .map_err(|e| e.to_string())?;
            if !states.items.is_empty() {
                return Err(format!("{} state Secrets left", states.items.len()));
            }
            Ok(Some(()))
        },
    )
    .await
}

/// One outage in the middle of syncing `scale().objects` objects: once a
/// third of the copies exist, `fault` hits; afterwards everything converges
/// without a periodic resync, `/readyz` has reported the outage and
/// recovered, and the ledger balances.
async fn outage_mid_sync(fault: Fault) {
    let s = scale();
    let name = match fault {
        Fault::KillService => "out-svc-kill",
        Fault::FreezeService => "out-svc-freeze",
        Fault::FreezeKcp => "out-kcp-freeze",
        Fault::RestartKcp => "out-kcp-restart",
    };
    let kcp = match fault {
        Fault::FreezeKcp | Fault::RestartKcp => own_kcp(name).await,
        _ => syncweave_tests::kcp(),
    };
    let mut env = Env::prepare_on(kcp, None, name, crate::binary()).await;
    env.publish().await;
    let health = free_port();
    env.start_agent(&[&format!("--health-address=127.0.0.1:{health}")]);
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_api = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    eventually("the agent ready", CONVERGE, || async {
        Ok(readyz(health).await.filter(|c| *c == 200))
    })
    .await;

    let names: Vec<String> = (0..s.objects).map(|i| format!("o-{i}")).collect();
    let expected = copy_names(&names);
    let started = Instant::now();
    create_all(&kcp_api, &names, "image-1").await;
    let third = s.objects / 3;
    eventually("a third of the copies", CONVERGE, || async {
        let n = names_in(&copies).await?.len();
        Ok((n >= third).then_some(()))
    })
    .await;
    let at_fault = names_in(&copies).await.unwrap().len();

    let fault_started = Instant::now();
    let unready = match fault {
        Fault::KillService => {
            env.service.kill_apiserver();
            let seen = becomes_unready(health, "service-cluster", Duration::from_secs(10)).await;
            tokio::time::sleep(Duration::from_secs(10).saturating_sub(fault_started.elapsed()))
                .await;
            env.service.restart_apiserver().await.unwrap();
            seen
        }
        Fault::FreezeService => {
            env.service.pause();
            let seen = becomes_unready(health, "service-cluster", s.freeze).await;
            tokio::time::sleep(s.freeze.saturating_sub(fault_started.elapsed())).await;
            env.service.resume();
            seen
        }
        Fault::FreezeKcp => {
            kcp.pause();
            let seen = becomes_unready(health, "kcp", s.freeze).await;
            tokio::time::sleep(s.freeze.saturating_sub(fault_started.elapsed())).await;
            kcp.resume();
            seen
        }
        Fault::RestartKcp => {
            kcp.kill();
            let seen = becomes_unready(health, "kcp", Duration::from_secs(20)).await;
            kcp.restart().await.unwrap();
            seen
        }
    };
    let fault_took = fault_started.elapsed();
    // A restarted kcp issues its admin a new token: the test's own clients
    // start over (the agent's token is kcp's static one and stays valid).
    let client = kcp.client(&consumer.path).await.unwrap();
    let kcp_api = crontabs(&client, "default");
    let recovered = Instant::now();
    converged(
        "every copy after the outage",
        &copies,
        &expected,
        "image-1",
        CONVERGE,
    )
    .await;
    let converge_took = recovered.elapsed();
    eventually("/readyz back to 200", CONVERGE, || async {
        Ok(readyz(health).await.filter(|c| *c == 200))
    })
    .await;
    println!(
        "{fault:?}: {n} objects, {at_fault} copies when it hit; outage {fault_took:.1?}, \
         /readyz unready after {unready:?}; all {n} copies {converge_took:.1?} after it \
         ({total:.1?} from the first create)",
        n = s.objects,
        total = started.elapsed(),
    );
    assert!(
        unready.is_some(),
        "/readyz never reported the outage ({fault:?})"
    );

    // The agent is whole again: status up, a spec change down, deletions.
    let ledger = vec![(kcp_api.clone(), copies.clone(), names.clone())];
    statuses_go_up(&ledger, "Running").await;
    futures::stream::iter(&names)
        .for_each_concurrent(8, |n| {
            let kcp_api = &kcp_api;
            async move {
                kcp_api
                    .patch(
                        n,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"spec": {"image": "image-2"}})),
                    )
                    .await
                    .unwrap();
            }
        })
        .await;
    converged("every spec change", &copies, &expected, "image-2", CONVERGE).await;
    delete_all(&ledger).await;
    all_gone(&env, &ledger, CONVERGE).await;
    let agent = env.agent.as_ref().unwrap();
    assert!(
        agent.is_running(),
        "the agent kept running through the outage"
    );
    let log = syncweave_tests::agent::strip_ansi(&agent.log());
    assert!(
        !log.contains("panicked"),
        "a panic in the agent's log:\n{}",
        agent.log_tail(60)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn service_apiserver_killed_mid_sync_and_restarted() {
    outage_mid_sync(Fault::KillService).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn service_apiserver_frozen_mid_sync() {
    outage_mid_sync(Fault::FreezeService).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kcp_frozen_mid_sync() {
    outage_mid_sync(Fault::FreezeKcp).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kcp_killed_mid_sync_and_restarted() {
    outage_mid_sync(Fault::RestartKcp).await;
}

/// A small deterministic generator for kill moments (the seed is printed,
/// so a failing run can be repeated with `SYNCWEAVE_FAULT_SEED`).
struct Rng(u64);

impl Rng {
    fn seeded() -> (Rng, u64) {
        let seed = std::env::var("SYNCWEAVE_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        (Rng(seed | 1), seed)
    }

    /// A delay uniformly in `lo..hi`.
    fn between(&mut self, lo: Duration, hi: Duration) -> Duration {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let span = (hi - lo).as_millis() as u64;
        lo + Duration::from_millis(r % span.max(1))
    }
}

/// Kill the agent with SIGKILL `kills` times at random moments while
/// `done` is false, starting a new one at once each time. Returns how many
/// kills hit before the work was done.
async fn kill_repeatedly<F, Fut>(
    env: &mut Env,
    rng: &mut Rng,
    kills: usize,
    phase: &str,
    phase_length: Duration,
    mut done: F,
) -> usize
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut hit = 0;
    // Spread the kills over the phase (the agent needs a second or two to
    // start and list before a kill can catch it mid-work).
    let max_gap = (phase_length * 2 / kills.max(1) as u32).max(Duration::from_millis(600));
    for k in 0..kills {
        // The first kill comes early, so that it hits even a quick phase.
        let wait = if k == 0 {
            rng.between(Duration::from_millis(200), Duration::from_millis(1500))
        } else {
            rng.between(Duration::from_millis(300), max_gap)
        };
        tokio::time::sleep(wait).await;
        if done().await {
            break;
        }
        env.agent.as_ref().unwrap().signal(libc::SIGKILL);
        hit += 1;
        let log = format!("agent-{phase}-{k}.log");
        let args = env.agent_args(
            &env.dir.join("kcp.kubeconfig"),
            &env.dir.join("service.kubeconfig"),
            &[],
        );
        env.agent = Some(Agent::start(&env.binary, &args, env.dir.join(log)).unwrap());
    }
    hit
}

/// Crash consistency at scale: the agent is killed with SIGKILL at random
/// moments while it syncs objects across several workspaces, and again while
/// they are deleted. Afterwards: exactly one copy per object, every status
/// up, every deletion complete (finalizers removed), no state Secret left.
#[tokio::test(flavor = "multi_thread")]
async fn killed_agent_loses_nothing_at_scale() {
    let s = scale();
    let (mut rng, seed) = Rng::seeded();
    let mut env = Env::prepare("crash-scale", crate::binary()).await;
    env.publish().await;
    env.start_agent(&[]);
    let mut ledger = Vec::new();
    let per_workspace = s.crash_objects / s.crash_workspaces;
    for w in 0..s.crash_workspaces {
        let (consumer, client) = env.consumer(&format!("c{w}")).await;
        let names: Vec<String> = (0..per_workspace).map(|i| format!("o-{i}")).collect();
        ledger.push((
            crontabs(&client, "default"),
            crontabs(&env.service_client, &consumer.cluster),
            names,
        ));
    }
    let total = per_workspace * s.crash_workspaces;
    println!(
        "seed {seed}: {total} objects in {} workspaces",
        s.crash_workspaces
    );

    // Sync, with kills.
    let started = Instant::now();
    let creating = {
        let ledger = ledger.clone();
        let over = s.crash_phase;
        tokio::spawn(async move { paced(&ledger, over, true).await })
    };
    let copies_done = || {
        let ledger = ledger.clone();
        async move {
            let mut n = 0;
            for (_, copies, _) in &ledger {
                n += names_in(copies).await.map(|s| s.len()).unwrap_or(0);
            }
            n >= total
        }
    };
    let hit_sync = kill_repeatedly(
        &mut env,
        &mut rng,
        s.kills,
        "sync",
        s.crash_phase,
        copies_done,
    )
    .await;
    creating.await.unwrap();
    for (_, copies, names) in &ledger {
        converged(
            "every copy after the kills",
            copies,
            &copy_names(names),
            "image-1",
            CONVERGE,
        )
        .await;
    }
    let synced = started.elapsed();
    statuses_go_up(&ledger, "Running").await;

    // Delete, with kills.
    let started = Instant::now();
    let deleting = {
        let ledger = ledger.clone();
        let over = s.crash_phase;
        tokio::spawn(async move { paced(&ledger, over, false).await })
    };
    let gone = || {
        let ledger = ledger.clone();
        async move {
            for (api, _, _) in &ledger {
                if !names_in(api).await.map(|s| s.is_empty()).unwrap_or(false) {
                    return false;
                }
            }
            true
        }
    };
    let hit_delete =
        kill_repeatedly(&mut env, &mut rng, s.kills, "delete", s.crash_phase, gone).await;
    deleting.await.unwrap();
    all_gone(&env, &ledger, CONVERGE).await;
    println!(
        "seed {seed}: {total} objects in {} workspaces: {hit_sync} kills during the sync \
         ({synced:.1?}), {hit_delete} during the deletion ({:.1?}); 0 missing, 0 extra \
         copies, every status up, every object, copy and state Secret gone",
        s.crash_workspaces,
        started.elapsed(),
    );
    assert!(
        hit_sync > 0 && hit_delete > 0,
        "the agent was killed during both phases ({hit_sync}, {hit_delete})"
    );
}
