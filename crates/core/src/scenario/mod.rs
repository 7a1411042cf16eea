//! Scenarios: the YAML format a domain expert writes (see docs/scenario-format.md), loaded and
//! checked into a [`Scenario`]. Pure: no I/O beyond [`load`] reading the one file it is given.
//!
//! Checks that need the whole graph (reachability, loops, outputs along routes) live in
//! [`crate::sop`], which compiles a `Scenario` into the decision graph.

mod build;
pub(crate) use build::parse as parse_yaml;
pub mod bundled;
pub mod desk;
pub mod domain;
mod error;
mod raw;

pub use domain::{Domain, IntSet, ValueBox};

/// A line's words for comparison: lower case, letters and digits only, single spaces.
pub fn normalize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}
pub use error::{Problem, ScenarioError};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A loaded, locally checked scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Unique identifier, e.g. `telecom_package`.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Service domain, used in prompts.
    pub domain: String,
    /// What the scenario covers.
    pub description: String,
    /// Classification fields first (in file order), then system variables.
    pub keys: Vec<Key>,
    /// Actions, in file order.
    pub actions: Vec<Action>,
    /// Extra outputs beside the action (e.g. PLAN).
    pub outputs: Vec<Output>,
    /// Index of the start stage in `stages`.
    pub start: usize,
    /// Stages, in file order.
    pub stages: Vec<Stage>,
    /// User intents.
    pub intents: Vec<Intent>,
    /// User personas.
    pub personas: Vec<Persona>,
}

/// Whether a key is a classification field or a system variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Inferred by the agent from the dialogue.
    Field,
    /// Known to the backend.
    Variable,
}

/// A classification field or a system variable.
#[derive(Debug, Clone)]
pub struct Key {
    /// Its name.
    pub name: String,
    /// What it means.
    pub description: String,
    /// Field or variable.
    pub scope: Scope,
    /// Its type and values.
    pub kind: KeyKind,
}

/// The type of a key.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyKind {
    /// One of the listed options.
    Enum(Vec<String>),
    /// `true` or `false`.
    Boolean,
    /// An integer, optionally bounded.
    Integer {
        /// Lower bound (inclusive).
        min: Option<i64>,
        /// Upper bound (inclusive).
        max: Option<i64>,
        /// Preferred values for inverse configuration.
        examples: Vec<i64>,
    },
}

/// A value given for a key: what the rule engine reads. In JSON and YAML: `true`, `42` or
/// `"text"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// An enum option (or a boolean or integer written as text).
    Str(String),
}

// By hand rather than `untagged`: an untagged enum tries each variant in turn and builds (and
// formats) an error for every miss, which made values a measurable cost of decoding messages.
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        struct ValueVisitor;
        impl serde::de::Visitor<'_> for ValueVisitor {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a boolean, an integer or a string")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
                i64::try_from(v)
                    .map(Value::Int)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Value, E> {
                Ok(Value::Str(v))
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Str(s) => write!(f, "{s}"),
        }
    }
}

/// A value resolved against its key: an option index, or an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    /// Index into the enum options (booleans: 0 = true, 1 = false).
    Opt(usize),
    /// An integer.
    Int(i64),
}

impl Domain {
    /// True when the domain holds `p`.
    pub fn contains(&self, p: Point) -> bool {
        match (self, p) {
            (Domain::Set(m), Point::Opt(i)) => i < 64 && m & (1u64 << i) != 0,
            (Domain::Ints(s), Point::Int(v)) => s.contains(v),
            _ => false,
        }
    }
}

impl Key {
    /// Every value of the key.
    pub fn full_domain(&self) -> Domain {
        match &self.kind {
            KeyKind::Enum(options) => Domain::all_options(options.len()),
            KeyKind::Boolean => Domain::all_options(2),
            KeyKind::Integer { min, max, .. } => Domain::Ints(IntSet::range(
                min.unwrap_or(i64::MIN),
                max.unwrap_or(i64::MAX),
            )),
        }
    }

    /// The option names (booleans: `true`, `false`); empty for integers.
    pub fn options(&self) -> Vec<String> {
        match &self.kind {
            KeyKind::Enum(options) => options.clone(),
            KeyKind::Boolean => vec!["true".into(), "false".into()],
            KeyKind::Integer { .. } => Vec::new(),
        }
    }

