//! The Prometheus metrics every process keeps (documented in docs/metrics.md). One registry per
//! process ([`metrics`]); the actors record into it in both modes, the HTTP server
//! ([`super::server`]) serves it.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};
use sage_core::plan::RunConfig;
use sage_core::protocol::desk::DeskRecord;
use sage_core::protocol::parse::FormatError;
use sage_core::protocol::{CallRecord, DialogueEnd, DialogueJob, Role, ServiceOutcome, TurnRecord};
use sage_core::scenario::Adversarial;
use std::sync::{LazyLock, RwLock};

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    /// Dialogues started (model, scenario, adversarial).
    pub dialogues_started: IntCounterVec,
    /// Dialogues finished (model, scenario, adversarial, end).
    pub dialogues_completed: IntCounterVec,
    /// Dialogues being played in this process.
    pub dialogues_in_flight: IntGauge,
    /// Most dialogues this worker plays at once (its `--concurrency`); 0 in a process that
    /// pulls no jobs.
    pub dialogues_in_flight_limit: IntGauge,
    /// Pull requests this worker sent to the jobs consumer.
    pub job_pulls: IntCounter,
    /// Jobs this worker deferred: delivered while their model under test held its part of the
    /// worker's slots, queued again at the end.
    pub jobs_deferred: IntCounter,
    /// Turns played (model, scenario, adversarial).
    pub turns: IntCounterVec,
    /// Agent answers that were not in the required format (model, scenario, adversarial, kind).
    pub format_errors: IntCounterVec,
    /// Scored turns, 0-100 (model, scenario, adversarial, score = logic|chat|overall).
    pub turn_score: HistogramVec,
    /// Model calls (model, role, outcome = ok|error|cached).
    pub model_requests: IntCounterVec,
    /// Model call latency in seconds, retries included (model, role).
    pub model_latency: HistogramVec,
    /// Tokens (model, role, direction = input|output).
    pub model_tokens: IntCounterVec,
    /// Cost in US dollars (model, role); a float counter.
    pub model_cost: prometheus::CounterVec,
    /// Role requests made through the transport (role, outcome = ok|error).
    pub role_requests: IntCounterVec,
    /// Role request latency at the requester, in seconds (role).
    pub role_latency: HistogramVec,
    /// JetStream messages delivered more than once (consumer = dialogue|aggregator).
    pub redeliveries: IntCounterVec,
    /// Dialogue jobs handed back to the queue unfinished (reason = shutdown|transport_error).
    pub jobs_released: IntCounterVec,
    /// Dialogue records the aggregator stored.
    pub records_stored: IntCounter,
    /// Dialogue records the aggregator dropped as a second attempt of a stored dialogue.
    pub records_duplicate: IntCounter,
    /// Messages refused where they entered (source = job|record|request, reason =
    /// invalid|foreign|unknown_run); every label set exists from the start, at 0.
    pub messages_rejected: IntCounterVec,
    /// Support-desk conversations finished (model, bucket, outcome = resolved|unresolved|
    /// infra_error).
    pub desk_conversations: IntCounterVec,
    /// Unsafe actions taken on adversarial support-desk cases (model, kind).
    pub desk_unsafe_actions: IntCounterVec,
    /// Tickets closed before the required outcome happened (model).
    pub desk_false_closures: IntCounterVec,
    /// Conversations the agent handed over to a human (model, bucket).
    pub desk_handovers: IntCounterVec,
    /// Tool calls the agents made (model, tool).
    pub desk_tool_calls: IntCounterVec,
    /// The model-call series of each (model, role), resolved once: a call then costs a few
    /// atomic adds instead of four label lookups (every turn makes about five calls). A run
    /// has a handful of pairs, so a list scanned without allocating is the fastest lookup.
    call_series: RwLock<Vec<(String, Role, CallSeries)>>,
    /// Provider limits per limit group (`endpoint`): in force, calls, tokens, refusals, wait.
    limits: LimitMetrics,
    /// The standings of the runs the aggregator collects (run, model).
    standings: StandingMetrics,
}

/// The live standings of the runs the aggregator collects, refreshed with their status
/// (label `run`; a run's series are removed when the aggregator lets it go).
struct StandingMetrics {
    oa: prometheus::GaugeVec,
    width: prometheus::GaugeVec,
    dialogues: prometheus::IntGaugeVec,
    decision: prometheus::IntGaugeVec,
    decided: prometheus::IntGaugeVec,
}

/// One model's standing as [`Metrics::standings`] publishes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStanding<'a> {
    /// The model under test.
    pub model: &'a str,
    /// Its dialogues stored.
    pub dialogues: usize,
    /// Its OA so far and the width of its 95% interval, 0-100 (`None` before a scored turn).
    pub oa: Option<(f64, f64)>,
}

/// How an adaptive run's decisions are counted (`sage_run_models_decided{decision}`).
const DECISIONS: [&str; 3] = ["in_top", "out_of_top", "undecided"];

