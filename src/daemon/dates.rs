//! The wall clock's date and time, as the journals' headers and the PGN
//! `Date` tag write them (UTC).

use std::time::{SystemTime, UNIX_EPOCH};

/// The current UTC time, RFC 3339.
pub fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

/// The seconds since 1970 of an RFC 3339 time as the journals write it
/// (`2026-11-27T19:20:03Z`); `None` for anything else.
pub fn unix_from_rfc3339(text: &str) -> Option<u64> {
    let b = text.trim().as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| -> Option<i64> { std::str::from_utf8(&b[r]).ok()?.parse().ok() };
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (proleptic Gregorian), the inverse of `civil_from_days`.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Now, in milliseconds since 1970.
pub fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Today's UTC date.
pub fn civil_date() -> (i64, u32, u32) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_from_days((secs / 86_400) as i64)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_journal_time_reads_back_as_it_was_written() {
        assert_eq!(super::unix_from_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            super::unix_from_rfc3339("2026-11-27T19:20:03Z"),
            Some(1_795_807_203)
        );
        assert_eq!(
            super::unix_from_rfc3339("2000-02-29T12:00:00Z"),
            Some(951_825_600)
        );
        let now = super::rfc3339_now();
        let back = super::unix_from_rfc3339(&now).unwrap();
        assert!(super::unix_ms_now() / 1000 - back < 5, "{now}");
        for bad in [
            "",
            "2026-11-27",
            "2026-13-01T00:00:00Z",
            "2026-11-27T19:20:03+01:00",
            "x026-11-27T19:20:03Z",
        ] {
            assert_eq!(super::unix_from_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
    }
}
