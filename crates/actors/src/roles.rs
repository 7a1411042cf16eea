//! What each role does with a request, as plain structs (the actors around them are thin):
//! render the prompt, call the model through its endpoint, parse the answer.
//!
//! * An empty, unparsable or refused user or judge answer is asked again (up to
//!   `content_attempts`), and after that is an infrastructure error for the turn: never a crash,
//!   never silently a pass. A judge failure repeats that judge's call only.
//! * The agent's answer is parsed once: a bad answer is the model's own format error, not retried.
//! * A model that cannot be reached (after the endpoint's retries) is an infrastructure error,
//!   recorded distinctly from format errors.

use sage_core::plan::RunConfig;
use sage_core::prompts::{self, SystemPrompt};
use sage_core::protocol::parse::{extract_chat, parse_agent_output, parse_judge_output};
use sage_core::protocol::schema;
use sage_core::protocol::{
    CallRecord, CustomerRetry, DialogueJob, JudgeReply, JudgeRequest, Judgment, Role, RuleReply,
    RuleRequest, ServiceOutcome, ServiceReply, ServiceRequest, Speaker, UserReply, UserRequest,
};
use sage_core::scenario::Value;
use sage_core::scoring::fidelity;
use sage_core::sop::{Sop, Values};
use sage_ports::llm::sim::SimContext;
use sage_ports::llm::{ChatMessage, ChatRequest, ChatResponse, Endpoint, Structured};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The scenarios and model endpoints a process serves.
pub struct Registry {
    /// Compiled scenarios by id.
    pub sops: HashMap<String, Arc<Sop>>,
    /// Model endpoints by name.
    pub endpoints: HashMap<String, Arc<Endpoint>>,
    /// Attempts at a user or judge answer that is empty, unparsable or a refusal.
    pub content_attempts: u32,
    /// Keep every request's full messages in the records (large); otherwise only their hash.
    pub record_prompts: bool,
    /// Ask the customer model once more when its line is off-script by the cheap check
    /// ([`fidelity::off_script`]); the run's `customer_guard`.
    pub customer_guard: bool,
    /// System prompts already rendered.
    pub prompts: PromptCache,
    /// The support desk served (a support-desk run), if any.
    pub desk: Option<Arc<sage_core::desk::DeskFixture>>,
}

/// System prompts already rendered, by what they depend on (role, scenario, the values shown),
/// reused across turns and dialogues. Bounded: emptied when it reaches [`PromptCache::CAPACITY`].
#[derive(Default)]
pub struct PromptCache {
    map: std::sync::Mutex<HashMap<u64, Rendered>>,
}

/// A rendered system prompt and the bytes at its start every dialogue of the scenario shares
/// (none: not told, as for the customer's).
type Rendered = (Arc<str>, Option<usize>);

impl PromptCache {
    /// Most prompts kept.
    pub const CAPACITY: usize = 4096;

    /// The prompt for `key`, rendered with `render` the first time.
    pub(crate) fn get_or(
        &self,
        key: impl std::hash::Hash,
        render: impl FnOnce() -> String,
    ) -> Arc<str> {
        self.cached(key, || (render(), None)).0
    }

    /// The prompt for `key` and the bytes at its start every dialogue of the scenario shares
    /// (for the request's `cache_prefix`), rendered with `render` the first time.
    pub(crate) fn get_split(
        &self,
        key: impl std::hash::Hash,
        render: impl FnOnce() -> SystemPrompt,
    ) -> Rendered {
        self.cached(key, || {
            let prompt = render();
            (prompt.text, Some(prompt.shared))
        })
    }

    fn cached(
        &self,
        key: impl std::hash::Hash,
        render: impl FnOnce() -> (String, Option<usize>),
    ) -> Rendered {
        use std::hash::Hasher;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let key = h.finish();
        if let Some(p) = self.map.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return p;
        }
        let (text, shared) = render();
        let prompt = (Arc::<str>::from(text), shared);
        if let Ok(mut m) = self.map.lock() {
            if m.len() >= Self::CAPACITY {
                m.clear();
            }
            m.insert(key, prompt.clone());
        }
        prompt
    }
}

