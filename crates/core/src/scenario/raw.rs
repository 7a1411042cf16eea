//! The YAML schema as written, before validation. Unknown keys are rejected by serde
//! (`deny_unknown_fields`); everything else is checked in `build`.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A scalar (string, boolean or number) kept as its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar (string, boolean or number)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A YAML map that keeps its order and rejects a key given twice.
#[derive(Debug, Clone)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, V)> = Vec::new();
                while let Some(Scalar(k)) = map.next_key::<Scalar>()? {
                    if out.iter().any(|(seen, _)| *seen == k) {
                        return Err(de::Error::custom(format!(
                            "duplicate key `{k}`; expected each key once in a map"
                        )));
                    }
                    let v = map.next_value::<V>()?;
                    out.push((k, v));
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}

/// A condition on one key: one value or a list of values (any of them).
#[derive(Debug, Clone)]
pub struct CondValue(pub Vec<String>);

impl<'de> Deserialize<'de> for CondValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CondValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CondValue, E> {
                Ok(CondValue(vec![v.to_string()]))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<CondValue, E> {
                Ok(CondValue(vec![v.to_string()]))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<CondValue, E> {
                Ok(CondValue(vec![v.to_string()]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<CondValue, E> {
                Ok(CondValue(vec![v.to_string()]))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<CondValue, E> {
                Ok(CondValue(vec![v.to_string()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CondValue, A::Error> {
                let mut out = Vec::new();
                while let Some(Scalar(s)) = seq.next_element::<Scalar>()? {
                    out.push(s);
                }
                Ok(CondValue(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Deserializes `T` from a YAML map, or builds it from a plain string with `from_str`.
fn string_or_map<'de, D, T>(
    d: D,
    from_str: fn(String) -> T,
    what: &'static str,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T> {
        from_str: fn(String) -> T,
        what: &'static str,
    }
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.what)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            Ok((self.from_str)(v.to_string()))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V { from_str, what })
}

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub id: String,
    pub name: String,
    pub domain: String,
    pub description: String,
    pub fields: OrderedMap<RawKey>,
    #[serde(default)]
    pub variables: OrderedMap<RawKey>,
    pub actions: OrderedMap<ActionForm>,
    #[serde(default)]
    pub outputs: OrderedMap<RawOutput>,
    pub sop: RawSop,
    #[serde(default)]
    pub user: RawUser,
}

/// A field or variable.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKey {
    pub description: String,
    #[serde(rename = "type")]
    pub ty: Option<String>,
    pub options: Option<Vec<Scalar>>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub examples: Option<Vec<i64>>,
}

/// An action: `Name: description` or `Name: {description, outputs}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAction {
    pub description: String,
    #[serde(default)]
    pub outputs: Vec<String>,
    /// The policy sentences it comes from.
    #[serde(default)]
    pub source: Vec<String>,
}

/// An action in either form: `Name: description` or `Name: {description, outputs}`.
impl<'de> Deserialize<'de> for ActionForm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        string_or_map(
            d,
            |description| RawAction {
                description,
                outputs: Vec::new(),
                source: Vec::new(),
            },
            "an action description, or a map with `description` and `outputs`",
        )
        .map(ActionForm)
    }
}

/// An action in either form.
#[derive(Debug)]
pub struct ActionForm(pub RawAction);

/// An extra output beside the action.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOutput {
    pub description: String,
    pub options: Vec<Scalar>,
    pub default: Option<Scalar>,
}

/// `sop: {start, stages}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSop {
    pub start: String,
    pub stages: OrderedMap<RawStage>,
}

/// One stage as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStage {
    pub title: String,
    pub description: Option<String>,
    pub next: Option<TargetForm>,
    pub branch_on: Option<String>,
    pub cases: Option<OrderedMap<TargetForm>>,
    pub rules: Option<Vec<RawRule>>,
    /// The policy sentences it comes from.
    #[serde(default)]
    pub source: Vec<String>,
}

/// One rule: `{when, then}` or `{otherwise}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    pub when: Option<OrderedMap<CondValue>>,
    pub then: Option<TargetForm>,
    pub otherwise: Option<TargetForm>,
}

/// A target as written: a stage id, or a map with `stage` or `action` and an optional `set`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    pub stage: Option<String>,
    pub action: Option<String>,
    #[serde(default)]
    pub set: OrderedMap<Scalar>,
    /// The policy sentences the branch comes from.
    #[serde(default)]
    pub source: Vec<String>,
}

/// Wrapper so that targets accept the plain-string form.
#[derive(Debug, Clone)]
pub struct TargetForm(pub RawTarget);

impl<'de> Deserialize<'de> for TargetForm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        string_or_map(
            d,
            |stage| RawTarget {
                stage: Some(stage),
                action: None,
                set: OrderedMap::default(),
                source: Vec::new(),
            },
            "a stage id, or a map with `stage` or `action` (and optionally `set`)",
        )
        .map(TargetForm)
    }
}

/// The user side.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUser {
    #[serde(default)]
    pub intents: Vec<RawIntent>,
    #[serde(default)]
    pub personas: Vec<RawPersona>,
}

/// One user intent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIntent {
    pub id: String,
    pub description: String,
    pub adversarial: String,
    #[serde(default)]
    pub implies: OrderedMap<CondValue>,
    #[serde(default)]
    pub facts: Vec<String>,
    #[serde(default)]
    pub context: OrderedMap<Scalar>,
}

/// One persona.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPersona {
    pub id: String,
    #[serde(default)]
    pub traits: Vec<String>,
    pub communication_style: String,
    pub cooperativeness: String,
}
