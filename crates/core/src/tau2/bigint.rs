//! The integers of `calculate`: exact and signed like Python's, up to [`MAX_BITS`]; beyond
//! that only their sign is kept ([`Int::Huge`]), which is enough for what Python would do
//! with them next in this language (fail to convert them to a float) in the common cases.

use std::cmp::Ordering;

/// Integers longer than this many bits are [`Int::Huge`].
pub const MAX_BITS: u64 = 100_000;

/// A magnitude: base 2^32 digits, least significant first, no trailing zero digit.
type Mag = Vec<u32>;

/// A Python int.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Int {
    /// An exact integer.
    Big {
        /// Negative (never for zero).
        neg: bool,
        /// Its magnitude.
        mag: Mag,
    },
    /// An integer of more than [`MAX_BITS`] bits, of this sign (true: negative).
    Huge(bool),
}

/// An operation this emulation cannot finish exactly (on a [`Int::Huge`]).
pub const UNKNOWN: &str = "integer too large: this calculator holds integers of up to 100000 bits exactly, and Python's unbounded integers beyond";

fn trim(mut m: Mag) -> Mag {
    while m.last() == Some(&0) {
        m.pop();
    }
    m
}

fn mag_bits(m: &[u32]) -> u64 {
    match m.last() {
        None => 0,
        Some(&top) => (m.len() as u64 - 1) * 32 + u64::from(32 - top.leading_zeros()),
    }
}

fn mag_cmp(a: &[u32], b: &[u32]) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

fn mag_add(a: &[u32], b: &[u32]) -> Mag {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(long.len() + 1);
    let mut carry = 0u64;
    for (i, &l) in long.iter().enumerate() {
        let s = u64::from(l) + u64::from(*short.get(i).unwrap_or(&0)) + carry;
        out.push(s as u32);
        carry = s >> 32;
    }
    if carry > 0 {
        out.push(carry as u32);
    }
    out
}

/// `a - b` for `a >= b`.
fn mag_sub(a: &[u32], b: &[u32]) -> Mag {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for (i, &x) in a.iter().enumerate() {
        let mut d = i64::from(x) - i64::from(*b.get(i).unwrap_or(&0)) - borrow;
        borrow = 0;
        if d < 0 {
            d += 1 << 32;
            borrow = 1;
        }
        out.push(d as u32);
    }
    trim(out)
}

fn mag_mul(a: &[u32], b: &[u32]) -> Mag {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut out = vec![0u32; a.len() + b.len()];
    for (i, &x) in a.iter().enumerate() {
        let mut carry = 0u64;
        for (j, &y) in b.iter().enumerate() {
            let t = u64::from(x) * u64::from(y) + u64::from(out[i + j]) + carry;
            out[i + j] = t as u32;
            carry = t >> 32;
        }
        out[i + b.len()] = carry as u32;
    }
    trim(out)
}

fn mag_shl(a: &[u32], n: u64) -> Mag {
    if a.is_empty() {
        return Vec::new();
    }
    let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
    let mut out = vec![0u32; limbs];
    if bits == 0 {
        out.extend_from_slice(a);
    } else {
        let mut carry = 0u32;
        for &x in a {
            out.push((x << bits) | carry);
            carry = x >> (32 - bits);
        }
        out.push(carry);
    }
    trim(out)
}

/// `a >> n` and whether any bit shifted out was set.
fn mag_shr(a: &[u32], n: u64) -> (Mag, bool) {
    let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
    if limbs >= a.len() {
        return (Vec::new(), !a.is_empty());
    }
    let mut lost = a[..limbs].iter().any(|&x| x != 0);
    let rest = &a[limbs..];
    let mut out = Vec::with_capacity(rest.len());
    if bits == 0 {
        out.extend_from_slice(rest);
    } else {
        lost |= rest[0] & ((1u32 << bits) - 1) != 0;
        for i in 0..rest.len() {
            let hi = rest.get(i + 1).map_or(0, |&h| h << (32 - bits));
            out.push((rest[i] >> bits) | hi);
        }
    }
    (trim(out), lost)
}

