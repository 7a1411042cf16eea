//! tau2's `calculate` tool: `str(round(float(eval(expression)), 2))` after a check that the
//! expression holds only `0123456789+-*/(). `. Over that alphabet Python's `eval` is a small
//! language (numbers, `+ - * / // **`, unary signs, parentheses, `()`, `...`, calls), and this
//! module evaluates it as CPython 3.11 does, errors included: the syntax errors of its parser
//! (the generic one, the tokenizer's, "Perhaps you forgot a comma?", starred groups), and the
//! run-time errors of ints, floats, complex numbers, the empty tuple and `Ellipsis`.
//!
//! Where it differs: Python's integers are unbounded; these are exact up to 100000 bits and
//! beyond keep only their sign (enough to fail as Python fails when such a number is made a
//! float; an operation whose result would need more is an error here). The limits on nesting
//! depth are measured (the compiler's recursion limit depends on the caller's stack depth).

use super::bigint::Int;
use super::py;
use serde_json::Value;

/// The characters `calculate` accepts.
const ALLOWED: &str = "0123456789+-*/(). ";
/// The compiler's recursion limit, as an expression depth (measured through tau2's
/// `get_response`, Python 3.11).
const MAX_AST_DEPTH: usize = 2980;
/// The parser's stack limit (CPython's MAXSTACK), in parser levels.
const MAX_PARSER_DEPTH: usize = 6000;
/// Parentheses deeper than this are a tokenizer error (CPython's MAXLEVEL).
const MAX_PAREN_LEVEL: usize = 200;

/// Runs `calculate(expression)` on a JSON argument: the answer, or the error message
/// (without tau2's `Error: ` prefix).
pub fn calculate(expression: &Value) -> Result<String, String> {
    match expression {
        Value::String(s) => {
            if !s.chars().all(|c| ALLOWED.contains(c)) {
                return Err("Invalid characters in expression".into());
            }
            eval(s)
        }
        Value::Array(_) | Value::Object(_) => {
            // `all(char in ALLOWED for char in expression)` iterates a list's items or a
            // dict's keys; `eval` then refuses anything but a string.
            let items: Vec<&Value> = match expression {
                Value::Array(a) => a.iter().collect(),
                _ => Vec::new(),
            };
            let keys: Vec<&str> = match expression {
                Value::Object(m) => m.keys().map(String::as_str).collect(),
                _ => Vec::new(),
            };
            for item in items {
                match item {
                    Value::String(s) => {
                        if !ALLOWED.contains(s.as_str()) {
                            return Err("Invalid characters in expression".into());
                        }
                    }
                    other => {
                        return Err(format!(
                            "'in <string>' requires string as left operand, not {}",
                            py::type_name(other)
                        ));
                    }
                }
            }
            if keys.iter().any(|k| !ALLOWED.contains(k)) {
                return Err("Invalid characters in expression".into());
            }
            Err("eval() arg 1 must be a string, bytes or code object".into())
        }
        other => Err(format!("'{}' object is not iterable", py::type_name(other))),
    }
}

/// Evaluates an expression of the allowed alphabet and formats the rounded float.
fn eval(text: &str) -> Result<String, String> {
    let node = parse(text)?;
    let value = node.eval()?;
    let x = match value {
        Val::Int(i) => i.to_f64()?,
        Val::Float(x) => x,
        other => {
            return Err(format!(
                "float() argument must be a string or a real number, not '{}'",
                other.type_name()
            ));
        }
    };
    Ok(py::float_repr(py::round2(x)))
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Ellipsis,
    Plus,
    Minus,
    Star,
    DoubleStar,
    Slash,
    DoubleSlash,
    LParen,
    RParen,
    Dot,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    /// Byte range of the token's text.
    start: usize,
    end: usize,
    /// Parenthesis depth where the token stands (after an opening one, before a closing one
    /// is counted out).
    level: usize,
}

/// A tokenizer error: raised when the parser fetches the token where it happens.
#[derive(Debug, Clone)]
struct TokErr {
    /// Index of the token that could not be made.
    at: usize,
    message: &'static str,
    /// Whether it is the end of input inside parentheses (raised only when fetched).
    unclosed: bool,
}