/// The (key, value) pairs of an assignment, for hashing.
fn pairs(a: &sage_core::sop::Assignment) -> Vec<(&String, &Value)> {
    a.iter().collect()
}

impl Registry {
    /// What a process serves of a SAGE run of `config`: the scenarios `sops` (by id) and the
    /// model `endpoints`, with the run's content attempts, prompt recording and customer guard.
    pub fn sage(
        config: &RunConfig,
        sops: HashMap<String, Arc<Sop>>,
        endpoints: HashMap<String, Arc<Endpoint>>,
    ) -> Registry {
        Registry {
            sops,
            endpoints,
            content_attempts: config.content_attempts,
            record_prompts: config.record_prompts,
            customer_guard: config.customer_guard,
            prompts: Default::default(),
            desk: None,
        }
    }

    fn sop(&self, id: &str) -> Result<&Arc<Sop>, String> {
        self.sops
            .get(id)
            .ok_or_else(|| format!("scenario `{id}` is not loaded in this process"))
    }

    /// The scenario and the model endpoint a request needs.
    fn sop_and_endpoint(
        &self,
        scenario: &str,
        model: &str,
    ) -> Result<(&Arc<Sop>, &Arc<Endpoint>), String> {
        Ok((self.sop(scenario)?, self.endpoint(model)?))
    }

    /// A registry of these endpoints alone: no scenarios or store, one content attempt,
    /// prompts kept as hashes (a suite whose driver writes its own prompts).
    pub fn of_endpoints(endpoints: HashMap<String, Arc<Endpoint>>) -> Registry {
        Registry {
            sops: HashMap::new(),
            endpoints,
            content_attempts: 1,
            record_prompts: false,
            customer_guard: false,
            prompts: PromptCache::default(),
            desk: None,
        }
    }

    pub(crate) fn endpoint(&self, name: &str) -> Result<&Arc<Endpoint>, String> {
        self.endpoints
            .get(name)
            .ok_or_else(|| format!("model `{name}` is not configured in this process"))
    }
}

/// Records the request of a call: the full messages when prompts are recorded, else their
/// SHA-256 (nothing for a simulated model, which plays from the job rather than the prompt).
/// Keeping every prompt would make records grow with the square of the dialogue's length.
pub(crate) fn with_request(
    mut record: CallRecord,
    messages: &[ChatMessage],
    keep: bool,
) -> CallRecord {
    record.request = if keep {
        messages
            .iter()
            .map(|m| (m.role.as_str().to_string(), m.content.to_string()))
            .collect()
    } else if record.simulated {
        Vec::new()
    } else {
        let mut h = Sha256::new();
        for m in messages {
            h.update(m.role.as_str().as_bytes());
            h.update([0]);
            h.update(m.content.as_bytes());
            h.update([0]);
        }
        vec![("prompt_sha256".into(), hex::encode(h.finalize()))]
    };
    record
}

fn context(sop: &Arc<Sop>, job: &Arc<DialogueJob>, role: Role, turn: u32) -> SimContext {
    SimContext {
        sop: sop.clone(),
        job: job.clone(),
        role,
        turn,
        judge_index: 0,
        last_action: None,
        agent_chat: None,
        attempt: 0,
        sample: None,
        misled: false,
    }
}