/// Quotient and remainder of magnitudes (Knuth's algorithm D); `b` is not zero.
fn mag_divmod(a: &[u32], b: &[u32]) -> (Mag, Mag) {
    if mag_cmp(a, b) == Ordering::Less {
        return (Vec::new(), a.to_vec());
    }
    if b.len() == 1 {
        let d = u64::from(b[0]);
        let mut q = vec![0u32; a.len()];
        let mut r = 0u64;
        for i in (0..a.len()).rev() {
            let cur = (r << 32) | u64::from(a[i]);
            q[i] = (cur / d) as u32;
            r = cur % d;
        }
        return (trim(q), trim(vec![r as u32]));
    }
    let n = b.len();
    let m = a.len() - n;
    let s = b[n - 1].leading_zeros();
    let shl = |x: &[u32], extra: bool| -> Vec<u32> {
        let mut out = Vec::with_capacity(x.len() + 1);
        let mut carry = 0u32;
        for &v in x {
            out.push(if s == 0 { v } else { (v << s) | carry });
            carry = if s == 0 { 0 } else { v >> (32 - s) };
        }
        if extra {
            out.push(carry);
        }
        out
    };
    let vn = shl(b, false);
    let mut un = shl(a, true);
    let mut q = vec![0u32; m + 1];
    let base = 1u64 << 32;
    for j in (0..=m).rev() {
        let num = (u64::from(un[j + n]) << 32) | u64::from(un[j + n - 1]);
        let mut qhat = num / u64::from(vn[n - 1]);
        let mut rhat = num % u64::from(vn[n - 1]);
        while qhat >= base
            || u128::from(qhat) * u128::from(vn[n - 2])
                > ((u128::from(rhat) << 32) | u128::from(un[j + n - 2]))
        {
            qhat -= 1;
            rhat += u64::from(vn[n - 1]);
            if rhat >= base {
                break;
            }
        }
        let mut borrow = 0i128;
        let mut carry = 0u128;
        for i in 0..n {
            let p = u128::from(qhat) * u128::from(vn[i]) + carry;
            carry = p >> 32;
            let t = i128::from(un[i + j]) - borrow - (p & 0xffff_ffff) as i128;
            un[i + j] = t as u32;
            borrow = i128::from(t < 0);
        }
        let t = i128::from(un[j + n]) - borrow - carry as i128;
        un[j + n] = t as u32;
        q[j] = qhat as u32;
        if t < 0 {
            q[j] = q[j].wrapping_sub(1);
            let mut c = 0u64;
            for i in 0..n {
                let t = u64::from(un[i + j]) + u64::from(vn[i]) + c;
                un[i + j] = t as u32;
                c = t >> 32;
            }
            un[j + n] = un[j + n].wrapping_add(c as u32);
        }
    }
    let mut r = Vec::with_capacity(n);
    for i in 0..n {
        let hi = if s == 0 { 0 } else { un[i + 1] << (32 - s) };
        r.push(if s == 0 { un[i] } else { (un[i] >> s) | hi });
    }
    (trim(q), trim(r))
}

