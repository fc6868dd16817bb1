//! `--set`, `--set-string` and `--set-json` as Helm's `pkg/strvals` parses them:
//! `a.b=c,d[0].e=f`, `{x,y}` lists, `\` escapes, typed scalars (`true`, `null`, int64) unless
//! `--set-string`, JSON values for `--set-json`.

use std::collections::BTreeMap;

use landscaper_templating::gotemplate::Value;
use landscaper_templating::gotemplate::value::{Elem, MapRef, new_map};

const MAX_INDEX: i64 = 65536;
const MAX_NESTED_NAME_LEVEL: usize = 30;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Typed,
    String,
    Json,
}

/// `strvals.ParseInto`.
pub fn parse_into(s: &str, dest: &MapRef) -> Result<(), String> {
    Parser::new(s, Mode::Typed).parse(dest)
}

/// `strvals.ParseIntoString`.
pub fn parse_into_string(s: &str, dest: &MapRef) -> Result<(), String> {
    Parser::new(s, Mode::String).parse(dest)
}

/// `strvals.ParseJSON`.
pub fn parse_json(s: &str, dest: &MapRef) -> Result<(), String> {
    Parser::new(s, Mode::Json).parse(dest)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    mode: Mode,
}

enum Stop {
    Eof,
    At(char),
}

fn table_entry(data: &MapRef, key: &str) -> Option<Value> {
    data.borrow().get(key).cloned()
}

fn set(data: &MapRef, key: &str, val: Value) {
    if key.is_empty() {
        return;
    }
    data.borrow_mut().insert(key.to_string(), val);
}

fn conversion_error(v: &Value, want: &str) -> String {
    format!(
        "unable to parse key: interface conversion: interface {{}} is {}, not {want}",
        v.type_name()
    )
}

impl Parser {
    fn new(s: &str, mode: Mode) -> Self {
        Parser {
            chars: s.chars().collect(),
            pos: 0,
            mode,
        }
    }