fn tokenize(text: &str) -> (Vec<Tok>, Option<TokErr>) {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut level = 0usize;
    let mut i = 0;
    let digit = |j: usize| j < b.len() && b[j].is_ascii_digit();
    while i < b.len() {
        let c = b[i];
        let start = i;
        let at = toks.len();
        let kind = match c {
            b' ' => {
                i += 1;
                continue;
            }
            b'0'..=b'9' => {
                let mut float = false;
                if c == b'0' {
                    while i < b.len() && b[i] == b'0' {
                        i += 1;
                    }
                    let nonzero = digit(i);
                    while digit(i) {
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'.' {
                        i += 1;
                        float = true;
                        while digit(i) {
                            i += 1;
                        }
                    } else if nonzero {
                        let e = TokErr {
                            at,
                            message: "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
                            unclosed: false,
                        };
                        return (toks, Some(e));
                    }
                } else {
                    while digit(i) {
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'.' {
                        i += 1;
                        float = true;
                        while digit(i) {
                            i += 1;
                        }
                    }
                }
                if float { Kind::Float } else { Kind::Int }
            }
            b'.' => {
                if digit(i + 1) {
                    i += 1;
                    while digit(i) {
                        i += 1;
                    }
                    Kind::Float
                } else if i + 2 < b.len() && b[i + 1] == b'.' && b[i + 2] == b'.' {
                    i += 3;
                    Kind::Ellipsis
                } else {
                    i += 1;
                    Kind::Dot
                }
            }
            b'*' | b'/' => {
                let double = i + 1 < b.len() && b[i + 1] == c;
                i += if double { 2 } else { 1 };
                match (c, double) {
                    (b'*', true) => Kind::DoubleStar,
                    (b'*', false) => Kind::Star,
                    (_, true) => Kind::DoubleSlash,
                    _ => Kind::Slash,
                }
            }
            b'+' => {
                i += 1;
                Kind::Plus
            }
            b'-' => {
                i += 1;
                Kind::Minus
            }
            b'(' => {
                if level >= MAX_PAREN_LEVEL {
                    let e = TokErr {
                        at,
                        message: "too many nested parentheses",
                        unclosed: false,
                    };
                    return (toks, Some(e));
                }
                level += 1;
                i += 1;
                Kind::LParen
            }
            b')' => {
                if level == 0 {
                    let e = TokErr {
                        at,
                        message: "unmatched ')'",
                        unclosed: false,
                    };
                    return (toks, Some(e));
                }
                i += 1;
                Kind::RParen
            }
            // The caller has checked the alphabet.
            _ => {
                i += 1;
                continue;
            }
        };
        toks.push(Tok {
            kind,
            start,
            end: i,
            level,
        });
        if kind == Kind::RParen {
            level -= 1;
        }
    }
    if level > 0 {
        let e = TokErr {
            at: toks.len(),
            message: "'(' was never closed",
            unclosed: true,
        };
        return (toks, Some(e));
    }
    toks.push(Tok {
        kind: Kind::End,
        start: b.len(),
        end: b.len(),
        level: 0,
    });
    (toks, None)
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Pow,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Pow => "** or pow()",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnOp {
    Neg,
    Pos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    Plain,
    Star,
    DoubleStar,
}

#[derive(Debug)]
enum Node {
    Const(Val),
    /// Unary operators, outermost first, on an operand.
    Unary(Vec<UnOp>, Box<Node>),
    /// A left-associative chain: `first op1 x1 op2 x2 ...`.
    Chain(Box<Node>, Vec<(BinOp, Node)>),
    /// `p0 ** U1 p1 ** U2 p2 ...`: each exponent's unary operators apply to the rest of the
    /// chain on their right.
    Power(Vec<(Vec<UnOp>, Node)>),
    /// `f(arg)(arg)...`: calls on a primary, each with at most one argument.
    Calls(Box<Node>, Vec<Option<(ArgKind, Node)>>),
}

impl Node {
    /// Depth of the Python syntax tree (each operator, call and constant is one level).
    fn depth(&self) -> usize {
        match self {
            Node::Const(_) => 1,
            Node::Unary(ops, x) => ops.len() + x.depth(),
            Node::Chain(first, rest) => {
                let n = rest.len();
                let mut d = n + first.depth();
                for (i, (_, x)) in rest.iter().enumerate() {
                    d = d.max(n - i + x.depth());
                }
                d
            }
            Node::Power(parts) => {
                // p0 ** U1(p1 ** U2(p2 ...)): walk from the right.
                let mut d = 0;
                for (i, (ops, p)) in parts.iter().enumerate().rev() {
                    let inner = if i + 1 == parts.len() {
                        p.depth()
                    } else {
                        1 + p.depth().max(d)
                    };
                    d = inner + ops.len();
                }
                d
            }
            Node::Calls(f, calls) => {
                let mut d = f.depth();
                for arg in calls {
                    let a = arg.as_ref().map_or(0, |(_, x)| x.depth());
                    d = 1 + d.max(a);
                }
                d
            }
        }
    }

    fn eval(&self) -> Result<Val, String> {
        match self {
            Node::Const(v) => Ok(v.clone()),
            Node::Unary(ops, x) => {
                let mut v = x.eval()?;
                for op in ops.iter().rev() {
                    v = unary(*op, v)?;
                }
                Ok(v)
            }
            Node::Chain(first, rest) => {
                let mut v = first.eval()?;
                for (op, x) in rest {
                    let r = x.eval()?;
                    v = binary(*op, v, r)?;
                }
                Ok(v)
            }
            Node::Power(parts) => {
                let mut values = Vec::with_capacity(parts.len());
                for (_, p) in parts {
                    values.push(p.eval()?);
                }
                let mut acc: Option<Val> = None;
                for (i, (ops, _)) in parts.iter().enumerate().rev() {
                    let base = std::mem::replace(&mut values[i], Val::Tuple);
                    let mut v = match acc {
                        None => base,
                        Some(exp) => binary(BinOp::Pow, base, exp)?,
                    };
                    for op in ops.iter().rev() {
                        v = unary(*op, v)?;
                    }
                    acc = Some(v);
                }
                acc.ok_or_else(|| "invalid syntax".to_string())
            }
            Node::Calls(f, calls) => {
                let func = f.eval()?;
                // The first call fails: no value of this language is callable.
                if let Some(arg) = calls.first() {
                    if let Some((kind, x)) = arg {
                        let a = x.eval()?;
                        match (kind, &a) {
                            (ArgKind::Star, Val::Tuple) | (ArgKind::Plain, _) => {}
                            (ArgKind::Star, other) => {
                                return Err(format!(
                                    "{} argument after * must be an iterable, not {}",
                                    func.str(),
                                    other.type_name()
                                ));
                            }
                            (ArgKind::DoubleStar, other) => {
                                return Err(format!(
                                    "{} argument after ** must be a mapping, not {}",
                                    func.str(),
                                    other.type_name()
                                ));
                            }
                        }
                    }
                    return Err(format!("'{}' object is not callable", func.type_name()));
                }
                Ok(func)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parser: the first pass parses; after a failure a second pass looks for the specialized
// messages of CPython's "invalid_" rules, as CPython does.

#[derive(Debug)]
enum PErr {
    /// The input does not parse (generic error decided later).
    Fail,
    /// A tokenizer error, met when the parser fetched the token: final.
    Final(String),
    /// A syntax error the parser raises itself (the second pass's specialized messages, an
    /// over-long literal): CPython still tokenizes the rest of the input, and a tokenizer
    /// error there takes precedence.
    Special(String),
}

struct Parser<'a> {
    text: &'a str,
    toks: &'a [Tok],
    err: Option<TokErr>,
    pos: usize,
    second_pass: bool,
}

fn syntax(msg: &str, line: u32) -> String {
    format!("{msg} (<string>, line {line})")
}

impl Parser<'_> {
    fn peek(&self) -> Result<Tok, PErr> {
        if let Some(e) = &self.err
            && self.pos >= e.at
        {
            return Err(PErr::Final(syntax(e.message, 1)));
        }
        Ok(self.toks[self.pos.min(self.toks.len() - 1)])
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    /// `expression`: where CPython's second pass tries `invalid_expression` (two expressions
    /// side by side inside parentheses: "Perhaps you forgot a comma?").
    fn expression(&mut self) -> Result<Node, PErr> {
        let a = self.sum()?;
        if self.second_pass {
            let t = self.peek()?;
            if matches!(t.kind, Kind::Int | Kind::Float | Kind::Ellipsis) {
                let save = self.pos;
                self.second_pass = false;
                let b = self.sum();
                self.second_pass = true;
                self.pos = save;
                if let Err(e @ (PErr::Final(_) | PErr::Special(_))) = b {
                    return Err(e);
                }
                if t.level > 0 {
                    return Err(PErr::Special(syntax(
                        "invalid syntax. Perhaps you forgot a comma?",
                        1,
                    )));
                }
            }
        }
        Ok(a)
    }

    /// `sum` and `term`: the two levels of left-associative operators.
    fn sum(&mut self) -> Result<Node, PErr> {
        let first = self.term()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek()?.kind {
                Kind::Plus => BinOp::Add,
                Kind::Minus => BinOp::Sub,
                _ => break,
            };
            self.bump();
            rest.push((op, self.term()?));
        }
        Ok(if rest.is_empty() {
            first
        } else {
            Node::Chain(Box::new(first), rest)
        })
    }

    fn term(&mut self) -> Result<Node, PErr> {
        let first = self.factor()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek()?.kind {
                Kind::Star => BinOp::Mul,
                Kind::Slash => BinOp::Div,
                Kind::DoubleSlash => BinOp::FloorDiv,
                _ => break,
            };
            self.bump();
            rest.push((op, self.factor()?));
        }
        Ok(if rest.is_empty() {
            first
        } else {
            Node::Chain(Box::new(first), rest)
        })
    }

    fn unary_ops(&mut self) -> Result<Vec<UnOp>, PErr> {
        let mut ops = Vec::new();
        loop {
            match self.peek()?.kind {
                Kind::Minus => ops.push(UnOp::Neg),
                Kind::Plus => ops.push(UnOp::Pos),
                _ => return Ok(ops),
            }
            self.bump();
        }
    }

    /// `factor` (unary signs) and `power` (right-associative `**`), without recursion.
    fn factor(&mut self) -> Result<Node, PErr> {
        let ops = self.unary_ops()?;
        let mut parts = vec![(Vec::new(), self.primary()?)];
        while self.peek()?.kind == Kind::DoubleStar {
            self.bump();
            let u = self.unary_ops()?;
            parts.push((u, self.primary()?));
        }
        let node = if parts.len() == 1 {
            parts.pop().map(|(_, p)| p).ok_or(PErr::Fail)?
        } else {
            Node::Power(parts)
        };
        Ok(if ops.is_empty() {
            node
        } else {
            Node::Unary(ops, Box::new(node))
        })
    }

    /// `primary`: an atom and its trailers (calls; `.` needs a name, which cannot be written).
    fn primary(&mut self) -> Result<Node, PErr> {
        let atom = self.atom()?;
        let mut calls = Vec::new();
        loop {
            match self.peek()?.kind {
                Kind::LParen => {
                    self.bump();
                    let arg = match self.peek()?.kind {
                        Kind::RParen => None,
                        Kind::Star => {
                            self.bump();
                            Some((ArgKind::Star, self.expression()?))
                        }
                        Kind::DoubleStar => {
                            self.bump();
                            Some((ArgKind::DoubleStar, self.expression()?))
                        }
                        _ => Some((ArgKind::Plain, self.expression()?)),
                    };
                    if self.peek()?.kind != Kind::RParen {
                        return Err(PErr::Fail);
                    }
                    self.bump();
                    calls.push(arg);
                }
                Kind::Dot => {
                    self.bump();
                    self.peek()?;
                    return Err(PErr::Fail);
                }
                _ => break,
            }
        }
        Ok(if calls.is_empty() {
            atom
        } else {
            Node::Calls(Box::new(atom), calls)
        })
    }

    fn atom(&mut self) -> Result<Node, PErr> {
        let t = self.peek()?;
        match t.kind {
            Kind::Int => {
                self.bump();
                let digits = self.text[t.start..t.end].trim_start_matches('0');
                if digits.len() > 4300 {
                    // CPython refuses long decimal literals when it makes the constant.
                    return Err(PErr::Special(syntax(
                        &format!(
                            "Exceeds the limit (4300 digits) for integer string conversion: value has {} digits; use sys.set_int_max_str_digits() to increase the limit - Consider hexadecimal for huge integer literals to avoid decimal conversion limits.",
                            digits.len()
                        ),
                        1,
                    )));
                }
                Ok(Node::Const(Val::Int(Int::parse(digits))))
            }
            Kind::Float => {
                self.bump();
                let x = self.text[t.start..t.end].parse::<f64>().unwrap_or(f64::NAN);
                Ok(Node::Const(Val::Float(x)))
            }
            Kind::Ellipsis => {
                self.bump();
                Ok(Node::Const(Val::Ellipsis))
            }
            Kind::LParen => {
                self.bump();
                let next = self.peek()?;
                match next.kind {
                    Kind::RParen => {
                        self.bump();
                        Ok(Node::Const(Val::Tuple))
                    }
                    Kind::Star | Kind::DoubleStar => {
                        if next.kind == Kind::Star {
                            // CPython's tuple rule reads `'*' bitwise_or` and then looks for
                            // a comma, fetching the token after it.
                            let save = self.pos;
                            self.bump();
                            match self.sum() {
                                Err(PErr::Fail) => {}
                                Err(e) => return Err(e),
                                Ok(_) => {
                                    self.peek()?;
                                }
                            }
                            self.pos = save;
                        }
                        if !self.second_pass {
                            return Err(PErr::Fail);
                        }
                        // invalid_group: '(' starred_expression ')' or '(' '**' expression ')'.
                        self.bump();
                        self.expression()?;
                        if self.peek()?.kind == Kind::RParen {
                            let what = if next.kind == Kind::Star {
                                "cannot use starred expression here"
                            } else {
                                "cannot use double starred expression here"
                            };
                            return Err(PErr::Special(syntax(what, 1)));
                        }
                        Err(PErr::Fail)
                    }
                    _ => {
                        let inner = self.expression()?;
                        if self.peek()?.kind != Kind::RParen {
                            return Err(PErr::Fail);
                        }
                        self.bump();
                        Ok(inner)
                    }
                }
            }
            _ => Err(PErr::Fail),
        }
    }

    /// `eval`: one expression, then the end.
    fn top(&mut self) -> Result<Node, PErr> {
        let node = self.expression()?;
        if self.peek()?.kind != Kind::End {
            return Err(PErr::Fail);
        }
        Ok(node)
    }
}

fn parse(text: &str) -> Result<Node, String> {
    let (toks, err) = tokenize(text);
    let mut toks = toks;
    if toks.is_empty() {
        // An error at the first token: keep one placeholder so that peeking is defined.
        toks.push(Tok {
            kind: Kind::End,
            start: 0,
            end: 0,
            level: 0,
        });
    }
    let mut p = Parser {
        text,
        toks: &toks,
        err: err.clone(),
        pos: 0,
        second_pass: false,
    };
    match p.top() {
        Ok(node) => {
            if parser_depth(&node) >= MAX_PARSER_DEPTH {
                // CPython's parser runs out of stack: a MemoryError without a message.
                return Err(String::new());
            }
            if node.depth() >= MAX_AST_DEPTH {
                return Err("maximum recursion depth exceeded during compilation".into());
            }
            Ok(node)
        }
        Err(PErr::Final(m)) => Err(m),
        Err(PErr::Special(m)) => Err(tokenizer_first(&err, m)),
        Err(PErr::Fail) => {
            p.pos = 0;
            p.second_pass = true;
            match p.top() {
                Err(PErr::Final(m)) => Err(m),
                Err(PErr::Special(m)) => Err(tokenizer_first(&err, m)),
                _ => {
                    // The generic error; a tokenizer error anywhere in the rest of the input
                    // replaces it (but not the end of input inside parentheses).
                    if let Some(e) = err.filter(|e| !e.unclosed) {
                        return Err(syntax(e.message, 1));
                    }
                    let only_spaces = text.bytes().all(|b| b == b' ');
                    Err(syntax("invalid syntax", if only_spaces { 0 } else { 1 }))
                }
            }
        }
    }
}

/// A parser-raised syntax error gives way to a tokenizer error further on (but not to the
/// end of input inside parentheses).
fn tokenizer_first(err: &Option<TokErr>, message: String) -> String {
    match err {
        Some(e) if !e.unclosed => syntax(e.message, 1),
        _ => message,
    }
}

/// CPython's parser levels for the deepest path, approximately: two per `**`, one per unary
/// sign, about twenty per call argument, a base of about two dozen (parentheses, which the
/// tokenizer limits to 200, are not counted).
fn parser_depth(node: &Node) -> usize {
    fn walk(n: &Node) -> usize {
        match n {
            Node::Const(_) => 0,
            Node::Unary(ops, x) => ops.len() + walk(x),
            Node::Chain(first, rest) => rest
                .iter()
                .map(|(_, x)| walk(x))
                .fold(walk(first), usize::max),
            Node::Power(parts) => {
                let (mut d, mut acc) = (0, 0);
                for (i, (ops, p)) in parts.iter().enumerate() {
                    acc += ops.len() + if i > 0 { 2 } else { 0 };
                    d = d.max(acc + walk(p));
                }
                d
            }
            Node::Calls(f, calls) => calls
                .iter()
                .map(|a| a.as_ref().map_or(0, |(_, x)| walk(x) + 20))
                .fold(walk(f), usize::max),
        }
    }
    24 + walk(node)
}

// ---------------------------------------------------------------------------------------------
// Values and their operations

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(Int),
    Float(f64),
    Complex(f64, f64),
    /// The empty tuple `()`.
    Tuple,
    Ellipsis,
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Int(_) => "int",
            Val::Float(_) => "float",
            Val::Complex(..) => "complex",
            Val::Tuple => "tuple",
            Val::Ellipsis => "ellipsis",
        }
    }

    /// `str(value)`.
    fn str(&self) -> String {
        match *self {
            Val::Int(ref i) => i.to_decimal(),
            Val::Float(x) => py::float_repr(x),
            Val::Complex(re, im) => {
                let part = |x: f64| {
                    let s = py::float_repr(x);
                    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
                };
                if re == 0.0 && re.is_sign_positive() {
                    format!("{}j", part(im))
                } else {
                    let im_s = part(im);
                    let sign = if im_s.starts_with('-') { "" } else { "+" };
                    format!("({}{sign}{im_s}j)", part(re))
                }
            }
            Val::Tuple => "()".into(),
            Val::Ellipsis => "Ellipsis".into(),
        }
    }

    /// The value as a float (an int converted as Python converts it), when it is a number
    /// that is not complex.
    fn as_f64(&self) -> Option<Result<f64, String>> {
        match self {
            Val::Int(i) => Some(i.to_f64()),
            Val::Float(x) => Some(Ok(*x)),
            _ => None,
        }
    }

    fn as_complex(&self) -> Option<Result<(f64, f64), String>> {
        match self {
            Val::Complex(re, im) => Some(Ok((*re, *im))),
            other => other.as_f64().map(|r| r.map(|x| (x, 0.0))),
        }
    }
}

fn unary(op: UnOp, v: Val) -> Result<Val, String> {
    match (op, &v) {
        (UnOp::Pos, Val::Int(_) | Val::Float(_) | Val::Complex(..)) => Ok(v),
        (UnOp::Neg, Val::Int(i)) => Ok(Val::Int(i.neg())),
        (UnOp::Neg, Val::Float(x)) => Ok(Val::Float(-x)),
        (UnOp::Neg, Val::Complex(re, im)) => Ok(Val::Complex(-re, -im)),
        (op, other) => Err(format!(
            "bad operand type for unary {}: '{}'",
            if op == UnOp::Neg { "-" } else { "+" },
            other.type_name()
        )),
    }
}

fn unsupported(op: BinOp, a: &Val, b: &Val) -> String {
    format!(
        "unsupported operand type(s) for {}: '{}' and '{}'",
        op.symbol(),
        a.type_name(),
        b.type_name()
    )
}

fn binary(op: BinOp, a: Val, b: Val) -> Result<Val, String> {
    use Val::*;
    // Sequences first: the empty tuple concatenates and repeats.
    match (op, &a, &b) {
        (BinOp::Add, Tuple, Tuple) => return Ok(Tuple),
        (BinOp::Add, Tuple, other) => {
            return Err(format!(
                "can only concatenate tuple (not \"{}\") to tuple",
                other.type_name()
            ));
        }
        (BinOp::Mul, Tuple, Int(n)) | (BinOp::Mul, Int(n), Tuple) => {
            return if n.to_i64().is_some() {
                Ok(Tuple)
            } else {
                Err("cannot fit 'int' into an index-sized integer".into())
            };
        }
        (BinOp::Mul, Tuple, other) | (BinOp::Mul, other, Tuple) => {
            return Err(format!(
                "can't multiply sequence by non-int of type '{}'",
                other.type_name()
            ));
        }
        (_, Tuple | Ellipsis, _) | (_, _, Tuple | Ellipsis) => {
            return Err(unsupported(op, &a, &b));
        }
        _ => {}
    }
    if let (Int(x), Int(y)) = (&a, &b) {
        return int_op(op, x, y);
    }
    if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
        return float_op(op, x?, y?);
    }
    let (Some(x), Some(y)) = (a.as_complex(), b.as_complex()) else {
        return Err(unsupported(op, &a, &b));
    };
    complex_op(op, &a, &b, x?, y?)
}

