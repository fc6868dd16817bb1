//! Arithmetic operators (`+ - * /`) on numbers, and spiff's IP address/CIDR arithmetic.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::rc::Rc;

use super::eval::{Info, Res};
use super::expr::Expr;
use super::value::Value;

/// An IP address (v4 or v6) as an integer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Ip {
    pub v4: bool,
    pub addr: u128,
}

impl Ip {
    pub fn bits(self) -> u32 {
        if self.v4 { 32 } else { 128 }
    }
    pub fn max(self) -> u128 {
        if self.v4 { u32::MAX as u128 } else { u128::MAX }
    }
    pub fn add(self, off: i128) -> Ip {
        let m = self.max();
        let v = if self.v4 {
            ((self.addr as i128 + off).rem_euclid(m as i128 + 1)) as u128
        } else {
            (self.addr as i128).wrapping_add(off) as u128
        };
        Ip {
            v4: self.v4,
            addr: v & m,
        }
    }
    pub fn mask(self, ones: u32) -> Ip {
        let bits = self.bits();
        let m = if ones == 0 {
            0
        } else {
            (self.max() >> (bits - ones)) << (bits - ones)
        };
        Ip {
            v4: self.v4,
            addr: self.addr & m,
        }
    }
    pub fn max_in(self, ones: u32) -> Ip {
        let bits = self.bits();
        let host = if ones >= bits { 0 } else { self.max() >> ones };
        Ip {
            v4: self.v4,
            addr: self.mask(ones).addr | host,
        }
    }
}

impl std::fmt::Display for Ip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.v4 {
            write!(f, "{}", Ipv4Addr::from(self.addr as u32))
        } else {
            write!(f, "{}", Ipv6Addr::from(self.addr))
        }
    }
}

/// Go's `net.ParseIP`
pub(crate) fn parse_ip(s: &str) -> Option<Ip> {
    if let Ok(a) = s.parse::<Ipv4Addr>() {
        // Go accepts no leading zeros either
        return Some(Ip {
            v4: true,
            addr: u32::from(a) as u128,
        });
    }
    if s.contains(':')
        && let Ok(a) = s.parse::<Ipv6Addr>()
    {
        if let Some(v4) = a.to_ipv4_mapped() {
            return Some(Ip {
                v4: true,
                addr: u32::from(v4) as u128,
            });
        }
        return Some(Ip {
            v4: false,
            addr: u128::from(a),
        });
    }
    None
}

/// Go's `net.ParseCIDR`: the address and the prefix length.
pub(crate) fn parse_cidr(s: &str) -> Option<(Ip, u32)> {
    let (a, b) = s.split_once('/')?;
    let ip = parse_ip(a)?;
    if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) || b.len() > 3 {
        return None;
    }
    let ones: u32 = b.parse().ok()?;
    if ones > ip.bits() {
        return None;
    }
    Some((ip, ones))
}

pub(crate) fn cidr_string(ip: Ip, ones: u32) -> String {
    format!("{ip}/{ones}")
}

fn number_operands(a: &Value, b: &Value) -> Option<(Value, Value)> {
    match (a, b) {
        (Value::Int(_), Value::Int(_)) | (Value::Float(_), Value::Float(_)) => {
            Some((a.clone(), b.clone()))
        }
        (Value::Int(x), Value::Float(_)) => Some((Value::Float(*x as f64), b.clone())),
        (Value::Float(_), Value::Int(y)) => Some((a.clone(), Value::Float(*y as f64))),
        _ => None,
    }
}

pub(crate) fn arith(e: &Rc<Expr>, a: Value, b: Value, info: Info) -> Res {
    match &**e {
        Expr::Add(..) => add(a, b, info),
        Expr::Sub(..) => sub(a, b, info),
        Expr::Mul(..) => mul(a, b, info),
        _ => div(a, b, info),
    }
}

fn add(a: Value, b: Value, info: Info) -> Res {
    if let Value::Str(s) = &a {
        let (ip, cidr) = match parse_ip(s) {
            Some(ip) => (ip, None),
            None => match parse_cidr(s) {
                Some((ip, ones)) => (ip, Some(ones)),
                None => {
                    return info
                        .error("first argument for addition must be IP address, CIDR or number");
                }
            },
        };
        let Value::Int(n) = b else {
            return info.error("addition argument for an IP address requires an integer argument");
        };
        let r = ip.add(n as i128);
        if let Some(ones) = cidr {
            if r.mask(ones) != ip.mask(ones) {
                return info.error("resulting ip address not in CIDR range");
            }
            return (Value::str(cidr_string(r, ones)), info, true);
        }
        return (Value::str(r.to_string()), info, true);
    }
    match number_operands(&a, &b) {
        Some((Value::Int(x), Value::Int(y))) => (Value::Int(x.wrapping_add(y)), info, true),
        Some((Value::Float(x), Value::Float(y))) => (Value::Float(x + y), info, true),
        _ => info.error("non-IP address addition requires number arguments"),
    }
}