/// Asks a model until `accept` takes its answer, at most `attempts` times. Returns the accepted
/// value, or the last reason it failed, with every call made. `ask` holds the messages, the
/// JSON flag and the structured-output schema; each attempt gets its number (counted from
/// `ctx.attempt`, 0 but for a customer asked again) and `ctx`.
async fn ask_until<T>(
    reg: &Registry,
    endpoint: &Endpoint,
    ask: ChatRequest,
    mut ctx: SimContext,
    attempts: u32,
    accept: impl Fn(&str) -> Result<T, String>,
) -> (Result<T, String>, Vec<CallRecord>) {
    let mut calls = Vec::new();
    let mut last = String::from("no attempt made");
    let first = ctx.attempt;
    for attempt in first..first.saturating_add(attempts.max(1)) {
        ctx.attempt = attempt;
        let request = ChatRequest {
            attempt,
            sim: Some(Arc::new(ctx.clone())),
            ..ask.clone()
        };
        let called = endpoint.call(&request).await;
        calls.push(with_request(
            called.record,
            &request.messages,
            reg.record_prompts,
        ));
        match called.result {
            // The endpoint already retried what is worth retrying.
            Err(e) => return (Err(format!("{} unreachable: {e}", endpoint.name())), calls),
            Ok(response) => match accept(&response.text) {
                Ok(v) => {
                    // A simulated answer that was accepted is in the record in parsed form and
                    // is reproducible from the seed: its text is not kept twice.
                    if let Some(record) = calls.last_mut().filter(|r| r.simulated) {
                        record.response = None;
                    }
                    return (Ok(v), calls);
                }
                Err(why) => last = why,
            },
        }
    }
    (
        Err(format!(
            "{} gave no usable answer in {} attempts: {last}",
            endpoint.name(),
            attempts.max(1)
        )),
        calls,
    )
}

/// The customer's chat request for `req` as [`UserRole`] sends it (the simulation context and
/// the attempt number aside): the system prompt and the dialogue so far, in plain text (no
/// JSON, no schema); no messages for a simulated customer, which plays from the job.
pub fn user_request(
    reg: &Registry,
    sop: &Sop,
    endpoint: &Endpoint,
    req: &UserRequest,
) -> ChatRequest {
    let job = &req.job;
    let messages = if endpoint.is_simulated() {
        Vec::new() // a simulated customer plays from the job, not from a prompt
    } else {
        let key = (
            "user",
            &job.scenario,
            &job.intent,
            &job.persona,
            job.adversarial,
            pairs(&job.fields),
            pairs(&job.variables),
        );
        let system = reg
            .prompts
            .get_or(key, || prompts::user_system_prompt(sop, job));
        prompts::user_messages(system, &req.history)
    };
    ChatRequest {
        messages,
        ..ChatRequest::default()
    }
}

/// The simulated customer's side.
pub struct UserRole(pub Arc<Registry>);

