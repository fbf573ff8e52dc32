//! Routes drawn elsewhere: a line and its named stops read from a GPX track or route, a
//! GeoJSON LineString (a Feature, a FeatureCollection or a bare geometry, as geojson.io draws
//! and QGIS exports; `flota rutas ver --geojson` too) or a KML LineString, turned into a
//! [`RouteFile`] without any directions service.
//!
//! Owns reading those three formats into a [`Drawn`] (lines and named points), choosing the
//! line and the stops (given ones, or the file's named points, in their `orden` or along the
//! line; a loop gets its first stop again at the end), and the file's distance and duration
//! (the line's length, and a typical speed unless the file is flota's own export and says
//! them). Every failure is one Spanish sentence naming the file and the element. Checking the
//! result is `Route::from_file`'s, exactly as for `flota simular`; writing it is the verb's.

use std::path::Path;

use serde_json::{Map, Value};

use crate::geometry::earth::{LatLon, distance_m, lerp, local_m};
use crate::geometry::route::{MAX_END_OFFSET_M, RouteFile, StopFile};

/// A line found in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnLine {
    pub name: Option<String>,
    pub points: Vec<LatLon>,
    /// What the element is called in messages ("el trk «Ruta 1»", "la Feature 3").
    pub label: String,
    /// Properties flota's own GeoJSON export carries: `fuente`, `distancia_m`, `duracion_s`.
    pub fuente: Option<String>,
    pub distance_m: Option<u64>,
    pub duration_s: Option<u64>,
}

/// A named point found in the file: a stop candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnPoint {
    pub name: String,
    pub at: LatLon,
    /// The route it belongs to (`ruta` in flota's export).
    pub route: Option<String>,
    /// Its place among the route's stops (`orden` in flota's export), from 1.
    pub order: Option<u64>,
}

/// What a file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    /// `gpx`, `geojson` or `kml`: the route file's `fuente` unless the file says one.
    pub format: &'static str,
    pub lines: Vec<DrawnLine>,
    pub points: Vec<DrawnPoint>,
}

/// Reads `path` as GPX, GeoJSON or KML, by its extension, else by its first characters.
pub fn read(path: &Path) -> Result<Drawn, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{shown}: no existe"),
        _ => format!(
            "{shown}: no se pudo leer: {}",
            crate::plumbing::spanish::io(&e)
        ),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{shown}: no es texto UTF-8"))?;
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let start = text.trim_start().get(..200).unwrap_or(text.trim_start());
    let drawn = match extension.as_str() {
        "gpx" => gpx_lines(&text),
        "geojson" | "json" => geojson_lines(&text),
        "kml" => kml_lines(&text),
        _ if start.starts_with('{') => geojson_lines(&text),
        _ if start.contains("<gpx") => gpx_lines(&text),
        _ if start.contains("<kml") => kml_lines(&text),
        _ => Err("no se reconoce el formato: use un archivo .gpx, .geojson o .kml".to_owned()),
    };
    drawn.map_err(|reason| format!("{shown}: {reason}"))
}

fn checked(lat: f64, lon: f64, what: &str) -> Result<LatLon, String> {
    if lat.is_finite() && lon.is_finite() && lat.abs() <= 90.0 && lon.abs() <= 180.0 {
        Ok(LatLon::new(lat, lon))
    } else {
        Err(format!(
            "{what} tiene una coordenada fuera de rango ({lat}, {lon})"
        ))
    }
}

// --- GPX ---------------------------------------------------------------------------------

fn gpx_lines(text: &str) -> Result<Drawn, String> {
    let gpx = gpx::read(text.as_bytes()).map_err(|e| gpx_error(&e))?;
    let named = |name: &Option<String>, kind: &str, i: usize| match name {
        Some(n) => format!("el {kind} «{n}»"),
        None => format!("el {kind} n.º {}", i + 1),
    };
    let mut lines = Vec::new();
    let point = |w: &gpx::Waypoint, what: &str| {
        let p = w.point();
        checked(p.y(), p.x(), what)
    };
    for (i, track) in gpx.tracks.iter().enumerate() {
        let label = named(&track.name, "trk", i);
        let points = track
            .segments
            .iter()
            .flat_map(|s| &s.points)
            .map(|w| point(w, &label))
            .collect::<Result<Vec<_>, _>>()?;
        lines.push(line(track.name.clone(), points, label));
    }
    for (i, route) in gpx.routes.iter().enumerate() {
        let label = named(&route.name, "rte", i);
        let points = route
            .points
            .iter()
            .map(|w| point(w, &label))
            .collect::<Result<Vec<_>, _>>()?;
        lines.push(line(route.name.clone(), points, label));
    }
    let mut points = Vec::new();
    for w in &gpx.waypoints {
        if let Some(name) = w.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            points.push(DrawnPoint {
                name: name.to_owned(),
                at: point(w, &format!("el wpt «{name}»"))?,
                route: None,
                order: None,
            });
        }
    }
    Ok(Drawn {
        format: "gpx",
        lines,
        points,
    })
}