fn int_op(op: BinOp, x: &Int, y: &Int) -> Result<Val, String> {
    match op {
        BinOp::Add => x.add(y).map(Val::Int),
        BinOp::Sub => x.sub(y).map(Val::Int),
        BinOp::Mul => Ok(Val::Int(x.mul(y))),
        BinOp::Div => {
            if y.is_zero() {
                Err("division by zero".into())
            } else {
                x.true_div(y).map(Val::Float)
            }
        }
        BinOp::FloorDiv => {
            if y.is_zero() {
                return Err("integer division or modulo by zero".into());
            }
            x.floor_div(y).map(Val::Int)
        }
        BinOp::Pow => {
            if y.negative() {
                // A negative exponent: both become floats.
                return float_op(BinOp::Pow, x.to_f64()?, y.to_f64()?);
            }
            x.pow(y).map(Val::Int)
        }
    }
}

fn float_op(op: BinOp, x: f64, y: f64) -> Result<Val, String> {
    match op {
        BinOp::Add => Ok(Val::Float(x + y)),
        BinOp::Sub => Ok(Val::Float(x - y)),
        BinOp::Mul => Ok(Val::Float(x * y)),
        BinOp::Div => {
            if y == 0.0 {
                Err("float division by zero".into())
            } else {
                Ok(Val::Float(x / y))
            }
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err("float floor division by zero".into());
            }
            // CPython's float_divmod (the remainder itself is not needed).
            let m = x % y;
            let mut div = (x - m) / y;
            if m != 0.0 && (y < 0.0) != (m < 0.0) {
                div -= 1.0;
            }
            let floordiv = if div != 0.0 {
                let mut f = div.floor();
                if div - f > 0.5 {
                    f += 1.0;
                }
                f
            } else {
                0f64.copysign(x / y)
            };
            Ok(Val::Float(floordiv))
        }
        BinOp::Pow => float_pow(x, y),
    }
}

