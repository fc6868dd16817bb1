//! Less common builtins: `parseurl`, `tagdef`, `ipset`, `static_ips`.

use super::env::Env;
use super::eval::Info;
use super::functions::FRes;
use super::value::{Map, Node, Value};

fn err(msg: impl Into<String>) -> FRes {
    let (v, i, o) = Info::default().error(msg);
    (v, i, o, true)
}

fn ok(v: Value) -> FRes {
    (v, Info::default(), true, true)
}

/// The parts of a URL as Go's `url.Parse` yields them.
#[derive(Default, Debug)]
pub(crate) struct Url {
    pub scheme: String,
    pub opaque: String,
    pub user: Option<(String, Option<String>)>,
    pub host: String,
    pub path: String,
    pub raw_query: String,
    pub fragment: String,
}

fn unhex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Go's `url.PathUnescape` / `QueryUnescape`
fn unescape(s: &str, query: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let h = unhex(*b.get(i + 1)?)?;
                let l = unhex(*b.get(i + 2)?)?;
                out.push(h << 4 | l);
                i += 3;
            }
            b'+' if query => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A simplified Go `url.Parse`.
pub(crate) fn url_parse(s: &str) -> Option<Url> {
    if s.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return None;
    }
    let mut u = Url::default();
    let mut rest = s;
    if let Some(i) = rest.find('#') {
        u.fragment = unescape(&rest[i + 1..], false)?;
        rest = &rest[..i];
    }
    // scheme
    for (i, c) in rest.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || matches!(c, '+' | '-' | '.') {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == ':' {
            if i == 0 {
                return None; // missing protocol scheme
            }
            u.scheme = rest[..i].to_lowercase();
            rest = &rest[i + 1..];
        }
        break;
    }
    if let Some(i) = rest.find('?') {
        u.raw_query = rest[i + 1..].to_string();
        rest = &rest[..i];
    }
    if !rest.starts_with('/') && !u.scheme.is_empty() {
        u.opaque = rest.to_string();
        return Some(u);
    }
    if rest.starts_with("//") && !rest.starts_with("///")
        || (!u.scheme.is_empty() && rest.starts_with("//"))
    {
        let r = &rest[2..];
        let (authority, after) = match r.find('/') {
            Some(i) => (&r[..i], &r[i..]),
            None => (r, ""),
        };
        let host = match authority.rfind('@') {
            Some(i) => {
                let ui = &authority[..i];
                u.user = Some(match ui.split_once(':') {
                    Some((a, b)) => (unescape(a, false)?, Some(unescape(b, false)?)),
                    None => (unescape(ui, false)?, None),
                });
                &authority[i + 1..]
            }
            None => authority,
        };
        u.host = unescape(host, false)?;
        rest = after;
    }
    u.path = unescape(rest, false)?;
    Some(u)
}

impl Url {
    fn hostname(&self) -> String {
        let h = &self.host;
        if let Some(r) = h.strip_prefix('[') {
            return r.split(']').next().unwrap_or("").to_string();
        }
        match h.rfind(':') {
            Some(i) => h[..i].to_string(),
            None => h.clone(),
        }
    }
    fn port(&self) -> String {
        let h = &self.host;
        let after = if h.starts_with('[') {
            match h.find("]:") {
                Some(i) => &h[i + 2..],
                None => return String::new(),
            }
        } else {
            match h.rfind(':') {
                Some(i) => &h[i + 1..],
                None => return String::new(),
            }
        };
        if after.bytes().all(|c| c.is_ascii_digit()) {
            after.to_string()
        } else {
            String::new()
        }
    }
}