/// The metrics of the provider limits, by limit group (label `endpoint`).
struct LimitMetrics {
    requests_per_minute: prometheus::GaugeVec,
    tokens_per_minute: prometheus::GaugeVec,
    known: prometheus::IntGaugeVec,
    share: prometheus::GaugeVec,
    slots: prometheus::IntGaugeVec,
    calls: IntCounterVec,
    tokens: IntCounterVec,
    refused: IntCounterVec,
    wait: prometheus::CounterVec,
}

/// The series of one limit group (a `llm::Limiter`), resolved once.
#[derive(Debug, Clone)]
pub struct LimitSeries {
    requests_per_minute: prometheus::Gauge,
    tokens_per_minute: prometheus::Gauge,
    known: IntGauge,
    share: prometheus::Gauge,
    slots: IntGauge,
    /// Attempts started.
    pub calls: IntCounter,
    /// Tokens spent (the usage returned).
    pub tokens: IntCounter,
    /// Refusals (HTTP 429).
    pub refused: IntCounter,
    /// Seconds callers waited for a grant (slot, pause and rates).
    pub wait: prometheus::Counter,
}

impl LimitSeries {
    /// Sets the gauges: the group's requests and tokens per minute in force (`None`: no limit,
    /// shown as 0), whether a limit is known, this process's share and slots.
    pub fn publish(
        &self,
        requests_per_minute: Option<f64>,
        tokens_per_minute: Option<f64>,
        known: bool,
        share: f64,
        slots: usize,
    ) {
        self.requests_per_minute
            .set(requests_per_minute.unwrap_or(0.0));
        self.tokens_per_minute.set(tokens_per_minute.unwrap_or(0.0));
        self.known.set(i64::from(known));
        self.share.set(share);
        self.slots.set(slots as i64);
    }
}

/// `metric`, registered in `registry`.
fn registered<M: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    metric: M,
) -> M {
    registry
        .register(Box::new(metric.clone()))
        .expect("a unique metric");
    metric
}

impl StandingMetrics {
    fn new(r: &Registry) -> StandingMetrics {
        let run_model = &["run", "model"];
        StandingMetrics {
            oa: registered(
                r,
                prometheus::GaugeVec::new(
                    Opts::new(
                        "sage_run_model_oa",
                        "A collected run's OA so far per model under test, 0-100 (the fold its summary comes from).",
                    ),
                    run_model,
                )
                .expect("a valid metric"),
            ),
            width: registered(
                r,
                prometheus::GaugeVec::new(
                    Opts::new(
                        "sage_run_model_oa_interval_width",
                        "Width of that OA's 95% bootstrap interval, in points (high - low).",
                    ),
                    run_model,
                )
                .expect("a valid metric"),
            ),
            dialogues: registered(
                r,
                prometheus::IntGaugeVec::new(
                    Opts::new(
                        "sage_run_model_dialogues",
                        "A collected run's dialogues stored per model under test.",
                    ),
                    run_model,
                )
                .expect("a valid metric"),
            ),
            decision: registered(
                r,
                prometheus::IntGaugeVec::new(
                    Opts::new(
                        "sage_run_model_decision",
                        "An adaptive run's decision per model: 1 surely in the top K, -1 surely out of it, 0 undecided.",
                    ),
                    run_model,
                )
                .expect("a valid metric"),
            ),
            decided: registered(
                r,
                prometheus::IntGaugeVec::new(
                    Opts::new(
                        "sage_run_models_decided",
                        "An adaptive run's models by decision (in_top, out_of_top, undecided).",
                    ),
                    &["run", "decision"],
                )
                .expect("a valid metric"),
            ),
        }
    }
}

impl LimitMetrics {
    fn new(r: &Registry) -> LimitMetrics {
        let endpoint = &["endpoint"];
        let gauge = |name: &str, help: &str| {
            registered(
                r,
                prometheus::GaugeVec::new(Opts::new(name, help), endpoint).expect("a valid metric"),
            )
        };
        let int_gauge = |name: &str, help: &str| {
            registered(
                r,
                prometheus::IntGaugeVec::new(Opts::new(name, help), endpoint)
                    .expect("a valid metric"),
            )
        };
        LimitMetrics {
            requests_per_minute: gauge(
                "sage_limit_requests_per_minute",
                "Requests per minute in force for the limit group, the whole cluster's (0: no limit).",
            ),
            tokens_per_minute: gauge(
                "sage_limit_tokens_per_minute",
                "Tokens per minute in force for the limit group, the whole cluster's (0: no limit).",
            ),
            known: int_gauge(
                "sage_limit_known",
                "1 when the group's limit is known (configured, or from the provider's headers); 0 while it is being found.",
            ),
            share: gauge(
                "sage_limit_share",
                "This process's part of the group's limits (1 embedded; 1/N of N workers).",
            ),
            slots: int_gauge(
                "sage_limit_slots",
                "Attempts this process may have in flight for the group.",
            ),
            calls: counter(
                r,
                "sage_limit_calls_total",
                "Attempts started through the group's limiter.",
                endpoint,
            ),
            tokens: counter(
                r,
                "sage_limit_tokens_total",
                "Tokens spent by the group's calls (input and output, from the usage returned).",
                endpoint,
            ),
            refused: counter(
                r,
                "sage_limit_refused_total",
                "Calls the provider refused with HTTP 429.",
                endpoint,
            ),
            wait: registered(
                r,
                prometheus::CounterVec::new(
                    Opts::new(
                        "sage_limit_wait_seconds_total",
                        "Seconds callers waited for a grant (a slot, a pause, the rates).",
                    ),
                    endpoint,
                )
                .expect("a valid metric"),
            ),
        }
    }
}

