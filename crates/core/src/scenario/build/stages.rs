//! The stages of a scenario's SOP, built and checked: their targets, the cases of a branch
//! (every value covered once) and the rules of a rule stage (overlap and coverage).

use super::{Builder, Ctx, NAME_CHARS, join, parse_predicate, valid_id};
use crate::scenario::domain::{
    Domain, IntSet, ValueBox, box_intersect, box_is_empty, box_subtract_all,
};
use crate::scenario::raw::{self, CondValue, RawRule, RawTarget, TargetForm};
use crate::scenario::{Guard, Key, KeyKind, Problem, Stage, StageKind, Target, Transition};

/// A target resolved: where it leads, the outputs it sets (output index, value), and the policy
/// sentences it cites.
type Resolved = (Target, Vec<(usize, String)>, Vec<String>);

impl Builder {
    pub(super) fn stage(&mut self, ctx: &Ctx, id: &str, rs: &raw::RawStage) -> Stage {
        let at = format!("sop.stages.{id}");
        if !valid_id(id) {
            self.problem(Problem::InvalidId {
                at: at.clone(),
                id: id.to_string(),
                expected: NAME_CHARS,
            });
        }
        let mut kinds = Vec::new();
        if rs.next.is_some() {
            kinds.push("`next`");
        }
        if rs.branch_on.is_some() || rs.cases.is_some() {
            kinds.push("`branch_on`/`cases`");
        }
        if rs.rules.is_some() {
            kinds.push("`rules`");
        }
        let mut stage = Stage {
            id: id.to_string(),
            title: rs.title.clone(),
            description: rs.description.clone(),
            kind: StageKind::Next,
            transitions: Vec::new(),
            source: rs.source.clone(),
        };
        if kinds.len() != 1 {
            let found = if kinds.is_empty() {
                "no `next`, `branch_on` or `rules`".to_string()
            } else {
                format!("{} together", kinds.join(" and "))
            };
            self.problem(Problem::BadStage { at, found });
            return stage;
        }
        if let Some(next) = &rs.next {
            if let Some(t) = self.target(ctx, &format!("{at}.next"), next) {
                stage.transitions.push(Transition {
                    guard: Guard::Always,
                    target: t.0,
                    set: t.1,
                    source: t.2,
                    label: "next".into(),
                });
            }
        } else if let Some(rules) = &rs.rules {
            self.rules(ctx, &at, rules, &mut stage);
        } else {
            self.branch(ctx, &at, rs, &mut stage);
        }
        stage
    }

    pub(super) fn key_ref(&mut self, ctx: &Ctx, at: &str, name: &str) -> Option<usize> {
        let found = ctx.keys.iter().position(|k| k.name == name);
        if found.is_none() {
            self.problem(Problem::UnknownReference {
                at: at.to_string(),
                kind: "field or variable",
                name: name.to_string(),
                expected: join(ctx.keys.iter().map(|k| &k.name)),
            });
        }
        found
    }

    fn target(&mut self, ctx: &Ctx, at: &str, form: &TargetForm) -> Option<Resolved> {
        let RawTarget {
            stage,
            action,
            set,
            source,
        } = &form.0;
        let target = match (stage, action) {
            (Some(s), None) => match ctx.stage_ids.iter().position(|x| x == s) {
                Some(i) => Some(Target::Stage(i)),
                None => {
                    self.problem(Problem::UnknownReference {
                        at: at.to_string(),
                        kind: "stage",
                        name: s.clone(),
                        expected: join(&ctx.stage_ids),
                    });
                    None
                }
            },
            (None, Some(a)) => match ctx.actions.iter().position(|x| x.name == *a) {
                Some(i) => Some(Target::Action(i)),
                None => {
                    self.problem(Problem::UnknownReference {
                        at: at.to_string(),
                        kind: "action",
                        name: a.clone(),
                        expected: join(ctx.actions.iter().map(|x| &x.name)),
                    });
                    None
                }
            },
            (Some(_), Some(_)) => {
                self.problem(Problem::BadTarget {
                    at: at.to_string(),
                    found: "both `stage` and `action`".into(),
                });
                None
            }
            (None, None) => {
                self.problem(Problem::BadTarget {
                    at: at.to_string(),
                    found: "neither `stage` nor `action`".into(),
                });
                None
            }
        };
        let mut sets = Vec::new();
        for (name, value) in &set.0 {
            let Some(i) = ctx.outputs.iter().position(|o| o.name == *name) else {
                self.problem(Problem::UnknownReference {
                    at: format!("{at}.set"),
                    kind: "output",
                    name: name.clone(),
                    expected: join(ctx.outputs.iter().map(|o| &o.name)),
                });
                continue;
            };
            if !ctx.outputs[i].options.contains(&value.0) {
                self.problem(Problem::UnknownValue {
                    at: format!("{at}.set"),
                    key: name.clone(),
                    value: value.0.clone(),
                    expected: join(&ctx.outputs[i].options),
                });
                continue;
            }
            sets.push((i, value.0.clone()));
        }
        target.map(|t| (t, sets, source.clone()))
    }

