//! The few pieces of Python's behaviour that tau2's answers are made of: `repr` of a float,
//! `round(x, 2)`, `str`/`repr` of a JSON value once it is a Python object, and `json.dumps`
//! (default separators, `ensure_ascii`, optionally `sort_keys`).

use serde::Serialize;
use serde_json::Value;
use std::io;

/// Python's `repr(x)` of a float (also what `str(x)` and `json.dumps` write, except that
/// `json.dumps` writes `Infinity`, `-Infinity` and `NaN` for the non-finite values).
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let (digits, exp) = shortest_digits(x.abs());
    let mut out = String::from(if x.is_sign_negative() { "-" } else { "" });
    if !(-4..16).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        out.push_str(&digits);
    }
    out
}

/// The shortest digits that read back as `x` (finite, not negative) and the decimal exponent
/// of the first, as Python's `repr` chooses them: when two candidates of that length are
/// equally close to `x`, the one with an even last digit (Rust's own choice may be the odd
/// one).
fn shortest_digits(x: f64) -> (String, i32) {
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let Ok(d) = digits.parse::<u128>() else {
        return (digits, exp);
    };
    if x == 0.0 || d % 2 == 0 {
        return (digits, exp);
    }
    // x = d * 10^(exp - n + 1); a tie sits half a unit of the last digit away.
    let q = exp - n;
    let alternative = if exactly(x, d * 10 + 5, q) {
        d + 1
    } else if exactly(x, d * 10 - 5, q) {
        d - 1
    } else {
        return (digits, exp);
    };
    let alt = alternative.to_string();
    if alt.len() != digits.len() {
        return (digits, exp);
    }
    let text = format!("{}.{}e{exp}", &alt[..1], &alt[1..]);
    if text.parse::<f64>() == Ok(x) {
        (alt.trim_end_matches('0').to_string(), exp)
    } else {
        (digits, exp)
    }
}

/// Whether `x` (finite, positive) is exactly `d * 10^q`.
fn exactly(x: f64, d: u128, q: i32) -> bool {
    if d == 0 {
        return false;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = u128::from(bits & ((1u64 << 52) - 1));
    let (mut m, mut e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), biased - 1075)
    };
    while m & 1 == 0 {
        m >>= 1;
        e += 1;
    }
    // d = d_odd * 2^a.
    let (d_odd, a) = (d >> d.trailing_zeros(), d.trailing_zeros() as i32);
    let pow5 = |k: i32| -> Option<u128> { 5u128.checked_pow(u32::try_from(k).ok()?) };
    if q >= 0 {
        // m * 2^e == d_odd * 5^q * 2^(a + q)
        pow5(q).and_then(|p| d_odd.checked_mul(p)) == Some(m) && e == a + q
    } else {
        // m * 2^e * 10^p == d, p = -q: m * 5^p == d_odd and e + p == a
        let p = -q;
        pow5(p).and_then(|f| m.checked_mul(f)) == Some(d_odd) && e + p == a
    }
}

/// Python's `round(x, 2)` on a float: the decimal rounding of the exact binary value, ties to
/// even, read back as the nearest float. Non-finite values are returned unchanged.
pub fn round2(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Rust's fixed-precision formatting is exact and breaks ties to even, as dtoa mode 3 does.
    format!("{x:.2}").parse().unwrap_or(x)
}