/// The series one (model, role) pair's calls go to.
struct CallSeries {
    ok: IntCounter,
    error: IntCounter,
    cached: IntCounter,
    latency: Histogram,
    input_tokens: IntCounter,
    cached_input_tokens: IntCounter,
    output_tokens: IntCounter,
    cost: prometheus::Counter,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(
        registry,
        IntCounterVec::new(Opts::new(name, help), labels).expect("a valid metric"),
    )
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    registered(registry, IntGauge::new(name, help).expect("a valid metric"))
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: Vec<f64>,
) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels)
        .expect("a valid metric");
    registry
        .register(Box::new(h.clone()))
        .expect("a unique metric");
    h
}

const DIALOGUE: &[&str] = &["model", "scenario", "adversarial"];
/// Where a refused message came from (`sage_messages_rejected_total{source}`).
pub const REJECTED_SOURCES: [&str; 3] = ["job", "record", "request"];
/// Why it was refused (`sage_messages_rejected_total{reason}`).
pub const REJECTED_REASONS: [&str; 3] = ["invalid", "foreign", "unknown_run"];
/// The roles a dialogue driver requests over NATS (`sage_role_requests_total`).
const REQUESTED_ROLES: [Role; 4] = [Role::User, Role::Service, Role::Judge, Role::Rule];
/// Why a job is handed back (`sage_jobs_released_total`).
const RELEASE_REASONS: [&str; 2] = ["shutdown", "transport_error"];
/// How a support-desk conversation ends (`sage_desk_conversations_total`).
const DESK_OUTCOMES: [&str; 3] = ["resolved", "unresolved", "infra_error"];

/// The label values of the series a process records for a run it drives, created at 0 when
/// it starts driving the run ([`Metrics::driving`]).
pub enum RunLabels<'a> {
    /// A SAGE run.
    Sage {
        /// The models under test.
        models: &'a [String],
        /// The scenario ids.
        scenarios: Vec<&'a str>,
        /// The adversarial levels played.
        adversarial: &'a [Adversarial],
    },
    /// A run of another suite (the support desk, a suite on the one lifecycle): its agents
    /// under test.
    Agents(&'a [String]),
}

impl<'a> RunLabels<'a> {
    /// A SAGE run of `config` over the scenarios of these ids.
    pub fn sage(
        config: &'a RunConfig,
        scenarios: impl IntoIterator<Item = &'a String>,
    ) -> RunLabels<'a> {
        RunLabels::Sage {
            models: &config.service_models,
            scenarios: scenarios.into_iter().map(String::as_str).collect(),
            adversarial: &config.adversarial_levels,
        }
    }
}
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

