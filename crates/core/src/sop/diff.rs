//! Two scenarios compared route by route (`sage scenario diff A B`): the routes one has and the
//! other lacks, and every region of assignments the two route differently, found symbolically
//! from each route's region (no combination of values is tried), with an assignment to show.
//!
//! The scenarios must declare the same keys (fields and variables by name, each of the same
//! type and options, in any order); when they do not, the key differences are the diff.

use super::symbolic::representative;
use super::{Assignment, Route, Sop};
use crate::scenario::domain::{box_intersect, box_is_empty};
use crate::scenario::{Domain, KeyKind, ValueBox};
use serde::Serialize;

/// How one region of assignments is routed in each scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteChange {
    /// The route in the first scenario.
    pub a: Route,
    /// The route in the second.
    pub b: Route,
    /// An assignment of the fields in the region (the first scenario's key order).
    pub fields: Assignment,
    /// An assignment of the variables in the region.
    pub variables: Assignment,
}

/// What differs between two scenarios' decision graphs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScenarioDiff {
    /// Keys declared differently (when any, the routes are not compared).
    pub keys: Vec<String>,
    /// Routes (path, action, outputs) of the first scenario the second lacks.
    pub only_a: Vec<Route>,
    /// Routes of the second the first lacks.
    pub only_b: Vec<Route>,
    /// Regions the two route to different actions (or outputs).
    pub actions: Vec<RouteChange>,
    /// Regions routed to the same action and outputs along different paths.
    pub paths: Vec<RouteChange>,
}

impl ScenarioDiff {
    /// Whether the two scenarios route every assignment alike.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
            && self.only_a.is_empty()
            && self.only_b.is_empty()
            && self.actions.is_empty()
            && self.paths.is_empty()
    }
}

/// Compares `a` and `b` route by route.
pub fn diff(a: &Sop, b: &Sop) -> ScenarioDiff {
    let mut out = ScenarioDiff::default();
    let translate = match translation(a, b) {
        Ok(t) => t,
        Err(keys) => {
            out.keys = keys;
            return out;
        }
    };
    let routes = |s: &Sop| -> Vec<Route> { s.routes().iter().map(|r| r.route.clone()).collect() };
    let (ra, rb) = (routes(a), routes(b));
    out.only_a = ra.iter().filter(|r| !rb.contains(r)).cloned().collect();
    out.only_b = rb.iter().filter(|r| !ra.contains(r)).cloned().collect();
    for ca in a.routes() {
        for cb in b.routes() {
            if ca.route == cb.route {
                continue;
            }
            let meet = ca.region.iter().find_map(|x| {
                cb.region.iter().find_map(|y| {
                    let both = box_intersect(x, &translate(y));
                    (!box_is_empty(&both)).then_some(both)
                })
            });
            let Some(both) = meet else { continue };
            let (fields, variables) = representative(a, &both);
            let change = RouteChange {
                a: ca.route.clone(),
                b: cb.route.clone(),
                fields,
                variables,
            };
            if ca.route.action == cb.route.action && ca.route.outputs == cb.route.outputs {
                out.paths.push(change);
            } else {
                out.actions.push(change);
            }
        }
    }
    out
}

