//! sprig's date functions with Go's `time` layouts and durations, over [`Value::Time`].

use std::rc::Rc;

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;
use super::args::{self, s};

/// A Go `time.Time`: an instant and the zone (offset and abbreviation) it is shown in.
#[derive(Debug, Clone, PartialEq)]
pub struct Time {
    pub secs: i64,
    pub nanos: u32,
    pub offset: i32,
    pub abbr: String,
}

/// Civil fields of a time in its zone.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    min: u32,
    sec: u32,
    weekday: u32, // 0 = Sunday
    yday: u32,    // 1-based
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

impl Time {
    fn civil(&self) -> Civil {
        let local = self.secs + self.offset as i64;
        let days = local.div_euclid(86400);
        let rem = local.rem_euclid(86400) as u32;
        let (year, month, day) = civil_from_days(days);
        let yday = (days - days_from_civil(year, 1, 1) + 1) as u32;
        Civil {
            year,
            month,
            day,
            hour: rem / 3600,
            min: rem % 3600 / 60,
            sec: rem % 60,
            weekday: (days + 4).rem_euclid(7) as u32,
            yday,
        }
    }

    /// Year, month, day, hour, minute, second and day of the year in the time's zone.
    pub fn civil_fields(&self) -> (i64, i64, i64, i64, i64, i64, i64) {
        let c = self.civil();
        (
            c.year,
            c.month.into(),
            c.day.into(),
            c.hour.into(),
            c.min.into(),
            c.sec.into(),
            c.yday.into(),
        )
    }

    /// The instant, for ordering times.
    pub fn instant(&self) -> (i64, u32) {
        (self.secs, self.nanos)
    }

    /// The instant shown in the named zone (Go's `time.LoadLocation`; "Local" is the system
    /// zone, unknown names fall back to UTC as sprig does).
    pub fn in_zone(&self, zone: &str) -> Time {
        let tz = load_location(zone).unwrap_or(jiff::tz::TimeZone::UTC);
        self.in_tz(&tz)
    }

    fn in_tz(&self, tz: &jiff::tz::TimeZone) -> Time {
        let ts = jiff::Timestamp::new(self.secs, self.nanos as i32)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let info = tz.to_offset_info(ts);
        Time {
            secs: self.secs,
            nanos: self.nanos,
            offset: info.offset().seconds(),
            abbr: info.abbreviation().to_string(),
        }
    }

    pub fn now() -> Time {
        let ts = jiff::Timestamp::now();
        Time {
            secs: ts.as_second(),
            nanos: ts.subsec_nanosecond() as u32,
            offset: 0,
            abbr: "UTC".into(),
        }
        .in_tz(&jiff::tz::TimeZone::system())
    }

    pub fn from_unix(secs: i64) -> Time {
        Time {
            secs,
            nanos: 0,
            offset: 0,
            abbr: "UTC".into(),
        }
        .in_tz(&jiff::tz::TimeZone::system())
    }

    /// Go's zero `time.Time`.
    pub fn zero() -> Time {
        Time {
            secs: days_from_civil(1, 1, 1) * 86400,
            nanos: 0,
            offset: 0,
            abbr: "UTC".into(),
        }
    }

    /// `Time.String()` (without the monotonic clock reading).
    pub fn go_string(&self) -> String {
        format(self, "2006-01-02 15:04:05.999999999 -0700 MST")
    }

    pub fn to_value(&self) -> Value {
        Value::Time(Rc::new(self.clone()))
    }

    /// The time of a [`Value::Time`].
    pub fn from_value(v: &Value) -> Option<Time> {
        match v {
            Value::Time(t) => Some((**t).clone()),
            _ => None,
        }
    }

    /// `Time.MarshalJSON`'s text (without the quotes): RFC 3339 with nanoseconds.
    pub fn marshal_json(&self) -> Result<String, String> {
        let year = self.civil().year;
        if !(0..=9999).contains(&year) {
            return Err("Time.MarshalJSON: year outside of range [0,9999]".into());
        }
        Ok(format(self, "2006-01-02T15:04:05.999999999Z07:00"))
    }
}

fn load_location(zone: &str) -> Option<jiff::tz::TimeZone> {
    match zone {
        "" | "UTC" => Some(jiff::tz::TimeZone::UTC),
        "Local" => Some(jiff::tz::TimeZone::system()),
        name => jiff::tz::TimeZone::get(name).ok(),
    }
}

/// A `time.Time` parameter (the engine checks the type before the call).
fn time_arg(v: &Value) -> Result<Time, FuncError> {
    Time::from_value(v).ok_or_else(|| args::type_error("time.Time", v))
}