    fn parse(&mut self, data: &MapRef) -> Result<(), String> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(None) => return Ok(()),
                Err(Some(e)) => return Err(e),
            }
        }
    }

    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    /// Runes up to one of `stop` (escapes resolved); the stop rune or EOF.
    fn until(&mut self, stop: &[char]) -> (String, Stop) {
        let mut v = String::new();
        loop {
            match self.read() {
                None => return (v, Stop::Eof),
                Some(c) if stop.contains(&c) => return (v, Stop::At(c)),
                Some('\\') => match self.read() {
                    None => return (v, Stop::Eof),
                    Some(n) => v.push(n),
                },
                Some(c) => v.push(c),
            }
        }
    }

    fn typed(&self, v: &str) -> Value {
        if self.mode == Mode::String {
            return Value::string(v);
        }
        if v.eq_ignore_ascii_case("true") {
            return Value::Bool(true);
        }
        if v.eq_ignore_ascii_case("false") {
            return Value::Bool(false);
        }
        if v.eq_ignore_ascii_case("null") {
            return Value::Nil;
        }
        if v == "0" {
            return Value::Int64(0);
        }
        if !v.is_empty()
            && !v.starts_with('0')
            && let Ok(i) = go_parse_int(v)
        {
            return Value::Int64(i);
        }
        Value::string(v)
    }

    /// `Err(None)` is io.EOF.
    fn key(&mut self, data: &MapRef, mut level: usize) -> Result<(), Option<String>> {
        let (k, stop) = self.until(&['=', '[', ',', '.']);
        match stop {
            Stop::Eof => {
                if k.is_empty() {
                    return Err(None);
                }
                Err(Some(format!("key \"{k}\" has no value")))
            }
            Stop::At('[') => {
                let i = self
                    .key_index()
                    .map_err(|e| Some(format!("error parsing index: {e}")))?;
                let list = match table_entry(data, &k) {
                    None => Vec::new(),
                    Some(Value::List(l)) => l.items.clone(),
                    Some(other) => return Err(Some(conversion_error(&other, "[]interface {}"))),
                };
                let (list, err) = self.list_item(list, i, level);
                set(data, &k, Value::list(list));
                err.map_or(Ok(()), |e| Err(Some(e)))
            }
            Stop::At('=') => {
                if self.mode == Mode::Json {
                    if self.empty_val() {
                        set(data, &k, Value::Nil);
                        return Ok(());
                    }
                    let v = self.json_value().map_err(Some)?;
                    set(data, &k, v);
                    self.empty_val();
                    return Ok(());
                }
                match self.val_list() {
                    Ok(Some(vl)) => {
                        set(data, &k, Value::list(vl));
                        Ok(())
                    }
                    Err(ListErr::Eof) => {
                        set(data, &k, Value::string(""));
                        Err(None)
                    }
                    Err(ListErr::Other(e)) => Err(Some(e)),
                    Ok(None) => {
                        let (rs, _) = self.until(&[',']);
                        let v = self.typed(&rs);
                        set(data, &k, v);
                        Ok(())
                    }
                }
            }
            Stop::At(',') => {
                set(data, &k, Value::string(""));
                Err(Some(format!(
                    "key \"{k}\" has no value (cannot end with ,)"
                )))
            }
            Stop::At(_) => {
                // '.'
                level += 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return Err(Some(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )));
                }
                let inner = match table_entry(data, &k) {
                    None => new_map(Elem::Interface, BTreeMap::new()),
                    Some(Value::Map(m)) if m.elem == Elem::Interface => m,
                    Some(other) => {
                        return Err(Some(conversion_error(&other, "map[string]interface {}")));
                    }
                };
                let e = self.key(&inner, level);
                let empty = inner.borrow().is_empty();
                if e.is_ok() && empty {
                    return Err(Some(format!("key map \"{k}\" has no value")));
                }
                if !empty {
                    set(data, &k, Value::Map(inner));
                }
                e
            }
        }
    }

    fn key_index(&mut self) -> Result<i64, String> {
        let (v, stop) = self.until(&[']']);
        if matches!(stop, Stop::Eof) {
            return Err("EOF".into());
        }
        go_parse_int(&v).map_err(|_| format!("strconv.Atoi: parsing \"{v}\": invalid syntax"))
    }

    fn set_index(mut list: Vec<Value>, index: i64, val: Value) -> (Vec<Value>, Option<String>) {
        if index < 0 {
            return (list, Some(format!("negative {index} index not allowed")));
        }
        if index > MAX_INDEX {
            return (
                list,
                Some(format!(
                    "index of {index} is greater than maximum supported index of {MAX_INDEX}"
                )),
            );
        }
        let i = index as usize;
        if list.len() <= i {
            list.resize(i + 1, Value::Nil);
        }
        list[i] = val;
        (list, None)
    }

    fn list_item(
        &mut self,
        list: Vec<Value>,
        i: i64,
        level: usize,
    ) -> (Vec<Value>, Option<String>) {
        if i < 0 {
            return (list, Some(format!("negative {i} index not allowed")));
        }
        let (k, stop) = self.until(&['[', '.', '=']);
        if !k.is_empty() {
            return (
                list,
                Some(format!("unexpected data at end of array index: \"{k}\"")),
            );
        }
        match stop {
            Stop::Eof => (list, Some("EOF".into())),
            Stop::At('=') => {
                if self.mode == Mode::Json {
                    if self.empty_val() {
                        return Self::set_index(list, i, Value::Nil);
                    }
                    return match self.json_value() {
                        Ok(v) => {
                            let r = Self::set_index(list, i, v);
                            self.empty_val();
                            r
                        }
                        Err(e) => (list, Some(e)),
                    };
                }
                match self.val_list() {
                    Ok(Some(vl)) => Self::set_index(list, i, Value::list(vl)),
                    Err(ListErr::Eof) => Self::set_index(list, i, Value::string("")),
                    Err(ListErr::Other(e)) => (list, Some(e)),
                    Ok(None) => {
                        let (rs, _) = self.until(&[',']);
                        let v = self.typed(&rs);
                        Self::set_index(list, i, v)
                    }
                }
            }
            Stop::At('[') => {
                let next = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => return (list, Some(format!("error parsing index: {e}"))),
                };
                let current = match list.get(i as usize) {
                    Some(Value::List(l)) => l.items.clone(),
                    Some(Value::Nil) | None => Vec::new(),
                    Some(other) => {
                        let e = conversion_error(other, "[]interface {}");
                        return (list, Some(e));
                    }
                };
                let (inner, err) = self.list_item(current, next, level);
                if let Some(e) = err {
                    return (list, Some(e));
                }
                Self::set_index(list, i, Value::list(inner))
            }
            Stop::At(_) => {
                let mut list = list;
                let inner = match list.get(i as usize) {
                    Some(Value::Map(m)) if m.elem == Elem::Interface => m.clone(),
                    Some(_) => {
                        let m = new_map(Elem::Interface, BTreeMap::new());
                        list[i as usize] = Value::Map(m.clone());
                        m
                    }
                    None => new_map(Elem::Interface, BTreeMap::new()),
                };
                if let Err(e) = self.key(&inner, level) {
                    return (list, Some(e.unwrap_or_else(|| "EOF".into())));
                }
                Self::set_index(list, i, Value::Map(inner))
            }
        }
    }

    /// Skips spaces; true at EOF or after a comma.
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None => return true,
                Some(',') => return true,
                Some(c) if c.is_whitespace() => continue,
                Some(_) => {
                    self.pos -= 1;
                    return false;
                }
            }
        }
    }

    fn json_value(&mut self) -> Result<Value, String> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<serde_json::Value>();
        match stream.next() {
            Some(Ok(v)) => {
                let used = stream.byte_offset();
                self.pos += rest[..used].chars().count();
                Ok(Value::from_json(&v))
            }
            Some(Err(e)) => Err(e.to_string()),
            None => Err("EOF".into()),
        }
    }

    fn val_list(&mut self) -> Result<Option<Vec<Value>>, ListErr> {
        match self.read() {
            None => return Err(ListErr::Eof),
            Some('{') => {}
            Some(_) => {
                self.pos -= 1;
                return Ok(None);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, stop) = self.until(&[',', '}']);
            match stop {
                Stop::Eof => return Err(ListErr::Other("list must terminate with '}'".into())),
                Stop::At('}') => {
                    if let Some(c) = self.read()
                        && c != ','
                    {
                        self.pos -= 1;
                    }
                    list.push(self.typed(&rs));
                    return Ok(Some(list));
                }
                Stop::At(_) => list.push(self.typed(&rs)),
            }
        }
    }
}