fn is_odd_integer(x: f64) -> bool {
    (x % 2.0).abs() == 1.0
}

/// CPython's `float_pow`.
fn float_pow(iv: f64, iw: f64) -> Result<Val, String> {
    if iw == 0.0 {
        return Ok(Val::Float(1.0));
    }
    if iv.is_nan() {
        return Ok(Val::Float(iv));
    }
    if iw.is_nan() {
        return Ok(Val::Float(if iv == 1.0 { 1.0 } else { iw }));
    }
    if iw.is_infinite() {
        let v = iv.abs();
        return Ok(Val::Float(if v == 1.0 {
            1.0
        } else if (iw > 0.0) == (v > 1.0) {
            iw.abs()
        } else {
            0.0
        }));
    }
    if iv.is_infinite() {
        let odd = is_odd_integer(iw);
        return Ok(Val::Float(if iw > 0.0 {
            if odd { iv } else { iv.abs() }
        } else if odd {
            0f64.copysign(iv)
        } else {
            0.0
        }));
    }
    if iv == 0.0 {
        if iw < 0.0 {
            return Err("0.0 cannot be raised to a negative power".into());
        }
        return Ok(Val::Float(if is_odd_integer(iw) { iv } else { 0.0 }));
    }
    if iv == 1.0 {
        return Ok(Val::Float(1.0));
    }
    let mut v = iv;
    let mut negate = false;
    if iv < 0.0 {
        if iw != iw.floor() {
            return complex_pow((iv, 0.0), (iw, 0.0)).map(|(re, im)| Val::Complex(re, im));
        }
        v = -iv;
        negate = is_odd_integer(iw);
    }
    if v == 1.0 {
        return Ok(Val::Float(if negate { -1.0 } else { 1.0 }));
    }
    let mut ix = v.powf(iw);
    let overflow = ix.is_infinite();
    if negate {
        ix = -ix;
    }
    if overflow {
        return Err("(34, 'Numerical result out of range')".into());
    }
    Ok(Val::Float(ix))
}

