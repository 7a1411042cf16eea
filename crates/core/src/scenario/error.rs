//! Errors of loading and validating a scenario. Every problem names where it is (a YAML line and
//! column, or the stage, key, rule or case), what was found and what was expected.

use std::fmt;

/// A scenario file that could not be loaded: the file and every problem found in it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ScenarioError {
    /// The file (or a label such as `<string>` for in-memory input).
    pub file: String,
    /// What is wrong, at least one problem.
    pub problems: Vec<Problem>,
}

impl ScenarioError {
    /// An error with a single problem.
    pub fn one(file: impl Into<String>, problem: Problem) -> ScenarioError {
        ScenarioError {
            file: file.into(),
            problems: vec![problem],
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}: {}", self.file, p)?;
        }
        Ok(())
    }
}

/// One problem in a scenario file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The file could not be read.
    #[error("cannot read the file: {message}")]
    Io {
        /// The operating system's message.
        message: String,
    },
    /// Not valid YAML, or a value of the wrong shape.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// The parser's message.
        message: String,
    },
    /// A key that the format does not define.
    #[error("line {line}, column {column}: unknown key `{key}`; expected one of: {expected}")]
    UnknownKey {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// The key found.
        key: String,
        /// The keys allowed there.
        expected: String,
    },
    /// The same key twice in one YAML map.
    #[error("line {line}, column {column}: duplicate key `{key}`; expected each key once in a map")]
    DuplicateKey {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// The repeated key.
        key: String,
    },
    /// The same id declared twice (e.g. a field and a variable with one name, two intents).
    #[error("{at}: duplicate id `{id}`: already declared as {first}; expected unique ids")]
    DuplicateId {
        /// Where the second declaration is.
        at: String,
        /// The id.
        id: String,
        /// Where the first declaration is.
        first: String,
    },
    /// An id with characters that are not allowed there.
    #[error("{at}: invalid id `{id}`; expected {expected}")]
    InvalidId {
        /// Where.
        at: String,
        /// The id found.
        id: String,
        /// The characters allowed.
        expected: &'static str,
    },
    /// An enum with no options.
    #[error("{at}: empty options list; expected at least one option")]
    EmptyOptions {
        /// The field, variable or output.
        at: String,
    },
    /// A malformed declaration of a field, variable, action or output.
    #[error("{at}: {found}; expected {expected}")]
    BadDeclaration {
        /// Where.
        at: String,
        /// What was found.
        found: String,
        /// What was expected.
        expected: String,
    },
    /// A name that is not declared.
    #[error("{at}: unknown {kind} `{name}`; expected one of: {expected}")]
    UnknownReference {
        /// Where the reference is.
        at: String,
        /// `stage`, `field or variable`, `action` or `output`.
        kind: &'static str,
        /// The name found.
        name: String,
        /// The declared names.
        expected: String,
    },
    /// A stage that is not exactly one of `next`, `branch_on` + `cases`, `rules`.
    #[error("{at}: {found}; expected exactly one of `next`, `branch_on` with `cases`, or `rules`")]
    BadStage {
        /// The stage.
        at: String,
        /// What was found.
        found: String,
    },
    /// A value that is not an option of its key (in a case, a rule, an intent or a `set`).
    #[error("{at}: `{value}` is not a value of {key}; expected one of: {expected}")]
    UnknownValue {
        /// Where.
        at: String,
        /// The key.
        key: String,
        /// The value found.
        value: String,
        /// The key's values.
        expected: String,
    },
    /// The cases of a branch miss some options of its enum or boolean key.
    #[error(
        "{at}: cases do not cover {key} = {missing}; expected every value of {key} ({expected}) exactly once"
    )]
    MissingCases {
        /// The stage.
        at: String,
        /// The key branched on.
        key: String,
        /// The options without a case.
        missing: String,
        /// All options.
        expected: String,
    },
    /// Two cases of a branch name the same value.
    #[error("{at}: {key} = {value} has more than one case; expected every value exactly once")]
    DuplicateCase {
        /// The stage.
        at: String,
        /// The key branched on.
        key: String,
        /// The value covered twice.
        value: String,
    },
    /// An integer predicate that cannot be parsed.
    #[error(
        "{at}: invalid integer predicate `{text}` for {key}; expected `== N`, `!= N`, `< N`, `<= N`, `> N`, `>= N`, `N..M`, `N`{else_hint}"
    )]
    BadPredicate {
        /// Where.
        at: String,
        /// The integer key.
        key: String,
        /// The text found.
        text: String,
        /// `, or else` where `else` is allowed.
        else_hint: &'static str,
    },
    /// Two integer cases that both match some value.
    #[error(
        "{at}: cases `{first}` and `{second}` on {key} overlap (both match {key} = {example}); expected disjoint predicates"
    )]
    OverlappingCases {
        /// The stage.
        at: String,
        /// The integer key.
        key: String,
        /// One case.
        first: String,
        /// The other case.
        second: String,
        /// A value both match.
        example: i64,
    },
    /// Integer cases that leave values of the key's range uncovered, without `else`.
    #[error(
        "{at}: cases on {key} leave {gap} uncovered (range {range}); expected predicates covering the whole range, or an `else` case"
    )]
    CaseGap {
        /// The stage.
        at: String,
        /// The integer key.
        key: String,
        /// The uncovered values.
        gap: String,
        /// The key's min..max.
        range: String,
    },
    /// Two rules of a stage that both match some assignment.
    #[error(
        "{at}: rules {first} and {second} overlap (both match {example}); expected rules that never match the same values"
    )]
    OverlappingRules {
        /// The stage.
        at: String,
        /// 1-based number of one rule.
        first: usize,
        /// 1-based number of the other.
        second: usize,
        /// An assignment both match.
        example: String,
    },
    /// Rules that leave some combination of their keys uncovered, without `otherwise`.
    #[error(
        "{at}: no rule matches {example}; expected rules covering every combination of {keys}, or an `otherwise` rule"
    )]
    UncoveredRules {
        /// The stage.
        at: String,
        /// An uncovered assignment.
        example: String,
        /// The keys the rules mention.
        keys: String,
    },
    /// A malformed rule.
    #[error("{at}: {found}; expected {expected}")]
    BadRule {
        /// The rule.
        at: String,
        /// What was found.
        found: String,
        /// What was expected.
        expected: String,
    },
    /// A malformed target (`then`, case value, `next`).
    #[error(
        "{at}: {found}; expected a stage id, {{stage: ID}} or {{action: NAME}}, optionally with `set`"
    )]
    BadTarget {
        /// Where.
        at: String,
        /// What was found.
        found: String,
    },
    /// A cycle that some assignment of values actually follows forever.
    #[error(
        "sop: the route for {witness} loops: {cycle}; expected no assignment to visit a stage twice"
    )]
    Loop {
        /// The stages of the cycle, `a -> b -> a`.
        cycle: String,
        /// An assignment that follows it.
        witness: String,
    },
    /// A stage that no route reaches.
    #[error(
        "sop.stages.{stage}: unreachable from start `{start}` ({why}); expected every stage to lie on some route"
    )]
    Unreachable {
        /// The stage.
        stage: String,
        /// The start stage.
        start: String,
        /// `no transition leads to it` or `no assignment of values leads to it`.
        why: &'static str,
    },
    /// A stage from which no action can be reached.
    #[error(
        "sop.stages.{stage}: no action can be reached from this stage; expected every stage to lead to some action"
    )]
    DeadEnd {
        /// The stage.
        stage: String,
    },
    /// A route ends in an action that carries an output the route never sets.
    #[error(
        "actions.{action}: carries output {output}, but the route {path} reaches it through case {case} without setting {output}; expected every route to {action} to set it"
    )]
    OutputNotSet {
        /// The case(s) that lead into the action, and their stage.
        case: String,
        /// The action.
        action: String,
        /// The output.
        output: String,
        /// The route's path.
        path: String,
    },
    /// An intent whose implied values no assignment satisfies.
    #[error(
        "{at}: implies no possible values ({key} has none left); expected satisfiable conditions"
    )]
    EmptyIntent {
        /// The intent.
        at: String,
        /// The key whose condition is empty.
        key: String,
    },
}
