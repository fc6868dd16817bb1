//! sprig's math: integer functions convert with `cast.ToInt64` (floats truncate), the `…f`
//! functions go through shopspring/decimal, and the conversions `int`, `int64`, `float64`.

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::{Elem, Value};
use super::args::{self, s};
use super::conv::{float_to_i64, parse_int, to_float64, to_int64};
use crate::budget::{self, BudgetExceeded};
use crate::gofmt::format_float;

fn divide_by_zero() -> FuncError {
    FuncError::new("runtime error: integer divide by zero")
}

pub fn register(m: &mut FuncMap) {
    m.insert("add1", Arity::Exact(1), |_, a| {
        Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))
    });
    m.insert("add", Arity::AtLeast(0), |_, a| {
        Ok(Value::Int64(
            a.iter().fold(0i64, |acc, x| acc.wrapping_add(to_int64(x))),
        ))
    });
    m.insert("sub", Arity::Exact(2), |_, a| {
        Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
    });
    m.insert("div", Arity::Exact(2), |_, a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err(divide_by_zero());
        }
        Ok(Value::Int64(to_int64(&a[0]).wrapping_div(d)))
    });
    m.insert("mod", Arity::Exact(2), |_, a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err(divide_by_zero());
        }
        Ok(Value::Int64(to_int64(&a[0]).wrapping_rem(d)))
    });
    m.insert("mul", Arity::AtLeast(1), |_, a| {
        Ok(Value::Int64(
            a[1..]
                .iter()
                .fold(to_int64(&a[0]), |acc, x| acc.wrapping_mul(to_int64(x))),
        ))
    });
    for name in ["biggest", "max"] {
        m.insert(name, Arity::AtLeast(1), |_, a| {
            Ok(Value::Int64(a.iter().map(to_int64).max().unwrap_or(0)))
        });
    }
    m.insert("min", Arity::AtLeast(1), |_, a| {
        Ok(Value::Int64(a.iter().map(to_int64).min().unwrap_or(0)))
    });
    m.insert("maxf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(
            a[1..]
                .iter()
                .fold(to_float64(&a[0]), |acc, x| go_max(acc, to_float64(x))),
        ))
    });
    m.insert("minf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(
            a[1..]
                .iter()
                .fold(to_float64(&a[0]), |acc, x| go_min(acc, to_float64(x))),
        ))
    });
    m.insert("add1f", Arity::Exact(1), |_, a| {
        decimal_op(&a[0], &[Value::Int(1)], Op::Add)
    });
    m.insert("addf", Arity::AtLeast(0), |_, a| {
        decimal_op(&Value::Float(0.0), a, Op::Add)
    });
    m.insert("subf", Arity::AtLeast(1), |_, a| {
        decimal_op(&a[0], &a[1..], Op::Sub)
    });
    m.insert("mulf", Arity::AtLeast(1), |_, a| {
        decimal_op(&a[0], &a[1..], Op::Mul)
    });
    m.insert("divf", Arity::AtLeast(1), |_, a| {
        decimal_op(&a[0], &a[1..], Op::Div)
    });
    m.insert("ceil", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_float64(&a[0]).ceil()))
    });
    m.insert("floor", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_float64(&a[0]).floor()))
    });
    m.insert("round", Arity::AtLeast(2), |_, a| {
        let places = args::int(&a[1])?;
        let round_on = match a.get(2) {
            Some(v) => args::float64(v)?,
            None => 0.5,
        };
        Ok(Value::Float(round(to_float64(&a[0]), places, round_on)))
    });
    m.insert("int64", Arity::Exact(1), |_, a| {
        Ok(Value::Int64(to_int64(&a[0])))
    });
    m.insert("int", Arity::Exact(1), |_, a| {
        Ok(Value::Int(to_int64(&a[0])))
    });
    m.insert("float64", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_float64(&a[0])))
    });
    m.insert("atoi", Arity::Exact(1), |_, a| {
        Ok(Value::Int(atoi(&args::string(&a[0])?)))
    });
    m.insert("toDecimal", Arity::Exact(1), |_, a| {
        let text = super::strval::format_v(&a[0]);
        Ok(Value::Int64(parse_int(&text, 8).unwrap_or(0)))
    });
    m.insert("seq", Arity::AtLeast(0), |_, a| {
        let params = a.iter().map(args::int).collect::<Result<Vec<_>, _>>()?;
        Ok(s(seq(&params)?))
    });
    m.insert("until", Arity::Exact(1), |_, a| {
        let n = args::int(&a[0])?;
        Ok(int_list(until_step(0, n, if n < 0 { -1 } else { 1 })?))
    });
    m.insert("untilStep", Arity::Exact(3), |_, a| {
        let (start, stop, step) = (args::int(&a[0])?, args::int(&a[1])?, args::int(&a[2])?);
        Ok(int_list(until_step(start, stop, step)?))
    });
}

/// A Go `[]int`.
fn int_list(v: Vec<i64>) -> Value {
    Value::typed_list(Elem::Int, v.into_iter().map(Value::Int).collect())
}

/// Go's `math.Max`.
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x > 0.0 || y.is_infinite() && y > 0.0 {
        return f64::INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && x == y {
        return if x.is_sign_negative() { y } else { x };
    }
    if x > y { x } else { y }
}

/// Go's `math.Min`.
fn go_min(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x < 0.0 || y.is_infinite() && y < 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && x == y {
        return if x.is_sign_negative() { x } else { y };
    }
    if x < y { x } else { y }
}

/// Go's `strconv.Atoi` (base 10, errors give 0 in sprig).
fn atoi(text: &str) -> i64 {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    parse_int(text, 10).unwrap_or(0)
}