fn complex_op(op: BinOp, a: &Val, b: &Val, x: (f64, f64), y: (f64, f64)) -> Result<Val, String> {
    let c = |(re, im): (f64, f64)| Val::Complex(re, im);
    match op {
        BinOp::Add => Ok(c((x.0 + y.0, x.1 + y.1))),
        BinOp::Sub => Ok(c((x.0 - y.0, x.1 - y.1))),
        BinOp::Mul => Ok(c(c_prod(x, y))),
        BinOp::Div => c_quot(x, y)
            .map(c)
            .ok_or_else(|| "complex division by zero".to_string()),
        BinOp::FloorDiv => Err(unsupported(op, a, b)),
        BinOp::Pow => complex_pow(x, y).map(c),
    }
}

fn c_prod(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

/// CPython's `_Py_c_quot`; `None` for a division by zero.
fn c_quot(a: (f64, f64), b: (f64, f64)) -> Option<(f64, f64)> {
    let (abs_re, abs_im) = (b.0.abs(), b.1.abs());
    if abs_re >= abs_im {
        if abs_re == 0.0 {
            return None;
        }
        let ratio = b.1 / b.0;
        let denom = b.0 + b.1 * ratio;
        Some(((a.0 + a.1 * ratio) / denom, (a.1 - a.0 * ratio) / denom))
    } else if abs_im >= abs_re {
        let ratio = b.0 / b.1;
        let denom = b.0 * ratio + b.1;
        Some(((a.0 * ratio + a.1) / denom, (a.1 * ratio - a.0) / denom))
    } else {
        Some((f64::NAN, f64::NAN))
    }
}

/// CPython's `complex_pow` (3.11): integer exponents up to 100 by repeated squaring, others
/// through polar form.
fn complex_pow(a: (f64, f64), b: (f64, f64)) -> Result<(f64, f64), String> {
    let mut edom = false;
    let p = if b.1 == 0.0 && b.0 == b.0.trunc() && b.0.abs() < 9.2e18 {
        let n = b.0 as i64;
        if !(-100..=100).contains(&n) {
            c_pow(a, (n as f64, 0.0), &mut edom)
        } else if n > 0 {
            c_powu(a, n as u64)
        } else {
            match c_quot((1.0, 0.0), c_powu(a, n.unsigned_abs())) {
                Some(q) => q,
                None => {
                    edom = true;
                    (0.0, 0.0)
                }
            }
        }
    } else {
        c_pow(a, b, &mut edom)
    };
    if edom {
        return Err("0.0 to a negative or complex power".into());
    }
    if p.0.is_infinite() || p.1.is_infinite() {
        return Err("complex exponentiation".into());
    }
    Ok(p)
}

fn c_powu(x: (f64, f64), n: u64) -> (f64, f64) {
    let mut r = (1.0, 0.0);
    let mut p = x;
    let mut mask: u64 = 1;
    while mask > 0 && n >= mask {
        if n & mask != 0 {
            r = c_prod(r, p);
        }
        mask <<= 1;
        p = c_prod(p, p);
    }
    r
}

fn c_pow(a: (f64, f64), b: (f64, f64), edom: &mut bool) -> (f64, f64) {
    if b.0 == 0.0 && b.1 == 0.0 {
        return (1.0, 0.0);
    }
    if a.0 == 0.0 && a.1 == 0.0 {
        if b.1 != 0.0 || b.0 < 0.0 {
            *edom = true;
        }
        return (0.0, 0.0);
    }
    let vabs = a.0.hypot(a.1);
    let mut len = vabs.powf(b.0);
    let at = a.1.atan2(a.0);
    let mut phase = at * b.0;
    if b.1 != 0.0 {
        len /= (at * b.1).exp();
        phase += b.1 * vabs.ln();
    }
    (len * phase.cos(), len * phase.sin())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc(s: &str) -> Result<String, String> {
        calculate(&Value::String(s.into()))
    }

    #[test]
    fn tau2_calc_basic_arithmetic() {
        assert_eq!(calc("2 + 2").as_deref(), Ok("4.0"));
        assert_eq!(calc("0.125*1").as_deref(), Ok("0.12"));
        assert_eq!(calc("-7//2").as_deref(), Ok("-4.0"));
        assert_eq!(calc("2**-1").as_deref(), Ok("0.5"));
        assert_eq!(calc("10**20/7").as_deref(), Ok("1.4285714285714287e+19"));
        assert_eq!(calc("1/3").as_deref(), Ok("0.33"));
    }

    #[test]
    fn tau2_calc_errors_as_python() {
        assert_eq!(calc("1/0").unwrap_err(), "division by zero");
        assert_eq!(
            calc("(1").unwrap_err(),
            "'(' was never closed (<string>, line 1)"
        );
        assert_eq!(calc("").unwrap_err(), "invalid syntax (<string>, line 0)");
        assert_eq!(
            calc("(1 2)").unwrap_err(),
            "invalid syntax. Perhaps you forgot a comma? (<string>, line 1)"
        );
        assert_eq!(
            calc("1 2)").unwrap_err(),
            "unmatched ')' (<string>, line 1)"
        );
        assert_eq!(
            calc("(-8)**0.5").unwrap_err(),
            "float() argument must be a string or a real number, not 'complex'"
        );
        assert_eq!(calc("1e5").unwrap_err(), "Invalid characters in expression");
    }

    #[test]
    fn tau2_calc_survives_deep_input() {
        let deep = format!("{}1", "-".repeat(100_000));
        assert!(calc(&deep).is_err());
        let chain = format!("{}1", "1**".repeat(100_000));
        assert!(calc(&chain).is_err());
        let parens = format!("{}1{}", "(".repeat(300), ")".repeat(300));
        assert!(calc(&parens).is_err());
        let mixed = "2**-".repeat(5000) + "2";
        assert!(calc(&mixed).is_err());
    }
}