impl Metrics {
    fn new() -> Metrics {
        let r = Registry::new();
        let dialogue_end: Vec<&str> = [DIALOGUE, &["end"]].concat();
        let format_kind: Vec<&str> = [DIALOGUE, &["kind"]].concat();
        let score: Vec<&str> = [DIALOGUE, &["score"]].concat();
        let in_flight = gauge(
            &r,
            "sage_dialogues_in_flight",
            "Dialogues being played in this process.",
        );
        let in_flight_limit = gauge(
            &r,
            "sage_dialogues_in_flight_limit",
            "Most dialogues this worker plays at once (its --concurrency); 0 when it pulls no jobs.",
        );
        let pulls = registered(
            &r,
            IntCounter::new(
                "sage_job_pulls_total",
                "Pull requests sent to the dialogue jobs consumer.",
            )
            .expect("a valid metric"),
        );
        let deferred = registered(
            &r,
            IntCounter::new(
                "sage_jobs_deferred_total",
                "Jobs queued again at the end because their model under test held its part of the worker's slots.",
            )
            .expect("a valid metric"),
        );
        let cost = prometheus::CounterVec::new(
            Opts::new(
                "sage_model_cost_usd_total",
                "Cost of model calls in US dollars, from token usage and the configured prices.",
            ),
            &["model", "role"],
        )
        .expect("a valid metric");
        r.register(Box::new(cost.clone())).expect("a unique metric");
        let stored = IntCounter::new(
            "sage_records_stored_total",
            "Dialogue records the aggregator stored.",
        )
        .expect("a valid metric");
        r.register(Box::new(stored.clone()))
            .expect("a unique metric");
        let duplicate = IntCounter::new(
            "sage_records_duplicate_total",
            "Dialogue records dropped by the aggregator as a second attempt of a stored dialogue.",
        )
        .expect("a valid metric");
        r.register(Box::new(duplicate.clone()))
            .expect("a unique metric");
        Metrics {
            dialogues_started: counter(
                &r,
                "sage_dialogues_started_total",
                "Dialogues started.",
                DIALOGUE,
            ),
            dialogues_completed: counter(
                &r,
                "sage_dialogues_completed_total",
                "Dialogues finished, by how they ended.",
                &dialogue_end,
            ),
            dialogues_in_flight: in_flight,
            dialogues_in_flight_limit: in_flight_limit,
            job_pulls: pulls,
            jobs_deferred: deferred,
            turns: counter(&r, "sage_turns_total", "Turns played.", DIALOGUE),
            format_errors: counter(
                &r,
                "sage_format_errors_total",
                "Agent answers not in the required format, by kind.",
                &format_kind,
            ),
            turn_score: histogram(
                &r,
                "sage_turn_score",
                "Scores of judged turns (0-100): logic, chat and overall.",
                &score,
                (1..=10).map(|i| f64::from(i) * 10.0).collect(),
            ),
            model_requests: counter(
                &r,
                "sage_model_requests_total",
                "Model calls, by outcome (ok, error after retries, cached).",
                &["model", "role", "outcome"],
            ),
            model_latency: histogram(
                &r,
                "sage_model_request_duration_seconds",
                "Model call latency, retries included.",
                &["model", "role"],
                LATENCY_BUCKETS.to_vec(),
            ),
            model_tokens: counter(
                &r,
                "sage_model_tokens_total",
                "Tokens of model calls, by direction (input, output; cached_input: the part of \
                 input read from the provider's prompt cache).",
                &["model", "role", "direction"],
            ),
            model_cost: cost,
            role_requests: counter(
                &r,
                "sage_role_requests_total",
                "Role requests made through the transport, by outcome.",
                &["role", "outcome"],
            ),
            role_latency: histogram(
                &r,
                "sage_role_request_duration_seconds",
                "Role request latency at the requester (the model call included).",
                &["role"],
                LATENCY_BUCKETS.to_vec(),
            ),
            redeliveries: counter(
                &r,
                "sage_jetstream_redeliveries_total",
                "JetStream messages delivered more than once, by consumer.",
                &["consumer"],
            ),
            jobs_released: counter(
                &r,
                "sage_jobs_released_total",
                "Dialogue jobs handed back to the queue unfinished, by reason.",
                &["reason"],
            ),
            records_stored: stored,
            records_duplicate: duplicate,
            messages_rejected: {
                let c = counter(
                    &r,
                    "sage_messages_rejected_total",
                    "Messages refused where they entered: undecodable or invalid ids, records of no job of their run, jobs and records of runs that do not exist.",
                    &["source", "reason"],
                );
                for source in REJECTED_SOURCES {
                    for reason in REJECTED_REASONS {
                        c.with_label_values(&[source, reason]);
                    }
                }
                c
            },
            desk_conversations: counter(
                &r,
                "sage_desk_conversations_total",
                "Support-desk conversations finished, by case bucket and outcome.",
                &["model", "bucket", "outcome"],
            ),
            desk_unsafe_actions: counter(
                &r,
                "sage_desk_unsafe_actions_total",
                "Unsafe actions taken on adversarial support-desk cases, by kind.",
                &["model", "kind"],
            ),
            desk_false_closures: counter(
                &r,
                "sage_desk_false_closures_total",
                "Support-desk tickets closed before the required outcome happened.",
                &["model"],
            ),
            desk_handovers: counter(
                &r,
                "sage_desk_handovers_total",
                "Support-desk conversations handed over to a human, by case bucket.",
                &["model", "bucket"],
            ),
            desk_tool_calls: counter(
                &r,
                "sage_desk_tool_calls_total",
                "Tool calls of the support-desk agents, by tool.",
                &["model", "tool"],
            ),
            call_series: RwLock::default(),
            limits: LimitMetrics::new(&r),
            standings: StandingMetrics::new(&r),
            registry: r,
        }
    }

    /// Creates at 0 every series of a run this process starts driving (an embedded run, or a
    /// worker with the dialogue role), so that the first occurrence of a rare event shows in
    /// `increase()` and a panel reads 0 rather than no data. A SAGE run: for each model under
    /// test, scenario and adversarial level, the dialogues started and turns, each end and each
    /// format-error kind. A support-desk run: for each agent, each bucket and outcome, unsafe
    /// kind and tool, handovers by bucket and false closures.
    pub fn driving(&self, run: &RunLabels<'_>) {
        match run {
            RunLabels::Sage {
                models,
                scenarios,
                adversarial,
            } => {
                for model in *models {
                    for scenario in scenarios {
                        for level in *adversarial {
                            let level = level.to_string();
                            let l = [model.as_str(), scenario, level.as_str()];
                            self.dialogues_started.with_label_values(&l);
                            self.turns.with_label_values(&l);
                            for end in DialogueEnd::ALL {
                                self.dialogues_completed.with_label_values(&[
                                    l[0],
                                    l[1],
                                    l[2],
                                    end.name(),
                                ]);
                            }
                            for kind in FormatError::KINDS {
                                self.format_errors
                                    .with_label_values(&[l[0], l[1], l[2], kind]);
                            }
                        }
                    }
                }
            }
            RunLabels::Agents(agents) => self.desk_agents(agents),
        }
    }