impl UserRole {
    /// The next customer message, or the end of the dialogue. With the registry's
    /// `customer_guard`, a message the cheap check ([`fidelity::off_script`]) flags against the
    /// customer's earlier lines is asked again once, with the next attempt number (a simulated
    /// customer draws anew) and, for a real model, [`prompts::user::REASK_NOTE`] appended; the
    /// second answer is played whatever it is (the end of the dialogue included), the first is
    /// in the reply's `retry`, and both calls are in its `calls`. When the second ask gets no
    /// usable answer, the first message stands. The end of the dialogue is never asked again.
    pub async fn handle(&self, req: UserRequest) -> UserReply {
        let reg = &self.0;
        let (sop, endpoint) = match reg.sop_and_endpoint(&req.job.scenario, &req.job.user_model) {
            Ok(found) => found,
            Err(e) => {
                return UserReply {
                    message: None,
                    calls: Vec::new(),
                    infra_error: Some(e),
                    retry: None,
                    off_case: None,
                };
            }
        };
        let mut ctx = context(sop, &req.job, Role::User, req.turn);
        ctx.last_action = req.last_action.clone();
        let ask = user_request(reg, sop, endpoint, &req);
        let parse = |text: &str| prompts::parse_user_output(text).map_err(|e| e.to_string());
        let (result, mut calls) = ask_until(
            reg,
            endpoint,
            ask.clone(),
            ctx.clone(),
            reg.content_attempts,
            parse,
        )
        .await;
        let message = match result {
            Ok(message) => message,
            Err(e) => {
                return UserReply {
                    message: None,
                    calls,
                    infra_error: Some(e),
                    retry: None,
                    off_case: None,
                };
            }
        };
        let flagged = match &message {
            Some(line) if reg.customer_guard => {
                let earlier = (req.history.iter())
                    .filter(|l| l.speaker == Speaker::User)
                    .map(|l| l.text.as_str());
                fidelity::off_script(line, earlier)
            }
            _ => None,
        };
        // The audit of the line played against the case.
        let audit = |message: &Option<String>| {
            message
                .as_deref()
                .and_then(|line| fidelity::off_case(sop, &req.job, line))
        };
        let (Some(reason), Some(first)) = (flagged, message.clone()) else {
            return UserReply {
                off_case: audit(&message),
                message,
                calls,
                infra_error: None,
                retry: None,
            };
        };
        // Once more, with an attempt number none of the first ask's calls had.
        ctx.attempt = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        let again = ChatRequest {
            messages: if ask.messages.is_empty() {
                Vec::new() // a simulated customer plays from the job
            } else {
                prompts::user::user_reask_messages(&ask.messages)
            },
            ..ask
        };
        let (second, more) =
            ask_until(reg, endpoint, again, ctx, reg.content_attempts, parse).await;
        calls.extend(more);
        let message = second.unwrap_or_else(|_| Some(first.clone()));
        UserReply {
            off_case: audit(&message),
            message,
            calls,
            infra_error: None,
            retry: Some(CustomerRetry {
                first,
                reason: reason.describe().into(),
            }),
        }
    }
}

/// The agent's chat request for `req` as [`ServiceRole`] sends it: the system prompt (with the
/// system information S: the variables and the intent's context), the dialogue so far and the
/// user message, as JSON, with the answer's schema when the model's configuration turns
/// structured output on; no messages for a simulated agent, which plays from the job.
pub fn service_request(
    reg: &Registry,
    sop: &Arc<Sop>,
    endpoint: &Endpoint,
    req: &ServiceRequest,
) -> ChatRequest {
    let (messages, cache_prefix) = if endpoint.is_simulated() {
        (Vec::new(), None) // a simulated agent plays from the job, not from a prompt
    } else {
        // The agent sees the system information S: the variables and the intent's context.
        let info = prompts::system_information(sop, &req.job);
        let (system, shared) = reg
            .prompts
            .get_split(("agent", &req.job.scenario, pairs(&info)), || {
                prompts::agent_system_prompt_split(sop, &info)
            });
        let messages = prompts::agent_messages(system, &req.history, &req.user_message);
        (messages, shared)
    };
    ChatRequest {
        messages,
        json: true,
        attempt: 0,
        sim: Some(Arc::new(SimContext {
            sample: req.sample,
            // Only a simulated agent reads it (a real one reads the line).
            misled: endpoint.is_simulated()
                && fidelity::off_case(sop, &req.job, &req.user_message).is_some(),
            ..context(sop, &req.job, Role::Service, req.turn)
        })),
        sample: req.sample,
        tools: Vec::new(),
        desk: None,
        facts: None,
        // Off unless the model's configuration sets it: the paper measures format errors.
        structured: (!endpoint.is_simulated()).then(|| Structured {
            schema: Arc::new(schema::agent_answer_schema(sop)),
            default_on: false,
        }),
        cache_prefix,
    }
}

/// The agent's answer read as [`ServiceRole`] reads it: a valid turn, or the model's own format
/// error (parsed once, never asked again) with what the customer sees.
pub fn service_outcome(sop: &Sop, response: &ChatResponse) -> ServiceOutcome {
    let truncated = response.finish_reason.as_deref() == Some("length");
    match parse_agent_output(sop, &response.text, truncated) {
        Ok(turn) => ServiceOutcome::Valid { turn },
        Err(error) => ServiceOutcome::FormatError {
            error,
            // What the user sees: the answer's `chat` if it can be read, else the text.
            chat: extract_chat(&response.text)
                .unwrap_or_else(|| response.text.chars().take(600).collect()),
        },
    }
}