enum ListErr {
    Eof,
    Other(String),
}

/// Go's `strconv.ParseInt(s, 10, 64)` (also `Atoi`): optional sign, decimal digits.
fn go_parse_int(s: &str) -> Result<i64, ()> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    s.parse::<i64>().map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(mode: fn(&str, &MapRef) -> Result<(), String>, s: &str) -> serde_json::Value {
        let m = new_map(Elem::Interface, BTreeMap::new());
        mode(s, &m).unwrap();
        Value::Map(m).to_json().unwrap()
    }

    #[test]
    fn set_parses_like_helm() {
        assert_eq!(
            parse(parse_into, "a=1,b.c=true,d=null,e=007,f=x\\,y,g={1,two}"),
            json!({"a": 1, "b": {"c": true}, "d": null, "e": "007", "f": "x,y", "g": [1, "two"]})
        );
        assert_eq!(
            parse(parse_into, "h[0].p=/,h[0].q[1]=z,h[2]=w"),
            json!({"h": [{"p": "/", "q": [null, "z"]}, null, "w"]})
        );
        assert_eq!(
            parse(parse_into_string, "a=1,b=true"),
            json!({"a": "1", "b": "true"})
        );
        assert_eq!(
            parse(parse_json, "a={\"x\":[1,2]},b=\"s\""),
            json!({"a": {"x": [1.0, 2.0]}, "b": "s"})
        );
        assert_eq!(parse(parse_into, "a="), json!({"a": ""}));
    }

    #[test]
    fn set_errors_like_helm() {
        let m = new_map(Elem::Interface, BTreeMap::new());
        assert!(parse_into("a", &m).unwrap_err().contains("has no value"));
        assert!(parse_into("a.b", &m).is_err());
        assert!(parse_into("a[-1]=x", &m).unwrap_err().contains("negative"));
        assert!(
            parse_into("a[99999999]=x", &m)
                .unwrap_err()
                .contains("maximum")
        );
        let m = new_map(Elem::Interface, BTreeMap::new());
        parse_into("a=1", &m).unwrap();
        assert!(
            parse_into("a.b=1", &m)
                .unwrap_err()
                .contains("interface conversion")
        );
    }
}