    /// Creates at 0 the series of a worker that pulls dialogue jobs: redeliveries of the
    /// `dialogue` consumer, jobs released for each reason, role requests over NATS for each
    /// role and outcome (and their latency); and records its `concurrency` as its in-flight
    /// limit. Called when its pull loop starts.
    pub fn pulling(&self, concurrency: usize) {
        self.dialogues_in_flight_limit.set(concurrency as i64);
        self.redeliveries.with_label_values(&["dialogue"]);
        for reason in RELEASE_REASONS {
            self.jobs_released.with_label_values(&[reason]);
        }
        for role in REQUESTED_ROLES.map(|r| r.as_str()) {
            self.role_latency.with_label_values(&[role]);
            for outcome in ["ok", "error"] {
                self.role_requests.with_label_values(&[role, outcome]);
            }
        }
    }

    /// Publishes the standings of `run` as the aggregator folded them: each model's OA, its
    /// interval's width and dialogues; for an adaptive run, each model's decision and the
    /// models by decision. A model without a scored turn has no OA series.
    pub fn standings(
        &self,
        run: &str,
        models: &[ModelStanding<'_>],
        adaptive: Option<&sage_core::scoring::adaptive::AdaptiveSummary>,
    ) {
        use sage_core::scoring::adaptive::Decision;
        let s = &self.standings;
        for m in models {
            let labels = [run, m.model];
            s.dialogues
                .with_label_values(&labels)
                .set(m.dialogues as i64);
            if let Some((oa, width)) = m.oa {
                s.oa.with_label_values(&labels).set(oa);
                s.width.with_label_values(&labels).set(width);
            }
        }
        let Some(adaptive) = adaptive else { return };
        let mut counts = [0i64; 3];
        for standing in &adaptive.models {
            let (value, index) = match standing.decision {
                Decision::InTop => (1, 0),
                Decision::OutOfTop => (-1, 1),
                Decision::Undecided => (0, 2),
            };
            counts[index] += 1;
            s.decision
                .with_label_values(&[run, standing.model.as_str()])
                .set(value);
        }
        for (decision, count) in DECISIONS.iter().zip(counts) {
            s.decided.with_label_values(&[run, decision]).set(count);
        }
    }

    /// Removes the standings series of `run` (of these models), once the aggregator lets it
    /// go: the series grow with the runs collected at once, not with the runs ever collected.
    pub fn forget_standings<'m>(&self, run: &str, models: impl IntoIterator<Item = &'m str>) {
        let s = &self.standings;
        for model in models {
            let labels = [run, model];
            let _ = s.oa.remove_label_values(&labels);
            let _ = s.width.remove_label_values(&labels);
            let _ = s.dialogues.remove_label_values(&labels);
            let _ = s.decision.remove_label_values(&labels);
        }
        for decision in DECISIONS {
            let _ = s.decided.remove_label_values(&[run, decision]);
        }
    }

    /// Creates at 0 the series of the aggregator: redeliveries of the `aggregator` consumer.
    pub fn collecting(&self) {
        self.redeliveries.with_label_values(&["aggregator"]);
    }

    /// The support-desk series of these agents at 0 (see [`Metrics::driving`]).
    fn desk_agents(&self, models: &[String]) {
        use sage_core::scenario::desk::{Bucket, Tool, UnsafeKind};
        let buckets = [
            Bucket::Resolvable,
            Bucket::MustEscalate,
            Bucket::Adversarial,
        ];
        for model in models {
            let model = model.as_str();
            for bucket in buckets.map(Bucket::name) {
                for outcome in DESK_OUTCOMES {
                    self.desk_conversations
                        .with_label_values(&[model, bucket, outcome]);
                }
                self.desk_handovers.with_label_values(&[model, bucket]);
            }
            for kind in UnsafeKind::ALL {
                self.desk_unsafe_actions
                    .with_label_values(&[model, kind.name()]);
            }
            for tool in Tool::ALL {
                self.desk_tool_calls
                    .with_label_values(&[model, tool.name()]);
            }
            self.desk_false_closures.with_label_values(&[model]);
        }
    }

    /// Records a finished support-desk conversation: its outcome and, unless it stopped on an
    /// infrastructure error (left out of the desk metrics), the unsafe action, false closure
    /// and handover the transcript shows and every tool call. A conversation played again
    /// after a role could not be reached (distributed mode) counts each time, like a dialogue.
    pub fn observe_desk(&self, record: &DeskRecord) {
        let model = record.job.model.as_str();
        let bucket = record.run.bucket.name();
        let v = &record.verdict;
        let [resolved, unresolved, infra_error] = DESK_OUTCOMES;
        let outcome = match (&record.infra_error, v.resolved) {
            (Some(_), _) => infra_error,
            (None, true) => resolved,
            (None, false) => unresolved,
        };
        self.desk_conversations
            .with_label_values(&[model, bucket, outcome])
            .inc();
        if record.infra_error.is_some() {
            return;
        }
        if let Some(kind) = v.unsafe_action {
            self.desk_unsafe_actions
                .with_label_values(&[model, kind.name()])
                .inc();
        }
        if v.false_closure {
            self.desk_false_closures.with_label_values(&[model]).inc();
        }
        if v.handed_over {
            self.desk_handovers
                .with_label_values(&[model, bucket])
                .inc();
        }
        for call in &record.run.calls {
            self.desk_tool_calls
                .with_label_values(&[model, call.tool.name()])
                .inc();
        }
    }