pub(crate) fn parseurl(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("invalid argument count for parseurl");
    }
    let Value::Str(s) = &args[0] else {
        return err("argument for parseurl must be a string");
    };
    let Some(u) = url_parse(s) else {
        return err(format!(
            "invalid argument for parseurl: parse {s:?}: invalid URL"
        ));
    };
    let sv = |x: &str| Node::new(Value::str(x));
    let mut m = Map::new();
    m.insert("scheme".into(), sv(&u.scheme));
    m.insert("host".into(), sv(&u.hostname()));
    m.insert("path".into(), sv(&u.path));
    m.insert("fragment".into(), sv(&u.fragment));
    let port = u.port();
    if !port.is_empty()
        && let Ok(p) = port.parse::<i64>()
    {
        m.insert("port".into(), Node::new(Value::Int(p)));
    }
    m.insert("query".into(), sv(&u.raw_query));
    let mut q: std::collections::BTreeMap<String, Vec<Node>> = Default::default();
    for part in u.raw_query.split('&') {
        if part.is_empty() || part.contains(';') {
            continue;
        }
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let (Some(k), Some(v)) = (unescape(k, true), unescape(v, true)) else {
            continue;
        };
        q.entry(k).or_default().push(sv(&v));
    }
    let qm: Map = q
        .into_iter()
        .map(|(k, v)| (k, Node::new(Value::list(v))))
        .collect();
    m.insert("values".into(), Node::new(Value::map(qm)));
    if let Some((user, pass)) = &u.user {
        let mut p = Map::new();
        p.insert("username".into(), sv(user));
        if let Some(pw) = pass {
            p.insert("password".into(), sv(pw));
        }
        m.insert("userinfo".into(), Node::new(Value::map(p)));
    }
    ok(Value::map(m))
}