    /// A human description of the values, e.g. `Enquiry, Change, Cancel` or `integer 0..10000`.
    pub fn expected(&self) -> String {
        match &self.kind {
            KeyKind::Integer { .. } => match self.full_domain() {
                Domain::Ints(s) => format!("an integer in {s}"),
                Domain::Set(_) => unreachable!("integer keys have integer domains"),
            },
            _ => self.options().join(", "),
        }
    }

    /// Resolves a value given for this key, or says what was expected.
    pub fn point(&self, value: &Value) -> Option<Point> {
        match (&self.kind, value) {
            (KeyKind::Enum(options), Value::Str(s)) => {
                options.iter().position(|o| o == s).map(Point::Opt)
            }
            (KeyKind::Enum(options), v) => {
                let s = v.to_string();
                options.iter().position(|o| *o == s).map(Point::Opt)
            }
            (KeyKind::Boolean, Value::Bool(b)) => Some(Point::Opt(if *b { 0 } else { 1 })),
            (KeyKind::Boolean, Value::Str(s)) => match s.as_str() {
                "true" => Some(Point::Opt(0)),
                "false" => Some(Point::Opt(1)),
                _ => None,
            },
            (KeyKind::Integer { .. }, Value::Int(v)) => Some(Point::Int(*v)),
            (KeyKind::Integer { .. }, Value::Str(s)) => s.trim().parse().ok().map(Point::Int),
            _ => None,
        }
        .filter(|p| self.full_domain().contains(*p))
    }

    /// The value at a point, typed as the key's JSON value (bool, integer or string).
    pub fn value_at(&self, p: Point) -> Value {
        match (&self.kind, p) {
            (KeyKind::Enum(options), Point::Opt(i)) => Value::Str(options[i].clone()),
            (KeyKind::Boolean, Point::Opt(i)) => Value::Bool(i == 0),
            (_, Point::Int(v)) => Value::Int(v),
            (_, Point::Opt(i)) => Value::Int(i as i64),
        }
    }

    /// A representative value of a non-empty domain of this key (inverse configuration): the first
    /// option in declaration order, or for integers a declared example, else the value closest
    /// to 0.
    pub fn pick(&self, d: &Domain) -> Option<Value> {
        match d {
            Domain::Set(m) if *m != 0 => {
                Some(self.value_at(Point::Opt(m.trailing_zeros() as usize)))
            }
            Domain::Ints(s) => {
                let examples = match &self.kind {
                    KeyKind::Integer { examples, .. } => examples.as_slice(),
                    _ => &[],
                };
                s.pick(examples).map(Value::Int)
            }
            _ => None,
        }
    }

    /// A compact description of a domain of this key: `A|B` or `1..10000`.
    pub fn describe(&self, d: &Domain) -> String {
        match d {
            Domain::Set(m) => {
                let opts = self.options();
                let names: Vec<&str> = (0..opts.len())
                    .filter(|i| m & (1u64 << i) != 0)
                    .map(|i| opts[i].as_str())
                    .collect();
                names.join("|")
            }
            Domain::Ints(s) => s.to_string(),
        }
    }
}

/// An action the SOP can end in.
#[derive(Debug, Clone)]
pub struct Action {
    /// Its name, verbatim.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Indices of the outputs this action carries.
    pub outputs: Vec<usize>,
    /// The policy sentences it comes from (`source`, as written; docs/scenario-format.md).
    pub source: Vec<String>,
}

/// An extra final beside the action.
#[derive(Debug, Clone)]
pub struct Output {
    /// Its name (e.g. `PLAN`).
    pub name: String,
    /// What it means.
    pub description: String,
    /// Its possible values.
    pub options: Vec<String>,
    /// The value reported when the action reached does not carry it.
    pub default: Option<String>,
}

/// One stage of the SOP.
#[derive(Debug, Clone)]
pub struct Stage {
    /// Its id (e.g. `step3`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// Free text shown to the agent.
    pub description: Option<String>,
    /// How it decides.
    pub kind: StageKind,
    /// Its transitions, in file order.
    pub transitions: Vec<Transition>,
    /// The policy sentences it comes from (`source`, as written).
    pub source: Vec<String>,
}

/// How a stage decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageKind {
    /// Passes on unconditionally.
    Next,
    /// Branches on one key.
    Branch {
        /// The key.
        key: usize,
    },
    /// Decides on a combination of keys.
    Rules {
        /// The keys the rules mention, in order of first mention.
        keys: Vec<usize>,
    },
}