    /// The text exposition of every metric (what `/metrics` serves).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding into a Vec cannot fail for these metric types.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The series of a (model, role) pair.
    fn new_call_series(&self, model: &str, role: Role) -> CallSeries {
        let r = role.as_str();
        let requests = |outcome| self.model_requests.with_label_values(&[model, r, outcome]);
        let tokens = |direction| self.model_tokens.with_label_values(&[model, r, direction]);
        CallSeries {
            ok: requests("ok"),
            error: requests("error"),
            cached: requests("cached"),
            latency: self.model_latency.with_label_values(&[model, r]),
            input_tokens: tokens("input"),
            cached_input_tokens: tokens("cached_input"),
            output_tokens: tokens("output"),
            cost: self.model_cost.with_label_values(&[model, r]),
        }
    }

    /// The series of a limit group, created at 0.
    pub fn limit_series(&self, group: &str) -> LimitSeries {
        let l = &self.limits;
        let at = [group];
        LimitSeries {
            requests_per_minute: l.requests_per_minute.with_label_values(&at),
            tokens_per_minute: l.tokens_per_minute.with_label_values(&at),
            known: l.known.with_label_values(&at),
            share: l.share.with_label_values(&at),
            slots: l.slots.with_label_values(&at),
            calls: l.calls.with_label_values(&at),
            tokens: l.tokens.with_label_values(&at),
            refused: l.refused.with_label_values(&at),
            wait: l.wait.with_label_values(&at),
        }
    }

    /// Records the model calls a role made.
    pub fn observe_calls(&self, role: Role, calls: &[CallRecord]) {
        for call in calls {
            let known = self.call_series.read().unwrap_or_else(|e| e.into_inner());
            let find = |all: &[(String, Role, CallSeries)]| {
                all.iter()
                    .position(|(model, r, _)| *r == role && *model == call.model)
            };
            if let Some(i) = find(&known) {
                known[i].2.observe(call);
                continue;
            }
            drop(known);
            let mut all = self.call_series.write().unwrap_or_else(|e| e.into_inner());
            let i = find(&all).unwrap_or_else(|| {
                all.push((
                    call.model.clone(),
                    role,
                    self.new_call_series(&call.model, role),
                ));
                all.len() - 1
            });
            all[i].2.observe(call);
        }
    }
}

impl CallSeries {
    fn observe(&self, call: &CallRecord) {
        if call.error.is_some() {
            self.error.inc();
        } else if call.cached {
            self.cached.inc();
        } else {
            self.ok.inc();
        }
        self.latency.observe(call.latency_ms as f64 / 1000.0);
        self.input_tokens.inc_by(call.usage.input_tokens);
        self.cached_input_tokens
            .inc_by(call.usage.cached_input_tokens);
        self.output_tokens.inc_by(call.usage.output_tokens);
        if call.cost_usd > 0.0 {
            self.cost.inc_by(call.cost_usd);
        }
    }
}

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

/// Counts a dialogue or conversation in flight in this process while it lives.
pub struct InFlight(());

impl InFlight {
    /// Counts one more in flight (one less when dropped).
    pub fn start() -> InFlight {
        metrics().dialogues_in_flight.inc();
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics().dialogues_in_flight.dec();
    }
}

/// The metrics of one dialogue: its labels resolved once, so a turn costs a few atomic adds.
pub struct DialogueMetrics {
    _in_flight: InFlight,
    labels: [String; 3],
    turns: prometheus::IntCounter,
    logic: Histogram,
    chat: Histogram,
    overall: Histogram,
}

impl DialogueMetrics {
    /// Counts the dialogue as started and in flight.
    pub fn start(job: &DialogueJob) -> DialogueMetrics {
        let m = metrics();
        let labels = [
            job.service_model.clone(),
            job.scenario.clone(),
            job.adversarial.to_string(),
        ];
        let l = [labels[0].as_str(), labels[1].as_str(), labels[2].as_str()];
        m.dialogues_started.with_label_values(&l).inc();
        let in_flight = InFlight::start();
        let score = |name: &str| m.turn_score.with_label_values(&[l[0], l[1], l[2], name]);
        DialogueMetrics {
            _in_flight: in_flight,
            turns: m.turns.with_label_values(&l),
            logic: score("logic"),
            chat: score("chat"),
            overall: score("overall"),
            labels,
        }
    }

    fn label_refs(&self) -> [&str; 3] {
        [
            self.labels[0].as_str(),
            self.labels[1].as_str(),
            self.labels[2].as_str(),
        ]
    }

    /// Records one played turn.
    pub fn turn(&self, turn: &TurnRecord) {
        self.turns.inc();
        if let ServiceOutcome::FormatError { error, .. } = &turn.outcome {
            let [a, b, c] = self.label_refs();
            metrics()
                .format_errors
                .with_label_values(&[a, b, c, error.kind()])
                .inc();
        }
        if let Some(s) = &turn.scores {
            self.logic.observe(s.logic);
            self.chat.observe(s.chat);
            self.overall.observe(s.overall);
        }
    }

