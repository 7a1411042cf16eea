//! Provider limits shared by the workers of a cluster, through leases in a JetStream
//! key-value bucket (`sage_limits`, docs/architecture.md, "Provider limits across workers").
//!
//! Each worker holds a lease on every limit group it calls: the key
//! `{group, hex}.{worker id}`, renewed every [`RENEW`] and gone [`LIMIT_LEASE`] after its last
//! renewal (the bucket's `max_age`), so a worker that dies stops counting by itself. After each
//! renewal the worker counts the leases of each group and holds `1 / leases` of the group's
//! limits ([`Limiter::set_share`]): N workers calling one key share its limit evenly. A group
//! this worker has not called for a lease period gives its lease up, so the workers still
//! calling it get its part.
//!
//! Each worker also keeps a presence key (`w.{worker id}`, renewed and gone the same way), so a
//! group a worker calls for the first time starts at `1 / the workers present` (or the most seen
//! leasing one group, if more) until its first lease round, rather than at the whole limit: four
//! workers starting one run together would otherwise call four times the limit for a round.
//!
//! The workers leasing a group also take turns on its requests when they are slow enough for
//! a provider to refuse two workers' calls that come close ([`Turn`]): worker k of N (sorted by
//! id) starts on every N-th point of one wall-clock grid.
//!
//! No single point stops the run: the bucket is a replicated JetStream stream, and a worker that
//! cannot reach it keeps the shares it last had (never more), says so in its log once, and takes
//! the bucket's answers again when it is back. A group first used during an outage starts at
//! the last first share.

use super::AbortOnDrop;
use futures::StreamExt;
use sage_ports::llm::{Limiter, Limiters, Turn};
use sage_ports::transport::nats::{BROKER_WAIT, Broker, LIMIT_LEASE, bounded};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often a lease is renewed and the shares recounted.
pub const RENEW: Duration = Duration::from_secs(2);

/// Keeps this worker's leases on the limit groups of `limiters` until `stop`, then gives them
/// up (best effort). `worker`: this process's id in the bucket.
pub fn keep_leases(
    broker: Broker,
    limiters: Arc<Limiters>,
    worker: String,
    mut stop: watch::Receiver<bool>,
) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(async move {
        let mut leases = Leases::new(worker);
        loop {
            leases.round(&broker, &limiters).await;
            tokio::select! {
                _ = tokio::time::sleep(RENEW) => {}
                // A run brought a new group: lease it now, not at the next round.
                _ = limiters.added() => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        leases.give_up(&broker).await;
    }))
}

/// The prefix of a worker's presence key (not hex: never read as a group).
const PRESENCE: &str = "w.";

/// The key that says a worker is present.
fn presence_key(worker: &str) -> String {
    format!("{PRESENCE}{worker}")
}

/// The key of a worker's lease on a group (group names may hold characters a key may not).
fn lease_key(group: &str, worker: &str) -> String {
    format!("{}.{worker}", hex::encode(group))
}

/// A worker id: random, in the characters a key takes.
pub fn worker_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded randomly per process; the process id and the time tell apart two
    // processes that would draw alike.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("{:016x}", h.finish())
}

struct Leases {
    worker: String,
    /// Per group: its attempts started when last seen, how many rounds it has been idle, and
    /// when this worker first saw it.
    seen: HashMap<String, (u64, u32, Instant)>,
    /// The keys this worker holds.
    held: Vec<String>,
    /// Whether the last round could not reach the bucket (logged once per outage).
    unreachable: bool,
    /// The most workers seen leasing one group, or present.
    most_workers: usize,
    /// The bucket, once opened (opened again after an error).
    bucket: Option<async_nats::jetstream::kv::Store>,
}

impl Leases {
    fn new(worker: String) -> Leases {
        Leases {
            worker,
            seen: HashMap::new(),
            held: Vec::new(),
            unreachable: false,
            most_workers: 1,
            bucket: None,
        }
    }

