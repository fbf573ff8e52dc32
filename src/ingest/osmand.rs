//! The OsmAnd protocol as Traccar accepts it (port 5055): one HTTP request in, one position
//! or a refusal out. Pure: no I/O, no clock (the receipt time and "now" are handed in).
//!
//! Owns the decoding rules (../shared/reference/trackers.md §1, docs/ingesta.md): the query
//! string of any method, or the form body when the URI has none, or the JSON body of current
//! tracking apps (`Content-Type: application/json`); `id`/`deviceid`; `timestamp` as Unix
//! seconds, milliseconds (above 2³¹−1), ISO 8601 or `AAAA-MM-DD HH:MM:SS` in the fleet's zone;
//! `lat`+`lon` or `location=lat,lon`; speed in knots unless the receiver is told otherwise
//! (the JSON form's `coords.speed` is always m/s); `bearing`/`heading`; `ignition`,
//! `odometer` (metres) and `valid`; a repeated key's last value wins; other attributes are
//! read past. Where Traccar closes the connection without an answer (a field that is not a
//! number, a JSON body that is not an object) this answers 400 with the reason: a tracker
//! cannot tell a dropped connection from a network fault and would retry forever.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDateTime};
use chrono_tz::Tz;
use serde_json::Value;

/// 2³¹ − 1: a larger integer timestamp is milliseconds (Traccar's rule).
const SECONDS_LIMIT: i64 = 2_147_483_647;
/// 2000-01-01T00:00:00Z: anything earlier is a tracker without a clock, not a position.
pub const EARLIEST_UTC: i64 = 946_684_800;
/// Fix times more than this after receipt are refused. A fix's time comes from the satellites,
/// so a tracker is ahead of the receiver's clock only by its own clock's error (a minute or
/// two); hours ahead is a tracker sending its local time as UTC. Such a fix stored would be the
/// unit's latest for hours: its real reports would all arrive "late" behind it, and the tools
/// would show a stop begun in the future. (Traccar's optional `filter.future` is usually set
/// to a day; ten minutes keeps any plausible clock error and refuses every zone mistake, the
/// smallest of which is an hour.)
pub const FUTURE_S: i64 = 600;
const KNOT_KMH: f64 = 1.852;
const MPH_KMH: f64 = 1.609_344;

/// The unit of the query form's `speed` (Traccar's `osmand.speed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeedUnit {
    Knots,
    Kmh,
    Mps,
    Mph,
}

impl SpeedUnit {
    fn to_kmh(self, value: f64) -> f64 {
        match self {
            SpeedUnit::Knots => value * KNOT_KMH,
            SpeedUnit::Kmh => value,
            SpeedUnit::Mps => value * 3.6,
            SpeedUnit::Mph => value * MPH_KMH,
        }
    }
}

/// What the decoder needs to know besides the request.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub speed: SpeedUnit,
    /// The zone of a timestamp written without one.
    pub zone: Tz,
}

/// The parts of an HTTP request the protocol reads.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub query: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub body: &'a [u8],
}

/// Which of the protocol's two forms a request used (they answer an unknown device
/// differently: 400 and 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Query,
    Json,
}

/// One decoded position.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub device: String,
    pub form: Form,
    /// Fix time; `None`: the tracker sent none, so it is the time of receipt.
    pub ts_utc: Option<i64>,
    pub lat: f64,
    pub lon: f64,
    pub speed_kmh: f64,
    pub heading_deg: f64,
    pub ignition: Option<bool>,
    pub odometer_m: Option<f64>,
    /// The tracker's own verdict on the fix (`valid=false`: no satellite fix).
    pub valid: bool,
}

/// Why a request is refused, as a Spanish clause (the receiver's log line and the body of
/// its 4xx answer).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("falta el identificador del dispositivo (id o deviceid)")]
    NoDevice,
    #[error("el campo {field} no es un número: '{value}'")]
    NotNumber { field: String, value: String },
    #[error("faltan las coordenadas (lat y lon, o location=lat,lon)")]
    NoPosition,
    #[error("la latitud {0} está fuera de -90..90")]
    Latitude(f64),
    #[error("la longitud {0} está fuera de -180..180")]
    Longitude(f64),
    #[error(
        "la hora '{0}' no se entiende (segundos o milisegundos Unix, ISO 8601 o AAAA-MM-DD HH:MM:SS)"
    )]
    Time(String),
    #[error("la hora del fix es anterior al año 2000: el rastreador no tiene reloj")]
    Before2000,
    #[error(
        "la hora del fix va {} por delante del reloj del receptor (se admiten {} min): el reloj del rastreador está mal o envía la hora local como UTC",
        ahead(*ahead_s),
        FUTURE_S / 60
    )]
    Future { ahead_s: i64 },
    #[error(
        "la posición es 0, 0 (en el golfo de Guinea): así la envía un rastreador sin fix; no se guarda"
    )]
    NullIsland,
    #[error("el cuerpo no es texto UTF-8")]
    NotText,
    #[error("el cuerpo no es JSON válido (línea {line}, columna {column})")]
    Json { line: usize, column: usize },
    #[error("el JSON no tiene la forma del protocolo: {0}")]
    JsonShape(&'static str),
}