/// The `date interface{}` parameter of `date`, `dateInZone`, `ago`: a time, or unix seconds as
/// an int or int64; anything else means now.
fn time_or_now(v: &Value) -> Time {
    match v {
        Value::Int(n) | Value::Int64(n) => Time::from_unix(*n),
        other => Time::from_value(other).unwrap_or_else(Time::now),
    }
}

const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    Tz,
    Iso8601Tz,
    Iso8601SecondsTz,
    Iso8601ShortTz,
    Iso8601ColonTz,
    Iso8601ColonSecondsTz,
    NumTz,
    NumSecondsTz,
    NumShortTz,
    NumColonTz,
    NumColonSecondsTz,
    /// Fractional seconds: digits, whether trailing zeros are dropped (`.999`), separator.
    Frac(usize, bool, char),
}

/// Go's `nextStdChunk`: the literal prefix, the element and the rest of the layout.
fn next_std_chunk(layout: &str) -> (&str, Option<(Std, usize)>, &str) {
    let b = layout.as_bytes();
    let starts = |i: usize, p: &str| layout[i..].starts_with(p);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let found: Option<(Std, usize)> = match c {
            b'J' => {
                if starts(i, "January") {
                    Some((Std::LongMonth, 7))
                } else if starts(i, "Jan") {
                    Some((Std::Month, 3))
                } else {
                    None
                }
            }
            b'M' => {
                if starts(i, "Monday") {
                    Some((Std::LongWeekDay, 6))
                } else if starts(i, "Mon") {
                    Some((Std::WeekDay, 3))
                } else if starts(i, "MST") {
                    Some((Std::Tz, 3))
                } else {
                    None
                }
            }
            b'0' => {
                if i + 1 < b.len() && (b'1'..=b'6').contains(&b[i + 1]) {
                    Some((
                        [
                            Std::ZeroMonth,
                            Std::ZeroDay,
                            Std::ZeroHour12,
                            Std::ZeroMinute,
                            Std::ZeroSecond,
                            Std::Year,
                        ][(b[i + 1] - b'1') as usize],
                        2,
                    ))
                } else if starts(i, "002") {
                    Some((Std::ZeroYearDay, 3))
                } else {
                    None
                }
            }
            b'1' => {
                if starts(i, "15") {
                    Some((Std::Hour, 2))
                } else {
                    Some((Std::NumMonth, 1))
                }
            }
            b'2' => {
                if starts(i, "2006") {
                    Some((Std::LongYear, 4))
                } else {
                    Some((Std::Day, 1))
                }
            }
            b'_' => {
                if i + 1 < b.len() && b[i + 1] == b'2' {
                    if starts(i + 1, "2006") {
                        // "_2006" is a literal "_" and the year.
                        return (&layout[..i + 1], Some((Std::LongYear, 4)), &layout[i + 5..]);
                    }
                    Some((Std::UnderDay, 2))
                } else if starts(i, "__2") {
                    Some((Std::UnderYearDay, 3))
                } else {
                    None
                }
            }
            b'3' => Some((Std::Hour12, 1)),
            b'4' => Some((Std::Minute, 1)),
            b'5' => Some((Std::Second, 1)),
            b'P' if starts(i, "PM") => Some((Std::PM, 2)),
            b'p' if starts(i, "pm") => Some((Std::Pm, 2)),
            b'-' => {
                if starts(i, "-070000") {
                    Some((Std::NumSecondsTz, 7))
                } else if starts(i, "-07:00:00") {
                    Some((Std::NumColonSecondsTz, 9))
                } else if starts(i, "-0700") {
                    Some((Std::NumTz, 5))
                } else if starts(i, "-07:00") {
                    Some((Std::NumColonTz, 6))
                } else if starts(i, "-07") {
                    Some((Std::NumShortTz, 3))
                } else {
                    None
                }
            }
            b'Z' => {
                if starts(i, "Z070000") {
                    Some((Std::Iso8601SecondsTz, 7))
                } else if starts(i, "Z07:00:00") {
                    Some((Std::Iso8601ColonSecondsTz, 9))
                } else if starts(i, "Z0700") {
                    Some((Std::Iso8601Tz, 5))
                } else if starts(i, "Z07:00") {
                    Some((Std::Iso8601ColonTz, 6))
                } else if starts(i, "Z07") {
                    Some((Std::Iso8601ShortTz, 3))
                } else {
                    None
                }
            }
            b'.' | b',' => {
                if i + 1 < b.len() && (b[i + 1] == b'0' || b[i + 1] == b'9') {
                    let ch = b[i + 1];
                    let mut j = i + 1;
                    while j < b.len() && b[j] == ch {
                        j += 1;
                    }
                    if !(j < b.len() && b[j].is_ascii_digit()) {
                        Some((Std::Frac(j - (i + 1), ch == b'9', c as char), j - i))
                    } else {
                        None
                    }
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some((std, len)) = found {
            return (&layout[..i], Some((std, len)), &layout[i + len..]);
        }
        i += layout[i..].chars().next().map_or(1, char::len_utf8);
    }
    (layout, None, "")
}

fn pad(n: i64, width: usize) -> String {
    if n < 0 {
        format!("-{:0width$}", -n, width = width)
    } else {
        format!("{n:0width$}")
    }
}

/// `Time.Format(layout)`.
pub fn format(t: &Time, layout: &str) -> String {
    let c = t.civil();
    let mut out = String::new();
    let mut rest = layout;
    loop {
        let (prefix, std, suffix) = next_std_chunk(rest);
        out.push_str(prefix);
        let Some((std, _)) = std else { break };
        rest = suffix;
        match std {
            Std::Year => out.push_str(&pad(c.year.rem_euclid(100), 2)),
            Std::LongYear => out.push_str(&pad(c.year, 4)),
            Std::Month => out.push_str(&LONG_MONTHS[c.month as usize - 1][..3]),
            Std::LongMonth => out.push_str(LONG_MONTHS[c.month as usize - 1]),
            Std::NumMonth => out.push_str(&c.month.to_string()),
            Std::ZeroMonth => out.push_str(&pad(c.month as i64, 2)),
            Std::WeekDay => out.push_str(&LONG_DAYS[c.weekday as usize][..3]),
            Std::LongWeekDay => out.push_str(LONG_DAYS[c.weekday as usize]),
            Std::Day => out.push_str(&c.day.to_string()),
            Std::UnderDay => out.push_str(&format!("{:>2}", c.day)),
            Std::ZeroDay => out.push_str(&pad(c.day as i64, 2)),
            Std::UnderYearDay => out.push_str(&format!("{:>3}", c.yday)),
            Std::ZeroYearDay => out.push_str(&pad(c.yday as i64, 3)),
            Std::Hour => out.push_str(&pad(c.hour as i64, 2)),
            Std::Hour12 | Std::ZeroHour12 => {
                let h = match c.hour % 12 {
                    0 => 12,
                    h => h,
                };
                if std == Std::Hour12 {
                    out.push_str(&h.to_string());
                } else {
                    out.push_str(&pad(h as i64, 2));
                }
            }
            Std::Minute => out.push_str(&c.min.to_string()),
            Std::ZeroMinute => out.push_str(&pad(c.min as i64, 2)),
            Std::Second => out.push_str(&c.sec.to_string()),
            Std::ZeroSecond => out.push_str(&pad(c.sec as i64, 2)),
            Std::PM => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
            Std::Pm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
            Std::Iso8601Tz
            | Std::Iso8601SecondsTz
            | Std::Iso8601ShortTz
            | Std::Iso8601ColonTz
            | Std::Iso8601ColonSecondsTz
            | Std::NumTz
            | Std::NumSecondsTz
            | Std::NumShortTz
            | Std::NumColonTz
            | Std::NumColonSecondsTz => {
                let iso = matches!(
                    std,
                    Std::Iso8601Tz
                        | Std::Iso8601SecondsTz
                        | Std::Iso8601ShortTz
                        | Std::Iso8601ColonTz
                        | Std::Iso8601ColonSecondsTz
                );
                if iso && t.offset == 0 {
                    out.push('Z');
                    continue;
                }
                let mut zone = t.offset / 60;
                let mut abs = t.offset;
                if zone < 0 {
                    out.push('-');
                    zone = -zone;
                    abs = -abs;
                } else {
                    out.push('+');
                }
                out.push_str(&pad((zone / 60) as i64, 2));
                if matches!(
                    std,
                    Std::Iso8601ColonTz
                        | Std::NumColonTz
                        | Std::Iso8601ColonSecondsTz
                        | Std::NumColonSecondsTz
                ) {
                    out.push(':');
                }
                if !matches!(std, Std::NumShortTz | Std::Iso8601ShortTz) {
                    out.push_str(&pad((zone % 60) as i64, 2));
                }
                if matches!(
                    std,
                    Std::Iso8601SecondsTz
                        | Std::NumSecondsTz
                        | Std::NumColonSecondsTz
                        | Std::Iso8601ColonSecondsTz
                ) {
                    if matches!(std, Std::NumColonSecondsTz | Std::Iso8601ColonSecondsTz) {
                        out.push(':');
                    }
                    out.push_str(&pad((abs % 60) as i64, 2));
                }
            }
            Std::Tz => {
                if !t.abbr.is_empty() {
                    out.push_str(&t.abbr);
                } else {
                    let zone = t.offset / 60;
                    out.push(if zone < 0 { '-' } else { '+' });
                    out.push_str(&pad((zone.abs() / 60) as i64, 2));
                    out.push_str(&pad((zone.abs() % 60) as i64, 2));
                }
            }
            Std::Frac(n, trim, sep) => {
                let digits = format!("{:09}", t.nanos);
                let mut d = digits[..n.min(9)].to_string();
                if trim {
                    while d.ends_with('0') {
                        d.pop();
                    }
                    if d.is_empty() {
                        continue;
                    }
                }
                out.push(sep);
                out.push_str(&d);
            }
        }
    }
    out
}

fn parse_err(value: &str, layout: &str, value_elem: &str, layout_elem: &str) -> String {
    format!(
        "parsing time {} as {}: cannot parse {} as {}",
        crate::gofmt::quote(value),
        crate::gofmt::quote(layout),
        crate::gofmt::quote(value_elem),
        crate::gofmt::quote(layout_elem)
    )
}

fn take_digits(v: &str, min: usize, max: usize) -> Option<(i64, &str)> {
    let n = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n < min {
        return None;
    }
    Some((v[..n].parse().ok()?, &v[n..]))
}

fn lookup_name<'a>(v: &'a str, names: &[&str], short: bool) -> Option<(usize, &'a str)> {
    for (i, name) in names.iter().enumerate() {
        let name = if short { &name[..3] } else { name };
        if v.len() >= name.len() && v[..name.len()].eq_ignore_ascii_case(name) {
            return Some((i, &v[name.len()..]));
        }
    }
    None
}

/// `time.ParseInLocation(layout, value, Local)` for the usual layout elements.
pub fn parse(layout: &str, value: &str) -> Result<Time, String> {
    let (mut year, mut month, mut day) = (1i64, 1i64, 1i64);
    let (mut hour, mut min, mut sec, mut nanos) = (0i64, 0i64, 0i64, 0i64);
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let mut abbr: Option<String> = None;
    let mut rest_layout = layout;
    let mut v = value;
    loop {
        let (prefix, std, suffix) = next_std_chunk(rest_layout);
        let std_str = &rest_layout[prefix.len()..rest_layout.len() - suffix.len()];
        // The literal prefix must match (spaces are compared loosely by Go; exact here).
        if !v.starts_with(prefix) {
            return Err(parse_err(value, layout, v, prefix));
        }
        v = &v[prefix.len()..];
        let Some((std, _)) = std else {
            if !v.is_empty() {
                return Err(format!(
                    "parsing time {}: extra text: {}",
                    crate::gofmt::quote(value),
                    crate::gofmt::quote(v)
                ));
            }
            break;
        };
        rest_layout = suffix;
        let before = v;
        let fail = || parse_err(value, layout, before, std_str);
        match std {
            Std::Year => {
                let (n, r) = take_digits(v, 2, 2).ok_or_else(fail)?;
                year = if n >= 69 { n + 1900 } else { n + 2000 };
                v = r;
            }
            Std::LongYear => {
                let (n, r) = take_digits(v, 4, 4).ok_or_else(fail)?;
                year = n;
                v = r;
            }
            Std::Month | Std::LongMonth => {
                let (i, r) = lookup_name(v, &LONG_MONTHS, std == Std::Month).ok_or_else(fail)?;
                month = i as i64 + 1;
                v = r;
            }
            Std::NumMonth | Std::ZeroMonth => {
                let min_len = if std == Std::ZeroMonth { 2 } else { 1 };
                let (n, r) = take_digits(v, min_len, 2).ok_or_else(fail)?;
                if !(1..=12).contains(&n) {
                    return Err(format!(
                        "parsing time {}: month out of range",
                        crate::gofmt::quote(value)
                    ));
                }
                month = n;
                v = r;
            }
            Std::WeekDay | Std::LongWeekDay => {
                let (_, r) = lookup_name(v, &LONG_DAYS, std == Std::WeekDay).ok_or_else(fail)?;
                v = r;
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                if std == Std::UnderDay && v.starts_with(' ') {
                    v = &v[1..];
                }
                let min_len = if std == Std::ZeroDay { 2 } else { 1 };
                let (n, r) = take_digits(v, min_len, 2).ok_or_else(fail)?;
                day = n;
                v = r;
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                let (_, r) = take_digits(v.trim_start_matches(' '), 1, 3).ok_or_else(fail)?;
                v = r;
            }
            Std::Hour => {
                let (n, r) = take_digits(v, 2, 2).ok_or_else(fail)?;
                if n >= 24 {
                    return Err(format!(
                        "parsing time {}: hour out of range",
                        crate::gofmt::quote(value)
                    ));
                }
                hour = n;
                v = r;
            }
            Std::Hour12 | Std::ZeroHour12 => {
                let min_len = if std == Std::ZeroHour12 { 2 } else { 1 };
                let (n, r) = take_digits(v, min_len, 2).ok_or_else(fail)?;
                if n > 12 {
                    return Err(format!(
                        "parsing time {}: hour out of range",
                        crate::gofmt::quote(value)
                    ));
                }
                hour = n;
                v = r;
            }
            Std::Minute | Std::ZeroMinute => {
                let min_len = if std == Std::ZeroMinute { 2 } else { 1 };
                let (n, r) = take_digits(v, min_len, 2).ok_or_else(fail)?;
                if n >= 60 {
                    return Err(format!(
                        "parsing time {}: minute out of range",
                        crate::gofmt::quote(value)
                    ));
                }
                min = n;
                v = r;
            }
            Std::Second | Std::ZeroSecond => {
                let min_len = if std == Std::ZeroSecond { 2 } else { 1 };
                let (n, r) = take_digits(v, min_len, 2).ok_or_else(fail)?;
                if n >= 60 {
                    return Err(format!(
                        "parsing time {}: second out of range",
                        crate::gofmt::quote(value)
                    ));
                }
                sec = n;
                v = r;
                // A fractional second in the value that the layout does not mention.
                if (v.starts_with('.') || v.starts_with(','))
                    && v[1..].starts_with(|c: char| c.is_ascii_digit())
                    && !matches!(next_std_chunk(rest_layout).1, Some((Std::Frac(..), _)))
                {
                    let n = v[1..].bytes().take_while(u8::is_ascii_digit).count();
                    let mut d = v[1..1 + n].to_string();
                    d.truncate(9);
                    while d.len() < 9 {
                        d.push('0');
                    }
                    nanos = d.parse().unwrap_or(0);
                    v = &v[1 + n..];
                }
            }
            Std::PM | Std::Pm => {
                let p = v.get(..2).ok_or_else(fail)?;
                match p {
                    "PM" | "pm" => pm = Some(true),
                    "AM" | "am" => pm = Some(false),
                    _ => return Err(fail()),
                }
                v = &v[2..];
            }
            Std::Frac(n, trim, _) => {
                if !(v.starts_with('.') || v.starts_with(',')) {
                    if trim {
                        continue;
                    }
                    return Err(fail());
                }
                let digits = v[1..].bytes().take_while(u8::is_ascii_digit).count();
                if !trim && digits < n {
                    return Err(fail());
                }
                let take = if trim { digits } else { n };
                let mut d = v[1..1 + take].to_string();
                d.truncate(9);
                while d.len() < 9 {
                    d.push('0');
                }
                nanos = d.parse().unwrap_or(0);
                v = &v[1 + take..];
            }
            Std::Tz => {
                if v.starts_with("UTC") {
                    offset = Some(0);
                    abbr = Some("UTC".into());
                    v = &v[3..];
                } else {
                    let n = v.bytes().take_while(u8::is_ascii_uppercase).count();
                    if n < 3 {
                        return Err(fail());
                    }
                    abbr = Some(v[..n].to_string());
                    v = &v[n..];
                }
            }
            _ => {
                // Numeric and ISO 8601 offsets.
                let iso = matches!(
                    std,
                    Std::Iso8601Tz
                        | Std::Iso8601SecondsTz
                        | Std::Iso8601ShortTz
                        | Std::Iso8601ColonTz
                        | Std::Iso8601ColonSecondsTz
                );
                if iso && v.starts_with('Z') {
                    offset = Some(0);
                    abbr = Some("UTC".into());
                    v = &v[1..];
                    continue;
                }
                let sign = match v.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return Err(fail()),
                };
                let colon = matches!(
                    std,
                    Std::Iso8601ColonTz
                        | Std::NumColonTz
                        | Std::Iso8601ColonSecondsTz
                        | Std::NumColonSecondsTz
                );
                let mut r = &v[1..];
                let (hh, r2) = take_digits(r, 2, 2).ok_or_else(fail)?;
                r = r2;
                let mut mm = 0;
                let mut ss = 0;
                if !matches!(std, Std::NumShortTz | Std::Iso8601ShortTz) {
                    if colon {
                        r = r.strip_prefix(':').ok_or_else(fail)?;
                    }
                    let (m2, r3) = take_digits(r, 2, 2).ok_or_else(fail)?;
                    mm = m2;
                    r = r3;
                }
                if matches!(
                    std,
                    Std::Iso8601SecondsTz
                        | Std::NumSecondsTz
                        | Std::NumColonSecondsTz
                        | Std::Iso8601ColonSecondsTz
                ) {
                    if colon {
                        r = r.strip_prefix(':').ok_or_else(fail)?;
                    }
                    let (s2, r3) = take_digits(r, 2, 2).ok_or_else(fail)?;
                    ss = s2;
                    r = r3;
                }
                offset = Some(sign * (hh * 3600 + mm * 60 + ss) as i32);
                v = r;
            }
        }
    }
    if let Some(p) = pm {
        if p && hour < 12 {
            hour += 12;
        } else if !p && hour == 12 {
            hour = 0;
        }
    }
    let days_in = match month {
        2 => {
            if is_leap(year) {
                29
            } else {
                28
            }
        }
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days_in {
        return Err(format!(
            "parsing time {}: day out of range",
            crate::gofmt::quote(value)
        ));
    }
    let local =
        days_from_civil(year, month as u32, day as u32) * 86400 + hour * 3600 + min * 60 + sec;
    let system = jiff::tz::TimeZone::system();
    match (offset, abbr) {
        (Some(off), abbr) => {
            let t = Time {
                secs: local - off as i64,
                nanos: nanos as u32,
                offset: off,
                abbr: String::new(),
            };
            // Go uses the local zone when its offset at that instant matches.
            let in_local = t.in_tz(&system);
            if in_local.offset == off && abbr.as_deref().is_none_or(|a| a == in_local.abbr) {
                return Ok(in_local);
            }
            Ok(Time {
                abbr: abbr.unwrap_or_default(),
                ..t
            })
        }
        (None, Some(abbr)) => {
            // A zone abbreviation alone: the local zone if it uses that name, else a zone of
            // that name at offset 0.
            let guess = Time {
                secs: local,
                nanos: nanos as u32,
                offset: 0,
                abbr: abbr.clone(),
            }
            .in_tz(&system);
            if guess.abbr == abbr {
                let secs = local - guess.offset as i64;
                return Ok(Time {
                    secs,
                    nanos: nanos as u32,
                    offset: 0,
                    abbr: String::new(),
                }
                .in_tz(&system));
            }
            Ok(Time {
                secs: local,
                nanos: nanos as u32,
                offset: 0,
                abbr,
            })
        }
        (None, None) => {
            let dt = jiff::civil::DateTime::new(
                year as i16,
                month as i8,
                day as i8,
                hour as i8,
                min as i8,
                sec as i8,
                0,
            )
            .map_err(|e| e.to_string())?;
            let ts = system
                .to_ambiguous_timestamp(dt)
                .compatible()
                .map_err(|e| e.to_string())?;
            Ok(Time {
                secs: ts.as_second(),
                nanos: nanos as u32,
                offset: 0,
                abbr: String::new(),
            }
            .in_tz(&system))
        }
    }
}

// ---- durations ------------------------------------------------------------------------------

/// Go's `Duration.String()`.
pub fn duration_string(d: i64) -> String {
    if d == 0 {
        return "0s".into();
    }
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        // Sub-second: ns, µs or ms with a fraction.
        let (unit, prec) = if u < 1_000 {
            ("ns", 0)
        } else if u < 1_000_000 {
            ("µs", 3)
        } else {
            ("ms", 6)
        };
        out.push_str(&frac_str(u, prec));
        out.push_str(unit);
    } else {
        let secs_frac = frac_str(u % 60_000_000_000, 9);
        out.push_str(&secs_frac);
        out.push('s');
        u /= 60_000_000_000;
        if u > 0 {
            let m = u % 60;
            out = format!("{m}m{out}");
            u /= 60;
            if u > 0 {
                out = format!("{u}h{out}");
            }
        }
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `v / 10^prec` with the fraction's trailing zeros removed.
fn frac_str(v: u64, prec: u32) -> String {
    if prec == 0 {
        return v.to_string();
    }
    let p = 10u64.pow(prec);
    let (int, frac) = (v / p, v % p);
    if frac == 0 {
        return int.to_string();
    }
    let f = format!("{:0width$}", frac, width = prec as usize);
    format!("{int}.{}", f.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let orig = text;
    let quoted = || crate::gofmt::quote(orig);
    let mut s = text;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(format!("time: invalid duration {}", quoted()));
    }
    let mut total: f64 = 0.0;
    let mut total_i: i128 = 0;
    while !s.is_empty() {
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_part = "";
        if let Some(r) = s.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &r[..n];
            s = &r[n..];
            if int_len == 0 && n == 0 {
                return Err(format!("time: invalid duration {}", quoted()));
            }
        } else if int_len == 0 {
            return Err(format!("time: invalid duration {}", quoted()));
        }
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quoted()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let mult: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    crate::gofmt::quote(unit),
                    quoted()
                ));
            }
        };
        let iv: i128 = int_part.parse().unwrap_or(0);
        total_i += iv * mult;
        if !frac_part.is_empty() {
            let f: f64 = format!("0.{frac_part}").parse().unwrap_or(0.0);
            total += f * mult as f64;
        }
        if total_i > i64::MAX as i128 + 1 {
            return Err(format!("time: invalid duration {}", quoted()));
        }
    }
    let v = total_i + total as i128;
    if v > i64::MAX as i128 + if neg { 1 } else { 0 } {
        return Err(format!("time: invalid duration {}", quoted()));
    }
    Ok(if neg { (-v) as i64 } else { v as i64 })
}

