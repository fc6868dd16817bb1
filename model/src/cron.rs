//! `cronSpec` support matching `robfig/cron/v3`'s `ParseStandard` (5 fields, or a
//! `@descriptor`, optionally after `CRON_TZ=`/`TZ=`): syntax checking
//! ([`validate_cron_spec`]) and schedule evaluation ([`next_time`]).
//!
//! One parser serves both: it turns a spec into robfig's bit sets (with the "star bit" that
//! marks a field written as `*`/`?`), and [`next_time`] replays robfig's `SpecSchedule.Next`
//! and `ConstantDelaySchedule.Next` on those bits.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

use super::duration::parse_go_duration;

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MONTH_NAMES: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];

const DOW_NAMES: &[(&str, u32)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: MONTH_NAMES,
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: DOW_NAMES,
};

/// The five standard fields, in spec order.
const FIELDS: [Bounds; 5] = [MINUTES, HOURS, DOM, MONTHS, DOW];

/// Set in a field's bits when the field was written as `*` or `?` (robfig's `starBit`).
const STAR_BIT: u64 = 1 << 63;

/// robfig's `SpecSchedule`: one bit per allowed value of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpecSchedule {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

/// A parsed schedule, without its location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    Spec(SpecSchedule),
    /// `@every`: the delay in nanoseconds, already rounded as robfig's `Every` does.
    Every(i128),
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Checks a standard cron spec; the error text follows robfig/cron.
///
/// The location named by `CRON_TZ=`/`TZ=` is not loaded here; [`next_time`] does that.
pub fn validate_cron_spec(spec: &str) -> Result<(), String> {
    let (_, rest) = split_location(spec)?;
    parse_schedule(rest).map(|_| ())
}

/// The first activation of `spec` strictly after `after`, as robfig/cron v3 computes it.
///
/// Schedules run in UTC unless `CRON_TZ=`/`TZ=` names a zone. Like robfig, a spec schedule is
/// searched for at most five years ahead; a spec with no activation in that window (such as
/// `0 0 30 2 *`) is an error.
pub fn next_time(spec: &str, after: Timestamp) -> Result<Timestamp, String> {
    let (location, rest) = split_location(spec)?;
    // robfig loads the location before looking at the rest of the spec.
    let tz = match location {
        Some(name) => load_location(name)?,
        None => TimeZone::UTC,
    };
    match parse_schedule(rest)? {
        Schedule::Every(delay) => {
            // ConstantDelaySchedule.Next: t.Add(delay - time.Duration(t.Nanosecond())).
            let nanos = after.as_nanosecond();
            Timestamp::from_nanosecond(nanos - nanos.rem_euclid(NANOS_PER_SECOND) + delay).map_err(
                |e| format!("next activation of {spec} after {after} is out of range: {e}"),
            )
        }
        Schedule::Spec(schedule) => match spec_next(&schedule, after, &tz)? {
            Some(next) => Ok(next),
            None => Err(format!(
                "cron spec {spec} has no activation within five years after {after}"
            )),
        },
    }
}

/// Splits off a `CRON_TZ=`/`TZ=` prefix, returning the location name (if any) and the rest.
fn split_location(spec: &str) -> Result<(Option<&str>, &str), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_owned());
    }
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(i) = spec.find(' ') else {
            return Err(format!("provided bad location {spec}"));
        };
        let eq = spec.find('=').unwrap_or(0);
        return Ok((Some(&spec[eq + 1..i]), spec[i..].trim()));
    }
    Ok((None, spec))
}

/// Go's `time.LoadLocation`, backed by jiff's time zone database.
fn load_location(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => return Ok(TimeZone::UTC),
        "Local" => return Ok(TimeZone::system()),
        _ => {}
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err(format!(
            "provided bad location {name}: time: invalid location name"
        ));
    }
    TimeZone::get(name).map_err(|e| format!("provided bad location {name}: {e}"))
}