/// The agent under test.
pub struct ServiceRole(pub Arc<Registry>);

impl ServiceRole {
    /// The agent's answer to one user message: valid, a format error, or unreachable.
    pub async fn handle(&self, req: ServiceRequest) -> ServiceReply {
        let reg = &self.0;
        let (sop, endpoint) = match reg.sop_and_endpoint(&req.job.scenario, &req.job.service_model)
        {
            Ok(found) => found,
            Err(e) => {
                return ServiceReply {
                    outcome: ServiceOutcome::InfraError { error: e },
                    raw: None,
                    calls: Vec::new(),
                };
            }
        };
        let request = service_request(reg, sop, endpoint, &req);
        let called = endpoint.call(&request).await;
        let mut record = with_request(called.record, &request.messages, reg.record_prompts);
        // The answer's text is kept once, as the turn's `raw_output`.
        record.response = None;
        let calls = vec![record];
        match called.result {
            Err(e) => ServiceReply {
                outcome: ServiceOutcome::InfraError {
                    error: format!("{} unreachable: {e}", endpoint.name()),
                },
                raw: None,
                calls,
            },
            Ok(response) => ServiceReply {
                outcome: service_outcome(sop, &response),
                raw: Some(response.text),
                calls,
            },
        }
    }
}

/// A judge's chat request for `req` as [`JudgePanel`] sends it to each judge (the simulation
/// context and the attempt number aside): the system prompt, the dialogue so far, the user
/// message and the agent's reply, as JSON with the verdict's schema (structured output is on
/// by default for judges, docs/models.md); no messages when every judge is `simulated`.
pub fn judge_request(
    reg: &Registry,
    sop: &Sop,
    req: &JudgeRequest,
    simulated: bool,
) -> ChatRequest {
    let (messages, cache_prefix) = if simulated {
        (Vec::new(), None)
    } else {
        let info = prompts::system_information(sop, &req.job);
        let (system, shared) = reg
            .prompts
            .get_split(("judge", &req.job.scenario, pairs(&info)), || {
                prompts::judge_system_prompt_split(sop, &req.job)
            });
        let messages =
            prompts::judge_messages(system, &req.history, &req.user_message, &req.agent_chat);
        (messages, shared)
    };
    ChatRequest {
        messages,
        json: true,
        structured: (!simulated).then(|| Structured {
            schema: Arc::new(schema::judge_answer_schema(sop)),
            default_on: true,
        }),
        cache_prefix,
        ..ChatRequest::default()
    }
}

/// The judge panel (1, 3 or 5 judges).
pub struct JudgePanel(pub Arc<Registry>);

/// Majority vote per field over the judgments given (ties: the first judge's value).
pub fn consensus(judgments: &[&Judgment]) -> Option<BTreeMap<String, Value>> {
    let first = judgments.first()?;
    Some(
        first
            .classification
            .keys()
            .map(|field| {
                let votes: Vec<&Value> = judgments
                    .iter()
                    .filter_map(|j| j.classification.get(field))
                    .collect();
                let best = votes
                    .iter()
                    .max_by_key(|v| {
                        (
                            votes.iter().filter(|w| w == v).count(),
                            std::cmp::Reverse(votes.iter().position(|w| w == *v)),
                        )
                    })
                    .map(|v| (*v).clone())
                    .unwrap_or(Value::Str(String::new()));
                (field.clone(), best)
            })
            .collect(),
    )
}