/// A box of `b`'s keys turned into `a`'s key order and option indices, or why the two declare
/// different keys.
fn translation(a: &Sop, b: &Sop) -> Result<impl Fn(&ValueBox) -> ValueBox, Vec<String>> {
    let (ka, kb) = (&a.scenario().keys, &b.scenario().keys);
    let mut problems = Vec::new();
    // Per key of `a`: its index in `b`, and for an enum the index in `b` of each option of `a`.
    let mut map: Vec<(usize, Option<Vec<usize>>)> = Vec::new();
    for key in ka {
        let Some(j) = kb.iter().position(|k| k.name == key.name) else {
            problems.push(format!("{} is declared in the first only", key.name));
            continue;
        };
        let other = &kb[j];
        if other.scope != key.scope {
            problems.push(format!(
                "{} is a {:?} in the first and a {:?} in the second",
                key.name, key.scope, other.scope
            ));
            continue;
        }
        match (&key.kind, &other.kind) {
            (KeyKind::Enum(x), KeyKind::Enum(y)) => {
                let mut sorted = (x.clone(), y.clone());
                sorted.0.sort();
                sorted.1.sort();
                if sorted.0 != sorted.1 {
                    problems.push(format!(
                        "{} has options [{}] in the first and [{}] in the second",
                        key.name,
                        x.join(", "),
                        y.join(", ")
                    ));
                    continue;
                }
                let at: Vec<usize> = x
                    .iter()
                    .map(|o| y.iter().position(|p| p == o).expect("the same options"))
                    .collect();
                map.push((j, Some(at)));
            }
            (KeyKind::Boolean, KeyKind::Boolean) => map.push((j, None)),
            (
                KeyKind::Integer { min, max, .. },
                KeyKind::Integer {
                    min: m2, max: x2, ..
                },
            ) if (min, max) == (m2, x2) => map.push((j, None)),
            _ => problems.push(format!(
                "{} is {} in the first and {} in the second",
                key.name,
                key.expected(),
                other.expected()
            )),
        }
    }
    for key in kb {
        if !ka.iter().any(|k| k.name == key.name) {
            problems.push(format!("{} is declared in the second only", key.name));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(move |bx: &ValueBox| -> ValueBox {
        map.iter()
            .map(|(j, options)| match (&bx[*j], options) {
                (Domain::Set(bits), Some(at)) => Domain::Set(
                    at.iter()
                        .enumerate()
                        .filter(|(_, k)| bits >> **k & 1 == 1)
                        .fold(0u64, |m, (i, _)| m | 1 << i),
                ),
                (d, _) => d.clone(),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TELECOM: &str = include_str!("../../../../scenarios/telecom_package.yaml");

    fn sop(text: &str) -> Sop {
        crate::sop::from_yaml(text, "test.yaml").expect("a scenario")
    }

    #[test]
    fn a_scenario_routes_every_assignment_as_itself() {
        let a = sop(TELECOM);
        assert!(diff(&a, &a).is_empty(), "{:?}", diff(&a, &a));
    }

    #[test]
    fn a_changed_action_is_the_region_routed_to_it_and_its_lost_route() {
        let a = sop(TELECOM);
        let b = sop(&TELECOM.replace(
            "Discontent: {action: TransHuman}",
            "Discontent: {action: ChangeOrder}",
        ));
        let d = diff(&a, &b);
        assert!(d.keys.is_empty() && d.only_b.is_empty() && d.paths.is_empty());
        assert!(!d.only_a.is_empty());
        assert!(d.only_a.iter().all(|r| r.action == "TransHuman"), "{d:?}");
        assert_eq!(d.actions.len(), d.only_a.len());
        for c in &d.actions {
            assert_eq!(
                (c.a.action.as_str(), c.b.action.as_str()),
                ("TransHuman", "ChangeOrder")
            );
            assert_eq!(c.a.path, c.b.path);
            assert_eq!(
                c.fields["EmotionTag"],
                crate::scenario::Value::Str("Discontent".into())
            );
            // The example assignment is routed as the diff says, in each scenario.
            let values = crate::sop::values;
            let (f, v) = (values(&c.fields), values(&c.variables));
            assert_eq!(a.route(&f, &v).expect("routes"), c.a);
            assert_eq!(b.route(&f, &v).expect("routes"), c.b);
        }
    }

    #[test]
    fn keys_and_options_in_another_order_change_nothing() {
        let a = sop(TELECOM);
        // The options of a branched-on field reversed, and two fields swapped.
        let reordered = TELECOM
            .replace("options: [Calm, Discontent]", "options: [Discontent, Calm]")
            .replace(
                "  ConsumptionProfile:\n    description: the kind of package the user wants (data-heavy or call-heavy)\n    options: [Data, Voice]\n",
                "",
            )
            .replace(
                "fields:\n",
                "fields:\n  ConsumptionProfile:\n    description: the kind of package the user wants (data-heavy or call-heavy)\n    options: [Data, Voice]\n",
            );
        assert_ne!(reordered, TELECOM, "the options line moved");
        assert!(diff(&a, &sop(&reordered)).is_empty());
    }

    #[test]
    fn keys_declared_differently_are_the_diff() {
        let a = sop(TELECOM);
        // A third package kind (no stage branches on it, so the scenario still validates).
        let b = sop(&TELECOM.replace("options: [Data, Voice]", "options: [Data, Voice, Mixed]"));
        let d = diff(&a, &b);
        assert_eq!(d.keys.len(), 1, "{d:?}");
        assert!(
            d.keys[0].starts_with("ConsumptionProfile has options"),
            "{d:?}"
        );
        assert!(d.actions.is_empty() && d.only_a.is_empty());
    }
}