/// Decodes one request. `received_utc` is not used for the fix time here: a report without
/// one keeps `ts_utc: None` for the caller to stamp.
pub fn decode(request: &Request<'_>, options: &Options) -> Result<Report, Refusal> {
    let json = request.content_type.is_some_and(|c| {
        c.trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    });
    if json {
        return decode_json(request.body, options);
    }
    let mut fields: HashMap<String, String> = HashMap::new();
    let query = request.query.unwrap_or("");
    // The body is read as a form only when the URI carries no parameters (Traccar's rule).
    let source = if form_urlencoded::parse(query.as_bytes()).next().is_some() {
        query.as_bytes()
    } else {
        request.body
    };
    if source.as_ptr() == request.body.as_ptr() && std::str::from_utf8(source).is_err() {
        return Err(Refusal::NotText);
    }
    for (key, value) in form_urlencoded::parse(source) {
        fields.insert(key.into_owned(), value.into_owned());
    }
    decode_fields(&fields, options)
}

fn decode_fields(fields: &HashMap<String, String>, options: &Options) -> Result<Report, Refusal> {
    let get = |key: &str| fields.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
    let device = get("id")
        .or_else(|| get("deviceid"))
        .ok_or(Refusal::NoDevice)?
        .to_owned();
    let (lat, lon) = match (get("lat"), get("lon"), get("location")) {
        (Some(lat), Some(lon), _) => (number("lat", lat)?, number("lon", lon)?),
        (_, _, Some(location)) => {
            let (lat, lon) = location.split_once(',').ok_or(Refusal::NoPosition)?;
            (number("location", lat)?, number("location", lon)?)
        }
        _ => return Err(Refusal::NoPosition),
    };
    let optional = |key: &str| get(key).map(|v| number(key, v)).transpose();
    let speed_kmh = optional("speed")?.map_or(0.0, |s| options.speed.to_kmh(s).max(0.0));
    let heading_deg = match optional("bearing")? {
        Some(h) => Some(h),
        None => optional("heading")?,
    };
    let ts_utc = get("timestamp")
        .map(|t| parse_time(t, options.zone))
        .transpose()?;
    Ok(Report {
        device,
        form: Form::Query,
        ts_utc,
        lat: latitude(lat)?,
        lon: longitude(lon)?,
        speed_kmh,
        heading_deg: heading_deg.map_or(0.0, |h| h.rem_euclid(360.0)),
        ignition: get("ignition").and_then(boolean),
        odometer_m: optional("odometer")?.filter(|m| *m >= 0.0),
        valid: get("valid").and_then(boolean).unwrap_or(true),
    })
}

/// The JSON form: `{"device_id": …, "location": {"timestamp", "coords": {…}, …}}`.
fn decode_json(body: &[u8], options: &Options) -> Result<Report, Refusal> {
    let root: Value = serde_json::from_slice(body).map_err(|e| Refusal::Json {
        line: e.line(),
        column: e.column(),
    })?;
    let root = root
        .as_object()
        .ok_or(Refusal::JsonShape("la raíz debe ser un objeto"))?;
    let device = match root.get("device_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(Refusal::NoDevice),
    };
    let location = match root.get("location") {
        Some(Value::Object(location)) => location,
        Some(_) => return Err(Refusal::JsonShape("location debe ser un solo objeto")),
        None => return Err(Refusal::NoPosition),
    };
    let coords = match location.get("coords") {
        Some(Value::Object(coords)) => coords,
        _ => return Err(Refusal::NoPosition),
    };
    let field = |name: &'static str| -> Result<Option<f64>, Refusal> {
        match coords.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(Refusal::NotNumber {
                field: format!("coords.{name}"),
                value: other.to_string(),
            }),
        }
    };
    let lat = field("latitude")?.ok_or(Refusal::NoPosition)?;
    let lon = field("longitude")?.ok_or(Refusal::NoPosition)?;
    // Negative speed and heading mean "unknown" in the location SDK.
    let speed_kmh = field("speed")?
        .filter(|s| *s >= 0.0)
        .map_or(0.0, |s| s * 3.6);
    let heading_deg = field("heading")?.filter(|h| *h >= 0.0).unwrap_or(0.0);
    let ts_utc = match location.get("timestamp") {
        Some(Value::String(t)) => Some(parse_time(t, options.zone)?),
        Some(Value::Number(n)) => Some(parse_time(&n.to_string(), options.zone)?),
        _ => None,
    };
    let ignition = location
        .get("extras")
        .and_then(|e| e.get("ignition"))
        .and_then(Value::as_bool);
    Ok(Report {
        device,
        form: Form::Json,
        ts_utc,
        lat: latitude(lat)?,
        lon: longitude(lon)?,
        speed_kmh,
        heading_deg: heading_deg.rem_euclid(360.0),
        ignition,
        odometer_m: location
            .get("odometer")
            .and_then(Value::as_f64)
            .filter(|m| *m >= 0.0),
        valid: true,
    })
}