fn round(val: f64, places: i64, round_on: f64) -> f64 {
    let pow = 10f64.powf(places as f64);
    let digit = pow * val;
    let div = digit.fract();
    let r = if div >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    r / pow
}

/// sprig's `untilStep` loop. The number of items is known before the list is built, so the
/// render budget's `max_list_items` fails it early; an `i += step` that would overflow ends it.
pub fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, BudgetExceeded> {
    let (s, e, st) = (i128::from(start), i128::from(stop), i128::from(step));
    let n: i128 = if stop < start {
        if step >= 0 { 0 } else { (s - e - st - 1) / -st }
    } else if step <= 0 {
        0
    } else {
        (e - s + st - 1) / st
    };
    let n = n.max(0) as u128;
    budget::check_items(n)?;
    budget::charge(n as u64)?;
    let mut v = Vec::with_capacity(n as usize);
    let mut i = start;
    while v.len() < n as usize {
        v.push(i);
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(v)
}

fn seq(params: &[i64]) -> Result<String, BudgetExceeded> {
    let join = |v: Result<Vec<i64>, BudgetExceeded>| {
        Ok(v?
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" "))
    };
    match params.len() {
        1 => {
            let (start, end) = (1, params[0]);
            let inc = if end < start { -1 } else { 1 };
            join(until_step(start, end.wrapping_add(inc), inc))
        }
        2 => {
            let (start, end) = (params[0], params[1]);
            let step = if end < start { -1 } else { 1 };
            join(until_step(start, end.wrapping_add(step), step))
        }
        3 => {
            let (start, step, end) = (params[0], params[1], params[2]);
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(String::new());
                }
            }
            join(until_step(start, end.wrapping_add(inc), step))
        }
        _ => Ok(String::new()),
    }
}

// ---- shopspring/decimal subset --------------------------------------------------------------

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal `mant × 10^exp`.
#[derive(Clone, Copy, Debug)]
struct Dec {
    mant: i128,
    exp: i32,
}

impl Dec {
    /// `decimal.NewFromFloat`: the shortest decimal that round-trips.
    fn from_f64(f: f64) -> Option<Dec> {
        if !f.is_finite() {
            return None;
        }
        if f == 0.0 {
            return Some(Dec { mant: 0, exp: 0 });
        }
        let text = format_float(f, b'e', -1);
        let (m, e) = text.split_once('e')?;
        let neg = m.starts_with('-');
        let m = m.trim_start_matches('-');
        let (int, frac) = m.split_once('.').unwrap_or((m, ""));
        let digits = format!("{int}{frac}");
        let mant: i128 = digits.parse().ok()?;
        let exp: i32 = e.parse::<i32>().ok()? - frac.len() as i32;
        Some(Dec {
            mant: if neg { -mant } else { mant },
            exp,
        })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.mant, self.exp)
            .parse()
            .unwrap_or(f64::NAN)
    }

    fn rescale(self, exp: i32) -> Option<i128> {
        // exp <= self.exp
        let shift = (self.exp - exp) as u32;
        10i128.checked_pow(shift)?.checked_mul(self.mant)
    }

    fn add(self, o: Dec) -> Option<Dec> {
        let exp = self.exp.min(o.exp);
        Some(Dec {
            mant: self.rescale(exp)?.checked_add(o.rescale(exp)?)?,
            exp,
        })
    }

    fn mul(self, o: Dec) -> Option<Dec> {
        Some(Dec {
            mant: self.mant.checked_mul(o.mant)?,
            exp: self.exp.checked_add(o.exp)?,
        })
    }

    /// `Div`: `DivRound` to 16 decimal places, half away from zero.
    fn div(self, o: Dec) -> Option<Dec> {
        const PREC: i32 = 16;
        // q = self.mant / o.mant × 10^(self.exp - o.exp + PREC), as an integer of 10^-PREC.
        let k = self.exp - o.exp + PREC;
        let (num, den) = if k >= 0 {
            (
                self.mant.checked_mul(10i128.checked_pow(k as u32)?)?,
                o.mant,
            )
        } else {
            (
                self.mant,
                o.mant.checked_mul(10i128.checked_pow((-k) as u32)?)?,
            )
        };
        let q = num / den;
        let r = num % den;
        let q = if r.unsigned_abs() * 2 >= den.unsigned_abs() {
            if (num < 0) != (den < 0) { q - 1 } else { q + 1 }
        } else {
            q
        };
        Some(Dec {
            mant: q,
            exp: -PREC,
        })
    }
}

fn decimal_op(first: &Value, rest: &[Value], op: Op) -> Result<Value, FuncError> {
    let mut acc_f = to_float64(first);
    let mut acc = Dec::from_f64(acc_f);
    for x in rest {
        let xf = to_float64(x);
        if let Op::Div = op
            && xf == 0.0
        {
            return Err(FuncError::new("decimal division by 0"));
        }
        let xd = Dec::from_f64(xf);
        acc = match (acc, xd) {
            (Some(a), Some(b)) => match op {
                Op::Add => a.add(b),
                Op::Sub => a.add(Dec {
                    mant: -b.mant,
                    exp: b.exp,
                }),
                Op::Mul => a.mul(b),
                Op::Div => a.div(b),
            },
            _ => None,
        };
        // Outside the range of the fixed-size decimal: plain float arithmetic.
        acc_f = match acc {
            Some(d) => d.to_f64(),
            None => match op {
                Op::Add => acc_f + xf,
                Op::Sub => acc_f - xf,
                Op::Mul => acc_f * xf,
                Op::Div => acc_f / xf,
            },
        };
        if acc.is_none() {
            acc = Dec::from_f64(acc_f);
        }
    }
    let _ = float_to_i64;
    Ok(Value::Float(acc_f))
}