/// `n / d` of magnitudes, correctly rounded (half to even) to a double; `None` when it
/// overflows. `d` is not zero.
fn ratio_to_f64(n: &[u32], d: &[u32]) -> Option<f64> {
    if n.is_empty() {
        return Some(0.0);
    }
    // A quotient of at least 55 bits, and whether anything was lost below it.
    let shift = mag_bits(n) as i64 - mag_bits(d) as i64 - 56;
    let (x, mut sticky) = if shift > 0 {
        mag_shr(n, shift as u64)
    } else {
        (mag_shl(n, (-shift) as u64), false)
    };
    let (q, r) = mag_divmod(&x, d);
    sticky |= !r.is_empty();
    let qbits = mag_bits(&q) as i64;
    let top = qbits - 1 + shift;
    if top > 1023 {
        return None;
    }
    let keep = if top < -1022 { 53 - (-1022 - top) } else { 53 };
    let drop = qbits - keep;
    if drop > qbits {
        return Some(0.0);
    }
    let (m, _) = mag_shr(&q, drop as u64);
    // The dropped bits against one half: the half bit, and anything below it.
    let half_bit = drop - 1;
    let half_set = q
        .get((half_bit / 32) as usize)
        .is_some_and(|limb| (limb >> (half_bit % 32)) & 1 == 1);
    let (_, below) = mag_shr(&q, half_bit as u64);
    let mut m: u64 = m
        .iter()
        .rev()
        .fold(0u64, |acc, &x| (acc << 32) | u64::from(x));
    if half_set && (below || sticky || m & 1 == 1) {
        m += 1;
    }
    let e = shift + drop;
    let value = ldexp(m as f64, e);
    if value.is_infinite() {
        None
    } else {
        Some(value)
    }
}

/// `x * 2^e` for an `x` that fits the result exactly (or overflows to infinity).
fn ldexp(mut x: f64, mut e: i64) -> f64 {
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e as i32)
}

impl Int {
    /// Zero.
    pub fn zero() -> Int {
        Int::Big {
            neg: false,
            mag: Vec::new(),
        }
    }

    fn big(neg: bool, mag: Mag) -> Int {
        let mag = trim(mag);
        if mag_bits(&mag) > MAX_BITS {
            return Int::Huge(neg);
        }
        Int::Big {
            neg: neg && !mag.is_empty(),
            mag,
        }
    }

    /// A small value.
    pub fn from_i64(v: i64) -> Int {
        let u = v.unsigned_abs();
        Int::big(v < 0, vec![u as u32, (u >> 32) as u32])
    }

    /// Reads decimal digits.
    pub fn parse(digits: &str) -> Int {
        let mut mag: Mag = Vec::new();
        for chunk in digits.as_bytes().chunks(9) {
            let mut v = 0u32;
            for &c in chunk {
                v = v * 10 + u32::from(c - b'0');
            }
            let scale = 10u32.pow(chunk.len() as u32);
            let mut carry = u64::from(v);
            for limb in mag.iter_mut() {
                let t = u64::from(*limb) * u64::from(scale) + carry;
                *limb = t as u32;
                carry = t >> 32;
            }
            if carry > 0 {
                mag.push(carry as u32);
            }
            if mag_bits(&mag) > MAX_BITS {
                return Int::Huge(false);
            }
        }
        Int::big(false, mag)
    }

    /// Whether it is zero.
    pub fn is_zero(&self) -> bool {
        matches!(self, Int::Big { mag, .. } if mag.is_empty())
    }

    fn is_neg(&self) -> bool {
        match self {
            Int::Big { neg, .. } => *neg,
            Int::Huge(neg) => *neg,
        }
    }

    /// Its value when it fits an `i64`.
    pub fn to_i64(&self) -> Option<i64> {
        match self {
            Int::Big { neg, mag } if mag.len() <= 2 => {
                let u = mag
                    .iter()
                    .rev()
                    .fold(0u64, |acc, &x| (acc << 32) | u64::from(x));
                if *neg {
                    0i64.checked_sub_unsigned(u)
                } else {
                    i64::try_from(u).ok()
                }
            }
            _ => None,
        }
    }

    /// `float(self)`, or Python's error.
    pub fn to_f64(&self) -> Result<f64, String> {
        match self {
            Int::Big { neg, mag } => match ratio_to_f64(mag, &[1]) {
                Some(x) => Ok(if *neg { -x } else { x }),
                None => Err("int too large to convert to float".into()),
            },
            Int::Huge(_) => Err("int too large to convert to float".into()),
        }
    }