    /// Renews the leases of the groups called lately, gives up the others, and sets every
    /// group's share from the leases counted.
    async fn round(&mut self, broker: &Broker, limiters: &Limiters) {
        let groups = limiters.all();
        let idle_rounds = (LIMIT_LEASE.as_secs_f64() / RENEW.as_secs_f64()).ceil() as u32;
        let active: Vec<&Arc<Limiter>> = groups
            .iter()
            .filter(|l| {
                let started = l.started();
                let entry =
                    self.seen
                        .entry(l.name().to_string())
                        .or_insert((u64::MAX, 0, Instant::now()));
                entry.1 = if entry.0 == started { entry.1 + 1 } else { 0 };
                entry.0 = started;
                entry.1 < idle_rounds
            })
            .collect();
        let renewed = self.renew(broker, &active).await;
        if renewed.is_err() {
            self.bucket = None;
        }
        match renewed {
            Ok((leases, present)) => {
                if self.unreachable {
                    tracing::info!("the limits bucket answers again; shares follow its leases");
                }
                self.unreachable = false;
                self.most_workers = leases
                    .values()
                    .map(Vec::len)
                    .max()
                    .unwrap_or(1)
                    .max(present.len())
                    .max(1);
                for limiter in &groups {
                    // The workers sharing the group: those leasing it, this one included; for
                    // a group met less than a lease period ago, the workers present if more
                    // (they load the run at about the same time, and may not have leased it).
                    let mut sharing = leases.get(limiter.name()).cloned().unwrap_or_default();
                    if !sharing.contains(&self.worker) {
                        sharing.push(self.worker.clone());
                    }
                    let young = self
                        .seen
                        .get(limiter.name())
                        .is_some_and(|s| s.2.elapsed() < LIMIT_LEASE);
                    if young && present.len() > sharing.len() {
                        sharing = present.clone();
                    }
                    sharing.sort_unstable();
                    let workers = sharing.len();
                    let rank = sharing.iter().position(|w| *w == self.worker).unwrap_or(0);
                    let turn_changed = limiter.set_turn(Some(Turn { rank, of: workers }));
                    let share = 1.0 / workers as f64;
                    if (limiter.now().share - share).abs() > f64::EPSILON || turn_changed {
                        tracing::info!(
                            endpoint = limiter.name(),
                            workers,
                            share,
                            turn = rank,
                            "provider limit shared"
                        );
                        limiter.set_share(share);
                    }
                }
                limiters.set_first_share(1.0 / self.most_workers as f64);
            }
            Err(error) => {
                if !self.unreachable {
                    tracing::warn!(
                        %error,
                        "cannot reach the limits bucket; this worker keeps the share of each provider limit it last had (a new one: 1/{})",
                        self.most_workers
                    );
                }
                self.unreachable = true;
                limiters.set_first_share(1.0 / self.most_workers as f64);
            }
        }
    }

    /// Puts this worker's presence and leases, deletes those of groups no longer called, and
    /// lists the workers leasing each group and the workers present (this one included).
    async fn renew(
        &mut self,
        broker: &Broker,
        active: &[&Arc<Limiter>],
    ) -> Result<(HashMap<String, Vec<String>>, Vec<String>), String> {
        let bucket = match &self.bucket {
            Some(bucket) => bucket.clone(),
            None => broker.limits().await.map_err(|e| e.to_string())?,
        };
        self.bucket = Some(bucket.clone());
        let wanted: Vec<String> = std::iter::once(presence_key(&self.worker))
            .chain(active.iter().map(|l| lease_key(l.name(), &self.worker)))
            .collect();
        for key in &wanted {
            bounded(
                format!("renewing the lease {key}"),
                bucket.put(key, bytes::Bytes::from_static(b"1")),
            )
            .await
            .map_err(|e| e.to_string())?;
        }
        for key in self.held.iter().filter(|k| !wanted.contains(k)) {
            let _ = bounded(format!("giving up the lease {key}"), bucket.delete(key)).await;
        }
        self.held = wanted;
        let mut keys = bounded("listing the leases", bucket.keys())
            .await
            .map_err(|e| e.to_string())?;
        // A key put again while the listing runs may be listed twice: each counts once.
        let mut listed = HashSet::new();
        loop {
            let key = match tokio::time::timeout(BROKER_WAIT, keys.next()).await {
                Ok(None) => break,
                Ok(Some(Ok(key))) => key,
                Ok(Some(Err(e))) => return Err(format!("listing the leases: {e}")),
                Err(_) => return Err("listing the leases: no answer".into()),
            };
            listed.insert(key);
        }
        let mut leases: HashMap<String, Vec<String>> = HashMap::new();
        let mut present = vec![self.worker.clone()];
        for key in listed {
            let Some((head, worker)) = key.split_once('.') else {
                continue;
            };
            if key.starts_with(PRESENCE) {
                if worker != self.worker {
                    present.push(worker.to_string());
                }
                continue;
            }
            let group = hex::decode(head)
                .ok()
                .and_then(|g| String::from_utf8(g).ok());
            if let Some(group) = group {
                leases.entry(group).or_default().push(worker.to_string());
            }
        }
        Ok((leases, present))
    }

    /// Deletes this worker's leases (on a clean stop), so the others get its part at once.
    async fn give_up(&self, broker: &Broker) {
        let Ok(bucket) = broker.limits().await else {
            return;
        };
        for key in &self.held {
            let _ = bounded(format!("giving up the lease {key}"), bucket.delete(key)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_keys_hold_any_group_name() {
        assert_eq!(
            lease_key("gpt-4o:mini", "ab12"),
            "6770742d346f3a6d696e69.ab12"
        );
        assert!(
            worker_id()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}