fn line(name: Option<String>, points: Vec<LatLon>, label: String) -> DrawnLine {
    DrawnLine {
        name,
        points,
        label,
        fuente: None,
        distance_m: None,
        duration_s: None,
    }
}

/// The gpx crate's error, in Spanish.
fn gpx_error(e: &gpx::errors::GpxError) -> String {
    use gpx::errors::GpxError as E;
    let what = match e {
        E::XmlParseError(xml) => return format!("no es XML válido ({})", xml_position(xml)),
        E::InvalidChildElement(child, parent) => {
            format!("el elemento «{child}» no puede ir dentro de «{parent}»")
        }
        E::InvalidElementLacksAttribute(attribute, element) => {
            format!("a un elemento «{element}» le falta el atributo «{attribute}»")
        }
        E::ParseFloatError(_) | E::ParseIntegerError(_) => "tiene un número ilegible".to_owned(),
        E::UnknownVersionError(_) => "no es GPX 1.0 ni 1.1".to_owned(),
        E::MissingOpeningTag(tag) | E::MissingClosingTag(tag) => {
            format!("el elemento «{tag}» no está bien abierto o cerrado")
        }
        _ => "no es un GPX que se pueda leer".to_owned(),
    };
    format!("GPX inválido: {what}")
}

fn xml_position(e: &xml::reader::Error) -> String {
    use xml::common::Position;
    let at = e.position();
    format!("línea {}, columna {}", at.row + 1, at.column + 1)
}

// --- GeoJSON -----------------------------------------------------------------------------

fn geojson_lines(text: &str) -> Result<Drawn, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "no es JSON válido (línea {}, columna {})",
            e.line(),
            e.column()
        )
    })?;
    let features: Vec<(Value, Map<String, Value>, String)> = match value["type"].as_str() {
        Some("FeatureCollection") => value["features"]
            .as_array()
            .ok_or("la FeatureCollection no tiene una lista «features»")?
            .iter()
            .enumerate()
            .map(|(i, f)| feature(f, format!("la Feature n.º {}", i + 1)))
            .collect::<Result<_, _>>()?,
        Some("Feature") => vec![feature(&value, "la Feature".to_owned())?],
        Some(_) => vec![(value.clone(), Map::new(), "la geometría".to_owned())],
        None => return Err("no es GeoJSON: falta «type»".to_owned()),
    };
    let mut drawn = Drawn {
        format: "geojson",
        lines: Vec::new(),
        points: Vec::new(),
    };
    for (geometry, properties, label) in features {
        add_geometry(&mut drawn, &geometry, &properties, label)?;
    }
    Ok(drawn)
}

/// A Feature's geometry, properties and name in messages.
fn feature(f: &Value, label: String) -> Result<(Value, Map<String, Value>, String), String> {
    if f["type"] != "Feature" {
        return Err(format!("{label} no es una Feature"));
    }
    let properties = f["properties"].as_object().cloned().unwrap_or_default();
    let label = match text_property(&properties, &["nombre", "name", "Name", "NOMBRE"]) {
        Some(name) => format!("{label} («{name}»)"),
        None => label,
    };
    Ok((f["geometry"].clone(), properties, label))
}