    /// `-self`.
    pub fn neg(&self) -> Int {
        match self {
            Int::Big { neg, mag } => Int::big(!neg, mag.clone()),
            Int::Huge(neg) => Int::Huge(!neg),
        }
    }

    /// `self + other`.
    pub fn add(&self, other: &Int) -> Result<Int, String> {
        match (self, other) {
            (Int::Big { neg: an, mag: am }, Int::Big { neg: bn, mag: bm }) => {
                if an == bn {
                    return Ok(Int::big(*an, mag_add(am, bm)));
                }
                Ok(match mag_cmp(am, bm) {
                    Ordering::Less => Int::big(*bn, mag_sub(bm, am)),
                    _ => Int::big(*an, mag_sub(am, bm)),
                })
            }
            (Int::Huge(a), Int::Huge(b)) if a != b => Err(UNKNOWN.into()),
            (Int::Huge(n), _) | (_, Int::Huge(n)) => Ok(Int::Huge(*n)),
        }
    }

    /// `self - other`.
    pub fn sub(&self, other: &Int) -> Result<Int, String> {
        self.add(&other.neg())
    }

    /// `self * other`.
    pub fn mul(&self, other: &Int) -> Int {
        if self.is_zero() || other.is_zero() {
            return Int::zero();
        }
        let neg = self.is_neg() != other.is_neg();
        match (self, other) {
            (Int::Big { mag: a, .. }, Int::Big { mag: b, .. }) => {
                if mag_bits(a) + mag_bits(b) > MAX_BITS + 1 {
                    Int::Huge(neg)
                } else {
                    Int::big(neg, mag_mul(a, b))
                }
            }
            _ => Int::Huge(neg),
        }
    }

    /// `self // other` (floor), `other` not zero.
    pub fn floor_div(&self, other: &Int) -> Result<Int, String> {
        match (self, other) {
            (Int::Big { neg: an, mag: am }, Int::Big { neg: bn, mag: bm }) => {
                let (q, r) = mag_divmod(am, bm);
                if an != bn {
                    let q = if r.is_empty() { q } else { mag_add(&q, &[1]) };
                    Ok(Int::big(true, q))
                } else {
                    Ok(Int::big(false, q))
                }
            }
            (Int::Big { .. }, Int::Huge(bn)) => Ok(if self.is_zero() || self.is_neg() == *bn {
                Int::zero()
            } else {
                Int::from_i64(-1)
            }),
            _ => Err(UNKNOWN.into()),
        }
    }

    /// `self / other` as Python divides ints: correctly rounded.
    pub fn true_div(&self, other: &Int) -> Result<f64, String> {
        let neg = self.is_neg() != other.is_neg();
        let x = match (self, other) {
            (Int::Big { mag: a, .. }, Int::Big { mag: b, .. }) => ratio_to_f64(a, b)
                .ok_or_else(|| "integer division result too large for a float".to_string())?,
            (Int::Big { mag: a, .. }, Int::Huge(_)) if mag_bits(a) + 1100 < MAX_BITS => 0.0,
            (Int::Huge(_), Int::Big { mag: b, .. }) if mag_bits(b) + 1100 < MAX_BITS => {
                return Err("integer division result too large for a float".into());
            }
            _ => return Err(UNKNOWN.into()),
        };
        Ok(if neg { -x } else { x })
    }

