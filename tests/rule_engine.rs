//! The rule engine on the bundled scenarios: the paper's worked examples, error reporting, and
//! the round trip between enumeration (inverse configuration) and routing.

mod common;

use common::{SCENARIOS, load};
use proptest::prelude::*;
use sage::scenario::{Domain, Point, Value};
use sage::sop::{RouteError, Sop, Values};

fn vals(pairs: &[(&str, Value)]) -> Values {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

fn telecom(fields: [&str; 4], status: &str, penalty: i64) -> (Values, Values) {
    (
        vals(&[
            ("ConsumptionType", s(fields[0])),
            ("ApplicationTendency", s(fields[1])),
            ("ConsumptionProfile", s(fields[2])),
            ("EmotionTag", s(fields[3])),
        ]),
        vals(&[
            ("PackageStatus", s(status)),
            ("Penalty", Value::Int(penalty)),
        ]),
    )
}

#[test]
fn appendix_b34_example_paths() {
    let sop = load("telecom_package");
    let cases = [
        // Path 1: Enquiry + Agree + Data + NoContract -> ChangeOrder
        (
            ["Enquiry", "Agree", "Data", "Calm"],
            "NoContract",
            0,
            vec!["step1", "step2", "step3", "step6", "step4"],
            "ChangeOrder",
        ),
        // Path 2: Change + Contracted + Penalty>0 + Discontent -> TransHuman
        (
            ["Change", "Agree", "Data", "Discontent"],
            "Contracted",
            100,
            vec!["step1", "step2", "step4", "step5", "step7"],
            "TransHuman",
        ),
        // Path 3: Enquiry + Reject + Voice -> GoodBye
        (
            ["Enquiry", "Reject", "Voice", "Calm"],
            "NoContract",
            0,
            vec!["step1", "step2", "step3", "step6"],
            "GoodBye",
        ),
    ];
    for (fields, status, penalty, path, action) in cases {
        let (f, v) = telecom(fields, status, penalty);
        let r = sop.route(&f, &v).unwrap();
        assert_eq!(r.path, path);
        assert_eq!(r.action, action);
        assert!(r.outputs.is_empty());
    }
}

#[test]
fn telecom_counts_36_field_value_combinations_and_12_routes() {
    let sop = load("telecom_package");
    assert_eq!(sop.scenario().field_combinations(), Some(36));
    assert_eq!(sop.routes().len(), 12);
}

#[test]
fn values_the_route_never_reads_may_be_absent() {
    let sop = load("telecom_package");
    let r = sop
        .route(
            &vals(&[("ConsumptionType", s("Cancel")), ("EmotionTag", s("Calm"))]),
            &vals(&[("Penalty", Value::Int(250))]),
        )
        .unwrap();
    assert_eq!(r.path, ["step1", "step2", "step5", "step7"]);
    assert_eq!(r.action, "ChangeOrder");
    // Junk in a key the route never reads is ignored too.
    let r2 = sop
        .route(
            &vals(&[
                ("ConsumptionType", s("Cancel")),
                ("EmotionTag", s("Calm")),
                ("ApplicationTendency", s("??")),
            ]),
            &vals(&[("Penalty", Value::Int(250))]),
        )
        .unwrap();
    assert_eq!(r, r2);
}

#[test]
fn missing_and_invalid_values_are_named() {
    let sop = load("telecom_package");
    let err = sop
        .route(&vals(&[("ConsumptionType", s("Change"))]), &Values::new())
        .unwrap_err();
    assert_eq!(
        err,
        RouteError::Missing {
            stage: "step4".into(),
            key: "PackageStatus".into(),
            scope: "variable",
            expected: "Contracted, NoContract".into()
        }
    );
    let err = sop
        .route(&vals(&[("ConsumptionType", s("Upgrade"))]), &Values::new())
        .unwrap_err();
    assert!(
        matches!(&err, RouteError::Invalid { stage, key, value, .. } if stage == "step2" && key == "ConsumptionType" && value == "Upgrade")
    );
    assert!(
        err.to_string()
            .contains("expected one of: Enquiry, Change, Cancel")
    );
    let err = sop
        .route(
            &vals(&[("ConsumptionType", s("Cancel"))]),
            &vals(&[("Penalty", Value::Int(-5))]),
        )
        .unwrap_err();
    assert!(
        matches!(&err, RouteError::Invalid { key, .. } if key == "Penalty"),
        "{err}"
    );
    // A field given as a variable does not count: scope matters.
    let err = sop
        .route(&Values::new(), &vals(&[("ConsumptionType", s("Cancel"))]))
        .unwrap_err();
    assert!(matches!(err, RouteError::Missing { scope: "field", .. }));
}

#[test]
fn online_education_returns_plan_only_with_the_plan_action() {
    let sop = load("online_education");
    let f = vals(&[
        ("DescriptionClear", Value::Bool(true)),
        ("QuestionRelevance", Value::Bool(true)),
        ("RepeatedRaised", Value::Bool(false)),
        ("EmotionTendency", s("Calm")),
        ("ResolveDependency", s("MediumDependency")),
        ("RegardingRefund", Value::Bool(false)),
    ]);
    let r = sop.route(&f, &Values::new()).unwrap();
    assert_eq!(
        r.path,
        [
            "step1", "step2", "step3", "step4", "step5", "step6", "step7"
        ]
    );
    assert_eq!(r.action, "PLAN");
    assert_eq!(r.outputs.get("PLAN").map(String::as_str), Some("PLAN_B"));
    let mut refund = f.clone();
    refund.insert("RegardingRefund".into(), Value::Bool(true));
    let r = sop
        .route(&refund, &vals(&[("isRiskUser", Value::Bool(true))]))
        .unwrap();
    assert_eq!(r.action, "NEGOTIATE");
    assert_eq!(r.outputs.get("PLAN").map(String::as_str), Some("none"));
    // Booleans may also arrive as text.
    let r = sop
        .route(&vals(&[("DescriptionClear", s("false"))]), &Values::new())
        .unwrap();
    assert_eq!((r.path.len(), r.action.as_str()), (2, "GUIDE"));
}

#[test]
fn every_enumerated_route_routes_back_and_every_stage_is_on_a_route() {
    for id in SCENARIOS {
        let sop = load(id);
        for rc in sop.routes() {
            let fields: Values = rc.fields.clone().into_iter().collect();
            let variables: Values = rc.variables.clone().into_iter().collect();
            assert_eq!(sop.route(&fields, &variables).unwrap(), rc.route, "{id}");
            assert_eq!(
                rc.fields.len() + rc.variables.len(),
                sop.scenario().keys.len()
            );
        }
        for st in &sop.scenario().stages {
            assert!(
                sop.routes().iter().any(|rc| rc.route.path.contains(&st.id)),
                "{id}: {} on no route",
                st.id
            );
        }
        assert!(
            sop.unused_actions().is_empty(),
            "{id}: {:?}",
            sop.unused_actions()
        );
    }
}

#[test]
fn every_intent_is_compatible_with_some_route() {
    for id in SCENARIOS {
        let sop = load(id);
        assert!(!sop.scenario().intents.is_empty(), "{id}");
        assert!(sop.scenario().personas.len() >= 3, "{id}");
        for intent in &sop.scenario().intents {
            let b = sop.intent_box(intent);
            assert!(
                !sop.routes_within(&b).is_empty(),
                "{id}: intent {} matches no route",
                intent.id
            );
        }
    }
}

/// A random complete assignment for a scenario, as (fields, variables) and as points.
fn assignment(sop: &Sop, seeds: &[u64]) -> (Values, Values, Vec<Point>) {
    let mut fields = Values::new();
    let mut variables = Values::new();
    let mut points = Vec::new();
    for (k, seed) in sop.scenario().keys.iter().zip(seeds.iter().cycle()) {
        let p = match k.full_domain() {
            Domain::Set(m) => Point::Opt((*seed % m.count_ones() as u64) as usize),
            Domain::Ints(set) => {
                let (lo, hi) = set.ranges()[0];
                let span = (hi - lo).min(1_000) as u64 + 1;
                Point::Int(lo + (*seed % span) as i64)
            }
        };
        points.push(p);
        let v = k.value_at(p);
        match k.scope {
            sage::scenario::Scope::Field => fields.insert(k.name.clone(), v),
            sage::scenario::Scope::Variable => variables.insert(k.name.clone(), v),
        };
    }
    (fields, variables, points)
}

proptest! {
    /// Any complete assignment routes without error, to the one enumerated route whose region
    /// holds it: the route regions partition the space of assignments.
    #[test]
    fn route_regions_partition_the_assignments(which in 0usize..6, seeds in proptest::collection::vec(any::<u64>(), 8)) {
        let sop = load(SCENARIOS[which]);
        let (fields, variables, points) = assignment(&sop, &seeds);
        let route = sop.route(&fields, &variables).unwrap();
        let holders: Vec<_> = sop
            .routes()
            .iter()
            .filter(|rc| rc.region.iter().any(|b| b.iter().zip(&points).all(|(d, p)| d.contains(*p))))
            .collect();
        prop_assert_eq!(holders.len(), 1);
        prop_assert_eq!(&holders[0].route, &route);
    }
}

#[test]
fn intents_match_the_released_code_per_adversarial_level() {
    use sage::scenario::Adversarial::{Strong, Weak, Zero};
    // (zero, weak, strong) intents per scenario, from sage-bench-sops.md.
    let expected = [
        ("airline_refund", (2, 12, 5)),
        ("ecommerce_refund", (2, 5, 3)),
        ("logistics_delivery", (1, 10, 7)),
        ("online_education", (1, 2, 2)),
        ("property_service", (6, 10, 7)),
        ("telecom_package", (4, 5, 2)),
    ];
    for (id, (zero, weak, strong)) in expected {
        let sop = load(id);
        let count = |level| {
            sop.scenario()
                .intents
                .iter()
                .filter(|i| i.adversarial == level)
                .count()
        };
        assert_eq!(
            (count(Zero), count(Weak), count(Strong)),
            (zero, weak, strong),
            "{id}"
        );
        for i in &sop.scenario().intents {
            assert!(!i.facts.is_empty(), "{id}: intent {} has no facts", i.id);
        }
    }
}