/// Parses what follows the location prefix: a `@descriptor` or the five fields.
fn parse_schedule(spec: &str) -> Result<Schedule, String> {
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != FIELDS.len() {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let mut bits = [0u64; 5];
    for ((field, bounds), bits) in fields.iter().zip(FIELDS.iter()).zip(bits.iter_mut()) {
        *bits = parse_field(field, bounds)?;
    }
    let [minute, hour, dom, month, dow] = bits;
    Ok(Schedule::Spec(SpecSchedule {
        second: 1,
        minute,
        hour,
        dom,
        month,
        dow,
    }))
}

fn parse_descriptor(spec: &str) -> Result<Schedule, String> {
    let midnight = |dom: u64, month: u64, dow: u64| {
        Schedule::Spec(SpecSchedule {
            second: 1,
            minute: 1,
            hour: 1,
            dom,
            month,
            dow,
        })
    };
    match spec {
        "@yearly" | "@annually" => Ok(midnight(1 << DOM.min, 1 << MONTHS.min, all(&DOW))),
        "@monthly" => Ok(midnight(1 << DOM.min, all(&MONTHS), all(&DOW))),
        "@weekly" => Ok(midnight(all(&DOM), all(&MONTHS), 1 << DOW.min)),
        "@daily" | "@midnight" => Ok(midnight(all(&DOM), all(&MONTHS), all(&DOW))),
        "@hourly" => Ok(Schedule::Spec(SpecSchedule {
            second: 1,
            minute: 1,
            hour: all(&HOURS),
            dom: all(&DOM),
            month: all(&MONTHS),
            dow: all(&DOW),
        })),
        _ => match spec.strip_prefix("@every ") {
            Some(d) => parse_go_duration(d)
                .map(every_delay)
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// robfig's `Every`: at least one second, sub-second parts truncated.
fn every_delay(nanos: i128) -> Schedule {
    let nanos = nanos.max(NANOS_PER_SECOND);
    Schedule::Every(nanos - nanos % NANOS_PER_SECOND)
}

/// All values of a field, plus the star bit.
fn all(bounds: &Bounds) -> u64 {
    bits(bounds.min, bounds.max, 1) | STAR_BIT
}

/// Bits `min..=max`, every `step`th.
fn bits(min: u32, max: u32, step: u32) -> u64 {
    (min..=max)
        .step_by(step as usize)
        .fold(0, |acc, v| acc | 1 << v)
}

/// A comma-separated list of ranges.
fn parse_field(field: &str, bounds: &Bounds) -> Result<u64, String> {
    field
        .split(',')
        .try_fold(0, |acc, expr| Ok(acc | parse_range(expr, bounds)?))
}

/// `*`, `?`, `n`, `a-b`, each optionally followed by `/step` (`n/step` means `n-max/step`).
fn parse_range(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let mut extra = 0;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        extra = STAR_BIT;
        (bounds.min, bounds.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds.names)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], bounds.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_uint(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | extra)
}

fn parse_int_or_name(expr: &str, names: &[(&str, u32)]) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    if let Some((_, v)) = names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    parse_uint(expr)
}

fn parse_uint(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix('+').unwrap_or(expr);
    if digits.starts_with('-') {
        return Err(format!("negative number ({expr}) not allowed: {expr}"));
    }
    digits
        .parse::<u32>()
        .map_err(|e| format!("failed to parse int from {expr}: {e}"))
}

fn has(bits: u64, value: i8) -> bool {
    // Wall-clock fields are never negative.
    bits & (1u64 << value.unsigned_abs()) != 0
}

/// robfig's `dayMatches`: if either day field was written as `*`/`?`, both must match;
/// otherwise either may.
fn day_matches(s: &SpecSchedule, wall: &DateTime) -> bool {
    let dom_match = has(s.dom, wall.day());
    let dow_match = has(s.dow, wall.weekday().to_sunday_zero_offset());
    if s.dom & STAR_BIT != 0 || s.dow & STAR_BIT != 0 {
        dom_match && dow_match
    } else {
        dom_match || dow_match
    }
}

/// The wall clock in `tz` at Unix second `t`.
fn wall(tz: &TimeZone, t: i64) -> Result<DateTime, String> {
    let ts = Timestamp::from_second(t).map_err(|e| format!("time out of range: {e}"))?;
    Ok(tz.to_datetime(ts))
}

/// Go's `time.Date` in `tz`, in Unix seconds: out-of-range months and days carry over, and a
/// wall time that is skipped or repeated by a zone transition is resolved the way Go does.
fn go_date(
    tz: &TimeZone,
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
) -> Result<i64, String> {
    let m0 = month - 1;
    let days = days_from_civil(year + m0.div_euclid(12), m0.rem_euclid(12) + 1) + day - 1;
    let unix = days * 86_400 + hour * 3_600 + minute * 60 + second;
    // Go looks up the offset in effect at the wall time read as UTC, then, if the resulting
    // instant lies outside that offset's period, the offset in effect at that instant.
    let offset_at = |t: i64| -> Result<i64, String> {
        let ts = Timestamp::from_second(t).map_err(|e| format!("time out of range: {e}"))?;
        Ok(i64::from(tz.to_offset(ts).seconds()))
    };
    let guess = offset_at(unix)?;
    Ok(unix - offset_at(unix - guess)?)
}

/// Days since 1970-01-01 of the first day of `month` in `year` (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// robfig's `SpecSchedule.Next`, step by step, in Unix seconds. `None` when nothing matches
/// within five years.
fn spec_next(
    s: &SpecSchedule,
    after: Timestamp,
    tz: &TimeZone,
) -> Result<Option<Timestamp>, String> {
    // Start at the earliest possible time (the upcoming second); from here on the time has no
    // sub-second part, so whole seconds suffice.
    let start = after.as_nanosecond().div_euclid(NANOS_PER_SECOND) + 1;
    let mut t = i64::try_from(start).map_err(|_| format!("time out of range: {after}"))?;
    let mut w = wall(tz, t)?;
    let mut added = false;
    let year_limit = w.year() + 5;
    // Go's `AddDate` and `Date` on the current wall clock.
    let date = |w: &DateTime, months: i64, days: i64, hms: Option<(i64, i64, i64)>| {
        let (h, mi, sec) = hms.unwrap_or((
            i64::from(w.hour()),
            i64::from(w.minute()),
            i64::from(w.second()),
        ));
        go_date(
            tz,
            i64::from(w.year()),
            i64::from(w.month()) + months,
            i64::from(w.day()) + days,
            h,
            mi,
            sec,
        )
    };

    'wrap: loop {
        if w.year() > year_limit {
            return Ok(None);
        }

        while !has(s.month, w.month()) {
            if !added {
                added = true;
                t = go_date(tz, i64::from(w.year()), i64::from(w.month()), 1, 0, 0, 0)?;
                w = wall(tz, t)?;
            }
            t = date(&w, 1, 0, None)?;
            w = wall(tz, t)?;
            if w.month() == 1 {
                continue 'wrap;
            }
        }

        while !day_matches(s, &w) {
            if !added {
                added = true;
                t = date(&w, 0, 0, Some((0, 0, 0)))?;
                w = wall(tz, t)?;
            }
            t = date(&w, 0, 1, None)?;
            w = wall(tz, t)?;
            // Midnight may not exist (DST); robfig nudges back to the day's start.
            let hour = i64::from(w.hour());
            if hour != 0 {
                t += if hour > 12 { 24 - hour } else { -hour } * 3_600;
                w = wall(tz, t)?;
            }
            if w.day() == 1 {
                continue 'wrap;
            }
        }

        while !has(s.hour, w.hour()) {
            if !added {
                added = true;
                t = date(&w, 0, 0, Some((i64::from(w.hour()), 0, 0)))?;
            }
            t += 3_600;
            w = wall(tz, t)?;
            if w.hour() == 0 {
                continue 'wrap;
            }
        }

        while !has(s.minute, w.minute()) {
            if !added {
                added = true;
                // time.Truncate(time.Minute) works on absolute time.
                t = t.div_euclid(60) * 60;
            }
            t += 60;
            w = wall(tz, t)?;
            if w.minute() == 0 {
                continue 'wrap;
            }
        }

        while !has(s.second, w.second()) {
            // Truncating to the second is a no-op: `t` is whole seconds already.
            added = true;
            t += 1;
            w = wall(tz, t)?;
            if w.second() == 0 {
                continue 'wrap;
            }
        }

        return Timestamp::from_second(t)
            .map(Some)
            .map_err(|e| format!("time out of range: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(spec: &str, after: &str) -> String {
        next_time(spec, ts(after)).unwrap().to_string()
    }

    fn zones_available() -> bool {
        let ok =
            TimeZone::get("America/New_York").is_ok() && TimeZone::get("Europe/Berlin").is_ok();
        if !ok {
            eprintln!("skipping: time zone database not available");
        }
        ok
    }

    #[test]
    fn accepts_standard_specs() {
        for spec in [
            "* * * * *",
            "*/5 * * * *",
            "0 0 1,15 * *",
            "30 8-18/2 * JAN-mar mon-FRI",
            "0 0 ? * SUN",
            "@daily",
            "@every 1h30m",
            "CRON_TZ=Europe/Berlin 0 6 * * *",
            "5/10 * * * *",
        ] {
            assert_eq!(validate_cron_spec(spec), Ok(()), "{spec}");
        }
    }

    #[test]
    fn rejects_invalid_specs() {
        for spec in [
            "",
            "* * * *",
            "0 0 0 * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 7",
            "5-1 * * * *",
            "*/0 * * * *",
            "1-2-3 * * * *",
            "x * * * *",
            "@often",
            "@every 5",
        ] {
            assert!(validate_cron_spec(spec).is_err(), "{spec}");
        }
    }

    #[test]
    fn error_messages_follow_robfig() {
        assert_eq!(validate_cron_spec("").unwrap_err(), "empty spec string");
        assert_eq!(
            validate_cron_spec("* * * *").unwrap_err(),
            "expected exactly 5 fields, found 4: [* * * *]"
        );
        assert_eq!(
            validate_cron_spec("60 * * * *").unwrap_err(),
            "end of range (60) above maximum (59): 60"
        );
        assert_eq!(
            validate_cron_spec("TZ=Europe/Berlin").unwrap_err(),
            "provided bad location TZ=Europe/Berlin"
        );
        assert_eq!(
            next_time("@often", ts("2024-01-01T00:00:00Z")).unwrap_err(),
            "unrecognized descriptor: @often"
        );
    }

    #[test]
    fn parses_bits_like_robfig() {
        let Schedule::Spec(s) = parse_schedule("*/15 0-23/6 ? jan,Mar-may/2 1-5").unwrap() else {
            panic!("not a spec schedule");
        };
        assert_eq!(s.minute, 1 | 1 << 15 | 1 << 30 | 1 << 45);
        assert_eq!(s.hour, 1 | 1 << 6 | 1 << 12 | 1 << 18);
        assert_eq!(s.dom, bits(1, 31, 1) | STAR_BIT);
        assert_eq!(s.month, 1 << 1 | 1 << 3 | 1 << 5);
        assert_eq!(s.dow, bits(1, 5, 1));
        // `*/1` keeps the star bit, a real step drops it.
        let Schedule::Spec(s) = parse_schedule("* * */1 * */2").unwrap() else {
            panic!("not a spec schedule");
        };
        assert_ne!(s.dom & STAR_BIT, 0);
        assert_eq!(s.dow, 1 | 1 << 2 | 1 << 4 | 1 << 6);
    }

    #[test]
    fn every_fifteen_minutes() {
        assert_eq!(
            next("*/15 * * * *", "2024-05-05T10:07:13Z"),
            "2024-05-05T10:15:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2024-05-05T10:15:00Z"),
            "2024-05-05T10:30:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2024-05-05T23:59:59.9Z"),
            "2024-05-06T00:00:00Z"
        );
    }

    #[test]
    fn hourly_at_half_past() {
        assert_eq!(
            next("30 * * * *", "2024-05-05T10:07:00Z"),
            "2024-05-05T10:30:00Z"
        );
        assert_eq!(
            next("30 * * * *", "2024-05-05T10:30:00Z"),
            "2024-05-05T11:30:00Z"
        );
        assert_eq!(
            next("30 * * * *", "2024-12-31T23:45:00Z"),
            "2025-01-01T00:30:00Z"
        );
    }

    #[test]
    fn daily_at_midnight() {
        for spec in ["0 0 * * *", "@daily", "@midnight"] {
            assert_eq!(
                next(spec, "2024-02-28T12:00:00Z"),
                "2024-02-29T00:00:00Z",
                "{spec}"
            );
            assert_eq!(
                next(spec, "2024-02-29T00:00:00Z"),
                "2024-03-01T00:00:00Z",
                "{spec}"
            );
        }
    }

    #[test]
    fn descriptors() {
        let after = "2024-05-15T10:20:30Z";
        assert_eq!(next("@hourly", after), "2024-05-15T11:00:00Z");
        // 2024-05-15 is a Wednesday.
        assert_eq!(next("@weekly", after), "2024-05-19T00:00:00Z");
        assert_eq!(next("@monthly", after), "2024-06-01T00:00:00Z");
        assert_eq!(next("@yearly", after), "2025-01-01T00:00:00Z");
        assert_eq!(next("@annually", after), "2025-01-01T00:00:00Z");
    }

    #[test]
    fn dom_or_dow_when_both_restricted() {
        // 2024-05-05 is a Sunday: Monday the 6th comes before June 1st.
        assert_eq!(
            next("0 0 1 * mon", "2024-05-05T12:00:00Z"),
            "2024-05-06T00:00:00Z"
        );
        // 2024-05-28 is a Tuesday: June 1st (a Saturday) comes before Monday the 3rd.
        assert_eq!(
            next("0 0 1 * mon", "2024-05-28T12:00:00Z"),
            "2024-06-01T00:00:00Z"
        );
        // With a star in either field, both must match: the next Monday the 1st.
        assert_eq!(
            next("0 0 1 * *", "2024-05-05T12:00:00Z"),
            "2024-06-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * * mon", "2024-05-05T12:00:00Z"),
            "2024-05-06T00:00:00Z"
        );
        assert_eq!(
            next("0 0 ? * mon", "2024-05-05T12:00:00Z"),
            "2024-05-06T00:00:00Z"
        );
        // `*/2` in dom is a restriction (no star bit), so the OR rule applies.
        assert_eq!(
            next("0 0 */2 * mon", "2024-05-01T12:00:00Z"),
            "2024-05-03T00:00:00Z"
        );
        assert_eq!(
            next("0 0 2-31/2 * mon", "2024-05-01T12:00:00Z"),
            "2024-05-02T00:00:00Z"
        );
        // `*/1` keeps the star bit, so dom and dow must both match: Monday 2024-07-01.
        assert_eq!(
            next("0 0 1 * */1", "2024-05-05T12:00:00Z"),
            "2024-06-01T00:00:00Z"
        );
    }

    #[test]
    fn names_and_steps() {
        assert_eq!(
            next("0 9 * FEB mon-fri", "2024-05-05T12:00:00Z"),
            "2025-02-03T09:00:00Z"
        );
        assert_eq!(
            next("0 9 * jan,Jul SUN", "2024-05-05T12:00:00Z"),
            "2024-07-07T09:00:00Z"
        );
        assert_eq!(
            next("5/20 */6 * * *", "2024-05-05T06:30:00Z"),
            "2024-05-05T06:45:00Z"
        );
        assert_eq!(
            next("5/20 */6 * * *", "2024-05-05T06:45:00Z"),
            "2024-05-05T12:05:00Z"
        );
        assert_eq!(
            next("0 8-18/5 * * *", "2024-05-05T13:00:00Z"),
            "2024-05-05T18:00:00Z"
        );
        assert_eq!(
            next("0 8-18/5 * * *", "2024-05-05T18:00:00Z"),
            "2024-05-06T08:00:00Z"
        );
        assert_eq!(
            next("0 0 29 2 *", "2024-03-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
    }

    #[test]
    fn every_duration() {
        assert_eq!(
            next("@every 90s", "2024-05-05T10:00:00.750Z"),
            "2024-05-05T10:01:30Z"
        );
        assert_eq!(
            next("@every 1h30m", "2024-05-05T10:00:00Z"),
            "2024-05-05T11:30:00Z"
        );
        // Below a second becomes a second; sub-second parts are dropped.
        assert_eq!(
            next("@every 10ms", "2024-05-05T10:00:00.5Z"),
            "2024-05-05T10:00:01Z"
        );
        assert_eq!(
            next("@every 2.9s", "2024-05-05T10:00:00Z"),
            "2024-05-05T10:00:02Z"
        );
        assert_eq!(
            next("@every -5m", "2024-05-05T10:00:00Z"),
            "2024-05-05T10:00:01Z"
        );
        // `@every` ignores the location, but the location must still load.
        assert_eq!(
            next("TZ=UTC @every 1m", "2024-05-05T10:00:00Z"),
            "2024-05-05T10:01:00Z"
        );
    }

    #[test]
    fn time_zones() {
        if !zones_available() {
            return;
        }
        assert_eq!(
            next("CRON_TZ=America/New_York 0 9 * * *", "2024-01-15T00:00:00Z"),
            "2024-01-15T14:00:00Z"
        );
        assert_eq!(
            next("TZ=America/New_York 0 9 * * *", "2024-07-15T00:00:00Z"),
            "2024-07-15T13:00:00Z"
        );
        // 02:30 does not exist in Berlin on 2024-03-31; robfig skips to the next day.
        assert_eq!(
            next("TZ=Europe/Berlin 30 2 * * *", "2024-03-30T23:00:00Z"),
            "2024-04-01T00:30:00Z"
        );
        // Daily at midnight across the autumn change.
        assert_eq!(
            next("TZ=Europe/Berlin 0 0 * * *", "2024-10-26T23:00:00Z"),
            "2024-10-27T23:00:00Z"
        );
        let err =
            next_time("TZ=Nowhere/Special 0 0 * * *", ts("2024-01-01T00:00:00Z")).unwrap_err();
        assert!(
            err.starts_with("provided bad location Nowhere/Special"),
            "{err}"
        );
    }

    #[test]
    fn bad_location_is_an_error_but_not_a_syntax_error() {
        let spec = "CRON_TZ=No/Such_Zone 0 0 * * *";
        assert_eq!(validate_cron_spec(spec), Ok(()));
        let err = next_time(spec, ts("2024-01-01T00:00:00Z")).unwrap_err();
        assert!(
            err.starts_with("provided bad location No/Such_Zone"),
            "{err}"
        );
        let err = next_time("TZ=../etc/passwd 0 0 * * *", ts("2024-01-01T00:00:00Z")).unwrap_err();
        assert!(
            err.starts_with("provided bad location ../etc/passwd"),
            "{err}"
        );
    }

    #[test]
    fn impossible_dates_are_errors() {
        for spec in ["0 0 30 2 *", "0 0 31 apr,jun,sep,nov *"] {
            let err = next_time(spec, ts("2024-01-01T00:00:00Z")).unwrap_err();
            assert!(err.contains("no activation within five years"), "{err}");
        }
    }

    /// A simple field: `*`, a value, a range, a step or a list.
    fn field(min: u32, max: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_owned()),
            (min..=max).prop_map(|v| v.to_string()),
            (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (1..=max - min + 1).prop_map(|n| format!("*/{n}")),
            (min..=max, 1..=max - min + 1).prop_map(|(a, n)| format!("{a}/{n}")),
            prop::collection::vec(min..=max, 1..4).prop_map(|vs| vs
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")),
        ]
    }

    fn spec_strategy() -> impl Strategy<Value = String> {
        (
            field(0, 59),
            field(0, 23),
            field(1, 31),
            field(1, 12),
            field(0, 6),
        )
            .prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}"))
    }

    /// An independent, brute-force search in UTC: the first matching minute after `after`,
    /// up to the end of the fifth year after it.
    fn reference_next(s: &SpecSchedule, after: Timestamp) -> Option<Timestamp> {
        let first = after.as_second().div_euclid(60) * 60 + 60;
        let start = TimeZone::UTC.to_datetime(Timestamp::from_second(first).unwrap());
        let mut day = start.date();
        while day.year() <= start.year() + 5 {
            let w = day.to_datetime(jiff::civil::Time::midnight());
            if has(s.month, day.month()) && day_matches(s, &w) {
                for h in (0..24).filter(|h| has(s.hour, *h)) {
                    for m in (0..60).filter(|m| has(s.minute, *m)) {
                        let cand = day.at(h, m, 0, 0).to_zoned(TimeZone::UTC).unwrap();
                        if cand.timestamp().as_second() >= first {
                            return Some(cand.timestamp());
                        }
                    }
                }
            }
            day = day.tomorrow().unwrap();
        }
        None
    }

    proptest! {
        #[test]
        fn next_time_matches_spec(
            spec in spec_strategy(),
            secs in 0i64..4_102_444_800,
            nanos in 0i32..1_000_000_000,
        ) {
            let after = Timestamp::new(secs, nanos).unwrap();
            let Schedule::Spec(s) = parse_schedule(&spec).unwrap() else {
                unreachable!("five fields always make a spec schedule");
            };
            let expected = reference_next(&s, after);
            match next_time(&spec, after) {
                Ok(next) => {
                    prop_assert!(next > after);
                    let w = TimeZone::UTC.to_datetime(next);
                    prop_assert_eq!(w.second(), 0);
                    prop_assert_eq!(w.subsec_nanosecond(), 0);
                    prop_assert!(has(s.minute, w.minute()));
                    prop_assert!(has(s.hour, w.hour()));
                    prop_assert!(has(s.month, w.month()));
                    prop_assert!(day_matches(&s, &w));
                    prop_assert_eq!(Some(next), expected);
                }
                Err(e) => {
                    prop_assert!(expected.is_none(), "{}: {} but {:?} matches", spec, e, expected);
                }
            }
        }
    }
}