fn sub(a: Value, b: Value, info: Info) -> Res {
    if let Value::Str(s) = &a {
        let (ip, cidr) = match parse_ip(s) {
            Some(ip) => (ip, None),
            None => match parse_cidr(s) {
                Some((ip, ones)) => (ip, Some(ones)),
                None => {
                    return info.error(
                        "first argument for substraction must be IP address, CIDR or number",
                    );
                }
            },
        };
        match &b {
            Value::Int(n) => {
                let r = ip.add(-(*n as i128));
                if let Some(ones) = cidr {
                    if r.mask(ones) != ip.mask(ones) {
                        return info.error("resulting ip address not in CIDR range");
                    }
                    return (Value::str(cidr_string(r, ones)), info, true);
                }
                return (Value::str(r.to_string()), info, true);
            }
            Value::Str(bs) => {
                let ipb = match parse_ip(bs) {
                    Some(x) => x,
                    None => match parse_cidr(bs) {
                        Some((x, _)) => x,
                        None => {
                            return info.error("second argument for substraction must be IP address, CIDR or number");
                        }
                    },
                };
                if ip.v4 != ipb.v4 {
                    return info.error("IP type mismatch");
                }
                let d = ip.addr as i128 - ipb.addr as i128;
                return (Value::Int(d as i64), info, true);
            }
            _ => {
                return info.error(
                    "second argument of IP address subtraction must be IP address or integer",
                );
            }
        }
    }
    match number_operands(&a, &b) {
        Some((Value::Int(x), Value::Int(y))) => (Value::Int(x.wrapping_sub(y)), info, true),
        Some((Value::Float(x), Value::Float(y))) => (Value::Float(x - y), info, true),
        _ => info.error("non-IP address subtration requires number arguments"),
    }
}

fn mul(a: Value, b: Value, info: Info) -> Res {
    if let Value::Str(s) = &a {
        let Some((ip, ones)) = parse_cidr(s) else {
            return info.error(format!(
                "first argument of multiplication must be CIDR or number: invalid CIDR address: {s}"
            ));
        };
        let Value::Int(n) = b else {
            return info.error("CIDR multiplication requires an integer argument");
        };
        let size: i128 = 1i128 << (ip.bits() - ones).min(126);
        let r = ip.mask(ones).add(size * n as i128);
        return (Value::str(cidr_string(r, ones)), info, true);
    }
    match number_operands(&a, &b) {
        Some((Value::Int(x), Value::Int(y))) => (Value::Int(x.wrapping_mul(y)), info, true),
        Some((Value::Float(x), Value::Float(y))) => (Value::Float(x * y), info, true),
        _ => info.error("non-CIDR multiplication requires number arguments"),
    }
}

fn div(a: Value, b: Value, info: Info) -> Res {
    if let Value::Str(s) = &a {
        let Some((ip, mut ones)) = parse_cidr(s) else {
            return info.error(format!(
                "first argument of division must be CIDR or number: invalid CIDR address: {s}"
            ));
        };
        let ip = ip.mask(ones);
        let Value::Int(mut n) = b else {
            return info.error("IP address division requires an integer argument");
        };
        if n < 1 {
            return info.error("IP address division requires a positive integer argument");
        }
        let mut round = false;
        while n > 1 {
            if n % 2 == 1 {
                round = true;
            }
            n /= 2;
            ones += 1;
        }
        if round {
            ones += 1;
        }
        if ones > 32 {
            return info.error("divisor too large for CIDR network size");
        }
        return (Value::str(cidr_string(ip, ones)), info, true);
    }
    match number_operands(&a, &b) {
        Some((Value::Int(x), Value::Int(y))) => {
            if y == 0 {
                return info.error("division by zero");
            }
            (Value::Int(x.wrapping_div(y)), info, true)
        }
        Some((Value::Float(x), Value::Float(y))) => {
            if y == 0.0 {
                return info.error("division by zero");
            }
            (Value::Float(x / y), info, true)
        }
        _ => info.error("non-CIDR division requires number arguments"),
    }
}