fn round_to_second(d: i64) -> i64 {
    let m = 1_000_000_000i64;
    let r = d % m;
    if d < 0 {
        let r = -r;
        if r + r < m { d + r } else { d - (m - r) }
    } else if r + r < m {
        d - r
    } else {
        d + (m - r)
    }
}

fn since_nanos(t: &Time) -> i64 {
    let now = Time::now();
    let secs = now.secs - t.secs;
    let nanos = now.nanos as i64 - t.nanos as i64;
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

fn date_modify(fmt: &str, t: &Time) -> Result<Time, String> {
    let d = parse_duration(fmt)?;
    let total = t.nanos as i64 + d.rem_euclid(1_000_000_000);
    let secs = t.secs + d.div_euclid(1_000_000_000) + total / 1_000_000_000;
    let moved = Time {
        secs,
        nanos: (total % 1_000_000_000) as u32,
        offset: t.offset,
        abbr: t.abbr.clone(),
    };
    // Keep the zone; its offset may change across a DST boundary.
    Ok(match load_location_by_abbr(t) {
        Some(tz) => moved.in_tz(&tz),
        None => moved,
    })
}

fn load_location_by_abbr(t: &Time) -> Option<jiff::tz::TimeZone> {
    let system = jiff::tz::TimeZone::system();
    let here = t.in_tz(&system);
    (here.abbr == t.abbr && here.offset == t.offset).then_some(system)
}

pub fn register(m: &mut FuncMap) {
    m.insert("now", Arity::Exact(0), |_, _| Ok(Time::now().to_value()));
    m.insert("date", Arity::Exact(2), |_, a| {
        let layout = args::string(&a[0])?;
        Ok(s(format(&time_or_now(&a[1]).in_zone("Local"), &layout)))
    });
    for name in ["dateInZone", "date_in_zone"] {
        m.insert(name, Arity::Exact(3), |_, a| {
            let (layout, zone) = (args::string(&a[0])?, args::string(&a[2])?);
            Ok(s(format(&time_or_now(&a[1]).in_zone(&zone), &layout)))
        });
    }
    m.insert("htmlDate", Arity::Exact(1), |_, a| {
        Ok(s(format(
            &time_or_now(&a[0]).in_zone("Local"),
            "2006-01-02",
        )))
    });
    m.insert("htmlDateInZone", Arity::Exact(2), |_, a| {
        let zone = args::string(&a[1])?;
        Ok(s(format(&time_or_now(&a[0]).in_zone(&zone), "2006-01-02")))
    });
    for name in ["dateModify", "date_modify"] {
        m.insert(name, Arity::Exact(2), |_, a| {
            let (fmt, t) = (args::string(&a[0])?, time_arg(&a[1])?);
            Ok(date_modify(&fmt, &t).unwrap_or(t).to_value())
        });
    }
    for name in ["mustDateModify", "must_date_modify"] {
        m.insert(name, Arity::Exact(2), |_, a| {
            let (fmt, t) = (args::string(&a[0])?, time_arg(&a[1])?);
            date_modify(&fmt, &t)
                .map(|t| t.to_value())
                .map_err(FuncError::new)
        });
    }
    m.insert("ago", Arity::Exact(1), |_, a| {
        let t = match &a[0] {
            Value::Int(n) | Value::Int64(n) => Time::from_unix(*n),
            other => Time::from_value(other).unwrap_or_else(Time::now),
        };
        Ok(s(duration_string(round_to_second(since_nanos(&t)))))
    });
    m.insert("duration", Arity::Exact(1), |_, a| {
        let n = match &a[0] {
            Value::String(v) => v.parse::<i64>().unwrap_or(0),
            Value::Int64(n) => *n,
            _ => 0,
        };
        Ok(s(duration_string(n.saturating_mul(1_000_000_000))))
    });
    m.insert("durationRound", Arity::Exact(1), |_, a| {
        let d = match &a[0] {
            Value::Int64(n) => *n,
            Value::String(v) => parse_duration(v).unwrap_or(0),
            Value::Time(t) => since_nanos(t),
            _ => 0,
        };
        Ok(s(duration_round(d)))
    });
    m.insert("toDate", Arity::Exact(2), |_, a| {
        let (layout, value) = (args::string(&a[0])?, args::string(&a[1])?);
        Ok(parse(&layout, &value)
            .unwrap_or_else(|_| Time::zero())
            .to_value())
    });
    m.insert("mustToDate", Arity::Exact(2), |_, a| {
        let (layout, value) = (args::string(&a[0])?, args::string(&a[1])?);
        parse(&layout, &value)
            .map(|t| t.to_value())
            .map_err(FuncError::new)
    });
    m.insert("unixEpoch", Arity::Exact(1), |_, a| {
        Ok(s(time_arg(&a[0])?.secs.to_string()))
    });
}

fn duration_round(d: i64) -> String {
    let u = d.unsigned_abs();
    const SEC: u64 = 1_000_000_000;
    let (year, month, day, hour, minute) = (
        SEC * 3600 * 24 * 365,
        SEC * 3600 * 24 * 30,
        SEC * 3600 * 24,
        SEC * 3600,
        SEC * 60,
    );
    if u > year {
        format!("{}y", u / year)
    } else if u > month {
        format!("{}mo", u / month)
    } else if u > day {
        format!("{}d", u / day)
    } else if u > hour {
        format!("{}h", u / hour)
    } else if u > minute {
        format!("{}m", u / minute)
    } else if u > SEC {
        format!("{}s", u / SEC)
    } else {
        "0s".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(secs: i64) -> Time {
        Time {
            secs,
            nanos: 0,
            offset: 0,
            abbr: "UTC".into(),
        }
    }

    #[test]
    fn formats_go_layouts() {
        let t = Time {
            nanos: 123_400_000,
            ..utc(1_136_214_245) // 2006-01-02T15:04:05Z
        };
        assert_eq!(
            format(&t, "2006-01-02T15:04:05Z07:00"),
            "2006-01-02T15:04:05Z"
        );
        assert_eq!(
            format(&t, "Mon Jan _2 3:4:5 PM MST 06"),
            "Mon Jan  2 3:4:5 PM UTC 06"
        );
        assert_eq!(
            format(&t, "Monday, January 02 .000 .999"),
            "Monday, January 02 .123 .123"
        );
        assert_eq!(t.go_string(), "2006-01-02 15:04:05.1234 +0000 UTC");
        assert_eq!(Time::from_value(&t.to_value()), Some(t));
        let cet = Time {
            offset: 3600,
            abbr: "CET".into(),
            ..utc(0)
        };
        assert_eq!(
            format(&cet, "15:04 -0700 -07:00 Z07"),
            "01:00 +0100 +01:00 +01"
        );
    }

    #[test]
    fn parses_go_layouts() {
        let t = parse("2006-01-02T15:04:05Z07:00", "2020-02-29T10:11:12+02:00").unwrap();
        assert_eq!(t.secs, 1_582_963_872);
        assert_eq!(t.offset, 7200);
        assert_eq!(
            parse("2006-01-02", "2020-13-01").unwrap_err(),
            "parsing time \"2020-13-01\": month out of range"
        );
        assert_eq!(
            parse("2006-01-02", "x").unwrap_err(),
            "parsing time \"x\" as \"2006-01-02\": cannot parse \"x\" as \"2006\""
        );
    }

    #[test]
    fn durations_like_go() {
        assert_eq!(duration_string(95_000_000_000), "1m35s");
        assert_eq!(
            duration_string(3_600_000_000_000 + 1_500_000_000),
            "1h0m1.5s"
        );
        assert_eq!(duration_string(1_500), "1.5µs");
        assert_eq!(duration_string(-2_000_000), "-2ms");
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration("-1.5h").unwrap(), -5_400_000_000_000);
        assert_eq!(
            parse_duration("x").unwrap_err(),
            "time: invalid duration \"x\""
        );
        assert_eq!(
            parse_duration("1").unwrap_err(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            parse_duration("1y").unwrap_err(),
            "time: unknown unit \"y\" in duration \"1y\""
        );
        assert_eq!(duration_round(3 * 86_400_000_000_000 + 5), "3d");
    }
}