fn number(field: &str, text: &str) -> Result<f64, Refusal> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| Refusal::NotNumber {
            field: field.to_owned(),
            value: text.chars().take(40).collect(),
        })
}

fn latitude(lat: f64) -> Result<f64, Refusal> {
    if (-90.0..=90.0).contains(&lat) {
        Ok(lat)
    } else {
        Err(Refusal::Latitude(lat))
    }
}

fn longitude(lon: f64) -> Result<f64, Refusal> {
    if (-180.0..=180.0).contains(&lon) {
        Ok(lon)
    } else {
        Err(Refusal::Longitude(lon))
    }
}

fn boolean(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// A timestamp in any of the protocol's forms, as UTC seconds (fractions dropped).
pub fn parse_time(text: &str, zone: Tz) -> Result<i64, Refusal> {
    let text = text.trim();
    let bad = || Refusal::Time(text.chars().take(40).collect());
    if let Ok(integer) = text.parse::<i64>() {
        return Ok(if integer > SECONDS_LIMIT {
            integer.div_euclid(1000)
        } else {
            integer
        });
    }
    if let Ok(decimal) = text.parse::<f64>()
        && decimal.is_finite()
        && decimal.abs() < 1e15
    {
        let seconds = if decimal > SECONDS_LIMIT as f64 {
            decimal / 1000.0
        } else {
            decimal
        };
        return Ok(seconds.floor() as i64);
    }
    if text.contains('T') {
        if let Ok(t) = DateTime::parse_from_rfc3339(text) {
            return Ok(t.timestamp());
        }
        return NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            // A repeated hour is its first occurrence; a skipped one is no time at all.
            .and_then(|local| {
                crate::calendar::instant(zone, crate::calendar::WallTime::naive(local)).ok()
            })
            .ok_or_else(bad);
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        // A repeated hour is its first occurrence; a skipped one is no time at all.
        .and_then(|local| {
            crate::calendar::instant(zone, crate::calendar::WallTime::naive(local)).ok()
        })
        .ok_or_else(bad)
}

/// A fix time the receiver takes: not before 2000, not more than [`FUTURE_S`] after `now_utc`.
pub fn check_time(ts_utc: i64, now_utc: i64) -> Result<(), Refusal> {
    if ts_utc < EARLIEST_UTC {
        Err(Refusal::Before2000)
    } else if ts_utc > now_utc + FUTURE_S {
        Err(Refusal::Future {
            ahead_s: ts_utc - now_utc,
        })
    } else {
        Ok(())
    }
}

/// A position the receiver stores: not 0, 0 (to the microdegree it is stored at), which
/// trackers without a fix send and which, stored, would be a jump of thousands of kilometres.
pub fn check_position(lat: f64, lon: f64) -> Result<(), Refusal> {
    if lat.abs() < 5e-7 && lon.abs() < 5e-7 {
        Err(Refusal::NullIsland)
    } else {
        Ok(())
    }
}

/// How far ahead, for a message: "95 s", "12 min", "6 h 0 min", "3 días".
fn ahead(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s => format!("{} días", s / 86_400),
    }
}

/// The device a request names, if it names one (for the message refusing it): `id` or
/// `deviceid` of the query form, `device_id` of the JSON form; at most 60 characters.
pub fn device_of(request: &Request<'_>) -> Option<String> {
    let json = request.content_type.is_some_and(|c| {
        c.trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    });
    let device = if json {
        match serde_json::from_slice::<Value>(request.body)
            .ok()?
            .get("device_id")?
        {
            Value::String(s) => s.trim().to_owned(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        }
    } else {
        let query = request.query.unwrap_or("");
        let source = if form_urlencoded::parse(query.as_bytes()).next().is_some() {
            query.as_bytes()
        } else {
            request.body
        };
        // A body that is not text names no device worth showing.
        std::str::from_utf8(source).ok()?;
        let fields: HashMap<String, String> = form_urlencoded::parse(source)
            .map(|(k, v)| (k.into_owned(), v.trim().to_owned()))
            .collect();
        let get = |key: &str| fields.get(key).filter(|v| !v.is_empty());
        get("id").or_else(|| get("deviceid"))?.clone()
    };
    (!device.is_empty()).then(|| device.chars().take(60).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZONE: Tz = chrono_tz::America::Guatemala;

    fn options() -> Options {
        Options {
            speed: SpeedUnit::Knots,
            zone: ZONE,
        }
    }

    fn query(q: &str) -> Result<Report, Refusal> {
        decode(
            &Request {
                query: Some(q),
                content_type: None,
                body: b"",
            },
            &options(),
        )
    }

    /// What a decoded report says, compactly: device, time, lat, lon, km/h (to 0.01),
    /// heading, ignition, odometer.
    type Said = (
        String,
        Option<i64>,
        f64,
        f64,
        f64,
        f64,
        Option<bool>,
        Option<f64>,
    );

    fn said(r: Report) -> Said {
        (
            r.device,
            r.ts_utc,
            r.lat,
            r.lon,
            (r.speed_kmh * 100.0).round() / 100.0,
            r.heading_deg,
            r.ignition,
            r.odometer_m,
        )
    }

    fn check(name: &str, got: Result<Report, Refusal>, expected: Result<Said, Refusal>) {
        assert_eq!(got.map(said), expected, "{name}");
    }

    fn ok(device: &str, ts: Option<i64>, lat: f64, lon: f64, kmh: f64, heading: f64) -> Said {
        (device.into(), ts, lat, lon, kmh, heading, None, None)
    }

    /// Request shapes real trackers and apps send (Traccar Client, OsmAnd, GPSLogger,
    /// hardware trackers behind a gateway), and the malformed ones.
    #[test]
    fn query_forms_real_trackers_send() {
        #[rustfmt::skip]
        let cases: Vec<(&str, &str, Result<Said, Refusal>)> = vec![
            ("Traccar Client Android", "id=123456&timestamp=1787175000&lat=14.6&lon=-90.5&speed=10.0&bearing=90.0&altitude=1500&accuracy=5.0&batt=87.0",
                Ok(ok("123456", Some(1_787_175_000), 14.6, -90.5, 18.52, 90.0))),
            ("OsmAnd app: milliseconds, hdop", "deviceid=P-123BCD&timestamp=1787175000123&lat=14.6&lon=-90.5&hdop=1.2&altitude=1500&speed=0",
                Ok(ok("P-123BCD", Some(1_787_175_000), 14.6, -90.5, 0.0, 0.0))),
            ("GPSLogger: ISO time, heading", "id=tel1&timestamp=2026-08-19T21:30:00Z&lat=14.6&lon=-90.5&speed=5&heading=180",
                Ok(ok("tel1", Some(1_787_175_000), 14.6, -90.5, 9.26, 180.0))),
            ("ISO with offset and fraction", "id=a&timestamp=2026-08-19T15:30:00.250-06:00&lat=1&lon=2",
                Ok(ok("a", Some(1_787_175_000), 1.0, 2.0, 0.0, 0.0))),
            ("local time in the fleet's zone", "id=a&timestamp=2026-08-19%2015:30:00&lat=1&lon=2",
                Ok(ok("a", Some(1_787_175_000), 1.0, 2.0, 0.0, 0.0))),
            ("decimal seconds", "id=a&timestamp=1787175000.9&lat=1&lon=2",
                Ok(ok("a", Some(1_787_175_000), 1.0, 2.0, 0.0, 0.0))),
            ("no time: the receipt's", "id=a&lat=1&lon=2", Ok(ok("a", None, 1.0, 2.0, 0.0, 0.0))),
            ("location=lat,lon", "id=a&location=14.6,-90.5", Ok(ok("a", None, 14.6, -90.5, 0.0, 0.0))),
            ("the last of a repeated key wins", "id=a&lat=1&lat=3&lon=2", Ok(ok("a", None, 3.0, 2.0, 0.0, 0.0))),
            ("heading wraps", "id=a&lat=1&lon=2&bearing=450", Ok(ok("a", None, 1.0, 2.0, 0.0, 90.0))),
            ("negative speed is none", "id=a&lat=1&lon=2&speed=-1", Ok(ok("a", None, 1.0, 2.0, 0.0, 0.0))),
            ("ignition and odometer",  "id=a&lat=1&lon=2&ignition=false&odometer=123456.7",
                Ok(("a".into(), None, 1.0, 2.0, 0.0, 0.0, Some(false), Some(123_456.7)))),
            ("other attributes pass", "id=a&lat=1&lon=2&fuel=24&driverUniqueId=x&cell=1,2,3,4", Ok(ok("a", None, 1.0, 2.0, 0.0, 0.0))),
            ("no id", "lat=1&lon=2", Err(Refusal::NoDevice)),
            ("empty id", "id=&lat=1&lon=2", Err(Refusal::NoDevice)),
            ("no coordinates", "id=a&speed=3", Err(Refusal::NoPosition)),
            ("half a location", "id=a&location=14.6", Err(Refusal::NoPosition)),
            ("latitude not a number", "id=a&lat=norte&lon=2", Err(Refusal::NotNumber { field: "lat".into(), value: "norte".into() })),
            ("NaN is not a number", "id=a&lat=NaN&lon=2", Err(Refusal::NotNumber { field: "lat".into(), value: "NaN".into() })),
            ("speed not a number", "id=a&lat=1&lon=2&speed=rapido", Err(Refusal::NotNumber { field: "speed".into(), value: "rapido".into() })),
            ("latitude out of range", "id=a&lat=91&lon=2", Err(Refusal::Latitude(91.0))),
            ("longitude out of range", "id=a&lat=1&lon=-181", Err(Refusal::Longitude(-181.0))),
            ("time not understood", "id=a&lat=1&lon=2&timestamp=ayer", Err(Refusal::Time("ayer".into()))),
        ];
        for (name, q, expected) in cases {
            check(name, query(q), expected);
        }
    }

    #[test]
    fn the_body_is_a_form_only_without_a_query() {
        let form = |q: Option<&str>, body: &[u8]| {
            decode(
                &Request {
                    query: q,
                    content_type: Some("application/x-www-form-urlencoded"),
                    body,
                },
                &options(),
            )
        };
        check(
            "form body",
            form(None, b"id=a&lat=1&lon=2"),
            Ok(ok("a", None, 1.0, 2.0, 0.0, 0.0)),
        );
        check(
            "query wins, body ignored",
            form(Some("id=q&lat=5&lon=6"), b"id=a&lat=1&lon=2"),
            Ok(ok("q", None, 5.0, 6.0, 0.0, 0.0)),
        );
        check(
            "body not text",
            form(None, &[0xff, 0xfe, b'=']),
            Err(Refusal::NotText),
        );
    }

    #[test]
    fn speed_units_as_configured() {
        for (unit, kmh) in [
            (SpeedUnit::Knots, 18.52),
            (SpeedUnit::Kmh, 10.0),
            (SpeedUnit::Mps, 36.0),
            (SpeedUnit::Mph, 16.09),
        ] {
            let got = decode(
                &Request {
                    query: Some("id=a&lat=1&lon=2&speed=10"),
                    content_type: None,
                    body: b"",
                },
                &Options {
                    speed: unit,
                    zone: ZONE,
                },
            )
            .unwrap();
            assert_eq!((got.speed_kmh * 100.0).round() / 100.0, kmh, "{unit:?}");
        }
    }

    fn json(body: &str) -> Result<Report, Refusal> {
        decode(
            &Request {
                query: None,
                content_type: Some("application/json; charset=utf-8"),
                body: body.as_bytes(),
            },
            &options(),
        )
    }

    #[test]
    fn the_json_form_of_current_tracking_apps() {
        #[rustfmt::skip]
        let cases: Vec<(&str, &str, Result<Said, Refusal>)> = vec![
            ("Traccar Client 9", r#"{"device_id":"123456","location":{"timestamp":"2026-08-19T21:30:00.000Z","coords":{"latitude":14.6,"longitude":-90.5,"accuracy":5,"speed":10,"heading":90,"altitude":1500},"is_moving":true,"odometer":1000,"battery":{"level":0.8,"is_charging":false},"activity":{"type":"in_vehicle"},"extras":{}}}"#,
                Ok(("123456".into(), Some(1_787_175_000), 14.6, -90.5, 36.0, 90.0, None, Some(1000.0)))),
            ("unknown speed and heading are negative", r#"{"device_id":"a","location":{"coords":{"latitude":1,"longitude":2,"speed":-1,"heading":-1}}}"#,
                Ok(ok("a", None, 1.0, 2.0, 0.0, 0.0))),
            ("ignition in extras", r#"{"device_id":"a","location":{"coords":{"latitude":1,"longitude":2},"extras":{"ignition":true}}}"#,
                Ok(("a".into(), None, 1.0, 2.0, 0.0, 0.0, Some(true), None))),
            ("a numeric id", r#"{"device_id":42,"location":{"coords":{"latitude":1,"longitude":2}}}"#, Ok(ok("42", None, 1.0, 2.0, 0.0, 0.0))),
            ("not JSON", "id=a&lat=1", Err(Refusal::Json { line: 1, column: 1 })),
            ("cut short", r#"{"device_id":"a","loc"#, Err(Refusal::Json { line: 1, column: 21 })),
            ("an array root", "[]", Err(Refusal::JsonShape("la raíz debe ser un objeto"))),
            ("no device", r#"{"location":{"coords":{"latitude":1,"longitude":2}}}"#, Err(Refusal::NoDevice)),
            ("locations in an array", r#"{"device_id":"a","location":[{"coords":{"latitude":1,"longitude":2}}]}"#, Err(Refusal::JsonShape("location debe ser un solo objeto"))),
            ("no coords", r#"{"device_id":"a","location":{"timestamp":"2026-08-19T21:30:00Z"}}"#, Err(Refusal::NoPosition)),
            ("latitude a string", r#"{"device_id":"a","location":{"coords":{"latitude":"14.6","longitude":2}}}"#, Err(Refusal::NotNumber { field: "coords.latitude".into(), value: "\"14.6\"".into() })),
            ("latitude out of range", r#"{"device_id":"a","location":{"coords":{"latitude":-95,"longitude":2}}}"#, Err(Refusal::Latitude(-95.0))),
        ];
        for (name, body, expected) in cases {
            check(name, json(body), expected);
        }
    }

    #[test]
    fn fix_times_the_receiver_takes() {
        let now = 1_787_175_000;
        assert_eq!(check_time(now, now), Ok(()));
        assert_eq!(check_time(EARLIEST_UTC, now), Ok(()));
        assert_eq!(check_time(EARLIEST_UTC - 1, now), Err(Refusal::Before2000));
        assert_eq!(check_time(now + FUTURE_S, now), Ok(()));
        // A tracker's clock 90 s ahead is taken; one sending its local time as UTC is not.
        assert_eq!(check_time(now + 90, now), Ok(()));
        let six_hours = check_time(now + 6 * 3600, now);
        assert_eq!(six_hours, Err(Refusal::Future { ahead_s: 21_600 }));
        let said = six_hours.unwrap_err().to_string();
        assert!(
            said.starts_with("la hora del fix va 6 h 0 min por delante"),
            "{said}"
        );
        assert_eq!(
            check_time(now + FUTURE_S + 1, now),
            Err(Refusal::Future {
                ahead_s: FUTURE_S + 1
            })
        );
    }

    #[test]
    fn a_position_at_zero_zero_is_refused_and_nothing_near_it() {
        assert_eq!(check_position(0.0, 0.0), Err(Refusal::NullIsland));
        assert_eq!(check_position(-0.0, 0.000_000_1), Err(Refusal::NullIsland));
        assert_eq!(check_position(0.0, 0.000_001), Ok(()));
        assert_eq!(check_position(0.000_001, 0.0), Ok(()));
        assert_eq!(check_position(47.53, -52.76), Ok(()));
    }

    #[test]
    fn the_device_a_refused_request_names() {
        let query = |q: &'static str| Request {
            query: Some(q),
            content_type: None,
            body: b"",
        };
        assert_eq!(device_of(&query("id=SJ-01&lat=x")), Some("SJ-01".into()));
        assert_eq!(device_of(&query("deviceid=77&lat=x")), Some("77".into()));
        assert_eq!(device_of(&query("lat=x")), None);
        let body = br#"{"device_id":"SJ-02","location":{"coords":{"latitude":"x"}}}"#;
        let json = Request {
            query: None,
            content_type: Some("application/json"),
            body,
        };
        assert_eq!(device_of(&json), Some("SJ-02".into()));
    }
}