fn text_property(properties: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| properties.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn add_geometry(
    drawn: &mut Drawn,
    geometry: &Value,
    properties: &Map<String, Value>,
    label: String,
) -> Result<(), String> {
    let name = text_property(properties, &["nombre", "name", "Name", "NOMBRE"]);
    let coordinates = &geometry["coordinates"];
    match geometry["type"].as_str() {
        Some("LineString") => {
            let points = positions(coordinates, &label)?;
            drawn.lines.push(DrawnLine {
                fuente: text_property(properties, &["fuente"]),
                distance_m: properties.get("distancia_m").and_then(Value::as_u64),
                duration_s: properties.get("duracion_s").and_then(Value::as_u64),
                ..line(name, points, label)
            });
        }
        Some("MultiLineString") => {
            // QGIS exports line layers as multi-lines; the parts are joined in order.
            let parts = coordinates
                .as_array()
                .ok_or(format!("{label}: «coordinates» no es una lista"))?;
            let mut points = Vec::new();
            for part in parts {
                points.extend(positions(part, &label)?);
            }
            drawn.lines.push(line(name, points, label));
        }
        Some("Point") => {
            if let Some(name) = name {
                drawn.points.push(DrawnPoint {
                    name,
                    at: position(coordinates, &label)?,
                    route: text_property(properties, &["ruta"]),
                    order: properties.get("orden").and_then(Value::as_u64),
                });
            }
        }
        Some("GeometryCollection") => {
            for g in geometry["geometries"].as_array().into_iter().flatten() {
                add_geometry(drawn, g, properties, label.clone())?;
            }
        }
        // Polygons (geofences) and the like are not routes; a feature without geometry
        // neither.
        _ => {}
    }
    Ok(())
}

/// `[lon, lat(, alt)]`.
fn position(value: &Value, label: &str) -> Result<LatLon, String> {
    let pair = value.as_array().filter(|a| a.len() >= 2);
    let number = |i: usize| pair.and_then(|a| a[i].as_f64());
    match (number(0), number(1)) {
        (Some(lon), Some(lat)) => checked(lat, lon, label),
        _ => Err(format!(
            "{label} tiene una posición que no es [longitud, latitud]: {value}"
        )),
    }
}

fn positions(value: &Value, label: &str) -> Result<Vec<LatLon>, String> {
    value
        .as_array()
        .ok_or(format!("{label}: «coordinates» no es una lista"))?
        .iter()
        .map(|p| position(p, label))
        .collect()
}

// --- KML ---------------------------------------------------------------------------------

/// The Placemark being read.
#[derive(Default)]
struct Placemark {
    name: Option<String>,
    line: Option<String>,
    point: Option<String>,
}

fn kml_lines(text: &str) -> Result<Drawn, String> {
    use xml::reader::{EventReader, XmlEvent};
    let mut drawn = Drawn {
        format: "kml",
        lines: Vec::new(),
        points: Vec::new(),
    };
    let mut stack: Vec<String> = Vec::new();
    let mut placemark: Option<Placemark> = None;
    let mut count = 0usize;
    for event in EventReader::new(text.as_bytes()) {
        match event.map_err(|e| format!("KML inválido: no es XML válido ({})", xml_position(&e)))?
        {
            XmlEvent::StartElement { name, .. } => {
                if name.local_name == "Placemark" {
                    placemark = Some(Placemark::default());
                    count += 1;
                }
                stack.push(name.local_name);
            }
            XmlEvent::Characters(chars) | XmlEvent::CData(chars) => {
                if let Some(p) = placemark.as_mut() {
                    let parent = stack.len().checked_sub(2).map(|i| stack[i].as_str());
                    match (stack.last().map(String::as_str), parent) {
                        (Some("name"), Some("Placemark")) => p.name = Some(chars.trim().into()),
                        (Some("coordinates"), Some("LineString")) => {
                            p.line.get_or_insert_default().push_str(&chars);
                        }
                        (Some("coordinates"), Some("Point")) => {
                            p.point.get_or_insert_default().push_str(&chars);
                        }
                        _ => {}
                    }
                }
            }
            XmlEvent::EndElement { name } => {
                stack.pop();
                if name.local_name == "Placemark"
                    && let Some(p) = placemark.take()
                {
                    add_placemark(&mut drawn, p, count)?;
                }
            }
            _ => {}
        }
    }
    Ok(drawn)
}

fn add_placemark(drawn: &mut Drawn, p: Placemark, n: usize) -> Result<(), String> {
    let name = p.name.filter(|n| !n.is_empty());
    let label = match &name {
        Some(name) => format!("el Placemark «{name}»"),
        None => format!("el Placemark n.º {n}"),
    };
    if let Some(text) = p.line {
        let points = kml_coordinates(&text, &label)?;
        drawn.lines.push(line(name.clone(), points, label.clone()));
    }
    if let (Some(text), Some(name)) = (p.point, name) {
        let at = kml_coordinates(&text, &label)?;
        if let Some(at) = at.first() {
            drawn.points.push(DrawnPoint {
                name,
                at: *at,
                route: None,
                order: None,
            });
        }
    }
    Ok(())
}

/// KML's `lon,lat[,alt]` tuples separated by white space.
fn kml_coordinates(text: &str, label: &str) -> Result<Vec<LatLon>, String> {
    text.split_whitespace()
        .map(|tuple| {
            let mut numbers = tuple.split(',').map(|v| v.trim().parse::<f64>());
            match (numbers.next(), numbers.next()) {
                (Some(Ok(lon)), Some(Ok(lat))) => checked(lat, lon, label),
                _ => Err(format!(
                    "{label} tiene una coordenada ilegible «{tuple}» (se espera longitud,latitud)"
                )),
            }
        })
        .collect()
}

// --- From a drawing to a route file ------------------------------------------------------

/// What to build: the route's name, the stops given on the command line (else the file's named
/// points) and the speed assumed for its duration.
pub struct Wanted<'a> {
    pub name: &'a str,
    pub stops: &'a [StopFile],
    pub speed_kmh: f64,
}