    /// `self ** exp` for `exp >= 0`.
    pub fn pow(&self, exp: &Int) -> Result<Int, String> {
        if exp.is_zero() {
            return Ok(Int::from_i64(1));
        }
        let odd = match exp {
            Int::Big { mag, .. } => mag[0] & 1 == 1,
            Int::Huge(_) => {
                if self.is_zero() {
                    return Ok(Int::zero());
                }
                if self.is_neg() {
                    return Err(UNKNOWN.into());
                }
                if self == &Int::from_i64(1) {
                    return Ok(Int::from_i64(1));
                }
                return Ok(Int::Huge(false));
            }
        };
        let neg = self.is_neg() && odd;
        match self {
            Int::Huge(_) => Ok(Int::Huge(neg)),
            Int::Big { mag, .. } => {
                if mag.is_empty() {
                    return Ok(Int::zero());
                }
                if mag.len() == 1 && mag[0] == 1 {
                    return Ok(Int::big(neg, vec![1]));
                }
                let e = exp.to_i64().unwrap_or(i64::MAX);
                if (mag_bits(mag) - 1).saturating_mul(e as u64) > MAX_BITS {
                    return Ok(Int::Huge(neg));
                }
                let mut result: Mag = vec![1];
                let mut base = mag.clone();
                let mut e = e as u64;
                while e > 0 {
                    if e & 1 == 1 {
                        result = mag_mul(&result, &base);
                    }
                    e >>= 1;
                    if e > 0 {
                        base = mag_mul(&base, &base);
                    }
                }
                Ok(Int::big(neg, result))
            }
        }
    }

    /// Whether it is negative.
    pub fn negative(&self) -> bool {
        self.is_neg()
    }

    /// Decimal text (`str(self)`).
    pub fn to_decimal(&self) -> String {
        match self {
            Int::Huge(neg) => format!("{}<huge>", if *neg { "-" } else { "" }),
            Int::Big { neg, mag } => {
                if mag.is_empty() {
                    return "0".into();
                }
                let mut parts = Vec::new();
                let mut cur = mag.clone();
                while !cur.is_empty() {
                    let (q, r) = mag_divmod(&cur, &[1_000_000_000]);
                    parts.push(r.first().copied().unwrap_or(0));
                    cur = q;
                }
                let mut s = String::from(if *neg { "-" } else { "" });
                s.push_str(&parts.last().copied().unwrap_or(0).to_string());
                for p in parts.iter().rev().skip(1) {
                    s.push_str(&format!("{p:09}"));
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau2_bigint_arithmetic() {
        let a = Int::parse("123456789012345678901234567890");
        let b = Int::parse("987654321");
        assert_eq!(
            a.mul(&b).to_decimal(),
            "121932631124828532112482853211126352690"
        );
        assert_eq!(
            a.floor_div(&b).unwrap().to_decimal(),
            "124999998873437499901"
        );
        assert_eq!(
            a.neg().floor_div(&b).unwrap().to_decimal(),
            "-124999998873437499902"
        );
        assert_eq!(a.sub(&a).unwrap(), Int::zero());
        assert_eq!(
            Int::from_i64(2)
                .pow(&Int::from_i64(100))
                .unwrap()
                .to_decimal(),
            "1267650600228229401496703205376"
        );
        assert_eq!(
            Int::from_i64(10)
                .pow(&Int::from_i64(20))
                .unwrap()
                .true_div(&Int::from_i64(7)),
            Ok(1.4285714285714287e19)
        );
        assert_eq!(Int::parse("9999999999999999").to_f64(), Ok(1e16));
        assert_eq!(
            Int::from_i64(10)
                .pow(&Int::from_i64(400))
                .unwrap()
                .to_f64()
                .unwrap_err(),
            "int too large to convert to float"
        );
        assert_eq!(Int::from_i64(1).true_div(&Int::from_i64(3)), Ok(1.0 / 3.0));
        let tiny = Int::from_i64(1).true_div(&Int::from_i64(2).pow(&Int::from_i64(1074)).unwrap());
        assert_eq!(tiny, Ok(f64::from_bits(1)));
        let half_tiny =
            Int::from_i64(1).true_div(&Int::from_i64(2).pow(&Int::from_i64(1075)).unwrap());
        assert_eq!(half_tiny, Ok(0.0));
        assert!(matches!(
            Int::from_i64(3).pow(&Int::from_i64(1_000_000)),
            Ok(Int::Huge(false))
        ));
    }
}