/// Python's type name of a JSON value once `json.loads` has made it a Python object.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Whether Python can hash the value (lists and dicts cannot).
pub fn hashable(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// Python's `str(v)` of a JSON value (what an f-string writes).
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// Python's `repr(v)` of a JSON value.
pub fn repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => float_repr(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => str_repr(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", str_repr(k), repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Python's `repr` of a string: single quotes unless the text holds a single quote and no
/// double quote; backslash escapes for the characters Python does not print.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character, approximately: control, format, separator
/// (other than space), private-use and non-character code points are not printable. Code
/// points unassigned in Python's Unicode database are taken as printable.
fn printable(c: char) -> bool {
    let n = c as u32;
    !matches!(n,
        0x00..=0x1f | 0x7f..=0xa0 | 0xad
        | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2 | 0x1680 | 0x180e
        | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f | 0x3000
        | 0xd800..=0xf8ff | 0xfdd0..=0xfdef | 0xfeff | 0xfff9..=0xfffb | 0xfffe..=0xffff
        | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        | 0xe0001 | 0xe0020..=0xe007f | 0xf0000..=0x10ffff)
        && (n & 0xfffe) != 0xfffe
}

/// Python's `==` on JSON values (`1 == 1.0 == True`).
pub fn eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| eq(v, w)))
        }
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

/// Appends `s` as a JSON string the way `json.dumps` writes it (`ensure_ascii`: every
/// character outside printable ASCII escaped, `\uXXXX` in lower case, surrogate pairs above
/// the basic plane).
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut buf = [0u16; 2];
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// A float as `json.dumps` writes it (`repr`, or `Infinity`, `-Infinity`, `NaN`).
pub fn json_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        float_repr(x)
    }
}

/// `serde_json` formatting as Python's `json.dumps` writes by default: `", "` and `": "` as
/// separators, floats as `repr`, every character outside printable ASCII escaped.
#[derive(Debug, Clone, Copy, Default)]
pub struct PyFormatter;

impl serde_json::ser::Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(json_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if fragment.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return w.write_all(fragment.as_bytes());
        }
        let mut buf = [0u16; 2];
        for c in fragment.chars() {
            if (' '..='~').contains(&c) {
                w.write_all(&[c as u8])?;
            } else {
                for unit in c.encode_utf16(&mut buf) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
}

/// `json.dumps(value)` of anything serde can serialize, with Python's default formatting.
/// Maps are written in their own order.
pub fn dumps<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFormatter);
    // Serializing into memory fails only for a map with non-string keys, which no type here has.
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// `json.dumps(value, sort_keys=True)` of a JSON value.
pub fn dumps_sorted(value: &Value) -> String {
    dumps(&Sorted(value))
}

/// A JSON value that serializes with every object's keys in sorted order (by code point, as
/// Python sorts strings).
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut m = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    m.serialize_entry(k, &Sorted(&map[k]))?;
                }
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::excessive_precision)]
    fn tau2_py_float_repr_matches_python() {
        for (x, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (2.67, "2.67"),
            (100.5, "100.5"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (123456.789, "123456.789"),
            (f64::INFINITY, "inf"),
            // Exactly halfway between two shortest candidates: Python takes the even one.
            (-95_407_409_589_594.125, "-95407409589594.12"),
            (0.5, "0.5"),
            (2.5e-5, "2.5e-05"),
        ] {
            assert_eq!(float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn tau2_py_round2_breaks_ties_to_even() {
        assert_eq!(round2(0.125), 0.12);
        assert_eq!(round2(0.375), 0.38);
        assert_eq!(round2(2.675), 2.67);
        assert_eq!(round2(1.005), 1.0);
        assert_eq!(round2(0.005), 0.01);
        assert!(round2(-0.001).is_sign_negative());
    }

    #[test]
    fn tau2_py_dumps_escapes_like_json_dumps() {
        let v = serde_json::json!({"b": "é\u{7f}\u{2028}😀\n", "a": [1, 2.0, null, true]});
        assert_eq!(
            dumps_sorted(&v),
            r#"{"a": [1, 2.0, null, true], "b": "\u00e9\u007f\u2028\ud83d\ude00\n"}"#
        );
        assert_eq!(repr(&serde_json::json!({"k": "it's"})), r#"{'k': "it's"}"#);
        assert_eq!(
            repr(&serde_json::json!(["a\\b", 1.5, null])),
            r"['a\\b', 1.5, None]"
        );
    }
}