/// The route file for `wanted` from what `path` holds. Not yet checked: that is
/// `Route::from_file`'s.
pub fn route_file(drawn: &Drawn, path: &Path, wanted: &Wanted<'_>) -> Result<RouteFile, String> {
    let shown = path.display();
    let chosen = choose_line(drawn, wanted.name).map_err(|e| format!("{shown}: {e}"))?;
    let mut points = chosen.points.clone();
    points.dedup();
    if points.len() < 2 {
        return Err(format!(
            "{shown}: {} tiene menos de dos puntos distintos",
            chosen.label
        ));
    }
    let stops = if wanted.stops.is_empty() {
        file_stops(drawn, chosen, &points).map_err(|e| format!("{shown}: {e}"))?
    } else {
        wanted.stops.to_vec()
    };
    if stops.len() < 2 {
        return Err(format!(
            "{shown}: una ruta necesita al menos dos paradas, y el archivo tiene {} con nombre \
             para {}; nombre los puntos de parada o use --parada nombre:lat,lon",
            stops.len(),
            chosen.label
        ));
    }
    let length_m: f64 = points.windows(2).map(|p| distance_m(p[0], p[1])).sum();
    // flota's own export says what the service measured; anything else is the line itself.
    let distance_m = chosen
        .distance_m
        .filter(|d| *d > 0)
        .unwrap_or(length_m.round() as u64);
    let duration_s = chosen
        .duration_s
        .filter(|d| *d > 0)
        .unwrap_or_else(|| (length_m / (wanted.speed_kmh / 3.6)).round().max(1.0) as u64);
    Ok(RouteFile {
        nombre: wanted.name.to_owned(),
        fuente: chosen
            .fuente
            .clone()
            .unwrap_or_else(|| drawn.format.to_owned()),
        paradas: stops,
        distancia_m: distance_m,
        duracion_s: duration_s,
        polilinea: RouteFile::encode(&points),
    })
}

/// The one line of the file, or the one named `name` among several.
fn choose_line<'a>(drawn: &'a Drawn, name: &str) -> Result<&'a DrawnLine, String> {
    match drawn.lines.as_slice() {
        [] => Err(match drawn.format {
            "gpx" => "no tiene ninguna línea (trk ni rte)".to_owned(),
            "kml" => "no tiene ninguna LineString".to_owned(),
            _ => "no tiene ninguna LineString".to_owned(),
        }),
        [one] => Ok(one),
        many => many
            .iter()
            .find(|l| l.name.as_deref() == Some(name))
            .ok_or_else(|| {
                let names: Vec<String> = many.iter().map(|l| l.label.clone()).collect();
                format!(
                    "tiene {} líneas y ninguna se llama «{name}»: {}",
                    many.len(),
                    names.join(", ")
                )
            }),
    }
}