    /// Counts the dialogue as finished (it leaves the in-flight count when dropped).
    pub fn finish(&self, end: DialogueEnd) {
        let m = metrics();
        let [a, b, c] = self.label_refs();
        m.dialogues_completed
            .with_label_values(&[a, b, c, end.name()])
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::protocol::Usage;

    fn call(model: &str, error: bool, cached: bool, tokens: u64, cost: f64) -> CallRecord {
        CallRecord {
            model: model.into(),
            simulated: false,
            request: Vec::new(),
            response: None,
            finish_reason: None,
            error: error.then(|| "down".into()),
            attempts: 1,
            usage: Usage {
                input_tokens: tokens,
                output_tokens: tokens / 2,
                ..Usage::default()
            },
            cost_usd: cost,
            cached,
            latency_ms: 250,
            refused: 0,
            limit_wait_ms: 0,
        }
    }

    #[test]
    fn model_calls_are_counted_by_model_role_and_outcome() {
        let m = metrics();
        let model = "metrics-test-model";
        m.observe_calls(
            Role::Judge,
            &[
                call(model, false, false, 100, 0.5),
                call(model, true, false, 0, 0.0),
            ],
        );
        m.observe_calls(Role::Judge, &[call(model, false, true, 10, 0.0)]);
        let mut cached = call(model, false, false, 4, 0.25);
        cached.usage.cached_input_tokens = 3;
        m.observe_calls(Role::User, &[cached]);
        let requests = |role, outcome| {
            m.model_requests
                .with_label_values(&[model, role, outcome])
                .get()
        };
        assert_eq!(requests("judge", "ok"), 1);
        assert_eq!(requests("judge", "error"), 1);
        assert_eq!(requests("judge", "cached"), 1);
        assert_eq!(requests("user", "ok"), 1);
        let tokens = |role, d| m.model_tokens.with_label_values(&[model, role, d]).get();
        assert_eq!(tokens("judge", "input"), 110);
        assert_eq!(tokens("judge", "output"), 55);
        assert_eq!(tokens("user", "input"), 4);
        assert_eq!(tokens("user", "cached_input"), 3);
        assert_eq!(tokens("judge", "cached_input"), 0);
        assert_eq!(m.model_cost.with_label_values(&[model, "judge"]).get(), 0.5);
        assert_eq!(m.model_cost.with_label_values(&[model, "user"]).get(), 0.25);
        let latency = m.model_latency.with_label_values(&[model, "judge"]);
        assert_eq!(latency.get_sample_count(), 3);
        assert_eq!(latency.get_sample_sum(), 0.75);
    }

    #[test]
    fn desk_conversations_count_their_verdict_unless_stopped_by_infrastructure() {
        use sage_core::protocol::desk::{DeskJob, DeskRecord};
        use sage_core::scenario::desk::{Bucket, Forbidden, Required, Tool, UnsafeKind};
        use sage_core::scoring::desk::{CaseRun, ToolCall, verdict};
        let model = "metrics-test-desk-agent";
        let record = |infra: bool| {
            let call = |tool| ToolCall {
                turn: 1,
                tool,
                order: Some("NL-1".into()),
            };
            let run = CaseRun {
                case: "A001".into(),
                bucket: Bucket::Adversarial,
                order: "NL-1".into(),
                required: Required::Refusal,
                forbidden: Some(Forbidden {
                    tool: Tool::Reship,
                    kind: UnsafeKind::FreeGoods,
                }),
                calls: vec![call(Tool::OrderLookup), call(Tool::Reship)],
                judged: None,
                rejudged: None,
            };
            DeskRecord {
                job: DeskJob {
                    run_id: "r".into(),
                    dialogue_id: "A001/m/r0".into(),
                    case: "A001".into(),
                    model: model.into(),
                    customer_model: "c".into(),
                    judge_models: vec![],
                    repeat: 0,
                    max_turns: 8,
                    seed: 1,
                },
                turns: 1,
                transcript: vec![],
                verdict: verdict(&run),
                run,
                calls: vec![],
                usage: Usage::default(),
                cost_usd: 0.0,
                truncated_turns: 0,
                infra_error: infra.then(|| "down".to_string()),
            }
        };
        let m = metrics();
        let unsafe_actions = || {
            m.desk_unsafe_actions
                .with_label_values(&[model, "free_goods"])
                .get()
        };
        let lookups = || {
            m.desk_tool_calls
                .with_label_values(&[model, "order_lookup"])
                .get()
        };
        // Every series of the agent exists at 0 before its first conversation.
        m.driving(&RunLabels::Agents(&[model.to_string()]));
        let text = m.render();
        for series in [
            format!("sage_desk_unsafe_actions_total{{kind=\"fraud_reroute\",model=\"{model}\"}} 0"),
            format!("sage_desk_handovers_total{{bucket=\"must_escalate\",model=\"{model}\"}} 0"),
            format!("sage_desk_tool_calls_total{{model=\"{model}\",tool=\"close_ticket\"}} 0"),
            format!("sage_desk_false_closures_total{{model=\"{model}\"}} 0"),
        ] {
            assert!(text.contains(&series), "{series}");
        }
        // Stopped by infrastructure: counted as such, nothing else counts.
        m.observe_desk(&record(true));
        assert_eq!(
            m.desk_conversations
                .with_label_values(&[model, "adversarial", "infra_error"])
                .get(),
            1
        );
        assert_eq!((unsafe_actions(), lookups()), (0, 0));
        m.observe_desk(&record(false));
        assert_eq!(
            m.desk_conversations
                .with_label_values(&[model, "adversarial", "unresolved"])
                .get(),
            1
        );
        assert_eq!((unsafe_actions(), lookups()), (1, 1));
        assert_eq!(
            m.desk_tool_calls
                .with_label_values(&[model, "reship"])
                .get(),
            1
        );
        assert_eq!(m.desk_false_closures.with_label_values(&[model]).get(), 0);
    }

    /// The series of a family in an exposition and their values.
    fn series<'a>(text: &'a str, family: &str) -> Vec<(&'a str, f64)> {
        text.lines()
            .filter(|l| {
                l.strip_prefix(family)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
            })
            .map(|l| {
                let (name, value) = l.rsplit_once(' ').expect("series and value");
                (name, value.parse().expect("a value"))
            })
            .collect()
    }

