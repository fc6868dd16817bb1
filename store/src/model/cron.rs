//! Syntax check for `cronSpec`, matching `robfig/cron/v3`'s `ParseStandard` (5 fields, or a
//! `@descriptor`, optionally after `CRON_TZ=`/`TZ=`).

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

const FIELDS: [Bounds; 5] = [
    Bounds {
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 12,
        names: MONTH_NAMES,
    },
    Bounds {
        min: 0,
        max: 6,
        names: DOW_NAMES,
    },
];

/// Checks a standard cron spec; the error text follows robfig/cron.
pub fn validate_cron_spec(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_owned());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(i) = spec.find(' ') else {
            return Err(format!("provided bad location {spec}"));
        };
        spec = spec[i..].trim();
    }
    if spec.starts_with('@') {
        return validate_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != FIELDS.len() {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in fields.iter().zip(FIELDS.iter()) {
        for expr in field.split(',') {
            validate_range(expr, bounds)?;
        }
    }
    Ok(())
}

fn validate_descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match spec.strip_prefix("@every ") {
            Some(d) => parse_go_duration(d)
                .map(|_| ())
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

fn validate_range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
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
            if single {
                end = bounds.max;
            }
            parse_uint(range_and_step[1])?
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
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