/// The file's named points that belong to `line`: in their `orden` when every one has it,
/// else in the order the line passes them; a loop ends at its first stop again.
fn file_stops(drawn: &Drawn, line: &DrawnLine, points: &[LatLon]) -> Result<Vec<StopFile>, String> {
    let tagged = drawn.points.iter().any(|p| p.route.is_some());
    let mut mine: Vec<&DrawnPoint> = drawn
        .points
        .iter()
        .filter(|p| !tagged || (p.route.is_some() && p.route == line.name))
        .collect();
    if !mine.is_empty() && mine.iter().all(|p| p.order.is_some()) {
        mine.sort_by_key(|p| p.order);
    } else {
        let along: Vec<f64> = mine.iter().map(|p| along_m(points, p.at)).collect();
        let mut order: Vec<usize> = (0..mine.len()).collect();
        order.sort_by(|a, b| along[*a].total_cmp(&along[*b]));
        mine = order.into_iter().map(|i| mine[i]).collect();
        let (start, end) = (points[0], points[points.len() - 1]);
        let is_loop = distance_m(start, end) <= MAX_END_OFFSET_M;
        if let (true, Some(first), Some(last)) = (is_loop, mine.first(), mine.last())
            && mine.len() >= 2
            && distance_m(last.at, end) > MAX_END_OFFSET_M
        {
            mine.push(first);
        }
    }
    Ok(mine
        .into_iter()
        .map(|p| StopFile {
            nombre: p.name.clone(),
            lat: p.at.lat,
            lon: p.at.lon,
        })
        .collect())
}