impl JudgePanel {
    /// Every judge's verdict (each retried on its own), the majority classification and the
    /// calls made.
    pub async fn handle(&self, req: JudgeRequest) -> JudgeReply {
        let reg = &self.0;
        let sop = match reg.sop(&req.job.scenario) {
            Ok(s) => s,
            Err(e) => {
                return JudgeReply {
                    judgments: vec![Err(e)],
                    consensus: None,
                    calls: Vec::new(),
                };
            }
        };
        // Simulated judges play from the job: the prompt is rendered only for a real one.
        let all_simulated = req
            .job
            .judge_models
            .iter()
            .all(|n| reg.endpoint(n).is_ok_and(|e| e.is_simulated()));
        let ask = judge_request(reg, sop, &req, all_simulated);
        let asks = req.job.judge_models.iter().enumerate().map(|(i, name)| {
            let ask = ask.clone();
            let mut ctx = context(sop, &req.job, Role::Judge, req.turn);
            ctx.judge_index = i;
            ctx.agent_chat = Some(req.agent_chat.clone());
            async move {
                match reg.endpoint(name) {
                    Err(e) => (Err(e), Vec::new()),
                    Ok(endpoint) => {
                        ask_until(reg, endpoint, ask, ctx, reg.content_attempts, |text| {
                            parse_judge_output(sop, text).map_err(|e| e.to_string())
                        })
                        .await
                    }
                }
            }
        });
        let results = futures::future::join_all(asks).await;
        let mut calls = Vec::new();
        let mut judgments = Vec::new();
        for (result, c) in results {
            calls.extend(c);
            judgments.push(result);
        }
        let answered: Vec<&Judgment> = judgments.iter().filter_map(|j| j.as_ref().ok()).collect();
        JudgeReply {
            consensus: consensus(&answered),
            judgments,
            calls,
        }
    }
}

/// The rule engine.
pub struct RuleRole(pub Arc<Registry>);