    /// The domain of a condition value (one value or several) on a key.
    pub(super) fn condition(
        &mut self,
        ctx: &Ctx,
        at: &str,
        key: usize,
        values: &[String],
    ) -> Option<Domain> {
        let k = &ctx.keys[key];
        if values.is_empty() {
            self.problem(Problem::UnknownValue {
                at: at.to_string(),
                key: k.name.clone(),
                value: "[]".into(),
                expected: k.expected(),
            });
            return None;
        }
        let mut d = match k.kind {
            KeyKind::Integer { .. } => Domain::Ints(IntSet::empty()),
            _ => Domain::Set(0),
        };
        let mut ok = true;
        for v in values {
            match self.value_domain(at, k, v, false) {
                Some(x) => d = d.union(&x),
                None => ok = false,
            }
        }
        ok.then(|| d.intersect(&k.full_domain()))
    }

    /// The domain of one value (an option, a boolean, an integer predicate) on a key.
    fn value_domain(&mut self, at: &str, k: &Key, v: &str, else_allowed: bool) -> Option<Domain> {
        match &k.kind {
            KeyKind::Integer { .. } => match parse_predicate(v) {
                Some(s) => Some(Domain::Ints(s)),
                None => {
                    self.problem(Problem::BadPredicate {
                        at: at.to_string(),
                        key: k.name.clone(),
                        text: v.to_string(),
                        else_hint: if else_allowed { ", or `else`" } else { "" },
                    });
                    None
                }
            },
            _ => match k.options().iter().position(|o| o == v) {
                Some(i) => Some(Domain::option(i)),
                None => {
                    self.problem(Problem::UnknownValue {
                        at: at.to_string(),
                        key: k.name.clone(),
                        value: v.to_string(),
                        expected: k.options().join(", "),
                    });
                    None
                }
            },
        }
    }

    fn branch(&mut self, ctx: &Ctx, at: &str, rs: &raw::RawStage, stage: &mut Stage) {
        let (Some(key_name), Some(cases)) = (&rs.branch_on, &rs.cases) else {
            let found = if rs.branch_on.is_some() {
                "`branch_on` without `cases`"
            } else {
                "`cases` without `branch_on`"
            };
            self.problem(Problem::BadStage {
                at: at.to_string(),
                found: found.into(),
            });
            return;
        };
        let Some(key) = self.key_ref(ctx, &format!("{at}.branch_on"), key_name) else {
            return;
        };
        stage.kind = StageKind::Branch { key };
        let k = &ctx.keys[key];
        let is_int = matches!(k.kind, KeyKind::Integer { .. });
        let mut seen: Vec<(String, Domain)> = Vec::new();
        let mut has_else = false;
        let mut all_ok = true;
        for (label, form) in &cases.0 {
            let case_at = format!("{at}.cases.{label}");
            let target = self.target(ctx, &case_at, form);
            if is_int && label.trim() == "else" {
                has_else = true;
                if let Some((t, set, source)) = target {
                    stage.transitions.push(Transition {
                        guard: Guard::Otherwise,
                        target: t,
                        set,
                        source,
                        label: "else".into(),
                    });
                }
                continue;
            }
            let Some(d) = self.value_domain(&format!("{at}.cases"), k, label, true) else {
                all_ok = false;
                continue;
            };
            let d = d.intersect(&k.full_domain());
            for (other, od) in &seen {
                let both = d.intersect(od);
                if !both.is_empty() {
                    all_ok = false;
                    match &both {
                        Domain::Ints(s) => self.problem(Problem::OverlappingCases {
                            at: format!("{at}.cases"),
                            key: k.name.clone(),
                            first: other.clone(),
                            second: label.clone(),
                            example: s.pick(&[]).unwrap_or_default(),
                        }),
                        Domain::Set(_) => self.problem(Problem::DuplicateCase {
                            at: format!("{at}.cases"),
                            key: k.name.clone(),
                            value: label.clone(),
                        }),
                    }
                }
            }
            seen.push((label.clone(), d.clone()));
            if let Some((t, set, source)) = target {
                stage.transitions.push(Transition {
                    guard: Guard::When(vec![(key, d)]),
                    target: t,
                    set,
                    source,
                    label: label.clone(),
                });
            }
        }
        if !all_ok || has_else {
            return;
        }
        let covered = seen.iter().fold(
            match k.kind {
                KeyKind::Integer { .. } => Domain::Ints(IntSet::empty()),
                _ => Domain::Set(0),
            },
            |acc, (_, d)| acc.union(d),
        );
        let missing = k.full_domain().subtract(&covered);
        if missing.is_empty() {
            return;
        }
        if is_int {
            self.problem(Problem::CaseGap {
                at: format!("{at}.cases"),
                key: k.name.clone(),
                gap: k.describe(&missing),
                range: k.describe(&k.full_domain()),
            });
        } else {
            self.problem(Problem::MissingCases {
                at: format!("{at}.cases"),
                key: k.name.clone(),
                missing: k.describe(&missing).replace('|', ", "),
                expected: k.options().join(", "),
            });
        }
    }