/// `CheckTagName`
pub(crate) fn check_tag_name(name: &str) -> Result<(), String> {
    let mut l = 0;
    for c in name.chars() {
        match c {
            ':' | '.' => {
                if l == 0 {
                    return Err("empty tag component not allowed".into());
                }
                l = 0;
            }
            _ => {
                l += 1;
                if c.is_ascii_digit() {
                    if l == 1 {
                        return Err("tag component must start with alnum rune".into());
                    }
                    continue;
                }
                if c.is_ascii_alphabetic() {
                    continue;
                }
                return Err(format!(
                    "invalid character {:?} in tag component",
                    c.to_string()
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn tagdef(args: &[Value], env: &Env) -> FRes {
    if args.len() < 2 || args.len() > 3 {
        return err("two or three arguments expected for tagdef");
    }
    let Value::Str(name) = &args[0] else {
        return err("name argument for tagdef must be a string");
    };
    let mut name: &str = name;
    let mut ttype = "local".to_string();
    if let Some(n) = name.strip_prefix('*')
        && args.len() == 2
    {
        name = n;
        ttype = "global".into();
    }
    if let Err(e) = check_tag_name(name) {
        return err(format!(
            "invalid tag name {} for tagdef: {e}",
            super::expr::go_quote(name)
        ));
    }
    if args.len() == 3 {
        let Value::Str(t) = &args[2] else {
            return err("type argument for tagdef must be a string (local or global)");
        };
        ttype = t.to_string();
    }
    let stream = match ttype.as_str() {
        "local" => true,
        "global" => false,
        _ => {
            return err(format!(
                "invalid scope argument {} for tagdef (must be local or global)",
                super::expr::go_quote(&ttype)
            ));
        }
    };
    let value = Node::new(args[1].clone());
    if let Err(e) = super::tags::set_tag(env, name, &value, env.path(), true, stream) {
        return err(e);
    }
    ok(args[1].clone())
}

const ITOA64: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Apache's MD5 crypt (`$apr1$`) and the classic `$1$` variant.
fn md5_crypt(password: &[u8], salt: &[u8], magic: &[u8]) -> String {
    use super::md5::md5;
    let mut d = Vec::new();
    d.extend_from_slice(password);
    d.extend_from_slice(magic);
    d.extend_from_slice(salt);
    let mut d2 = Vec::new();
    d2.extend_from_slice(password);
    d2.extend_from_slice(salt);
    d2.extend_from_slice(password);
    let mixin = md5(&d2);
    for i in 0..password.len() {
        d.push(mixin[i % 16]);
    }
    let mut i = password.len();
    while i != 0 {
        if i & 1 == 0 {
            d.push(password[0]);
        } else {
            d.push(0);
        }
        i >>= 1;
    }
    let mut fin = md5(&d);
    for i in 0..1000 {
        let mut d2 = Vec::new();
        if i & 1 == 0 {
            d2.extend_from_slice(&fin);
        } else {
            d2.extend_from_slice(password);
        }
        if i % 3 != 0 {
            d2.extend_from_slice(salt);
        }
        if i % 7 != 0 {
            d2.extend_from_slice(password);
        }
        if i & 1 == 0 {
            d2.extend_from_slice(password);
        } else {
            d2.extend_from_slice(&fin);
        }
        fin = md5(&d2);
    }
    let swaps = [12, 6, 0, 13, 7, 1, 14, 8, 2, 15, 9, 3, 5, 10, 4, 11];
    let mut result = Vec::with_capacity(22);
    let mut v: u32 = 0;
    let mut bits: u32 = 0;
    for i in swaps {
        v |= (fin[i] as u32) << bits;
        bits += 8;
        while bits > 6 {
            result.push(ITOA64[(v & 0x3f) as usize]);
            v >>= 6;
            bits -= 6;
        }
    }
    result.push(ITOA64[(v & 0x3f) as usize]);
    let mut out = Vec::new();
    out.extend_from_slice(magic);
    out.extend_from_slice(salt);
    out.push(b'$');
    out.extend_from_slice(&result);
    String::from_utf8_lossy(&out).into_owned()
}

fn random_salt(n: usize) -> Vec<u8> {
    use std::hash::{BuildHasher, Hasher};
    let mut out = Vec::with_capacity(n);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let mut x = h.finish();
    for _ in 0..n {
        out.push(ITOA64[(x % 64) as usize]);
        x = x.rotate_left(7) ^ 0x9e37_79b9_7f4a_7c15;
        x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    out
}

pub(crate) fn md5crypt(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("md5crypt takes one argument");
    }
    let Value::Str(p) = &args[0] else {
        return err("first argument for md5crypt must be a string");
    };
    ok(Value::str(md5_crypt(
        p.as_bytes(),
        &random_salt(8),
        b"$apr1$",
    )))
}

pub(crate) fn md5crypt_check(args: &[Value]) -> FRes {
    if args.len() != 2 {
        return err("md5crypt_check takes two arguments");
    }
    let Value::Str(p) = &args[0] else {
        return err("first argument for md5crypt_check must be a string");
    };
    let Value::Str(h) = &args[1] else {
        return err("second argument for md5crypt_check must be a string");
    };
    let parts: Vec<&str> = h.split('$').collect();
    if parts.len() != 4 {
        return err("invalid md5crypt hash: must contain three '$' characters");
    }
    let check = md5_crypt(
        p.as_bytes(),
        parts[2].as_bytes(),
        format!("${}$", parts[1]).as_bytes(),
    );
    ok(Value::Bool(check == **h))
}

use super::arith::{Ip, parse_cidr, parse_ip};

enum IpRange {
    Range(Ip, u128),
    Cidr(Ip, u32),
}

impl IpRange {
    fn size(&self) -> i128 {
        match self {
            IpRange::Range(_, n) => *n as i128,
            IpRange::Cidr(_, ones) => 1i128 << 32u32.saturating_sub(*ones),
        }
    }
    fn get(&self, i: i128) -> Ip {
        match self {
            IpRange::Range(start, _) => start.add(i),
            IpRange::Cidr(ip, ones) => ip.mask(*ones).add(i),
        }
    }
}

fn map_ip_ranges(ranges: &[String]) -> Result<Vec<IpRange>, String> {
    let mut out = Vec::new();
    for r in ranges {
        let segments: Vec<&str> = r.split('-').collect();
        if segments.len() == 1 {
            if let Some((ip, ones)) = parse_cidr(r) {
                out.push(IpRange::Cidr(ip, ones));
            } else {
                let Some(s) = parse_ip(segments[0].trim()) else {
                    return Err(format!("invalid IP '{}'", segments[0]));
                };
                out.push(IpRange::Range(s, 1));
            }
        } else {
            let Some(s) = parse_ip(segments[0].trim()) else {
                return Err(format!("invalid IP '{}'", segments[0]));
            };
            let Some(e) = parse_ip(segments[1].trim()) else {
                return Err(format!("invalid IP '{}'", segments[1]));
            };
            if s.v4 != e.v4 {
                return Err("IP type mismatch".into());
            }
            if s.addr > e.addr {
                return Err(format!(
                    "invalid IP range: start ({}) larger than end ({})",
                    segments[0], segments[1]
                ));
            }
            out.push(IpRange::Range(s, e.addr - s.addr + 1));
        }
    }
    Ok(out)
}

fn get_indices(out: &mut Vec<i64>, list: &[Node]) -> Result<(), String> {
    for e in list {
        match e.value() {
            Value::Nil => {}
            Value::Int(i) => {
                if *i < 0 {
                    return Err(format!("negative ip indices are not allowed: {i}"));
                }
                out.push(*i);
            }
            Value::List(l) => get_indices(out, l)?,
            _ => return Err("arguments to static_ips must be integer or list of integers".into()),
        }
    }
    Ok(())
}

pub(crate) fn ipset(args: &[Value]) -> FRes {
    if args.len() < 2 {
        return err("at least 2 argument expected (ipranges, size, optional: ip indices");
    }
    let rlist: Vec<String> = match &args[0] {
        Value::Str(s) => vec![s.to_string()],
        Value::List(l) => {
            let mut v = Vec::new();
            for (i, n) in l.iter().enumerate() {
                match n.value() {
                    Value::Str(s) => v.push(s.to_string()),
                    _ => return err(format!("string entry at ip range list index {i}")),
                }
            }
            v
        }
        _ => return err("ip range or range list expected as first argument"),
    };
    let ranges = match map_ip_ranges(&rlist) {
        Ok(r) => r,
        Err(e) => return err(e),
    };
    let mut indices = Vec::new();
    for a in args.iter().skip(2) {
        match a {
            Value::Int(i) => {
                if *i < 0 {
                    return err(format!("negative ip indices are not allowed: {i}"));
                }
                indices.push(*i);
            }
            Value::List(l) => {
                if let Err(e) = get_indices(&mut indices, l) {
                    return err(e);
                }
            }
            _ => return err("arguments to static_ips must be integer or list of integers"),
        }
    }
    let Value::Int(num) = args[1] else {
        return err("number of IPs in set expected as second argument");
    };
    if args.len() > 2 && (indices.len() as i64) < num {
        return err(format!(
            "too many required entries ({num} > {} available indices)",
            indices.len()
        ));
    }
    let mut result = Vec::new();
    for i in 0..num.max(0) {
        let index = if args.len() > 2 {
            indices[i as usize] as i128
        } else {
            i as i128
        };
        let mut offset: i128 = 0;
        let mut found = None;
        for r in &ranges {
            if index < offset + r.size() {
                found = Some(r.get(index - offset));
                break;
            }
            offset += r.size();
        }
        match found {
            Some(ip) => result.push(Node::new(Value::str(ip.to_string()))),
            None => {
                return err(format!(
                    "ip index {i} ({index}) out of range ({offset} IP(s) available in ranges)"
                ));
            }
        }
    }
    ok(Value::list(result))
}

fn eval_ref(env: &Env, path: &[&str]) -> super::eval::Res {
    let e = std::rc::Rc::new(super::expr::Expr::Reference {
        tag: String::new(),
        path: path.iter().map(|s| s.to_string()).collect(),
    });
    super::eval::eval(&e, env, false)
}

/// `static_ips(indices...)` (BOSH manifests): IPs from the static ranges of the network
/// named by the nearest `name` field, one per `instances`.
pub(crate) fn static_ips(args: &[Value], env: &Env) -> FRes {
    let mut indices = Vec::new();
    for a in args {
        match a {
            Value::Int(i) => indices.push(*i),
            Value::List(l) => {
                if let Err(e) = get_indices(&mut indices, l) {
                    return err(e);
                }
            }
            _ => return err("arguments to static_ips must be integer or list of integers"),
        }
    }
    let fail = || (Value::Nil, Info::default(), false, true);
    let retry = || (Value::Nil, Info::default(), true, false);
    if indices.is_empty() {
        return fail();
    }
    let (name, info, found) = eval_ref(env, &["name"]);
    if !found {
        return (Value::Nil, info, false, true);
    }
    if name.is_expr() {
        return retry();
    }
    let Value::Str(name) = name else {
        return err("name field must be string");
    };
    let (subnets, info, found) = eval_ref(env, &["", "networks", &name, "subnets"]);
    if !found {
        return (Value::Nil, info, false, true);
    }
    if subnets.is_expr() {
        return retry();
    }
    let Value::List(subnets) = subnets else {
        return err("subnets field must be a list");
    };
    let mut ranges = Vec::new();
    for s in subnets.iter() {
        let Value::Map(m) = s.value() else {
            return err("subnet must be a map");
        };
        let Some(st) = m.get("static") else {
            return err(format!("no static ips for network {name}"));
        };
        let Value::List(l) = st.value() else {
            return err(format!("static ips for network {name} must be a list"));
        };
        for r in l.iter() {
            let Value::Str(r) = r.value() else {
                return err(format!("invalid entry for static ips for network {name}"));
            };
            ranges.push(r.to_string());
        }
    }
    let (instances, _, found) = eval_ref(env, &["instances"]);
    if !found || instances.is_expr() {
        return if found { retry() } else { fail() };
    }
    let Value::Int(count) = instances else {
        return fail();
    };
    let mut pool: Vec<Ip> = Vec::new();
    for r in &ranges {
        let seg: Vec<&str> = r.split('-').collect();
        let Some(start) = parse_ip(seg[0].trim()) else {
            return fail();
        };
        let end = if seg.len() == 1 {
            start
        } else {
            match parse_ip(seg[1].trim()) {
                Some(e) => e,
                None => return fail(),
            }
        };
        if end.addr < start.addr || end.addr - start.addr > 1_000_000 {
            return fail();
        }
        let mut ip = start;
        loop {
            pool.push(ip);
            if ip.addr == end.addr {
                break;
            }
            ip = ip.add(1);
        }
    }
    let mut ips = Vec::new();
    for i in indices {
        if i < 0 || pool.len() as i64 <= i {
            return fail();
        }
        ips.push(Node::new(Value::str(pool[i as usize].to_string())));
    }
    if (ips.len() as i64) < count {
        return err(format!("too less static IPs for {count} instances"));
    }
    ips.truncate(count.max(0) as usize);
    ok(Value::list(ips))
}

/// `auto` for `resource_pools.<pool>.size`: the sum of the instances of the jobs of the pool.
pub(crate) fn auto(
    e: &std::rc::Rc<super::expr::Expr>,
    path: &[String],
    env: &Env,
) -> super::eval::Res {
    if path.len() == 3 && path[0] == "resource_pools" && path[2] == "size" {
        let (jobs, mut info, found) = eval_ref(env, &["", "jobs"]);
        if !found {
            info.issue = super::value::Issue::new("no jobs found");
            return (Value::Nil, info, false);
        }
        if !super::value::is_resolved_value(&jobs, env.control()) {
            return (Value::Expr(e.clone()), info, true);
        }
        let Value::List(jobs) = jobs else {
            return info.error("jobs must be a list");
        };
        let pool = match path[1].find(':') {
            Some(i) if i > 0 => &path[1][i + 1..],
            _ => path[1].as_str(),
        };
        let mut size = 0i64;
        for job in jobs.iter() {
            let Value::Map(m) = job.value() else { continue };
            match m.get("resource_pool").map(|n| n.value()) {
                Some(Value::Str(p)) if &**p == pool => {}
                _ => continue,
            }
            match m.get("instances").map(|n| n.value()) {
                Some(Value::Int(i)) => size += i,
                _ => return (Value::Nil, info, false),
            }
        }
        return (Value::Int(size), info, true);
    }
    Info::default().error("auto only allowed for size entry in resource pools")
}

/// `bcrypt(password[, cost])` (Go's `bcrypt.GenerateFromPassword`, `$2a$` hashes)
pub(crate) fn bcrypt_hash(args: &[Value]) -> FRes {
    if args.is_empty() || args.len() > 2 {
        return err("bcrypt takes one or two arguments");
    }
    let Value::Str(p) = &args[0] else {
        return err("first argument for bcrypt must be a string");
    };
    let mut cost = 10i64;
    if args.len() > 1 {
        let Value::Int(c) = args[1] else {
            return err("second argument for bcrypt must be an integer");
        };
        cost = c;
    }
    if !(4..=31).contains(&cost) {
        return err(format!(
            "bcrypt error: crypto/bcrypt: cost {cost} is outside allowed range (4,31)"
        ));
    }
    match bcrypt::hash_with_result(p.as_bytes(), cost as u32) {
        Ok(h) => ok(Value::str(h.format_for_version(bcrypt::Version::TwoA))),
        Err(e) => err(format!("bcrypt error: {e}")),
    }
}

/// `bcrypt_check(password, hash)`
pub(crate) fn bcrypt_check(args: &[Value]) -> FRes {
    if args.len() != 2 {
        return err("bcrypt_check takes two arguments");
    }
    let Value::Str(p) = &args[0] else {
        return err("first argument for bcrypt_check must be a string");
    };
    let Value::Str(h) = &args[1] else {
        return err("second argument for bcrypt_check must be a string");
    };
    ok(Value::Bool(
        bcrypt::verify(p.as_bytes(), h).unwrap_or(false),
    ))
}