impl RuleRole {
    /// The reference route for a classification.
    pub fn handle(&self, req: RuleRequest) -> RuleReply {
        let route = self.0.sop(&req.scenario).and_then(|sop| {
            let fields: Values = req.fields;
            let variables: Values = req.variables;
            sop.route(&fields, &variables).map_err(|e| e.to_string())
        });
        RuleReply { route }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::protocol::ChatScores;

    fn judgment(pairs: &[(&str, &str)]) -> Judgment {
        Judgment {
            classification: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Value::Str(v.to_string())))
                .collect(),
            chat: ChatScores {
                linguistic_quality: 9,
                anthropomorphism_emotion: 9,
                content_utility: 9,
                user_satisfaction: 9,
                instruction_compliance: 9,
            },
        }
    }

    #[tokio::test]
    async fn a_user_request_for_turn_zero_is_answered() {
        // Found by fuzzing (nats_message): a request from NATS is 1-based by contract only;
        // the simulated customer read its fact for turn 0 as `turn - 1` and overflowed.
        let text = sage_core::scenario::bundled::BUNDLED[5].1;
        let sop = Arc::new(sage_core::sop::from_yaml(text, "telecom_package.yaml").expect("sop"));
        let config = sage_core::plan::RunConfig::default();
        let job = sage_core::plan::jobs(&config, "run", std::slice::from_ref(&sop))
            .into_iter()
            .next()
            .expect("a job");
        let registry = Registry {
            sops: [(sop.scenario().id.clone(), sop.clone())].into(),
            endpoints: (config.models.iter())
                .map(|m| {
                    let endpoint = Endpoint::new(m.clone(), None).expect("a simulated model");
                    (m.name.clone(), Arc::new(endpoint))
                })
                .collect(),
            content_attempts: 1,
            record_prompts: false,
            customer_guard: false,
            prompts: Default::default(),
            desk: None,
        };
        let reply = UserRole(Arc::new(registry))
            .handle(UserRequest {
                job: Arc::new(job),
                turn: 0,
                history: Arc::new(Vec::new()),
                last_action: None,
            })
            .await;
        assert!(
            reply.message.is_some() || reply.infra_error.is_some(),
            "{reply:?}"
        );
    }

    #[tokio::test]
    async fn the_guard_asks_a_repeating_customer_again_once_with_the_next_attempt() {
        let text = sage_core::scenario::bundled::BUNDLED[5].1;
        let sop = Arc::new(sage_core::sop::from_yaml(text, "telecom_package.yaml").expect("sop"));
        let config = sage_core::plan::RunConfig::default();
        let endpoints: HashMap<String, Arc<Endpoint>> = (config.models.iter())
            .map(|m| {
                let endpoint = Endpoint::new(m.clone(), None).expect("simulated");
                (m.name.clone(), Arc::new(endpoint))
            })
            .collect();
        let role = |customer_guard: bool| {
            UserRole(Arc::new(Registry {
                customer_guard,
                ..Registry::sage(
                    &config,
                    [(sop.scenario().id.clone(), sop.clone())].into(),
                    endpoints.clone(),
                )
            }))
        };
        // What the simulated customer says alone at a turn and attempt (it plays from the job,
        // not from the history).
        let customer = &endpoints[&config.user_model];
        let says = |job: &Arc<DialogueJob>, turn: u32, attempt: u32| {
            let mut ctx = context(&sop, job, Role::User, turn);
            ctx.attempt = attempt;
            let request = ChatRequest {
                attempt,
                sim: Some(Arc::new(ctx)),
                ..ChatRequest::default()
            };
            async move {
                let answer = customer.call(&request).await.result.expect("an answer");
                prompts::parse_user_output(&answer.text).expect("usable")
            }
        };
        // A job and turn where the next attempt draws another line than the first.
        let mut found = None;
        'search: for job in sage_core::plan::jobs(&config, "run", std::slice::from_ref(&sop)) {
            let job = Arc::new(job);
            for turn in 1..=4 {
                if let (Some(first), Some(next)) =
                    (says(&job, turn, 0).await, says(&job, turn, 1).await)
                    && first != next
                {
                    found = Some((job, turn, first, next));
                    break 'search;
                }
            }
        }
        let (job, turn, line, next) = found.expect("a customer line that varies by attempt");
        let request = |history: Vec<sage_core::protocol::Line>| UserRequest {
            job: job.clone(),
            turn,
            history: Arc::new(history),
            last_action: None,
        };
        let first = role(true).handle(request(Vec::new())).await;
        assert_eq!((first.calls.len(), &first.retry), (1, &None), "{first:?}");
        assert_eq!(first.message.as_deref(), Some(line.as_str()));
        // Said before by the customer (in other case): asked again once, with the next attempt
        // number, and the second line is played.
        let said = |speaker| {
            vec![sage_core::protocol::Line {
                speaker,
                text: line.to_uppercase(),
            }]
        };
        let again = role(true).handle(request(said(Speaker::User))).await;
        assert_eq!(again.calls.len(), 2, "{again:?}");
        assert_eq!(again.infra_error, None);
        assert_eq!(again.message.as_deref(), Some(next.as_str()));
        let retry = again.retry.expect("a retry");
        assert_eq!(retry.first, line);
        assert_eq!(retry.reason, "a line the customer already said");
        // Said before by the agent, or the guard off: not asked again.
        for (guard, speaker) in [(true, Speaker::Agent), (false, Speaker::User)] {
            let reply = role(guard).handle(request(said(speaker))).await;
            assert_eq!((reply.calls.len(), reply.retry), (1, None));
            assert_eq!(reply.message.as_deref(), Some(line.as_str()));
        }
    }

    #[test]
    fn majority_vote_per_field_with_first_judge_breaking_ties() {
        let a = judgment(&[("X", "a"), ("Y", "p")]);
        let b = judgment(&[("X", "b"), ("Y", "q")]);
        let c = judgment(&[("X", "b"), ("Y", "r")]);
        let m = consensus(&[&a, &b, &c]).unwrap();
        assert_eq!(m["X"], Value::Str("b".into()));
        assert_eq!(m["Y"], Value::Str("p".into()));
        assert_eq!(consensus(&[]), None);
    }
}