/// How far along `line` the point nearest `p` is, metres.
fn along_m(line: &[LatLon], p: LatLon) -> f64 {
    let mut best = (f64::INFINITY, 0.0);
    let mut walked = 0.0;
    for pair in line.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (bx, by) = local_m(a, b);
        let (px, py) = local_m(a, p);
        let len2 = bx * bx + by * by;
        let t = if len2 > 0.0 {
            ((px * bx + py * by) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let d = distance_m(p, lerp(a, b, t));
        let segment = distance_m(a, b);
        if d < best.0 {
            best = (d, walked + t * segment);
        }
        walked += segment;
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_three_formats_give_the_same_line_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let gpx = write(
            dir.path(),
            "r.gpx",
            r#"<?xml version="1.0"?><gpx version="1.1" creator="x" xmlns="http://www.topografix.com/GPX/1/1">
            <wpt lat="14.61" lon="-90.5"><name>medio</name></wpt>
            <wpt lat="14.6" lon="-90.5"><name>inicio</name></wpt>
            <wpt lat="14.62" lon="-90.5"></wpt>
            <trk><name>r</name><trkseg><trkpt lat="14.6" lon="-90.5"/><trkpt lat="14.61" lon="-90.5"/></trkseg>
            <trkseg><trkpt lat="14.62" lon="-90.5"/></trkseg></trk></gpx>"#,
        );
        let geojson = write(
            dir.path(),
            "r.geojson",
            r#"{"type": "FeatureCollection", "features": [
              {"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[-90.5, 14.6], [-90.5, 14.61], [-90.5, 14.62, 1500]]}},
              {"type": "Feature", "properties": {"name": "medio"}, "geometry": {"type": "Point", "coordinates": [-90.5, 14.61]}},
              {"type": "Feature", "properties": {"name": "inicio"}, "geometry": {"type": "Point", "coordinates": [-90.5, 14.6]}},
              {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [-90.5, 14.62]}}]}"#,
        );
        let kml = write(
            dir.path(),
            "r.kml",
            r#"<?xml version="1.0" encoding="UTF-8"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>doc</name>
            <Placemark><name>r</name><LineString><coordinates>-90.5,14.6,0 -90.5,14.61,0
            -90.5,14.62,0</coordinates></LineString></Placemark>
            <Placemark><name>medio</name><Point><coordinates>-90.5,14.61</coordinates></Point></Placemark>
            <Placemark><name>inicio</name><Point><coordinates>-90.5,14.6</coordinates></Point></Placemark>
            </Document></kml>"#,
        );
        for path in [gpx, geojson, kml] {
            let drawn = read(&path).unwrap();
            assert_eq!(drawn.lines.len(), 1, "{path:?}");
            assert_eq!(drawn.lines[0].points.len(), 3, "{path:?}");
            let wanted = Wanted {
                name: "r",
                stops: &[],
                speed_kmh: 36.0,
            };
            let file = route_file(&drawn, &path, &wanted).unwrap();
            let names: Vec<&str> = file.paradas.iter().map(|s| s.nombre.as_str()).collect();
            assert_eq!(
                names,
                ["inicio", "medio"],
                "{path:?}: ordered along the line"
            );
            assert_eq!(file.fuente, drawn.format);
            // 0.02° of latitude, at 10 m/s.
            assert!(
                (file.distancia_m as f64 - 2224.0).abs() < 5.0,
                "{}",
                file.distancia_m
            );
            assert_eq!(
                file.duracion_s,
                (file.distancia_m as f64 / 10.0).round() as u64
            );
        }
    }

    #[test]
    fn bad_files_are_named_with_the_element() {
        let dir = tempfile::tempdir().unwrap();
        let check = |name: &str, text: &str, needle: &str| {
            let path = write(dir.path(), name, text);
            let err = read(&path)
                .and_then(|d| {
                    let wanted = Wanted {
                        name: "x",
                        stops: &[],
                        speed_kmh: 30.0,
                    };
                    route_file(&d, &path, &wanted).map(|_| d)
                })
                .unwrap_err();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
            assert!(err.contains(needle), "{name}: {err}");
        };
        check("a.geojson", "{\"type\": ", "no es JSON válido (línea 1");
        check(
            "b.geojson",
            r#"{"type": "LineString", "coordinates": [[-90.5, 14.6], [-90.5]]}"#,
            "la geometría tiene una posición que no es [longitud, latitud]",
        );
        check(
            "c.geojson",
            r#"{"type": "Feature", "properties": {"name": "lejos"}, "geometry": {"type": "LineString", "coordinates": [[-90.5, 14.6], [-90.5, 95]]}}"#,
            "la Feature («lejos») tiene una coordenada fuera de rango",
        );
        check("d.gpx", "<gpx version=\"1.1\"><trk>", "GPX inválido");
        check(
            "e.kml",
            "<kml><Placemark><name>l</name><LineString><coordinates>-90.5;14.6</coordinates></LineString></Placemark></kml>",
            "el Placemark «l» tiene una coordenada ilegible «-90.5;14.6»",
        );
        check(
            "f.kml",
            "<kml><Placemark><name>l</name><Point><coordinates>-90.5,14.6</coordinates></Point></Placemark></kml>",
            "no tiene ninguna LineString",
        );
        check(
            "g.geojson",
            r#"{"type": "LineString", "coordinates": [[-90.5, 14.6], [-90.5, 14.7]]}"#,
            "al menos dos paradas",
        );
        check("h.txt", "hola", "no se reconoce el formato");
        check(
            "i.geojson",
            r#"{"type": "FeatureCollection", "features": [
              {"type": "Feature", "properties": {"nombre": "a"}, "geometry": {"type": "LineString", "coordinates": [[-90.5, 14.6], [-90.5, 14.7]]}},
              {"type": "Feature", "properties": {"nombre": "b"}, "geometry": {"type": "LineString", "coordinates": [[-90.5, 14.6], [-90.5, 14.7]]}}]}"#,
            "tiene 2 líneas y ninguna se llama «x»",
        );
    }

    #[test]
    fn a_loop_returns_to_its_first_stop() {
        let drawn = Drawn {
            format: "kml",
            lines: vec![line(
                None,
                vec![
                    LatLon::new(14.6, -90.5),
                    LatLon::new(14.61, -90.5),
                    LatLon::new(14.61, -90.51),
                    LatLon::new(14.6, -90.5),
                ],
                "la línea".into(),
            )],
            points: vec![
                DrawnPoint {
                    name: "lejos".into(),
                    at: LatLon::new(14.61, -90.51),
                    route: None,
                    order: None,
                },
                DrawnPoint {
                    name: "base".into(),
                    at: LatLon::new(14.6, -90.5),
                    route: None,
                    order: None,
                },
            ],
        };
        let wanted = Wanted {
            name: "r",
            stops: &[],
            speed_kmh: 30.0,
        };
        let file = route_file(&drawn, Path::new("r.kml"), &wanted).unwrap();
        let names: Vec<&str> = file.paradas.iter().map(|s| s.nombre.as_str()).collect();
        assert_eq!(names, ["base", "lejos", "base"]);
    }
}