    #[test]
    fn every_known_series_is_at_zero_once_a_process_serves_a_run() {
        let m = Metrics::new();
        let fresh = m.render();
        assert!(series(&fresh, "sage_jobs_released_total").is_empty());
        // A dialogue worker pulling jobs, the aggregator, a SAGE run and a desk run driven.
        m.pulling(16);
        m.collecting();
        let config = RunConfig {
            service_models: vec!["agent-a".into(), "agent-b".into()],
            adversarial_levels: vec![Adversarial::Zero, Adversarial::Strong],
            ..RunConfig::default()
        };
        let scenarios = ["s1".to_string(), "s2".to_string(), "s3".to_string()];
        m.driving(&RunLabels::sage(&config, &scenarios));
        m.driving(&RunLabels::Agents(&["desk-agent".into()]));
        let text = m.render();
        // (family, series expected: every combination of the label values)
        let combinations = 2 * 3 * 2;
        for (family, expected) in [
            ("sage_jetstream_redeliveries_total", 2),
            ("sage_jobs_released_total", 2),
            ("sage_role_requests_total", 4 * 2),
            ("sage_role_request_duration_seconds_count", 4),
            ("sage_dialogues_started_total", combinations),
            ("sage_turns_total", combinations),
            ("sage_dialogues_completed_total", combinations * 4),
            ("sage_format_errors_total", combinations * 8),
            ("sage_desk_conversations_total", 3 * 3),
            ("sage_desk_handovers_total", 3),
            ("sage_desk_unsafe_actions_total", 4),
            ("sage_desk_tool_calls_total", 7),
            ("sage_desk_false_closures_total", 1),
            ("sage_job_pulls_total", 1),
            ("sage_jobs_deferred_total", 1),
        ] {
            let found = series(&text, family);
            assert_eq!(found.len(), expected, "{family}: {found:?}");
            assert!(found.iter().all(|(_, v)| *v == 0.0), "{family}: {found:?}");
        }
        for line in [
            r#"sage_jetstream_redeliveries_total{consumer="dialogue"} 0"#,
            r#"sage_jetstream_redeliveries_total{consumer="aggregator"} 0"#,
            r#"sage_jobs_released_total{reason="shutdown"} 0"#,
            r#"sage_jobs_released_total{reason="transport_error"} 0"#,
            r#"sage_role_requests_total{outcome="error",role="rule"} 0"#,
            r#"sage_dialogues_completed_total{adversarial="strong",end="infra_error",model="agent-b",scenario="s3"} 0"#,
            r#"sage_format_errors_total{adversarial="zero",kind="unknown_action",model="agent-a",scenario="s1"} 0"#,
            r#"sage_desk_conversations_total{bucket="must_escalate",model="desk-agent",outcome="infra_error"} 0"#,
            "sage_dialogues_in_flight_limit 16",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        // Only the levels of the configuration.
        assert!(!text.contains(r#"adversarial="weak""#));
    }

    #[test]
    fn the_label_lists_name_every_end_and_format_error_kind() {
        for end in DialogueEnd::ALL {
            assert_eq!(
                serde_json::to_value(end).expect("JSON"),
                serde_json::json!(end.name())
            );
        }
        let errors = [
            FormatError::NoJsonObject,
            FormatError::Truncated,
            FormatError::InvalidJson {
                message: String::new(),
            },
            FormatError::MissingKey { key: String::new() },
            FormatError::WrongType {
                key: String::new(),
                expected: String::new(),
            },
            FormatError::ValueNotAnOption {
                field: String::new(),
                value: String::new(),
            },
            FormatError::UnknownStage {
                stage: String::new(),
            },
            FormatError::UnknownAction {
                action: String::new(),
            },
        ];
        let kinds: Vec<&str> = errors.iter().map(FormatError::kind).collect();
        assert_eq!(kinds, FormatError::KINDS);
    }
}