    fn rules(&mut self, ctx: &Ctx, at: &str, rules: &[RawRule], stage: &mut Stage) {
        let full: ValueBox = ctx.keys.iter().map(Key::full_domain).collect();
        let mut mentioned: Vec<usize> = Vec::new();
        let mut boxes: Vec<(usize, ValueBox)> = Vec::new();
        let mut has_otherwise = false;
        let mut all_ok = true;
        if rules.is_empty() {
            self.problem(Problem::BadStage {
                at: at.to_string(),
                found: "an empty `rules` list".into(),
            });
            return;
        }
        for (i, rule) in rules.iter().enumerate() {
            let rule_at = format!("{at}.rules[{}]", i + 1);
            match (&rule.when, &rule.then, &rule.otherwise) {
                (None, None, Some(target)) => {
                    if i + 1 != rules.len() {
                        all_ok = false;
                        self.problem(Problem::BadRule {
                            at: rule_at.clone(),
                            found: "`otherwise` before the last rule".into(),
                            expected: "at most one `otherwise`, as the last rule".into(),
                        });
                    }
                    has_otherwise = true;
                    if let Some((t, set, source)) =
                        self.target(ctx, &format!("{rule_at}.otherwise"), target)
                    {
                        stage.transitions.push(Transition {
                            guard: Guard::Otherwise,
                            target: t,
                            set,
                            source,
                            label: "otherwise".into(),
                        });
                    }
                }
                (Some(when), Some(then), None) => {
                    if when.0.is_empty() {
                        all_ok = false;
                        self.problem(Problem::BadRule {
                            at: rule_at.clone(),
                            found: "an empty `when`".into(),
                            expected: "at least one condition (use `otherwise` for a catch-all)"
                                .into(),
                        });
                        continue;
                    }
                    let mut conds = Vec::new();
                    let mut labels = Vec::new();
                    let mut b = full.clone();
                    for (name, CondValue(values)) in &when.0 {
                        let Some(key) = self.key_ref(ctx, &format!("{rule_at}.when"), name) else {
                            all_ok = false;
                            continue;
                        };
                        let Some(d) =
                            self.condition(ctx, &format!("{rule_at}.when.{name}"), key, values)
                        else {
                            all_ok = false;
                            continue;
                        };
                        if !mentioned.contains(&key) {
                            mentioned.push(key);
                        }
                        b[key] = d.clone();
                        labels.push(format!("{}={}", name, values.join("|")));
                        conds.push((key, d));
                    }
                    let target = self.target(ctx, &format!("{rule_at}.then"), then);
                    for (j, other) in &boxes {
                        let both = box_intersect(other, &b);
                        if !box_is_empty(&both) {
                            all_ok = false;
                            self.problem(Problem::OverlappingRules {
                                at: format!("{at}.rules"),
                                first: j + 1,
                                second: i + 1,
                                example: describe_example(ctx.keys, &both, &mentioned),
                            });
                        }
                    }
                    boxes.push((i, b));
                    if let Some((t, set, source)) = target {
                        stage.transitions.push(Transition {
                            guard: Guard::When(conds),
                            target: t,
                            set,
                            source,
                            label: labels.join(", "),
                        });
                    }
                }
                (when, then, otherwise) => {
                    all_ok = false;
                    let present: Vec<&str> = [
                        ("`when`", when.is_some()),
                        ("`then`", then.is_some()),
                        ("`otherwise`", otherwise.is_some()),
                    ]
                    .into_iter()
                    .filter_map(|(name, there)| there.then_some(name))
                    .collect();
                    let found = if present.is_empty() {
                        "an empty rule".to_string()
                    } else {
                        format!("a rule with {}", present.join(" and "))
                    };
                    self.problem(Problem::BadRule {
                        at: rule_at,
                        found,
                        expected: "`{when: {...}, then: TARGET}` or `{otherwise: TARGET}`".into(),
                    });
                }
            }
        }
        stage.kind = StageKind::Rules {
            keys: mentioned.clone(),
        };
        if all_ok && !has_otherwise {
            let uncovered = box_subtract_all(&full, boxes.iter().map(|(_, b)| b));
            if let Some(first) = uncovered.first() {
                self.problem(Problem::UncoveredRules {
                    at: format!("{at}.rules"),
                    example: describe_example(ctx.keys, first, &mentioned),
                    keys: join(mentioned.iter().map(|&k| &ctx.keys[k].name)),
                });
            }
        }
    }
}

/// One concrete assignment of the listed keys inside a box, e.g. `CoreDemand=Inqury, memberLevel=VIP`.
fn describe_example(keys: &[Key], b: &[Domain], which: &[usize]) -> String {
    which
        .iter()
        .map(|&k| {
            let v = keys[k]
                .pick(&b[k])
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into());
            format!("{}={}", keys[k].name, v)
        })
        .collect::<Vec<_>>()
        .join(", ")
}