/// One way out of a stage.
#[derive(Debug, Clone)]
pub struct Transition {
    /// When it is taken.
    pub guard: Guard,
    /// Where it leads.
    pub target: Target,
    /// Outputs set on the way: (output index, value).
    pub set: Vec<(usize, String)>,
    /// The case as written, for messages, graphs and prompts (e.g. `Enquiry`, `!= 0`,
    /// `CoreDemand=Complaint, memberLevel=VIP`, `otherwise`).
    pub label: String,
    /// The policy sentences the branch comes from (its target's `source`, as written).
    pub source: Vec<String>,
}

/// The condition of a transition.
#[derive(Debug, Clone, PartialEq)]
pub enum Guard {
    /// Always (a `next` stage).
    Always,
    /// When every listed key has a value in its domain (keys not listed: any value).
    When(Vec<(usize, Domain)>),
    /// When no `When` transition of the stage applies (`else`, `otherwise`).
    Otherwise,
}

/// Where a transition leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Another stage (index).
    Stage(usize),
    /// An action (index); the route ends.
    Action(usize),
}

/// Adversarial level of a user intent (the paper's taxonomy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Adversarial {
    /// Cooperative.
    Zero,
    /// Ambiguity, constraints, rational criticism.
    Weak,
    /// Aggression, changing demands, concealment.
    Strong,
}

impl fmt::Display for Adversarial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Adversarial::Zero => "zero",
            Adversarial::Weak => "weak",
            Adversarial::Strong => "strong",
        })
    }
}

/// A user intent.
#[derive(Debug, Clone)]
pub struct Intent {
    /// Its id.
    pub id: String,
    /// What the user wants.
    pub description: String,
    /// How adversarial the user is.
    pub adversarial: Adversarial,
    /// The values this intent implies: (key index, domain).
    pub implies: Vec<(usize, Domain)>,
    /// What the simulated user knows and reveals gradually.
    pub facts: Vec<String>,
    /// Extra system information shown to the agent: (name, text).
    pub context: Vec<(String, String)>,
}

/// How willing a persona is to cooperate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cooperativeness {
    /// Answers what is asked.
    High,
    /// Needs some prompting.
    Medium,
    /// Withholds and resists.
    Low,
}

/// A user persona.
#[derive(Debug, Clone)]
pub struct Persona {
    /// Its id.
    pub id: String,
    /// Personality traits.
    pub traits: Vec<String>,
    /// How the persona writes.
    pub communication_style: String,
    /// How willing it is to cooperate.
    pub cooperativeness: Cooperativeness,
}

impl Scenario {
    /// Parses and checks a scenario from YAML text; `file` labels error messages.
    pub fn from_yaml(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        build::from_yaml(text, file)
    }

    /// Index of the key with this name.
    pub fn key_index(&self, name: &str) -> Option<usize> {
        self.keys.iter().position(|k| k.name == name)
    }

    /// Index of the stage with this id.
    pub fn stage_index(&self, id: &str) -> Option<usize> {
        self.stages.iter().position(|s| s.id == id)
    }

    /// The classification fields.
    pub fn fields(&self) -> impl Iterator<Item = &Key> {
        self.keys.iter().filter(|k| k.scope == Scope::Field)
    }

    /// The system variables.
    pub fn variables(&self) -> impl Iterator<Item = &Key> {
        self.keys.iter().filter(|k| k.scope == Scope::Variable)
    }

    /// The box of every assignment (each key's full domain).
    pub fn full_box(&self) -> ValueBox {
        self.keys.iter().map(Key::full_domain).collect()
    }

    /// Number of combinations of field values (the paper's count of "paths", e.g. 36 for
    /// Telecom); `None` when an integer field is unbounded.
    pub fn field_combinations(&self) -> Option<u128> {
        self.fields().try_fold(1u128, |acc, k| {
            let n = k.full_domain().count();
            (n != u128::MAX).then(|| acc.saturating_mul(n))
        })
    }

    /// Describes a box as `Key=values, ...`, listing only the keys it constrains.
    pub fn describe_box(&self, b: &[Domain]) -> String {
        let parts: Vec<String> = self
            .keys
            .iter()
            .zip(b)
            .filter(|(k, d)| **d != k.full_domain())
            .map(|(k, d)| format!("{}={}", k.name, k.describe(d)))
            .collect();
        if parts.is_empty() {
            "any values".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Reads and checks a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioError::one(
            &file,
            Problem::Io {
                message: e.to_string(),
            },
        )
    })?;
    Scenario::from_yaml(&text, &file)
}
